"""``python -m unittest -v`` output -> per-test statuses, keyed by pytest-style node ids.

A test is announced as ``test_y (tests.test_a.TestX.test_y)`` (Python >= 3.11; older Pythons
print ``(tests.test_a.TestX)``), followed by `` ... `` and its outcome: ``ok``, ``FAIL``,
``ERROR``, ``skipped 'reason'``, ``expected failure``, ``unexpected success``. A test with a
docstring has its first line on a line of its own before the `` ... ``. The outcome may come
lines later when the test printed output, or never: with failed subtests Python >= 3.11
prints each as an indented ``  test_y (...) (i=2) ... FAIL`` line and nothing for the test,
older Pythons print nothing, the next test's announcement following on the same line. After
the run, a ``FAIL: test_y (...)`` / ``ERROR: ...`` block for each failure, with the subtest's
description after it (``FAIL: test_y (tests.test_a.TestX.test_y) (i=2)``).

Statuses: ok -> passed, FAIL -> failed, ERROR -> error, skipped and expected failure ->
skipped (as pytest's xfail), unexpected success -> failed (unittest counts the run failed,
and so does pytest running the same test). The blocks win over the verbose lines; a test with
a failed subtest (FAIL or ERROR) is failed; a test whose only outcome is a skipped subtest is
skipped.

Ids are those pytest gives the same tests, so that both runners' results compare: module
``tests.test_a``, class ``TestX``, method ``test_y`` -> ``tests/test_a.py::TestX::test_y``
(module paths relative to the directory unittest ran from, as pytest's to its rootdir). The
class is the last dotted segment, with the segments before it that start with an uppercase
letter (nested classes). Errors of ``setUpClass``/``setUpModule`` (and their tearDowns) and
modules that failed to import (``unittest.loader._FailedTest``) name no test and are left out:
the tests they prevented are not listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.python.runners.junit import dotted_path_and_classes

_OUTCOME = r"(?:ok|FAIL|ERROR|skipped (?:'.*'|\".*\")|expected failure|unexpected success)"

_OUTCOME_LINE = re.compile(rf"^{_OUTCOME}$")

# "name (module.Class[.name])" and what follows it on the line
_HEADER = re.compile(r"^(?P<indent> *)(?P<name>\w+) \((?P<dotted>\w+(?:\.\w+)+)\)(?P<tail>.*)$")

# a test announced right after the previous one's " ... " (Python < 3.11, failed subtests)
_NEXT_HEADER = re.compile(r"^(?P<name>\w+) \((?P<dotted>\w+(?:\.\w+)+)\)(?: \.\.\. .*)?$")

# a subtest line's end (its description may hold anything, " ... " too)
_SUBTEST_END = re.compile(rf"^(?P<description>.*) \.\.\. (?P<outcome>{_OUTCOME})$")

_BLOCK = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\w+) "
    r"\((?P<dotted>\w+(?:\.\w+)+)\)(?P<subtest> .+)?$"
)

_RAN = re.compile(r"^Ran \d+ tests? in ")

_SEPARATOR = "=" * 70

_FIXTURES = frozenset({"setUpClass", "tearDownClass", "setUpModule", "tearDownModule"})

_SEP = " ... "

# the test (None when it names no test) whose docstring line comes next, and whether it is a
# subtest; None when no docstring line is expected
_Described = tuple[str | None, bool] | None


def node_id(name: str, dotted: str) -> str | None:
    """The pytest node id of unittest's ``name (dotted)``; None for a class or module fixture
    or a module that failed to import."""
    if name in _FIXTURES:
        return None
    qualified = dotted.removesuffix("." + name)  # Python >= 3.11 appends the method
    if "_FailedTest" in qualified.split(".") or qualified.startswith("unittest.loader."):
        return None
    path, classes = dotted_path_and_classes(qualified, min_classes=1)
    return "::".join([path, *classes, name])


def _status(outcome: str) -> TestStatus:
    if outcome == "ok":
        return "passed"
    if outcome == "ERROR":
        return "error"
    if outcome in ("FAIL", "unexpected success"):
        return "failed"
    return "skipped"  # skipped '...', expected failure


@dataclass
class _Scan:
    lines: dict[str, TestStatus] = field(default_factory=dict)
    blocks: dict[str, TestStatus] = field(default_factory=dict)
    failed_subtests: set[str] = field(default_factory=set)
    skipped_subtests: set[str] = field(default_factory=set)
    seen: dict[str, None] = field(default_factory=dict)  # every id, in order
    # the test announced last, and whether it is still running as far as the output tells
    last: str | None = None
    running: bool = False
    # the test announced with " ... " and no outcome yet (its output came first)
    pending: str | None = None

    def announce(self, test: str) -> None:
        self.seen[test] = None
        self.last, self.running, self.pending = test, True, test

    def outcome(self, test: str, outcome: str) -> None:
        self.seen[test] = None
        self.lines[test] = _status(outcome)
        if test == self.last:
            self.running = False
        self.pending = None

    def subtest(self, test: str, outcome: str) -> None:
        self.seen[test] = None
        if outcome in ("FAIL", "ERROR"):
            self.failed_subtests.add(test)
        elif outcome.startswith("skipped"):
            self.skipped_subtests.add(test)

    def block(self, test: str, kind: str, subtest: bool) -> None:
        self.seen[test] = None
        if subtest:
            self.failed_subtests.add(test)
            return
        status: TestStatus = "error" if kind == "ERROR" else "failed"
        if self.blocks.get(test) != "failed":
            self.blocks[test] = status

    def results(self) -> dict[str, TestStatus]:
        results: dict[str, TestStatus] = {}
        for test in self.seen:
            if test in self.failed_subtests:
                results[test] = "failed"
            elif test in self.blocks:
                results[test] = self.blocks[test]
            elif test in self.lines:
                results[test] = self.lines[test]
            elif test in self.skipped_subtests:
                results[test] = "skipped"
        return results


def _scan(output: str) -> _Scan:
    scan = _Scan()
    described: _Described = None
    for raw in strip_ansi(output).split("\n"):
        line = raw.removesuffix("\r")
        if described is not None:
            described = _read_description(line, *described, scan)
            continue
        block = _BLOCK.match(line)
        if block:
            test = node_id(block["name"], block["dotted"])
            if test is not None:
                scan.block(test, block["kind"], block["subtest"] is not None)
            scan.running, scan.pending = False, None
            continue
        if line == _SEPARATOR or _RAN.match(line):
            scan.running, scan.pending = False, None
            continue
        header = _HEADER.match(line)
        if header:
            described = _read_header(header, scan)
            continue
        if scan.pending is not None and _OUTCOME_LINE.match(line.strip()):
            scan.outcome(scan.pending, line.strip())
    return scan


def _read_header(header: re.Match[str], scan: _Scan) -> _Described:
    """Read an announcement; returns the test when its docstring line comes next."""
    test = node_id(header["name"], header["dotted"])
    tail = header["tail"]
    if header["indent"]:  # a subtest (Python >= 3.11): "  test_y (...) (i=1) ... FAIL"
        end = _SUBTEST_END.match(tail)
        if end is None:
            return test, True  # "  test_y (...) (i=1)", then "docstring ... FAIL"
        if test is not None:
            scan.subtest(test, end["outcome"])
        return None
    if test is not None:
        scan.announce(test)
    if not tail:
        return test, False
    if tail.startswith(_SEP):
        return _read_rest(test, tail[len(_SEP) :], scan)
    return None


def _read_rest(test: str | None, rest: str, scan: _Scan) -> _Described:
    """What follows a test's " ... ": its outcome, the next test (and what follows it), or the
    test's own output."""
    while True:
        if _OUTCOME_LINE.match(rest.strip()):
            if test is not None:
                scan.outcome(test, rest.strip())
            else:
                scan.pending = None
            return None
        following = _NEXT_HEADER.match(rest)
        if following is None:
            return None
        test = node_id(following["name"], following["dotted"])
        if test is not None:
            scan.announce(test)
        after = rest[following.end("dotted") + 1 :]
        if not after:
            return test, False  # its docstring line comes next
        rest = after[len(_SEP) :]


def _read_description(line: str, test: str | None, is_subtest: bool, scan: _Scan) -> _Described:
    """The docstring line after an announcement: "First line ... ok" (the docstring may hold
    " ... " itself, or be followed by the next test's announcement on Python < 3.11)."""
    cuts = [match.start() for match in re.finditer(re.escape(_SEP), line)]
    if not is_subtest:
        for cut in cuts:
            rest = line[cut + len(_SEP) :]
            if _NEXT_HEADER.match(rest):
                return _read_rest(test, rest, scan)
    for cut in reversed(cuts):
        rest = line[cut + len(_SEP) :].strip()
        if _OUTCOME_LINE.match(rest):
            if test is not None and is_subtest:
                scan.subtest(test, rest)
            elif test is not None:
                scan.outcome(test, rest)
            break
    return None


def parse_unittest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``python -m unittest -v`` output."""
    return _scan(output).results()


def running_when_killed(output: str) -> str | None:
    """The test unittest had announced but not finished when the run was killed: the last one
    announced, when no outcome of it and no report of the finished run followed."""
    scan = _scan(output)
    return scan.last if scan.running else None
