"""The ``swe-stream`` console script."""

from __future__ import annotations

import subprocess

import pytest

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
