"""Surefire's XML reports, as swe-mvn-test prints them into a run's log, -> per-test statuses.

A test's id is ``<classname>#<name>`` of its ``<testcase>``: the fully qualified class
(``org.demo.ParserTest``, a JUnit 5 ``@Nested`` class as ``org.demo.ParserTest$Empty``) and the
method as Surefire names it (``parses``; a parameterized case ``converts(int, int)[2]``, JUnit
4's ``converts[2]``), so every case of a parameterized test is a test of its own.

A status from a testcase's children: ``<failure>`` -> failed, ``<error>`` -> error,
``<skipped>`` -> skipped, else passed (``<flakyFailure>`` and ``<flakyError>``: failed, then
passed when Surefire ran it again: passed). A testcase written twice (a class run twice in one
build) keeps its worst status. Each report is read by the XML loader (``defusedxml``: no
DOCTYPE, no entity); a malformed one is passed over, its tests then have no status.
"""

from __future__ import annotations

import re

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import case_status, record, report_root, testcases

PREFIX = "swe-mvn-test: "
REPORT = f"{PREFIX}report "
END = f"{PREFIX}end of report"
DID_NOT_COMPILE = f"{PREFIX}did not compile "
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # Maven 3.8's console resets its colours at exit
_RUNNING = re.compile(r"^\[INFO\] Running (\S+)\s*$")
_RAN = re.compile(r"Tests run: \d+.* (?:-|in) (\S+)\s*$")


def reports_in(output: str) -> list[tuple[str, str]]:
    """(path, XML) of each report printed in ``output``."""
    found: list[tuple[str, str]] = []
    path: str | None = None
    lines: list[str] = []
    for line in output.splitlines():
        if path is None:
            line = _plain(line)
            if line.startswith(REPORT):
                path, lines = line[len(REPORT) :].strip(), []
        elif _plain(line).startswith(END):
            found.append((path, "\n".join(lines)))
            path = None
        else:
            lines.append(line)
    return found


def _plain(line: str) -> str:
    return _ANSI.sub("", line)


def test_id(classname: str, name: str) -> str:
    return f"{classname}#{name}"


def split_id(test_id: str) -> tuple[str, str]:
    """(class, method) of an id; ValueError when it is none."""
    classname, hash_, method = test_id.partition("#")
    if not hash_ or not classname or not method or "/" in classname or " " in classname:
        raise ValueError(f"not a Java test id: {test_id!r}")
    return classname, method


def parse_report(text: str | bytes) -> dict[str, TestStatus]:
    """The statuses of one Surefire report (ValueError when it is no JUnit XML report)."""
    root = report_root(text, "Surefire report")
    statuses: dict[str, TestStatus] = {}
    for case in testcases(root):
        classname, name = case.get("classname", ""), case.get("name", "")
        if classname and name:
            record(statuses, test_id(classname, name), case_status(case))
    return statuses


def parse_surefire_log(output: str) -> dict[str, TestStatus]:
    """Every test's status from the reports a run of swe-mvn-test printed."""
    statuses: dict[str, TestStatus] = {}
    for _, text in reports_in(output):
        try:
            found = parse_report(text)
        except ValueError:
            continue
        for test, status in found.items():
            record(statuses, test, status)
    return statuses


def running_when_killed(output: str) -> str | None:
    """The test class Surefire was running when the run was killed (its last ``Running``
    line without its ``Tests run: ... in`` summary)."""
    running: str | None = None
    for line in output.splitlines():
        started = _RUNNING.match(line)
        if started is not None:
            running = started.group(1)
            continue
        ended = _RAN.search(line)
        if ended is not None and ended.group(1) == running:
            running = None
    return running


def build_failures(output: str) -> dict[str, str]:
    """The modules (artifactIds) of a run that did not compile, with what the compiler said."""
    failures: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in map(_plain, output.splitlines()):
        if line.startswith(DID_NOT_COMPILE):
            current = failures.setdefault(line[len(DID_NOT_COMPILE) :].strip(), [])
        elif current is not None and line.startswith(f"{PREFIX}  "):
            current.append(line[len(PREFIX) :].strip())
        else:
            current = None
    return {module: "\n".join(said) for module, said in failures.items()}
