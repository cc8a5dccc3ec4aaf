"""node's built-in runner (``node --test``): its output is TAP when stdout is not a terminal
(node 20's default there; ``--test-reporter=tap`` asks for it anywhere) and its report is the
same TAP written to a file (``--test-reporter=tap --test-reporter-destination=PATH``, kind
``tap``), both read by ``tap.parse_tap``.

Every test and suite (``describe``/``it``/``test``, ``t.test`` subtests) is announced with
``# Subtest:``; ``# SKIP`` and ``# TODO`` are skipped. node 20's TAP names no file for a test
(and its ``junit`` reporter neither), so ids are the title path alone: ``math > nested >
multiplies``. A run killed at its timeout was in the innermost test announced and not ended.
"""

from __future__ import annotations

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import tap


def parse_node_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``node --test`` TAP output."""
    return tap.parse_tap(output)


def running_when_killed(output: str) -> str | None:
    """The innermost test announced (``# Subtest:``) and not ended."""
    return tap.running_when_killed(output)
