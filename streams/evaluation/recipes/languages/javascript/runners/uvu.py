"""uvu: its console output only (uvu has no reporter). uvu prints, per test file, the file's
path (relative to the directory uvu was given; the recipe's command, which runs each file
with node, prints it before the file), then per suite a line of one mark per test (``•``
passed, ``✘`` failed) and counts, and for each failed test ``FAIL <suite> "<title>"``.

uvu names no passing test: the recipe makes the installed uvu print ``PASS_MARK`` and the
JSON list ``[suite, title]`` on a line of its own after each passing test
(``js_recipe.UVU_PASS_LINES``). Ids: ``<file> > <suite> > <title>`` (a test of the default
suite has no suite part). Without those lines only failed tests are read. A skipped test is
never named. ``running_when_killed`` is None.
"""

from __future__ import annotations

import json
import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.javascript.runners.js import record, test_id

PASS_MARK = "[swe-stream-uvu] pass"
_FILE = re.compile(r"^(?P<file>\S+\.[cm]?[jt]sx?)\s*$")
_PASSED = re.compile(r"^" + re.escape(PASS_MARK) + r" (?P<names>\[.*\])\s*$")
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
        elif (passed := _PASSED.match(line)) and (names := _names(passed["names"])):
            record(statuses, test_id(file, names), "passed")
    return statuses


def _names(text: str) -> list[str] | None:
    try:
        names = json.loads(text)
    except ValueError:
        return None
    ok = isinstance(names, list) and all(isinstance(n, str) for n in names)
    return names if ok else None


def running_when_killed(output: str) -> str | None:
    """None: uvu names no running test."""
    return None
