"""The ``swe-stream`` console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.swebench import SWEBENCH_FIELDS
from tests.conftest import SWE_STREAM

pytestmark = pytest.mark.unit


def test_help_lists_every_command() -> None:
    result = subprocess.run([SWE_STREAM, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for command in ("broker", "topics", "config", "worker", "schemas", "images"):
        assert f"\n    {command} " in result.stdout, command


@pytest.mark.parametrize("argv", [["topics", "--help"], ["worker", "--help"]])
def test_kafka_commands_take_bootstrap(argv: list[str]) -> None:
    result = subprocess.run([SWE_STREAM, *argv], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "--bootstrap" in result.stdout or "create" in result.stdout


def test_unknown_command_fails() -> None:
    result = subprocess.run([SWE_STREAM, "frobnicate"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_schemas_check_reports_the_committed_files_current() -> None:
    result = subprocess.run(
        [SWE_STREAM, "schemas", "generate", "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.unit
def test_export_round_trips_the_real_swe_bench_rows(fixtures_dir: Path, tmp_path: Path) -> None:
    rows = [
        row
        for name in ("swe-bench-lite-5.json", "swe-bench-dev-5.json")
        for row in json.loads((fixtures_dir / "swebench" / name).read_text(encoding="utf-8"))
    ]
    assert len(rows) == 10
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    to_dirs = subprocess.run(
        [SWE_STREAM, "export", "-i", str(source), "-o", str(tmp_path / "tasks")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert to_dirs.returncode == 0, to_dirs.stderr
    back = tmp_path / "dataset.jsonl"
    to_jsonl = subprocess.run(
        [SWE_STREAM, "export", "-i", str(tmp_path / "tasks"), "-o", str(back)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert to_jsonl.returncode == 0, to_jsonl.stderr
    again = [json.loads(line) for line in back.read_text(encoding="utf-8").splitlines()]
    # the dev rows carry two more columns (query, task_id) beside the 12 of SWE-bench, and
    # two of them are the same instance: one task directory holds it
    instances = {json.dumps({f: row[f] for f in SWEBENCH_FIELDS}, sort_keys=True) for row in rows}
    assert len(again) == len(instances) == 9
    assert {json.dumps(row, sort_keys=True) for row in again} == instances  # every field as it was
    for row in again:
        assert tuple(row) == SWEBENCH_FIELDS  # SWE-bench's column order
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(rows[0]) + "\n{not json\n", encoding="utf-8")
    failed = subprocess.run(
        [SWE_STREAM, "export", "-i", str(broken), "-o", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 2 and "line 2" in failed.stderr


# Signals sent at random moments into a loop that polls for them as fast as it can: every one
# ends its round, says which signal it was, and the previous handlers come back.
SIGNAL_STORM = """
import os, random, signal, sys, threading
from streams.cli.options import StopSignals
rounds = int(sys.argv[1])
for _ in range(rounds):
    with StopSignals() as stop:
        kill = (os.getpid(), random.choice(StopSignals.SIGNALS))
        threading.Timer(random.uniform(0, 0.002), os.kill, kill).start()
        while not stop.wait(0.0001):
            pass
        assert stop.received == kill[1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
print("rounds", rounds)
"""


def test_stop_signals_end_every_wait_and_restore_the_handlers() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_STORM, "300"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[3],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["rounds", "300"]
