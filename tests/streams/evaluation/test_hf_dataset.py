"""The Hugging Face dataset folder: real SWE-bench tasks written as Parquet shards and a card,
loaded by the real ``datasets.load_dataset`` as they are (splits, features, every value), split
by month, sharded, re-exported idempotently, read back into task directories byte for byte;
rows of other datasets read; broken folders named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
import yaml

from schemas import SWEBENCH_FIELDS, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.evaluation.hf_card import card_license, read_front_matter
from streams.evaluation.hf_dataset import (
    COLUMNS,
    export_row,
    is_hf_folder,
    read_hf_dataset,
    workspace_of,
    write_hf_dataset,
)
from streams.evaluation.taskdir import read_task_dirs, write_task_dir, write_task_dirs
from tests.hf_tasks import LICENSES, MONTH_SPLITS, ORDER, make_tasks, offline_loader

pytestmark = pytest.mark.unit


@pytest.fixture
def tasks(validated_tasks: list[ValidatedTask]) -> list[TaskWorkspace]:
    return make_tasks(validated_tasks)


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], Any]:
    return offline_loader(tmp_path, monkeypatch)


def test_load_dataset_reads_the_folder_unchanged(
    tasks: list[TaskWorkspace], tmp_path: Path, load: Callable[[Path], Any]
) -> None:
    import datasets

    folder = tmp_path / "hf"
    done = write_hf_dataset(tasks, folder, licenses=LICENSES)
    assert done.splits == {"test": 5} and done.shards == ["data/test-00000-of-00001.parquet"]
    loaded = load(folder)
    assert list(loaded) == ["test"] and loaded["test"].num_rows == 5
    features = loaded["test"].features
    assert list(features) == [c.name for c in COLUMNS]
    assert list(features)[:12] == list(SWEBENCH_FIELDS)
    assert features["FAIL_TO_PASS"] == datasets.List(datasets.Value("string"))
    assert features["PASS_TO_PASS"] == datasets.List(datasets.Value("string"))
    assert features["quality_score"] == datasets.Value("float64")
    assert features["number"] == datasets.Value("int64")
    assert features["docker_passed"] == datasets.Value("bool")
    by_id = {ws.instance_id: ws for ws in tasks}
    rows = list(loaded["test"])
    assert [row["instance_id"] for row in rows] == ORDER
    for row in rows:
        ws = by_id[row["instance_id"]]
        assert row == export_row(ws, LICENSES[ws.repo])
        assert {name: row[name] for name in SWEBENCH_FIELDS} == ws.to_swebench()
        assert json.loads(row["install_config"]) == ws.install_config
    pushed = rows[ORDER.index("django__django-16255")]
    assert pushed["image_name"] == pushed["docker_image"] == tasks[0].image_name
    assert pushed["prompt"] == tasks[0].prompt and pushed["license"] == "BSD-3-Clause"
    plain = rows[ORDER.index("sympy__sympy-13031")]
    assert plain["image_name"] is plain["docker_image"] is plain["prompt"] is None
    assert plain["language"] is None and plain["quality_score"] is None
    scored = rows[ORDER.index("pytest-dev__pytest-11143")]
    assert scored["language"] == "python" and scored["quality_score"] == 0.8
    assert scored["fail_to_pass_commands"] == by_id[scored["instance_id"]].fail_to_pass != []


def test_month_splits_are_the_utc_months_of_created_at(
    tasks: list[TaskWorkspace], tmp_path: Path, load: Callable[[Path], Any]
) -> None:
    folder = tmp_path / "hf"
    done = write_hf_dataset(tasks, folder, split_by="month")
    assert done.splits == {month: len(ids) for month, ids in MONTH_SPLITS.items()}
    loaded = load(folder)
    assert sorted(loaded) == sorted(MONTH_SPLITS)
    for month, ids in MONTH_SPLITS.items():
        assert [row["instance_id"] for row in loaded[month]] == ids


def test_shards_are_cut_at_the_row_and_byte_limits(
    tasks: list[TaskWorkspace], tmp_path: Path, load: Callable[[Path], Any]
) -> None:
    by_rows = write_hf_dataset(tasks, tmp_path / "rows", max_shard_rows=2)
    assert by_rows.shards == [f"data/test-0000{i}-of-00003.parquet" for i in range(3)]
    assert [pq.read_metadata(tmp_path / "rows" / s).num_rows for s in by_rows.shards] == [2, 2, 1]
    by_bytes = write_hf_dataset(tasks, tmp_path / "bytes", max_shard_bytes=1000)
    assert len(by_bytes.shards) == 5  # every task's patches are over a kilobyte
    for folder in ("rows", "bytes"):
        loaded = load(tmp_path / folder)
        assert [row["instance_id"] for row in loaded["test"]] == ORDER


def test_hf_folder_back_to_task_dirs_gives_the_same_bytes(
    tasks: list[TaskWorkspace], tmp_path: Path
) -> None:
    for ws in tasks:
        write_task_dir(tmp_path / "tasks", ws)
    write_hf_dataset(read_task_dirs(tmp_path / "tasks"), tmp_path / "hf", split_by="month")
    assert is_hf_folder(tmp_path / "hf") and not is_hf_folder(tmp_path / "tasks")
    back = read_hf_dataset(tmp_path / "hf")
    assert [ws.instance_id for ws in back] == ORDER
    write_task_dirs(back, tmp_path / "back")
    original = sorted(p.relative_to(tmp_path / "tasks") for p in (tmp_path / "tasks").rglob("*"))
    again = sorted(p.relative_to(tmp_path / "back") for p in (tmp_path / "back").rglob("*"))
    assert again == original and len(original) == 5 + 5 * 2 + 3  # checks.txt: 3 have checks
    for relative in original:
        if (tmp_path / "tasks" / relative).is_file():
            before = (tmp_path / "tasks" / relative).read_bytes()
            assert (tmp_path / "back" / relative).read_bytes() == before, relative


def test_every_workspace_field_has_a_column(tasks: list[TaskWorkspace]) -> None:
    row = export_row(tasks[0], "MIT")
    assert list(row) == [c.name for c in COLUMNS]
    # a field added to the workspace without a column here would be lost on the way back
    assert workspace_of(row) == tasks[0]
    full = tasks[0].model_copy(update={"pipeline_version": 3, "version": None})
    assert workspace_of(export_row(full)) == full


def test_the_card_front_matter_and_its_counts(tasks: list[TaskWorkspace], tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    write_hf_dataset(tasks, folder, split_by="month", licenses=LICENSES)
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == read_front_matter(folder / "README.md")
    assert front["configs"] == [
        {
            "config_name": "default",
            "data_files": [{"split": m, "path": f"data/{m}-*"} for m in MONTH_SPLITS],
        }
    ]
    info = front["dataset_info"]
    assert [(s["name"], s["num_examples"]) for s in info["splits"]] == [
        (month, len(ids)) for month, ids in MONTH_SPLITS.items()
    ]
    assert all(s["num_bytes"] > 0 for s in info["splits"])
    assert info["download_size"] == sum(p.stat().st_size for p in (folder / "data").iterdir())
    assert [f["name"] for f in info["features"]] == [c.name for c in COLUMNS]
    assert {"name": "FAIL_TO_PASS", "sequence": "string"} in info["features"]
    assert {"name": "install_config", "dtype": "string"} in info["features"]
    assert front["license"] == "other"  # BSD-3-Clause and MIT
    body = text.split("---\n", 2)[2]
    for line in (
        "| python | 3 |",
        "| unknown | 2 |",
        "| 2025_12 | 1 |",
        "| 2026_01 | 2 |",
        "| 2026_02 | 2 |",
        "| django/django | 2 | BSD-3-Clause |",
        "| pytest-dev/pytest | 1 | MIT |",
    ):
        assert f"\n{line}\n" in body, line
    assert "from 2025-12-31T23:59:59Z (scikit-learn__scikit-learn-13584)" in body
    assert "to 2026-02-03 08:00:00.000+00:00 (pytest-dev__pytest-11143)" in body
    assert "JSON-encoded" in body


def test_the_card_license_is_the_one_license_or_other_or_unknown() -> None:
    assert card_license(["MIT", "MIT"]) == "mit"
    assert card_license(["Apache-2.0"]) == "apache-2.0"
    assert card_license(["MIT", "BSD-3-Clause"]) == "other"
    assert card_license(["MIT", "unknown"]) == "other"
    assert card_license(["unknown", "unknown"]) == "unknown"
    assert card_license(["BSD-4-Clause"]) == "other"  # no Hub id for it


def test_reexports_are_idempotent_and_remove_stale_shards(
    tasks: list[TaskWorkspace], tmp_path: Path, load: Callable[[Path], Any]
) -> None:
    folder = tmp_path / "hf"
    write_hf_dataset(tasks, folder, max_shard_rows=2)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    stamps = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    again = write_hf_dataset(list(reversed(tasks)), folder, max_shard_rows=2)
    assert again.removed == []
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == stamps  # untouched
    monthly = write_hf_dataset(tasks, folder, split_by="month")
    assert monthly.removed == [f"data/test-0000{i}-of-00003.parquet" for i in range(3)]
    assert sorted(p.name for p in (folder / "data").iterdir()) == [
        f"{month}-00000-of-00001.parquet" for month in MONTH_SPLITS
    ]
    assert sorted(load(folder)) == sorted(MONTH_SPLITS)
    fewer = write_hf_dataset(tasks[:1], folder)
    assert fewer.splits == {"test": 1} and len(fewer.removed) == 3
    assert {split: d.num_rows for split, d in load(folder).items()} == {"test": 1}


def test_rows_of_other_datasets_are_read_as_swe_bench_rows(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    rows = json.loads((fixtures_dir / "swebench" / "swe-bench-lite-5.json").read_text())
    # the Hugging Face SWE-bench's form: test lists as JSON strings; SWE-rebench's image column
    hf_rows = [
        {
            **row,
            "FAIL_TO_PASS": json.dumps(row["FAIL_TO_PASS"]),
            "PASS_TO_PASS": json.dumps(row["PASS_TO_PASS"]),
            "docker_image": f"swerebench/{row['instance_id']}",
            "meta": "ignored",
        }
        for row in rows
    ]
    (tmp_path / "other" / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(hf_rows), tmp_path / "other/data/test-0.parquet")
    assert is_hf_folder(tmp_path / "other")
    back = read_hf_dataset(tmp_path / "other")
    assert [ws.to_swebench() for ws in back] == [
        {name: row[name] for name in SWEBENCH_FIELDS} for row in rows
    ]
    assert [ws.image_name for ws in back] == [f"swerebench/{row['instance_id']}" for row in rows]


def _card(configs: str) -> str:
    return f"---\nlicense: mit\nconfigs:\n{configs}---\n\n# a dataset\n"


def test_broken_folders_are_named(tasks: list[TaskWorkspace], tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    (folder / "data").mkdir(parents=True)
    good = "- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n"
    (folder / "README.md").write_text(_card(good))
    with pytest.raises(ValueError, match="no Parquet shards"):
        read_hf_dataset(folder)
    (folder / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"test-00000-of-00001\.parquet: not a readable Parquet"):
        read_hf_dataset(folder)
    (folder / "README.md").write_text(_card("- config_name: default\n  data_files: [\n"))
    with pytest.raises(ValueError, match="front matter is not valid YAML"):
        read_hf_dataset(folder)
    outside = "- config_name: default\n  data_files:\n  - split: test\n    path: ../x/*.parquet\n"
    (folder / "README.md").write_text(_card(outside))
    with pytest.raises(ValueError, match="outside the folder"):
        read_hf_dataset(folder)
    row = export_row(tasks[0])
    del row["number"]
    pq.write_table(pa.Table.from_pylist([row]), folder / "data" / "test-00000-of-00001.parquet")
    (folder / "README.md").write_text(_card(good))
    with pytest.raises(ValueError, match=r"row 0 \('django__django-16255'\).*\['number'\]"):
        read_hf_dataset(folder)


def test_an_export_does_not_overwrite_a_readme_that_is_no_card(
    tasks: list[TaskWorkspace], tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("# My notes\n")
    with pytest.raises(ValueError, match="not a dataset card"):
        write_hf_dataset(tasks, folder)
    assert (folder / "README.md").read_text() == "# My notes\n"
    assert not (folder / "data").exists()
    with pytest.raises(ValueError, match="no tasks"):
        write_hf_dataset([], tmp_path / "empty")
    with pytest.raises(ValueError, match="comes twice"):
        write_hf_dataset([tasks[0], tasks[0]], tmp_path / "twice")
