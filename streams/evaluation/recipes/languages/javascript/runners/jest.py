"""jest: its JSON report (``--json --outputFile=PATH``, kind ``jest-json``; vitest writes the
same shape, ``vitest-json``) and its console output (``--verbose``) -> per-test statuses.

Ids: ``<file> > <describe blocks> > <title>`` (``runners.js``). In the
report each file is ``testResults[].name`` (absolute), each test an ``assertionResults[]`` entry
(``ancestorTitles`` + ``title``); ``passed`` -> passed, ``failed`` -> failed, ``pending``,
``skipped``, ``todo``, ``disabled`` -> skipped. A file whose suite failed to run (syntax or
type error, failing import) has no test and a ``message``: the file alone, ``error``.

The console (jest writes it on stderr): a ``PASS path`` / ``FAIL path`` line per file, then its
tree, two spaces per level: describe blocks bare, tests behind ``✓`` (passed), ``✕`` (failed),
``○ skipped`` and ``✎ todo`` (skipped), with a ``(N ms)`` suffix; ``● Test suite failed to
run`` right after the header is the file's ``error``. jest prints a file's lines once the file
is done, so a run killed at its timeout names no running test (``running_when_killed`` is
None).
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.javascript.runners.js import (
    REPO_ROOT,
    load_json_object,
    record,
    relative_path,
    test_id,
)

_JSON_STATUS: dict[str, TestStatus] = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "passed",
}

_HEADER = re.compile(r"^\s*(?P<word>PASS|FAIL)\s+(?P<file>\S+)")
_LINE = re.compile(r"^(?P<indent>\s*)(?P<mark>[✓✕○✎√\u00d7])\s+(?P<rest>.*?)\s*$")
_DURATION = re.compile(r"\s+\(\d+(?:\.\d+)?\s*m?s\)$")
_MARK: dict[str, TestStatus] = {
    "✓": "passed",
    "√": "passed",
    "✕": "failed",
    "\u00d7": "failed",
    "○": "skipped",
    "✎": "skipped",
}


def parse_jest_json(data: str | bytes, root: str = REPO_ROOT) -> dict[str, TestStatus]:
    """Per-test statuses from jest's (or vitest's) ``--json`` report."""
    report = load_json_object(data, "jest JSON")
    files = report.get("testResults")
    if not isinstance(files, list):
        raise ValueError("malformed jest JSON report: no testResults list")
    statuses: dict[str, TestStatus] = {}
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ValueError("malformed jest JSON report: a testResults entry without a name")
        file = relative_path(entry["name"], root)
        tests = entry.get("assertionResults") or []
        if not isinstance(tests, list):
            raise ValueError("malformed jest JSON report: assertionResults is not a list")
        for test in tests:
            if not isinstance(test, dict) or not isinstance(test.get("title"), str):
                raise ValueError("malformed jest JSON report: a test without a title")
            ancestors = [str(title) for title in test.get("ancestorTitles") or []]
            status = _JSON_STATUS.get(str(test.get("status")), "error")
            record(statuses, test_id(file, [*ancestors, test["title"]]), status)
        if not tests and entry.get("status") == "failed":
            record(statuses, file, "error")
    return statuses


def parse_jest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``jest --verbose`` console output."""
    statuses: dict[str, TestStatus] = {}
    file: str | None = None
    suites: list[tuple[int, str]] = []  # (indent, describe title), innermost last
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        header = _HEADER.match(line)
        if header:
            file, suites = header["file"], []
            continue
        if file is None:
            continue
        if not line.strip():
            file = None  # the tree ends at the first blank line (the details follow)
            continue
        if line.strip() == "● Test suite failed to run":
            record(statuses, file, "error")
            file = None
            continue
        indent = len(line) - len(line.lstrip())
        while suites and suites[-1][0] >= indent:
            suites.pop()
        mark = _LINE.match(line)
        if mark is None:
            suites.append((indent, line.strip()))
            continue
        title = _DURATION.sub("", mark["rest"])
        if mark["mark"] == "○":
            title = title.removeprefix("skipped ")
        elif mark["mark"] == "✎":
            title = title.removeprefix("todo ")
        names = [name for _, name in suites] + [title]
        record(statuses, test_id(file, names), _MARK[mark["mark"]])
    return statuses


def running_when_killed(output: str) -> str | None:
    """None: jest prints no test before it ends."""
    return None
