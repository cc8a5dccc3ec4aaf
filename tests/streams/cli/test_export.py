"""``swe-stream export`` with ``--format hf``, ``--split-by month`` and ``--since``/``--until``:
task directories of real SWE-bench tasks to a Hugging Face folder ``datasets`` loads, to
monthly JSONL files, and back to the same task directories; bad input is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from streams.evaluation.taskdir import write_task_dir
from tests.conftest import SWE_STREAM
from tests.hf_tasks import MONTH_SPLITS, ORDER, make_tasks, offline_loader

pytestmark = pytest.mark.unit


@pytest.fixture
def task_dirs(validated_tasks: list[ValidatedTask], tmp_path: Path) -> Path:
    for ws in make_tasks(validated_tasks):
        write_task_dir(tmp_path / "tasks", ws)
    return tmp_path / "tasks"


@pytest.fixture
def export(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    # its own data directory: the clone cache the licenses are looked for in is empty
    env = os.environ | {"SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / "data")}

    def run(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SWE_STREAM, "export", *map(str, arguments)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["instance_id"] for line in path.read_text().splitlines()]


def test_hf_export_loads_splits_by_month_filters_and_comes_back(
    task_dirs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    export: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    load: Callable[[Path], Any] = offline_loader(tmp_path, monkeypatch)
    whole = export("--format", "hf", "-i", task_dirs, "-o", tmp_path / "hf")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout == f"wrote 5 tasks to {tmp_path / 'hf'} (splits: test 5)\n"
    loaded = load(tmp_path / "hf")
    assert [row["instance_id"] for row in loaded["test"]] == ORDER

    # January and the first day of February: 2026-01-31T23:30-02:00 is February in UTC
    window = ("--since", "2026-01-01", "--until", "2026-02-02T00:00:00Z")
    monthly = export("--format", "hf", "--split-by", "month", *window, "-i", task_dirs, "-o",
                     tmp_path / "hf-months")  # fmt: skip
    assert monthly.returncode == 0, monthly.stderr
    loaded = load(tmp_path / "hf-months")
    assert {split: [row["instance_id"] for row in loaded[split]] for split in loaded} == {
        "2026_01": MONTH_SPLITS["2026_01"],
        "2026_02": ["sympy__sympy-13031"],
    }

    jsonl = export("--split-by", "month", "-i", task_dirs, "-o", tmp_path / "months")
    assert jsonl.returncode == 0, jsonl.stderr
    files = sorted((tmp_path / "months").iterdir())
    assert [f.name for f in files] == [f"{month}.jsonl" for month in MONTH_SPLITS]
    for file in files:
        assert sorted(_ids(file)) == sorted(MONTH_SPLITS[file.stem])
    january = export("-i", task_dirs, "-o", tmp_path / "jan.jsonl", "--until", "2026-02-01",
                     "--since", "2026-01-01T00:00:00+00:00")  # fmt: skip
    assert january.returncode == 0, january.stderr
    assert sorted(_ids(tmp_path / "jan.jsonl")) == sorted(MONTH_SPLITS["2026_01"])

    back = export("-i", tmp_path / "hf", "-o", tmp_path / "back")
    assert back.returncode == 0, back.stderr
    assert back.stdout == f"wrote 5 task directories to {tmp_path / 'back'}\n"
    original = sorted(p.relative_to(task_dirs) for p in task_dirs.rglob("*") if p.is_file())
    again = sorted(p.relative_to(tmp_path / "back") for p in (tmp_path / "back").rglob("*"))
    assert [p for p in again if (tmp_path / "back" / p).is_file()] == original
    for relative in original:
        assert (tmp_path / "back" / relative).read_bytes() == (task_dirs / relative).read_bytes()
    # and the hf folder straight to SWE-bench JSONL
    rows = export("--format", "jsonl", "-i", tmp_path / "hf", "-o", tmp_path / "all.jsonl")
    assert rows.returncode == 0, rows.stderr
    assert _ids(tmp_path / "all.jsonl") == ORDER


def test_bad_export_arguments_are_one_line_and_exit_2(
    task_dirs: Path, tmp_path: Path, export: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    broken = tmp_path / "broken"
    (broken / "data").mkdir(parents=True)
    (broken / "data" / "test-00000-of-00001.parquet").write_bytes(b"not parquet")
    cases = [
        (["-i", broken, "-o", tmp_path / "x"], "not a readable Parquet file"),
        (["--split-by", "month", "-i", tmp_path / "x.jsonl", "-o", tmp_path / "y"], "x.jsonl"),
        (["--since", "2026-02-01", "--until", "2026-01-01", "-i", task_dirs, "-o", tmp_path / "z"],
         "is not before --until"),
        (["--format", "hf", "--since", "2030-01-01", "-i", task_dirs, "-o", tmp_path / "h"],
         "no tasks to export"),
        (["-i", task_dirs, "-o", task_dirs], "is a directory"),
    ]  # fmt: skip
    for arguments, message in cases:
        failed = export(*arguments)
        assert failed.returncode == 2, (arguments, failed.stdout, failed.stderr)
        assert message in failed.stderr and failed.stderr.count("\n") == 1, failed.stderr
    exported = export("--format", "hf", "-i", task_dirs, "-o", tmp_path / "hf")
    assert exported.returncode == 0, exported.stderr
    no_splits = export("--split-by", "month", "-i", tmp_path / "hf", "-o", tmp_path / "t")
    assert no_splits.returncode == 2 and "task directories have no splits" in no_splits.stderr
    bad_date = export("--since", "soon", "-i", task_dirs, "-o", tmp_path / "d.jsonl")
    assert bad_date.returncode == 2 and "not an ISO date or time" in bad_date.stderr
