"""ava: its console output (``--verbose``) and its TAP (``--tap``, on stdout: the console is
the TAP then, kind ``ava-tap``, read by ``tap.parse_tap`` with every result a test).

ava names a test by a file title and its title joined with U+203A (``AVA_SEPARATOR``), the
file title being the file's path under the test directory without extension, left out when
one file runs: ids are that name with `` > `` for ava's separator (``math > adds``), not the
file's path from the repository root. Console lines: ``✔ name`` passed (a ``(123ms)`` suffix
dropped), ``✘ [fail]: name`` failed, ``- [skip] name`` and ``- [todo] name`` skipped. In the
TAP a todo is ``not ok ... # TODO``: skipped. ava prints a test when it ends:
``running_when_killed`` is None.
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.text import strip_ansi
from streams.evaluation.recipes.languages.javascript.runners import tap
from streams.evaluation.recipes.languages.javascript.runners.js import SEPARATOR, record

AVA_SEPARATOR = " \u203a "

_LINE = re.compile(
    r"^\s*(?:(?P<passed>[✔✓√])|(?P<failed>[✘✖\u00d7])\s+\[fail\]:?|-\s+\[(?P<skip>skip|todo)\])"
    r"\s+(?P<name>.*?)(?:\s+\(\d+(?:\.\d+)?m?s\))?\s*$"
)


def parse_ava_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``ava --verbose`` output, or from ``ava --tap``."""
    text = strip_ansi(output)
    if any(line.startswith("TAP version") for line in text.split("\n")):
        return parse_ava_tap(text.encode())
    statuses: dict[str, TestStatus] = {}
    for line in text.split("\n"):
        match = _LINE.match(line.rstrip("\r"))
        if match is None:
            continue
        status: TestStatus = (
            "passed" if match["passed"] else "failed" if match["failed"] else "skipped"
        )
        record(statuses, match["name"].replace(AVA_SEPARATOR, SEPARATOR), status)
    return statuses


def parse_ava_tap(data: bytes) -> dict[str, TestStatus]:
    """Per-test statuses from ``ava --tap``; ValueError when it holds no TAP."""
    text = data.decode(errors="replace")
    if "TAP version" not in text:
        raise ValueError("malformed ava TAP report: no TAP version line")
    found = tap.parse_tap(text, points_are_tests=True)
    return {test.replace(AVA_SEPARATOR, SEPARATOR): status for test, status in found.items()}


def running_when_killed(output: str) -> str | None:
    """None: ava prints no test before it ends."""
    return None
