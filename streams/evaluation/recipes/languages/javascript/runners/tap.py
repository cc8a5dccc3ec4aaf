"""TAP (Test Anything Protocol, versions 13 and 14, with subtests) -> per-test statuses: the
output of node-tap (runner ``tap``, report kind ``tap``), and read by the parsers of node's
``--test`` (``node``) and ava's ``--tap`` (``ava``).

A result line ``ok N - name [# SKIP|TODO ...]`` / ``not ok N - name`` sits at its subtest's
indentation (four spaces a level); ``# Subtest: name`` announces a subtest before its lines;
the YAML block after a result (``---`` ... ``...``) is skipped. A test's id is the names of
the subtests it is in, then its own, joined by `` > `` (``runners.js``):
node-tap's top level subtests are the test files, so its ids are ``<file> > <names>``.

Only leaves are tests: a result whose subtest held other tests is a suite, left out --
unless it made assertions of its own beside them (a loop of ``t.equal`` at a file's top
beside one ``t.test``), which are a test under the
suite's id, failed when one of them failed; or it failed with no failed test inside (a
failing hook, a file that threw), which is its ``error``. ``ok`` -> passed, ``not ok`` ->
failed, a ``# SKIP`` or ``# TODO`` directive -> skipped. With ``points_are_tests`` False
(node-tap) a result no ``# Subtest:`` announced is an assertion of its test, not a test (a
skipped one is still a skipped test: node-tap announces no skipped subtest). A run killed at
its timeout was inside the innermost subtest announced and not ended
(``running_when_killed``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.javascript.runners.js import SEPARATOR, record

_RESULT = re.compile(
    r"^(?P<indent>\s*)(?P<ok>not ok|ok)\b(?:\s+\d+)?(?:\s*-)?\s*(?P<name>.*?)"
    r"(?:\s+#\s*(?P<directive>[A-Za-z]+)\b.*)?\s*$"
)
_SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest:\s?(?P<name>.*?)\s*$")
_TIME = re.compile(r"\s+#\s*time=\S+$")


@dataclass
class _Frame:
    name: str
    depth: int
    has_tests: bool = False
    failed_inside: bool = False
    assertions: int = 0  # its own assertions (results no subtest announced)
    assertion_failed: bool = False


@dataclass
class _Scan:
    statuses: dict[str, TestStatus] = field(default_factory=dict)
    open: list[_Frame] = field(default_factory=list)


def _depth(indent: str) -> int:
    return len(indent.expandtabs(4)) // 4


def _scan(output: str, points_are_tests: bool, rename: str | None = None) -> _Scan:
    scan = _Scan()
    in_yaml: int | None = None
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        if in_yaml is not None:
            if line.strip() == "..." and len(line) - len(line.lstrip()) <= in_yaml:
                in_yaml = None
            continue
        if line.strip() == "---":
            in_yaml = len(line) - len(line.lstrip())
            continue
        subtest = _SUBTEST.match(line)
        if subtest:
            depth = _depth(subtest["indent"])
            while scan.open and scan.open[-1].depth >= depth:
                scan.open.pop()
            scan.open.append(_Frame(subtest["name"], depth))
            continue
        result = _RESULT.match(line)
        if result:
            _result(scan, result, points_are_tests, rename)
    return scan


def _result(scan: _Scan, result: re.Match[str], points_are_tests: bool, rename: str | None) -> None:
    depth = _depth(result["indent"])
    name = _TIME.sub("", result["name"])
    directive = (result["directive"] or "").upper()
    while scan.open and scan.open[-1].depth > depth:
        scan.open.pop()
    frame = scan.open[-1] if scan.open and scan.open[-1].depth == depth else None
    if frame is not None and frame.name != name:
        frame = None
    if frame is None and not points_are_tests and directive not in ("SKIP", "TODO"):
        if scan.open:  # an assertion of the enclosing test
            scan.open[-1].assertions += 1
            scan.open[-1].assertion_failed |= result["ok"] == "not ok"
        return
    if frame is not None:
        scan.open.pop()
    parents = scan.open
    status: TestStatus = "failed" if result["ok"] == "not ok" else "passed"
    if directive in ("SKIP", "TODO"):
        status = "skipped"
    names = [parent.name for parent in parents] + [name]
    if rename is not None:
        names = [part.replace(rename, SEPARATOR) for part in names]
    for parent in parents:
        parent.has_tests = True
        if status == "failed" or (frame is not None and frame.failed_inside):
            parent.failed_inside = True
    test = SEPARATOR.join(names)
    if frame is not None and frame.has_tests:
        if frame.assertions:  # a suite's own assertions beside its tests: a test of its own
            record(scan.statuses, test, "failed" if frame.assertion_failed else "passed")
        elif status == "failed" and not frame.failed_inside:
            record(scan.statuses, test, "error")
        return
    record(scan.statuses, test, status)


def parse_tap(output: str | bytes, points_are_tests: bool = False) -> dict[str, TestStatus]:
    """Per-test statuses from TAP output (node-tap's, by default)."""
    text = output.decode(errors="replace") if isinstance(output, bytes) else output
    return _scan(text, points_are_tests).statuses


def parse_tap_report(data: bytes) -> dict[str, TestStatus]:
    """A TAP report (node-tap's ``--reporter=tap``, node's ``--test-reporter=tap``); ValueError
    when it holds no TAP (no ``TAP version`` line, no result line)."""
    text = data.decode(errors="replace")
    lines = strip_ansi(text).split("\n")
    if not any(line.strip().startswith("TAP version") for line in lines) and not any(
        _RESULT.match(line) for line in lines
    ):
        raise ValueError("malformed TAP report: no TAP version line and no result line")
    return parse_tap(text)


def running_when_killed(output: str, points_are_tests: bool = False) -> str | None:
    """The innermost subtest announced and not ended, None when none is open."""
    frames = _scan(output, points_are_tests).open
    return SEPARATOR.join(frame.name for frame in frames) if frames else None
