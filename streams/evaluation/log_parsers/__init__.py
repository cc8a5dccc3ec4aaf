"""Test-log parsers, one module per test runner, behind one registry (as SWE-bench's
``harness/log_parsers``): a recipe names its runner (``InstallRecipe.test_runner``) and the
validator reads the test command's output with that runner's parser.

A parser is two pure functions of the output: the per-test statuses, and the test a run was
inside when it was killed at its timeout (reported as ``error``). A new runner is a module
here and a line in ``LOG_PARSERS``.

A runner may also write a machine-readable report (pytest's JUnit XML): ``parse_report`` reads
one by its kind (``REPORT_PARSERS``; ``LogParser.report`` names the kind a runner writes), and
``merge_statuses`` (``combine``) merges it with the parsed log, the report winning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import junit, pytest, unittest
from streams.evaluation.log_parsers.combine import merge_statuses

__all__ = [
    "LOG_PARSERS",
    "REPORT_PARSERS",
    "LogParser",
    "log_parser",
    "merge_statuses",
    "parse_report",
]


@dataclass(frozen=True)
class LogParser:
    """How to read one test runner's output."""

    parse: Callable[[str], dict[str, TestStatus]]
    running_when_killed: Callable[[str], str | None]
    # the kind of machine-readable report the runner can write (a key of REPORT_PARSERS), if
    # any: for pytest, ``--junitxml=PATH`` (``-o junit_family=xunit1`` keeps each test's file)
    report: str | None = None


LOG_PARSERS: dict[str, LogParser] = {
    "pytest": LogParser(pytest.parse_pytest_output, pytest.running_when_killed, report="junit"),
    "unittest": LogParser(unittest.parse_unittest_output, unittest.running_when_killed),
}

# machine-readable reports by kind: the report's bytes -> per-test statuses (ValueError when
# the report is malformed or refused)
REPORT_PARSERS: dict[str, Callable[[bytes], dict[str, TestStatus]]] = {
    "junit": junit.parse_junit_xml,
}


def log_parser(runner: str) -> LogParser:
    """The parser registered for ``runner``; ValueError naming the known ones otherwise."""
    try:
        return LOG_PARSERS[runner]
    except KeyError:
        raise ValueError(
            f"no log parser for test runner {runner!r}; known: {sorted(LOG_PARSERS)}"
        ) from None


def parse_report(kind: str, data: bytes) -> dict[str, TestStatus]:
    """Per-test statuses from a report of ``kind`` (``"junit"``); ValueError for an unknown
    kind (naming the known ones) or a report that does not parse."""
    try:
        parser = REPORT_PARSERS[kind]
    except KeyError:
        raise ValueError(
            f"no parser for report kind {kind!r}; known: {sorted(REPORT_PARSERS)}"
        ) from None
    return parser(data)
