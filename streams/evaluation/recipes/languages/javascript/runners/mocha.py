"""mocha: its JSON report (``--reporter json --reporter-option output=PATH``, mocha >= 9; kind
``mocha-json``) and its default console output (the ``spec`` reporter).

Ids: ``<file> > <fullTitle>``: mocha's report gives each test its file and ``fullTitle``
(the suites and the title joined by one space, mocha's own name for a test), not its title
path. A failed hook (``"before all" hook for "x"``) is in ``failures`` only: ``error``.
``passes`` -> passed, ``failures`` -> failed, ``pending`` -> skipped.

mocha < 9 writes the JSON report to the console (it has no ``output`` option): the console
parser reads it there, ids with their file.

The spec reporter names no file: its ids are the ``fullTitle`` alone (so a run read from its
console does not share ids with one read from its report; with ``--reporter json`` the
console is empty). Its tree is indented two spaces per level: suites bare, ``✔ title``
passed (``✓`` on older mocha), ``N) title`` failed, ``- title`` pending, ending at the
``N passing`` line. mocha prints a test when it ends: ``running_when_killed`` is None.
"""

from __future__ import annotations

import json
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

_HOOK = re.compile(r'^"(?:before|after) (?:all|each)" hook')
_PASSED = re.compile(r"^(?P<indent>\s*)[✔✓]\s+(?P<title>.*?)(?:\s+\(\d+m?s\))?\s*$")
_FAILED = re.compile(r"^(?P<indent>\s*)\d+\)\s+(?P<title>.*?)\s*$")
_PENDING = re.compile(r"^(?P<indent>\s*)-\s+(?P<title>.*?)\s*$")
_END = re.compile(r"^\s*\d+ (?:passing|failing|pending)\b")


def parse_mocha_json(data: str | bytes, root: str = REPO_ROOT) -> dict[str, TestStatus]:
    """Per-test statuses from mocha's ``json`` reporter."""
    report = load_json_object(data, "mocha JSON")
    statuses: dict[str, TestStatus] = {}
    kinds: tuple[tuple[str, TestStatus], ...] = (
        ("passes", "passed"),
        ("pending", "skipped"),
        ("failures", "failed"),
    )
    for key, status in kinds:
        entries = report.get(key)
        if not isinstance(entries, list):
            raise ValueError(f"malformed mocha JSON report: no {key} list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("fullTitle"), str):
                raise ValueError("malformed mocha JSON report: a test without a fullTitle")
            file = entry.get("file")
            path = relative_path(file, root) if isinstance(file, str) else None
            title = str(entry.get("title", ""))
            final: TestStatus = "error" if key == "failures" and _HOOK.match(title) else status
            record(statuses, test_id(path, [entry["fullTitle"]]), final)
    return statuses


_JSON_REPORT = re.compile(r'^\{\s*"stats"\s*:', re.MULTILINE)


def parse_mocha_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from mocha's console: its ``json`` report where mocha < 9 printed it
    there (it ignores ``--reporter-option output=``; ids with their file), else its ``spec``
    output (ids without a file)."""
    if match := _JSON_REPORT.search(output):
        try:
            report, _ = json.JSONDecoder().raw_decode(output[match.start() :])
            return parse_mocha_json(json.dumps(report))
        except ValueError:
            pass  # not a whole report (cut at a timeout): the spec reader finds nothing either
    statuses: dict[str, TestStatus] = {}
    suites: list[tuple[int, str]] = []
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if _END.match(line):
            break
        indent = len(line) - len(line.lstrip())
        while suites and suites[-1][0] >= indent:
            suites.pop()
        status: TestStatus
        if match := _PASSED.match(line):
            status = "passed"
        elif match := _FAILED.match(line):
            status = "error" if _HOOK.match(match["title"]) else "failed"
        elif match := _PENDING.match(line):
            status = "skipped"
        else:
            suites.append((indent, line.strip()))
            continue
        full_title = " ".join([title for _, title in suites] + [match["title"]])
        record(statuses, full_title, status)
    return statuses


def running_when_killed(output: str) -> str | None:
    """None: mocha prints no test before it ends."""
    return None
