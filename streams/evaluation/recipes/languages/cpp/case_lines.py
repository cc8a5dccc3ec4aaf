"""The lines a C project's own test runner prints per case, when CTest runs it whole (one
``add_test`` for the suite): each case becomes a test of its own, ``<ctest name>::<case>``.

* the Test Anything Protocol (TAP 12/13/14): ``ok 1 - name``, ``not ok 2 - name``, a
  ``# SKIP`` or ``# TODO`` directive after the description; only top-level lines count (a
  subtest's indented lines are its parent's detail);
* Unity's (ThrowTheSwitch's C framework): ``tests/misc.c:47:name:PASS``, ``...:FAIL: why``,
  ``...:IGNORE``, the result maybe in a terminal colour;
* µnit's: ``/suite/case   [ OK    ] [ 0.0001 / 0.0001 CPU ]``, ``[ FAIL  ]``, ``[ ERROR ]``,
  ``[ SKIP  ]``;
* CUnit's verbose mode: ``  Test: session_recv ...passed``, ``...FAILED``;
* a check-mark line, as hand-written runners print them: ``✔ name``, ``✗ name - why``
  (``✓``, ``✘``, ``𐄂`` too), after the terminal colours are taken out.

A line of another kind is passed over."""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import record

_UNITY = re.compile(
    r"^[^:\n]+:\d+:(?P<name>[A-Za-z_]\w*):(?:\x1b\[\d+m)?(?P<result>PASS|FAIL|IGNORE)\b",
    re.MULTILINE,
)
_MUNIT = re.compile(r"^(?P<name>/\S+)\s+\[ (?P<result>OK|FAIL|ERROR|SKIP)\s*\]", re.MULTILINE)
# a terminal colour, its escape as CTest's report writes it too (not a character XML allows)
_COLOUR = re.compile(r"(?:\x1b|\[NON-XML-CHAR-0x1B\])\[[0-9;]*m")
# CUnit's verbose mode: ``  Test: session_recv ...passed`` (``...FAILED``, ``...skipped``)
_CUNIT = re.compile(
    r"^\s*Test: (?P<name>\S.*?) \.\.\.(?P<result>passed|FAILED|skipped)\b", re.MULTILINE
)
# a mark, the variation selector some print after it, then an identifier
_MARK = re.compile(
    r"^\s*(?P<result>[\u2714\u2713\u2718\u2717\U00010107])\ufe0e?\s+(?P<name>[A-Za-z_][\w.:]*)",
    re.MULTILINE,
)
_PASS_MARKS = {"\u2714", "\u2713"}
_LINE = re.compile(r"^(?P<not>not )?ok\b(?:\s+(?P<number>\d+))?(?:\s*-)?\s*(?P<rest>.*)$")


def anything_protocol_statuses(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of the TAP lines in ``output`` (by description; ``#<number>`` for a
    line without one)."""
    statuses: dict[str, TestStatus] = {}
    for count, line in enumerate(output.splitlines(), start=1):
        found = _LINE.match(line.rstrip("\r"))
        if found is None:
            continue
        description, _, directive = found.group("rest").partition(" # ")
        if not directive and found.group("rest").startswith("# "):
            description, directive = "", found.group("rest")[2:]
        name = description.strip() or f"#{found.group('number') or count}"
        word = directive.strip().split(" ", 1)[0].upper()
        if word == "SKIP":
            status: TestStatus = "skipped"
        elif word == "TODO":
            status = "passed"  # a known failure, said so: not this change's
        else:
            status = "failed" if found.group("not") else "passed"
        record(statuses, name, status)
    return statuses


def _result_lines(
    pattern: re.Pattern[str], output: str, passed: set[str], skipped: set[str]
) -> dict[str, TestStatus]:
    """Statuses of the lines ``pattern`` finds (its ``name`` and ``result``), colours out."""
    statuses: dict[str, TestStatus] = {}
    for found in pattern.finditer(_COLOUR.sub("", output)):
        result = found.group("result")
        status: TestStatus = (
            "passed" if result in passed else "skipped" if result in skipped else "failed"
        )
        record(statuses, found.group("name"), status)
    return statuses


def unity_statuses(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of Unity's result lines in ``output``."""
    return _result_lines(_UNITY, output, {"PASS"}, {"IGNORE"})


def munit_statuses(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of µnit's result lines in ``output``."""
    return _result_lines(_MUNIT, output, {"OK"}, {"SKIP"})


def cunit_statuses(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of CUnit's verbose result lines in ``output``."""
    return _result_lines(_CUNIT, output, {"passed"}, {"skipped"})


def check_mark_statuses(output: str) -> dict[str, TestStatus]:
    """Per-case statuses of the check-mark lines in ``output``."""
    return _result_lines(_MARK, output, _PASS_MARKS, set())


def case_statuses(output: str) -> dict[str, TestStatus]:
    """The cases a suite's output says, in whichever of the kinds above it speaks."""
    statuses = anything_protocol_statuses(output)
    for kind in (unity_statuses, munit_statuses, cunit_statuses, check_mark_statuses):
        for name, status in kind(output).items():
            record(statuses, name, status)
    return statuses
