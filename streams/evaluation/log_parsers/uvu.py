"""uvu: its console output only (uvu has no reporter). uvu prints, per test file, the file's
path (relative to the directory uvu was given), then per suite a line of one mark per test
(``•`` passed, ``✘`` failed) and counts, and for each failed test ``FAIL <suite> "<title>"``.

A passing or skipped test is never named, so only failed tests are read:
``<file> > <suite> > <title>`` (the file as uvu prints it: run ``uvu . <pattern>`` from the
repository root for paths from the root; a test of the default suite has no suite part).
A run that shows FAIL_TO_PASS needs a report uvu cannot write: a task's passing tests are
not known from uvu's output. ``running_when_killed`` is None.
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.js import record, test_id
from streams.evaluation.log_parsers.pytest import strip_ansi

_FILE = re.compile(r"^(?P<file>\S+\.[cm]?[jt]sx?)\s*$")
_FAIL = re.compile(r'^\s*FAIL\s+(?:(?P<suite>.*?)\s+)?"(?P<title>.*)"\s*$')


def parse_uvu_output(output: str) -> dict[str, TestStatus]:
    """The failed tests of a uvu run (the only ones it names)."""
    statuses: dict[str, TestStatus] = {}
    file: str | None = None
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        if found := _FILE.match(line):
            file = found["file"]
        elif failed := _FAIL.match(line):
            record(statuses, test_id(file, [failed["suite"] or "", failed["title"]]), "failed")
    return statuses


def running_when_killed(output: str) -> str | None:
    """None: uvu names no running test."""
    return None
