"""Test-log parsers, one module per test runner, behind one registry (as SWE-bench's
``harness/log_parsers``): a recipe names its runner (``InstallRecipe.test_runner``) and the
validator reads the test command's output with that runner's parser.

A parser is two pure functions of the output: the per-test statuses, and the test a run was
inside when it was killed at its timeout (reported as ``error``). A new runner is a module
here and a line in ``LOG_PARSERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import pytest


@dataclass(frozen=True)
class LogParser:
    """How to read one test runner's output."""

    parse: Callable[[str], dict[str, TestStatus]]
    running_when_killed: Callable[[str], str | None]


LOG_PARSERS: dict[str, LogParser] = {
    "pytest": LogParser(pytest.parse_pytest_output, pytest.running_when_killed),
}


def log_parser(runner: str) -> LogParser:
    """The parser registered for ``runner``; ValueError naming the known ones otherwise."""
    try:
        return LOG_PARSERS[runner]
    except KeyError:
        raise ValueError(
            f"no log parser for test runner {runner!r}; known: {sorted(LOG_PARSERS)}"
        ) from None
