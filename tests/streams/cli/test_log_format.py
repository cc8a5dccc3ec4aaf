"""``--log-format json``: every log record on stderr is one JSON object per line (time in
ISO 8601 UTC, level, logger, message, exception), from the real executable; a user error
still ends in one line, a JSON one, with its exit code."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from streams.core.errors import ExitCode
from streams.core.logs import JsonFormatter
from streams.kafka.broker import free_port
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import stop, wait_for_metrics, worker_env

KEYS = {"time", "level", "logger", "message"}


def records(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line as a JSON object with the keys of a record (fails on any other)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    parsed = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line on stderr: {line!r}\n{stderr[-3000:]}")
        assert isinstance(entry, dict) and set(entry) >= KEYS, line
        when = datetime.fromisoformat(entry["time"])
        assert when.utcoffset() == timedelta(0), line  # UTC
        parsed.append(entry)
    return parsed


def run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SWE_STREAM_")}
    return subprocess.run(
        [SWE_STREAM, *argv],
        capture_output=True,
        text=True,
        timeout=180,
        env=environment | (env or {}),
    )


@pytest.mark.unit
def test_a_record_with_an_exception_is_one_json_line() -> None:
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        record = logging.LogRecord(
            "swe_stream.x", logging.ERROR, __file__, 1, "failed: %s", ("a\nb",), sys.exc_info()
        )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "ERROR",
        "swe_stream.x",
        "failed: a\nb",
    )
    assert "Traceback" in entry["exception"] and "ValueError: bad" in entry["exception"]
    assert datetime.fromisoformat(entry["time"]).utcoffset() == timedelta(0)


@pytest.mark.integration
@pytest.mark.parametrize("where", ["before", "after", "environment"])
def test_ingest_logs_json_lines(where: str, fixtures_dir: Path) -> None:
    hour = fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    command = ["ingest", "--source", str(hour)]
    argv = {
        "before": ["--log-format", "json", *command],
        "after": [*command, "--log-format", "json"],
        "environment": command,
    }[where]
    env = {"SWE_STREAM_WORKER_LOG_FORMAT": "json"} if where == "environment" else {}
    result = run(argv, env)
    assert result.returncode == 0, result.stderr[-3000:]
    logged = records(result.stderr)
    messages = [entry["message"] for entry in logged if entry["logger"] == "swe_stream.ingest"]
    assert any(m.startswith("hour 2015-01-01-0 done:") for m in messages), messages
    assert {"INFO", "WARNING"} <= {entry["level"] for entry in logged}  # the embedded broker's
    assert "ingested 1 hours" in result.stdout  # the summary stays on stdout, as text


@pytest.mark.unit
def test_the_default_stays_text(tmp_path: Path) -> None:
    result = run(["ingest", "--source", str(tmp_path / "2015-01-01-0.json.gz")])
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.startswith("swe-stream ingest: --source:"), result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("verbose", [False, True])
def test_a_user_error_is_one_json_line_with_its_exit_code(verbose: bool, tmp_path: Path) -> None:
    missing = tmp_path / "2015-01-01-0.json.gz"
    flags = ["--verbose"] if verbose else []
    result = run(["--log-format", "json", *flags, "ingest", "--source", str(missing)])
    assert result.returncode == ExitCode.USAGE, result.stderr
    (entry,) = records(result.stderr)
    assert entry["level"] == "ERROR" and entry["exit_code"] == ExitCode.USAGE
    assert entry["message"].startswith("swe-stream ingest: --source:"), entry
    assert str(missing) in entry["message"] and " — " in entry["message"]
    # --verbose: the traceback, inside the line
    assert ("Traceback" in entry.get("exception", "")) == verbose


@pytest.mark.unit
def test_invalid_settings_are_one_json_line() -> None:
    result = run(["config", "show", "--log-format", "json"], {"SWE_STREAM_KAFKA_PARTITIONS": "0"})
    assert result.returncode == ExitCode.USAGE
    (entry,) = records(result.stderr)
    assert "invalid settings" in entry["message"] and "partitions" in entry["message"]


@pytest.mark.integration
def test_the_faust_worker_logs_json_lines_too(tmp_path: Path) -> None:
    """The worker's logging is Faust's (mode's): it gets the JSON handler on stderr too."""
    metrics_port, log = free_port(), tmp_path / "worker.err"
    command = [
        SWE_STREAM, "worker", "--log-format", "json", "--app", "tests.fakes.shout_app:app",
        "--app-id", f"json-log-{os.getpid()}", "--web-port", "0",
        "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    with open(log, "w") as err:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=worker_env(), stdout=subprocess.PIPE, stderr=err,
            text=True,
        )  # fmt: skip
    try:
        wait_for_metrics(metrics_port, process, log)  # type: ignore[arg-type]
    finally:
        code = stop(process)
    assert process.stdout is not None
    assert process.stdout.read() == ""  # Faust's log went to stderr, as JSON
    assert code == 0, log.read_text()[-3000:]
    loggers = {entry["logger"] for entry in records(log.read_text())}
    assert "swe_stream.cli" in loggers and any(name.startswith("faust") for name in loggers)
