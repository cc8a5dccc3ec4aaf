"""``meson test``'s and Automake's ``make check`` console lines, read when a run left no report
(the runner's report, ``report.py``, is what a run is graded by).

* Meson: ``1/3 calc:unit / adds   OK   0.01s``, a test's name after its project and suites;
* Automake: ``PASS: test_crc``, ``FAIL: test_crc``, ... (names relative to their Makefile's
  directory, where the report has them from the tree's root);
* a plain Makefile's test target: the cases its suite's lines say (``case_lines``), after
  swe-ctest's line naming the target (its own result is its exit status, in the report).
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import record
from streams.evaluation.recipes.languages.cpp.case_lines import case_statuses
from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR

_MESON = re.compile(
    r"^\s*\d+/\d+\s+(?:\S+ / )?(?P<name>\S.*?)\s+"
    r"(?P<result>OK|FAIL|SKIP|EXPECTEDFAIL|UNEXPECTEDPASS|TIMEOUT|ERROR)\s+[\d.]+s",
    re.MULTILINE,
)
_AUTOMAKE = re.compile(
    r"^(?P<result>PASS|FAIL|XFAIL|XPASS|SKIP|ERROR): (?P<name>\S+)", re.MULTILINE
)
_MAKE_TARGET = re.compile(r"^swe-ctest: running make(?: -\S+)*(?: \d+)? (?P<target>\S+)$", re.M)
_STATUS: dict[str, TestStatus] = {
    "OK": "passed", "PASS": "passed", "EXPECTEDFAIL": "passed", "XFAIL": "passed",
    "SKIP": "skipped",
}  # fmt: skip


def _statuses(pattern: re.Pattern[str], output: str) -> dict[str, TestStatus]:
    statuses: dict[str, TestStatus] = {}
    for found in pattern.finditer(output):
        record(statuses, found.group("name"), _STATUS.get(found.group("result"), "failed"))
    return statuses


def parse_meson_console(output: str) -> dict[str, TestStatus]:
    """Per-test statuses of ``meson test``'s console."""
    return _statuses(_MESON, output)


def parse_automake_console(output: str) -> dict[str, TestStatus]:
    """Per-test statuses of Automake's parallel harness's console."""
    return _statuses(_AUTOMAKE, output)


def meson_running_when_killed(output: str) -> str | None:
    """Meson says a test when it ends, not when it starts: none is known to be running."""
    return None


def automake_running(output: str) -> str | None:
    """Automake says a test when it ends: none is known to be running."""
    return None


def parse_make_console(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of a plain Makefile's test target's output, as ``<target>::<case>``."""
    runs = list(_MAKE_TARGET.finditer(output))
    if not runs:
        return {}
    started = runs[-1]  # the last run's
    cases = case_statuses(output[started.end() :])
    return {f"{started.group('target')}{SEPARATOR}{name}": status for name, status in cases.items()}
