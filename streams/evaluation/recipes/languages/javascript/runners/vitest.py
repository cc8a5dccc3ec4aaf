"""vitest: its JSON report (``--reporter=json --outputFile=PATH``, kind ``vitest-json``: jest's
shape, read by ``jest.parse_jest_json``) and its console output (``--reporter=verbose``).

Ids: ``<file> > <describe blocks> > <title>``, which is how vitest itself writes a test on
its verbose lines: `` ✓ test/math.test.js > math > adds 2ms`` (``✓`` passed, a cross
(U+00D7) failed, ``↓`` skipped, ``□`` todo -> skipped), and on the ``FAIL test/... > ...``
lines of its failure summary. A line without `` > `` names a file (the default reporter's
``✓ test/a.test.ts (2 tests) 3ms``) and is not a test. vitest prints a test when it ends, so
``running_when_killed`` is None.
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.javascript.runners.js import SEPARATOR, record

_LINE = re.compile(r"^\s*(?P<mark>[✓\u00d7↓□✗√])\s+(?P<test>.+?)\s*$")
_FAIL = re.compile(r"^\s*FAIL\s+(?P<test>.+?)\s*$")
_SUFFIX = re.compile(r"(?:\s+\d+(?:\.\d+)?\s*m?s|\s+\[[^\]]*\])+$")
_MARK: dict[str, TestStatus] = {
    "✓": "passed",
    "√": "passed",
    "\u00d7": "failed",
    "✗": "failed",
    "↓": "skipped",
    "□": "skipped",
}


def parse_vitest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``vitest run --reporter=verbose`` console output."""
    statuses: dict[str, TestStatus] = {}
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        match = _LINE.match(line)
        status: TestStatus
        if match:
            status = _MARK[match["mark"]]
        elif failed := _FAIL.match(line):
            match, status = failed, "failed"
        else:
            continue
        test = _SUFFIX.sub("", match["test"])
        if SEPARATOR in test:
            record(statuses, test, status)
    return statuses


def running_when_killed(output: str) -> str | None:
    """None: vitest prints no test before it ends."""
    return None
