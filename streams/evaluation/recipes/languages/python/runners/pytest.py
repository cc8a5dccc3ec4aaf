"""pytest's text output -> per-test statuses.

Read from ``pytest -v -rA``, the summary winning where both speak of a test:

* the verbose line of each test: ``path::name PASSED [ 50%]``, with the reason pytest >= 7
  prints for skips and xfails (``SKIPPED (reason)``, ``XFAIL (reason)``), any progress style
  (``[ 50%]``, ``[ 3/16]``, a duration, none) and the ``<- defining/file.py`` of ``-vv``;
  pytest-xdist's form ``[gw0] [ 50%] PASSED path::name``; and, under ``-s``, a status printed
  on a line of its own (or glued to the test's own output) after the test's announcement;
* the short summary: ``FAILED path::name - reason``. ``SKIPPED [1] path:12: reason`` names no
  test and is ignored (a skip is read from its verbose line);
* subtests (pytest >= 9's built-in ``subtests`` / unittest ``subTest``, and the pytest-subtests
  plugin): ``path::name SUBFAILED[msg] (i=1)``, ``path::name [msg] (i=1) SUBFAIL``, their
  xdist and summary forms (``SUBFAILED[msg] (i=1) path::name - reason``). Subtests are not tests
  of their own: a test with a failed subtest is ``failed``, whatever its own line says (pytest
  reports a unittest test ``PASSED`` around its failed ``subTest``).

ANSI escapes (``--color=yes``) are removed first. A node id is a path (holding a ``.`` or a
``/``), ``::`` and names; its parameters (``[...]``) may hold spaces, `` - ``, ``::``,
brackets. Where a line goes on after the id (the summary's `` - reason``, a subtest's
description), the id is the longest id already seen on a verbose line that fits, else it ends
at the ``]`` matching its first ``[`` (at the first space when it has no parameters).

Not handled: pytest-subtests < 0.6 (subtests reported as ``PASSED``/``FAILED`` of
``path::name [msg]``); a unittest ``subTest`` failure under pytest 9 without ``-rA``/``-rf``
(its ``SUBFAILED`` line is captured, and the test's own line says ``PASSED``); ids whose
parameters hold unbalanced brackets and are seen only in the summary.

A run killed at its timeout ends with the test it was in announced but not finished.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi

_STATUS: dict[str, TestStatus] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}

_WORD = r"(?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"

# a node id's file path, up to its first "::": no space, not opening with a bracket or a
# parenthesis (a subtest's description does), and holding a "." or a "/" (so that a C++ or
# Rust path a test printed, ``std::vector``, is not taken for a test)
_PATH = r"(?=[^\s:]*[./])[^\s\[(:][^\s:]*::"

# the node id up to its parameters: path, "::", the names
_BASE = re.compile(_PATH + r"[^\s\[]*")

# the progress pytest writes at the end of a verbose line: "[ 50%]", "[ 3/16]" (count), a
# duration ("times": "1.424ms", "1m 3s")
_PROGRESS = (
    r"(?:\[\s*\d+%\]|\[\s*\d+\s*/\s*\d+\s*\]"
    r"|\d+(?:\.\d+)?(?:us|ms|s)|\d+m \d+s|\d+h \d+m)"
)

# the end of a verbose line after its status word: the skip/xfail reason, the progress
_AFTER_WORD = rf"(?:\s+\(.*\))?(?:\s+{_PROGRESS})?\s*$"

_VERBOSE = re.compile(rf"^(?P<test>{_PATH}.*?)(?:\s+<-\s+\S+)?\s+{_WORD}{_AFTER_WORD}")

# the status glued to the output a test printed under ``-s`` ("helloPASSED")
_GLUED = re.compile(rf"{_WORD}{_AFTER_WORD}")

# a status on a line of its own (``-s``: the test printed whole lines after its announcement)
_BARE = re.compile(rf"^{_WORD}{_AFTER_WORD}")

_SUMMARY = re.compile(rf"^{_WORD}\s+(?P<rest>{_PATH}.*)$")

# pytest-xdist: "[gw0] [ 50%] PASSED path::name" (progress absent with the classic style)
_XDIST = re.compile(rf"^\[gw\d+\]\s+(?:(?:\[[^\]]*\]|{_PROGRESS})\s+)?(?P<body>.*)$")

_XDIST_RESULT = re.compile(rf"^{_WORD}\s+(?P<test>{_PATH}.*?)(?:\s+<-\s+\S+)?\s*$")

# a subtest's word: pytest 9 "SUBFAILED[msg] (i=1)" (glued to its description), the plugin's
# "[msg] (i=1) SUBFAIL"; PASS/FAIL/SKIP/XFAIL with or without "ED"
_SUBTEST = re.compile(r"(?<!\S)SUB(?P<outcome>PASS|FAIL|SKIP|XFAIL)(?:ED)?(?=[\s\[(]|$)")

_PATH_START = re.compile(r"(?<!\S)" + _PATH)

_SPACE = re.compile(r"\s")


def _lines(output: str) -> Iterator[str]:
    for line in strip_ansi(output).split("\n"):
        yield line.removesuffix("\r")


class _KnownIds:
    """Ids seen whole (on verbose lines)."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._longest = 0

    def add(self, test: str) -> None:
        self._ids.add(test)
        self._longest = max(self._longest, len(test))

    def __contains__(self, test: object) -> bool:
        return test in self._ids

    def longest_prefix(self, text: str) -> str | None:
        """The longest known id ``text`` starts with, followed by its end or a space."""
        if not self._ids:
            return None
        ends = [match.start() for match in _SPACE.finditer(text, 0, self._longest + 1)]
        if len(text) <= self._longest:
            ends.append(len(text))
        for end in reversed(ends):
            if text[:end] in self._ids:
                return text[:end]
        return None


def _take_id(text: str, known: _KnownIds) -> tuple[str, str] | None:
    """Split ``text``, which starts with a node id, into the id and what follows it."""
    match = _BASE.match(text)
    if match is None:
        return None
    base = match.group()
    seen = known.longest_prefix(text)
    if seen is not None:
        return seen, text[len(seen) :]
    end = match.end()
    if not text.startswith("[", end):
        return base, text[end:]
    depth = 0
    for i in range(end, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return text[: i + 1], text[i + 1 :]
    last = text.rfind("]")  # unbalanced: up to the last bracket
    return (text[: last + 1], text[last + 1 :]) if last >= end else (base, text[end:])


def _id_after(text: str, known: _KnownIds) -> str | None:
    """The node id a subtest's summary or xdist line names after its description: the first
    known id there, else the first id-like word followed by the end, a space or " - "."""
    found: list[str] = []
    for match in _PATH_START.finditer(text):
        taken = _take_id(text[match.start() :], known)
        if taken is None:
            continue
        test, rest = taken
        if rest and not rest[0].isspace():
            continue
        if test in known:
            return test
        found.append(test)
    return found[0] if found else None


@dataclass
class _Scan:
    verbose: dict[str, TestStatus] = field(default_factory=dict)
    summary: dict[str, TestStatus] = field(default_factory=dict)
    failed_subtests: set[str] = field(default_factory=set)
    # announced and not finished, in the order of their (last) announcement
    pending: dict[str, None] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)

    def result(self, test: str, status: str) -> None:
        self.verbose[test] = _STATUS[status]
        self.finished.add(test)
        self.pending.pop(test, None)

    def announce(self, test: str) -> None:
        if test not in self.finished:
            self.pending.pop(test, None)
            self.pending[test] = None

    def subtest(self, test: str, outcome: str) -> None:
        """A subtest of ``test`` ended with ``outcome`` (a failed one fails its test); the test
        itself is still running."""
        if outcome == "FAIL":
            self.failed_subtests.add(test)
        self.announce(test)


def _known_ids(lines: list[str]) -> _KnownIds:
    known = _KnownIds()
    for line in lines:
        xdist = _XDIST.match(line)
        match = _XDIST_RESULT.match(xdist["body"]) if xdist else _VERBOSE.match(line)
        if match and not _SUBTEST.search(match["test"]):
            known.add(match["test"])
    return known


def _scan(output: str) -> _Scan:
    lines = list(_lines(output))
    known = _known_ids(lines)
    scan = _Scan()
    for line in lines:
        xdist = _XDIST.match(line)
        if xdist:
            _read_xdist(xdist["body"], scan, known)
        elif _BASE.match(line):
            _read_test_line(line, scan, known)
        elif summary := _SUMMARY.match(line):
            taken = _take_id(summary["rest"], known)
            if taken is not None and (not taken[1] or taken[1][0].isspace()):
                scan.summary[taken[0]] = _STATUS[summary["status"]]
        elif subtest := _SUBTEST.search(line):
            # a subtest in the summary: "SUBFAILED[msg] (i=1) path::name - reason" (pytest 9),
            # "[msg] (i=1) SUBFAIL path::name - reason" (pytest-subtests)
            if subtest["outcome"] == "FAIL":
                test = _id_after(line[subtest.end() :], known)
                if test is not None:
                    scan.failed_subtests.add(test)
        elif (bare := _BARE.match(line)) and scan.pending:
            scan.result(next(reversed(scan.pending)), bare["status"])
    return scan


def _read_xdist(body: str, scan: _Scan, known: _KnownIds) -> None:
    subtest = _SUBTEST.search(body)
    if subtest and not _BASE.match(body):
        # "SUBFAILED[msg] (i=1) path::name" (pytest 9), "[msg] (i=1) SUBFAIL path::name"
        test = _id_after(body[subtest.end() :], known)
        if test is not None:
            scan.subtest(test, subtest["outcome"])
        return
    match = _XDIST_RESULT.match(body)
    if match:
        scan.result(match["test"], match["status"])


def _read_test_line(line: str, scan: _Scan, known: _KnownIds) -> None:
    """A line opening with a node id: its verbose result, a subtest's, or its announcement."""
    taken = _take_id(line, known)
    if taken is None:
        return
    test, rest = taken
    subtest = _SUBTEST.search(rest)
    if subtest:
        scan.subtest(test, subtest["outcome"])
        return
    verbose = _VERBOSE.match(line)
    if verbose:
        scan.result(verbose["test"], verbose["status"])
        return
    glued = _GLUED.search(rest)
    if glued:  # ``-s``: the test's output, then its status
        scan.result(test, glued["status"])
        return
    scan.announce(test)


def parse_pytest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``pytest -v -rA`` output (the summary wins over the lines, and a
    failed subtest fails its test)."""
    scan = _scan(output)
    results = {**scan.verbose, **scan.summary}
    for test in scan.failed_subtests:
        results[test] = "failed"
    return results


def running_when_killed(output: str) -> str | None:
    """The test pytest had announced (``-v``) but not finished when the run was killed.

    The line holds the test id and no status; the shell may append its "Killed" notice. With
    pytest-xdist, where tests are announced before their results, the test announced last of
    those without a result."""
    pending = _scan(output).pending
    return next(reversed(pending)) if pending else None
