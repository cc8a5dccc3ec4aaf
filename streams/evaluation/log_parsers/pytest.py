"""pytest's text output -> per-test statuses.

Read from ``pytest -v -rA``: the verbose line of each test (``path::name PASSED [ 50%]``) and
the short summary (``FAILED path::name - reason``), the summary winning where both speak of a
test. A run killed at its timeout ends with the test it was in announced but not finished.
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus

_STATUS: dict[str, TestStatus] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}


_VERBOSE = re.compile(
    r"^(?P<test>\S+::\S.*?)\s+(?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    r"(?:\s+\[\s*\d+%\])?\s*$",
    re.MULTILINE,
)


_SUMMARY = re.compile(
    r"^(?P<status>PASSED|FAILED|ERROR|XFAIL|XPASS)\s+(?P<test>\S+::\S+?)(?:\s+-\s.*)?$",
    re.MULTILINE,
)


_ANNOUNCED = re.compile(r"^(?P<test>\S+::\S+)(?P<rest>.*)$")


_STATUS_WORD = re.compile(r"\s(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def parse_pytest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``pytest -v -rA`` output (the summary wins over the lines)."""
    results: dict[str, TestStatus] = {}
    for match in _VERBOSE.finditer(output):
        results[match["test"]] = _STATUS[match["status"]]
    for match in _SUMMARY.finditer(output):
        results[match["test"]] = _STATUS[match["status"]]
    return results


def running_when_killed(output: str) -> str | None:
    """The test pytest had announced (``-v``) but not finished when the run was killed.

    The line holds the test id and no status; the shell may append its "Killed" notice."""
    last: tuple[str, str] | None = None
    for line in output.splitlines():
        match = _ANNOUNCED.match(line)
        if match:
            last = (match["test"], match["rest"])
    if last is None or _STATUS_WORD.search(last[1]):
        return None
    return last[0]
