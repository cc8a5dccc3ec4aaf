"""The task formats: task directories and dataset.jsonl written and read back, hostile names
and paths refused, the dataset <-> task directories round trip of real SWE-bench rows, and any
text surviving workspace.yaml and the dataset line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas import SWEBENCH_FIELDS, ValidatedTask
from schemas.workspace import TaskWorkspace, task_dir_name
from streams.evaluation.taskdir import (
    dataset_line,
    dataset_to_task_dirs,
    read_dataset,
    render_task_files,
    task_dir_path,
    task_dirs_to_dataset,
    write_task_dir,
)
from tests.conftest import scored_task

pytestmark = pytest.mark.unit

HOSTILE = [
    "../../etc/passwd", "/abs/path", "a/../../b", "..", ".", "....", "name with spaces",
    "ctl\x00\x1b\n\r\tx", "-rf", "a" * 500, "über__straße-1", "..__..-1", "C:\\win", "~",
]  # fmt: skip


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_names_stay_inside_the_output_dir(
    raw: str, validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    try:
        name = task_dir_name(raw)
    except ValueError:
        assert not re.search(r"[A-Za-z0-9_]", raw)  # refused only when nothing usable is left
        return
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,200}", name)
    assert not name.startswith((".", "-")) and ".." not in name
    ws = TaskWorkspace.from_scored(scored_task(validated_tasks[0]), name)
    written = write_task_dir(out, ws)
    assert written.parent == out.resolve() and (written / "workspace.yaml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_unsafe_paths_and_ids_are_refused(
    validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)
    for name in ("../escape", "/etc", "a/b", "", ".", "link"):
        with pytest.raises(ValueError):
            task_dir_path(out, name)
    ws = TaskWorkspace.from_scored(scored_task(validated_tasks[0]), "ok")
    with pytest.raises(ValueError, match="inside"):
        write_task_dir(out, ws.model_copy(update={"id": "../escape"}))
    for bad in ("../x", "a..b", "a/b", ".hidden", ""):
        with pytest.raises(ValidationError):
            TaskWorkspace.model_validate({**ws.model_dump(), "id": bad})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["link"]


def test_two_ids_sharing_a_directory_name_are_refused(
    validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    row = validated_tasks[0].to_swebench()
    first = TaskWorkspace.from_swebench({**row, "repo": "a-b/c", "instance_id": "a-b__c-1"})
    second = TaskWorkspace.from_swebench({**row, "repo": "a/b-c", "instance_id": "a__b-c-1"})
    assert first.id == second.id
    write_task_dir(tmp_path, first)
    with pytest.raises(ValueError, match="a-b__c-1"):
        write_task_dir(tmp_path, second)


def test_swebench_rows_round_trip_through_task_dirs(fixtures_dir: Path, tmp_path: Path) -> None:
    swebench = fixtures_dir / "swebench"
    rows = read_dataset(swebench / "swe-bench-lite-5.json")
    rows += read_dataset(swebench / "swe-bench-dev-5.json")
    assert len(rows) == 10
    dirs = dataset_to_task_dirs(rows, tmp_path / "tasks")
    unique = {r["instance_id"] for r in rows}  # the dev file repeats one row
    count = task_dirs_to_dataset(tmp_path / "tasks", tmp_path / "d.jsonl")
    assert len(dirs) == len(unique) == count
    back = {r["instance_id"]: r for r in read_dataset(tmp_path / "d.jsonl")}
    assert set(back) == unique
    for row in rows:
        again = back[row["instance_id"]]
        assert list(again) == list(SWEBENCH_FIELDS)
        for field in SWEBENCH_FIELDS:
            assert again[field] == row[field], (row["instance_id"], field)
            assert type(again[field]) is type(row[field]), (row["instance_id"], field)


def test_hf_row_keeps_its_strings_and_gets_list_tests(fixtures_dir: Path, tmp_path: Path) -> None:
    [row, *_] = read_dataset(fixtures_dir / "swebench" / "swe-bench-lite-5.json")
    hf_row = {**row, **{k: json.dumps(row[k]) for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}}
    # a timestamp a datetime round trip would rewrite, and a version a float would shorten
    hf_row |= {"created_at": "2022-11-04 13:49:40.000+00:00", "version": "0.10"}
    (tmp_path / "hf.jsonl").write_text(json.dumps(hf_row) + "\n", encoding="utf-8")
    dataset_to_task_dirs(read_dataset(tmp_path / "hf.jsonl"), tmp_path / "tasks")
    assert task_dirs_to_dataset(tmp_path / "tasks", tmp_path / "d.jsonl") == 1
    [again] = read_dataset(tmp_path / "d.jsonl")
    assert (again["created_at"], again["version"]) == (hf_row["created_at"], "0.10")
    assert again["FAIL_TO_PASS"] == row["FAIL_TO_PASS"] and isinstance(again["FAIL_TO_PASS"], list)
    assert again["PASS_TO_PASS"] == row["PASS_TO_PASS"] and isinstance(again["PASS_TO_PASS"], list)


def test_bad_dataset_files_name_the_line_or_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a__b-1"}\n{"instance_id": \n{}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2\b"):
        read_dataset(bad)
    bad.write_text('[\n  {"a": 1},\n  {"b": }\n]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3\b"):
        read_dataset(bad)
    for text in ("a: [unclosed\n", "- a list\n", "id: x\n"):
        task_dir = tmp_path / "tasks" / "x-y-1"
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "workspace.yaml").write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=re.escape(str(task_dir / "workspace.yaml"))):
            task_dirs_to_dataset(tmp_path / "tasks", tmp_path / "d.jsonl")


@settings(max_examples=150, deadline=None)
@given(text=st.text(), patch=st.text(alphabet=st.sampled_from(" \t\r\n\x85\u2028a+-@é\\\"'#:")))
def test_any_text_survives_workspace_yaml_and_the_dataset_line(
    validated_tasks: list[ValidatedTask], text: str, patch: str
) -> None:
    base = TaskWorkspace.from_scored(scored_task(validated_tasks[0]), "t")
    ws = base.model_copy(update={"problem_statement": text, "prompt": text, "patch": patch})
    files = render_task_files(ws)
    assert TaskWorkspace.model_validate(yaml.safe_load(files["workspace.yaml"])) == ws
    assert files == render_task_files(ws.model_copy(deep=True))
    line = dataset_line(ws.to_swebench())
    assert line.count("\n") == 1 and line.endswith("\n")
    assert json.loads(line) == ws.to_swebench()


@pytest.mark.parametrize("column", ["image_name", "docker_image"])
def test_a_pushed_tasks_image_travels_with_its_row(
    fixtures_dir: Path, tmp_path: Path, column: str
) -> None:
    [row, *_] = read_dataset(fixtures_dir / "swebench" / "swe-bench-lite-5.json")
    image = "127.0.0.1:5000/swe/astropy__astropy:pr-12907"
    [task_dir] = dataset_to_task_dirs([{**row, column: image}], tmp_path / "tasks")
    assert yaml.safe_load((task_dir / "workspace.yaml").read_text())["image_name"] == image
    task_dirs_to_dataset(tmp_path / "tasks", tmp_path / "d.jsonl")
    [again] = read_dataset(tmp_path / "d.jsonl")
    # both names, after SWE-bench's columns: scaffolds read one or the other
    assert list(again) == [*SWEBENCH_FIELDS, "image_name", "docker_image"]
    assert again["image_name"] == again["docker_image"] == image
    # a task never pushed keeps SWE-bench's columns alone
    dataset_to_task_dirs([row], tmp_path / "plain")
    task_dirs_to_dataset(tmp_path / "plain", tmp_path / "p.jsonl")
    assert list(read_dataset(tmp_path / "p.jsonl")[0]) == list(SWEBENCH_FIELDS)
