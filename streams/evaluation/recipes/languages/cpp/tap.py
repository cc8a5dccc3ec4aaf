"""The Test Anything Protocol (TAP 12/13/14) as a test binary prints it: ``ok 1 - name``,
``not ok 2 - name``, a ``# SKIP`` or ``# TODO`` directive after the description. A C project's
own test runner that CTest runs whole (one ``add_test`` for the suite) often speaks it; its
cases become tests of their own, ``<ctest name>::<description>``.

Only top-level lines count (a subtest's indented lines are its parent's detail); a line of
another kind is not TAP and is passed over."""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import record

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
