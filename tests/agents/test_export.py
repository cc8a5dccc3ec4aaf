"""The export stage: task directories and dataset.jsonl from scored tasks, idempotent
re-exports, rejected tasks writing nothing. The formats themselves (hostile names, the dataset
<-> task directories round trip) are ``tests/streams/evaluation/test_taskdir.py``'s."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.export import TaskExporter
from schemas import SWEBENCH_FIELDS, ExportedTask, ScoredTask, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.evaluation.taskdir import (
    render_task_files,
)
from streams.pipeline.stage import Outcome
from tests.conftest import TEST_COMMAND, scored_task

pytestmark = pytest.mark.unit


async def export(exporter: TaskExporter, task: ScoredTask) -> ExportedTask:
    outcome = await exporter(task)
    assert outcome.status == "exported"
    assert len(outcome.outputs) == 1 and isinstance(outcome.outputs[0], ExportedTask)
    return outcome.outputs[0]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def expected_dir_name(task: ScoredTask) -> str:
    owner, name = task.repo.split("/")
    return f"{owner}-{name}-{task.number}"


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}


async def test_export_writes_task_dir_and_one_dataset_line(
    validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    for each in validated_tasks:  # what an agent is shown never gives the answer away
        ws = TaskWorkspace.from_scored(scored_task(each), "t")
        prompt = render_task_files(ws)["prompt.md"].decode()
        assert not [s for s in (each.patch, each.test_patch, *each.FAIL_TO_PASS) if s in prompt]
    task = scored_task(validated_tasks[0])
    out = tmp_path / "out"
    exported = await export(TaskExporter(out, pipeline_version=3), task)

    task_dir = out / expected_dir_name(task)
    assert exported.export_dir == str(task_dir.resolve())
    assert sorted(os.listdir(task_dir)) == ["checks.txt", "prompt.md", "workspace.yaml"]
    prompt = (task_dir / "prompt.md").read_text(encoding="utf-8")
    assert prompt.startswith(f"# {task_dir.name}\n\n") and task.problem_statement in prompt
    assert task.patch not in prompt and task.test_patch not in prompt
    assert not [t for t in task.FAIL_TO_PASS if t in prompt]
    checks = (task_dir / "checks.txt").read_text(encoding="utf-8")
    assert checks == "".join(f"{c}\n" for c in task.checks)

    loaded = TaskWorkspace.model_validate(yaml.safe_load((task_dir / "workspace.yaml").read_text()))
    assert loaded == TaskWorkspace.from_scored(task, task_dir.name)
    assert loaded.id == task_dir.name and loaded.number == task.number
    assert loaded.to_swebench() == task.to_swebench()
    assert (loaded.difficulty, loaded.difficulty_score, loaded.quality_score) == ("medium", 2, 0.8)
    assert loaded.fail_to_pass == task.checks[: len(task.FAIL_TO_PASS)]
    assert loaded.install_config["install"] == "pip install -e . && pip install pytest"
    assert loaded.install_config["test_cmd"] == TEST_COMMAND
    assert loaded.created_at == task.to_swebench()["created_at"]

    [row] = jsonl(out / "dataset.jsonl")
    assert row == task.to_swebench() and list(row) == list(SWEBENCH_FIELDS)
    assert isinstance(row["FAIL_TO_PASS"], list) and isinstance(row["PASS_TO_PASS"], list)
    assert exported.dataset_path == str((out / "dataset.jsonl").resolve())
    assert exported.key == task.key and exported.instance_id == task.instance_id
    assert exported.pipeline_version == 3
    assert abs(exported.exported_at - datetime.now(UTC)) < timedelta(minutes=1)


async def test_reexport_is_idempotent_and_replaces_what_changed(
    validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    exporter = TaskExporter(out, pipeline_version=1)
    tasks = [scored_task(t) for t in validated_tasks[:3]]
    first = await export(exporter, tasks[0])
    for path in out.rglob("*"):
        os.utime(path, ns=(10**18, 10**18))  # a rewrite now could not keep this mtime
    before = snapshot(out)
    again = await export(exporter, tasks[0])
    assert snapshot(out) == before
    assert again.content_sha256 == first.content_sha256
    assert len(jsonl(out / "dataset.jsonl")) == 1

    digests = [(await export(exporter, t)).content_sha256 for t in tasks[1:]]
    assert len(jsonl(out / "dataset.jsonl")) == 3
    changed = tasks[1].model_copy(update={"problem_statement": "A new statement."})
    redone = await export(exporter, changed)
    rows = jsonl(out / "dataset.jsonl")
    assert [r["instance_id"] for r in rows] == [t.instance_id for t in tasks]
    assert rows[1] == changed.to_swebench() and rows[0] == tasks[0].to_swebench()
    assert redone.content_sha256 != digests[0]
    prompt = out / expected_dir_name(changed) / "prompt.md"
    assert "A new statement." in prompt.read_text(encoding="utf-8")
    await export(exporter, scored_task(validated_tasks[0], checks=False))  # checks.txt is stale now
    assert sorted(os.listdir(prompt.parent.parent / expected_dir_name(tasks[0]))) == [
        "prompt.md", "workspace.yaml"
    ]  # fmt: skip


async def test_rejected_task_writes_nothing(
    validated_tasks: list[ValidatedTask], tmp_path: Path
) -> None:
    task = scored_task(validated_tasks[0]).model_copy(update={"accepted": False})
    outcome = await TaskExporter(tmp_path / "out", pipeline_version=1)(task)
    assert outcome == Outcome() and outcome.outputs == () and outcome.status is None
    assert list(tmp_path.iterdir()) == []
