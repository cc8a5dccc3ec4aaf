"""A problem the user can fix ends ``swe-stream`` as one line on stderr and a distinct exit code
(``streams.core.errors.ExitCode``), without a traceback unless ``--verbose``; problems
knowable up front are found before any service starts. Each case runs the real executable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.core.errors import ExitCode
from tests.conftest import SWE_STREAM

UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1


def run(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SWE_STREAM_KAFKA_BOOTSTRAP"} | (
        env or {}
    )
    return subprocess.run(
        [SWE_STREAM, *argv], capture_output=True, text=True, timeout=timeout, env=environment
    )


def one_line(result: subprocess.CompletedProcess[str], code: ExitCode, *words: str) -> str:
    """The single stderr line of ``result``, after checking its exit code and words."""
    report = f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert result.returncode == code, report
    assert "Traceback" not in result.stderr, report
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, report
    (line,) = lines
    assert line.startswith("swe-stream "), report
    assert " — " in line, report  # the problem, then what to do
    for word in words:
        assert word in line, f"{word!r} not in {line!r}"
    return line


@pytest.fixture
def hour_file(fixtures_dir: Path) -> Path:
    return fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.unit
@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "list"],
        ["ingest", "--source", "HOUR"],
        ["ledger", "stats"],
        ["mine", "--once", "--metrics-port", "0", "--source", "HOUR"],
        ["offsets", "show", "--group", "g", "--topic", "pr.enriched"],
    ],
    ids=lambda argv: argv[0],
)
def test_an_unreachable_cluster_is_one_line_and_exit_3(argv: list[str], hour_file: Path) -> None:
    argv = [str(hour_file) if a == "HOUR" else a for a in argv]
    result = run([*argv, "--bootstrap", UNREACHABLE])
    line = one_line(result, ExitCode.CLUSTER_UNREACHABLE, UNREACHABLE, "--bootstrap")
    assert line.startswith(f"swe-stream {argv[0]}: cannot reach the Kafka cluster"), line


@pytest.mark.unit
def test_the_cluster_named_by_the_environment_is_checked_too() -> None:
    result = run(["topics", "list"], env={"SWE_STREAM_KAFKA_BOOTSTRAP": UNREACHABLE})
    one_line(result, ExitCode.CLUSTER_UNREACHABLE, UNREACHABLE, "SWE_STREAM_KAFKA_BOOTSTRAP")


@pytest.mark.unit
@pytest.mark.parametrize("action", ["list", "describe"])
def test_topics_list_without_a_cluster_is_one_line_and_exit_2(action: str) -> None:
    """A fresh embedded broker would report every topic missing: refused, before any starts."""
    result = run(["topics", action])
    line = one_line(result, ExitCode.USAGE, "--bootstrap HOST:PORT", "SWE_STREAM_KAFKA_BOOTSTRAP")
    assert line.startswith(f"swe-stream topics: {action} looks at a Kafka cluster"), line
    assert "embedded broker on" not in result.stdout + result.stderr  # none was started
    shown = run(["topics", action, "--help"]).stdout
    assert "required" in shown and "default: start the embedded broker" not in shown, shown
    # a named cluster that does not answer: no advice to leave --bootstrap out
    unreachable = run(["topics", action, "--bootstrap", UNREACHABLE])
    line = one_line(unreachable, ExitCode.CLUSTER_UNREACHABLE, UNREACHABLE)
    assert "embedded broker" not in line, line


@pytest.mark.unit
@pytest.mark.parametrize(
    "argv",
    [
        ["offsets", "show", "--group", "g", "--topic", "pr.enriched"],
        ["replay", "--from-topic", "pr.enriched", "--pipeline-version", "2"],
    ],
    ids=lambda argv: argv[0],
)
def test_commands_on_what_a_cluster_holds_refuse_without_one(argv: list[str]) -> None:
    result = run(argv)
    line = one_line(result, ExitCode.USAGE, "--bootstrap HOST:PORT", "SWE_STREAM_KAFKA_BOOTSTRAP")
    assert line.startswith(f"swe-stream {argv[0]}: {argv[0]} needs a Kafka cluster"), line
    shown = run([*argv[:2], "--help"] if argv[0] == "offsets" else [argv[0], "--help"]).stdout
    assert "required" in shown and "default: start the embedded broker" not in shown, shown


@pytest.mark.unit
@pytest.mark.parametrize("action", ["show", "replay"])
def test_dlq_without_a_cluster_is_one_line_and_exit_2(action: str) -> None:
    result = run(["dlq", action, "--topic", "pr.enriched.dlq"])
    one_line(result, ExitCode.USAGE, "swe-stream dlq:", "--bootstrap HOST:PORT")
    # and its help says so, instead of promising an embedded broker
    shown = run(["dlq", action, "--help"]).stdout
    assert "required" in shown and "default: start the embedded broker" not in shown, shown


@pytest.mark.unit
def test_verbose_adds_the_traceback_and_the_underlying_error() -> None:
    result = run(["--verbose", "topics", "list", "--bootstrap", UNREACHABLE])
    assert result.returncode == ExitCode.CLUSTER_UNREACHABLE, result.stderr
    assert "Traceback" in result.stderr
    assert "ConnectionRefusedError" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("swe-stream topics: cannot reach")


@pytest.mark.unit
@pytest.mark.parametrize(
    "argv",
    [["mine", "--once", "--source", "HOUR"], ["run"], ["worker"]],
    ids=lambda argv: argv[0],
)
def test_a_taken_metrics_port_is_one_line_and_exit_4_before_any_broker(
    argv: list[str], hour_file: Path, taken_port: int
) -> None:
    argv = [str(hour_file) if a == "HOUR" else a for a in argv]
    # no --bootstrap: a check made after the embedded broker started would log it (INFO)
    result = run([*argv, "--metrics-port", str(taken_port)])
    one_line(result, ExitCode.PORT_IN_USE, f"port {taken_port}", "--metrics-port")


@pytest.mark.unit
@pytest.mark.parametrize("command", ["mine", "ingest", "run"])
@pytest.mark.parametrize("flag", ["--from", "--to"])
def test_a_bad_hour_is_one_line_and_exit_2_before_any_broker(command: str, flag: str) -> None:
    hours = ["--from", "2025-13-01T00"] if flag == "--from" else ["--from", "2025-01-01T00"]
    if flag == "--to":
        hours += ["--to", "2025-01-01T25"]
    extra = {"mine": ["--once", "--metrics-port", "0"], "run": ["--metrics-port", "0"]}
    result = run([command, *extra.get(command, []), *hours])
    one_line(result, ExitCode.USAGE, "hour", flag, hours[-1])


@pytest.mark.unit
def test_a_missing_source_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "2015-01-01-0.json.gz"
    result = run(["ingest", "--source", str(missing)])
    one_line(result, ExitCode.USAGE, "--source", str(missing))


@pytest.mark.docker
def test_images_base_without_debootstrap_is_one_line_and_exit_5(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    path = f"{empty}{os.pathsep}{Path(SWE_STREAM).parent}"
    # a tag that does not exist, so that the command has to build it
    tag = "swe-stream/test-no-debootstrap:never"
    result = run(["images", "base", "--tag", tag], env={"PATH": path}, timeout=120)
    one_line(result, ExitCode.MISSING_TOOL, "debootstrap", "install", "docker.base_image")


@pytest.mark.integration
def test_an_hour_cut_short_ends_partial_with_exit_7(hour_file: Path, tmp_path: Path) -> None:
    cut = tmp_path / hour_file.name  # named like the hour it holds: 2015-01-01-0.json.gz
    cut.write_bytes(hour_file.read_bytes()[:100_000])
    result = run(["ingest", "--source", str(cut), "--log-level", "error"], timeout=180)
    one_line(result, ExitCode.PARTIAL, "partial", "2015-01-01-0")
    assert "partial=1" in result.stdout, result.stdout


@pytest.mark.integration
def test_mine_over_an_hour_cut_short_ends_partial_with_exit_7(
    hour_file: Path, tmp_path: Path
) -> None:
    cut = tmp_path / hour_file.name
    cut.write_bytes(hour_file.read_bytes()[:100_000])
    env = {  # no GitHub here: each PR read fails at once, a failure, not a verdict
        "SWE_STREAM_GITHUB_API_URL": "http://127.0.0.1:1",
        "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
        "SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / "data"),
    }
    argv = ["mine", "--once", "--source", str(cut), "-o", str(tmp_path / "out")]
    result = run(
        [*argv, "--metrics-port", "0", "--no-live", "--log-level", "error"], env=env, timeout=300
    )
    one_line(result, ExitCode.PARTIAL, "partly read", "2015-01-01-0", "--force")
    assert "2015-01-01-0 partial" in result.stdout, result.stdout


@pytest.mark.unit
def test_a_repository_that_cannot_be_cloned_is_one_line_and_exit_6(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    from streams.evaluation.taskdir import dataset_to_task_dirs, read_dataset

    row = json.loads((fixtures_dir / "swebench" / "swe-bench-lite-5.json").read_text())[0]
    dataset = tmp_path / "row.jsonl"
    dataset.write_text(json.dumps(row) + "\n", encoding="utf-8")
    dataset_to_task_dirs(read_dataset(dataset), tmp_path / "tasks")
    nowhere = (tmp_path / "no-such-remote").as_uri() + "/{owner}/{repo}.git"
    env = {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": nowhere,
        "SWE_STREAM_EXTRACT_REPOS_DIR": str(tmp_path / "repos"),
    }
    result = run(["validate", "-i", str(tmp_path / "tasks")], env=env, timeout=120)
    one_line(result, ExitCode.DEPENDENCY_FAILED, "clone", "repository", "no-such-remote")


@pytest.mark.unit
def test_exit_codes_are_distinct() -> None:
    assert len({int(code) for code in ExitCode}) == len(ExitCode)
