"""CTest's results, from its JUnit report (``ctest --output-junit``, CMake 3.21 and later) or
its console where the CMake is older. A test's id is its CTest name: ``plain_check`` for an
``add_test``, ``Suite.Case`` (``Small/Param.Positive/1``) for each case a framework's
discovery (``gtest_discover_tests``, ``catch_discover_tests``, ``doctest_discover_tests``)
registered.

Statuses: passed; failed (a failure, a timeout, an exception such as a segmentation fault);
skipped (the test skipped itself: ``SKIP_RETURN_CODE`` / ``SKIP_REGULAR_EXPRESSION``, or it is
disabled). A test CTest could not run (its executable did not build: a test patch that does
not compile without the fix) has no result, as a Go package that did not compile has none:
the three runs then tell an old test of that binary (it passed at the base) from a new one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import (
    case_status,
    local,
    record,
    report_root,
    testcases,
)
from streams.evaluation.recipes.languages.cpp.case_lines import case_statuses
from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR

__all__ = [
    "check_arguments",
    "ctest_statuses",
    "parse_ctest_console",
    "parse_ctest_junit",
    "running_when_killed",
]

_RESULT = re.compile(
    r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(?P<name>.+?)\s+\.*\s*(?P<outcome>(?:\*\*\*)?[A-Z][^.]*?)"
    r"\s+[\d.]+\s+sec\s*$",
    re.MULTILINE,
)
COULD_NOT_START = "Unable to find executable"
_START = re.compile(r"^\s*Start\s+\d+:\s+(?P<name>.+?)\s*$", re.MULTILINE)


def parse_ctest_junit(data: str | bytes) -> dict[str, TestStatus]:
    """Per-test statuses from CTest's JUnit report (ValueError when it is none)."""
    return ctest_statuses(report_root(data, "CTest JUnit report"))


def ctest_statuses(root: ElementTree.Element) -> dict[str, TestStatus]:
    """Per-test statuses of a CTest JUnit report's root."""
    statuses: dict[str, TestStatus] = {}
    for case in testcases(root):
        name = case.get("name")
        if not name:
            continue
        status = case_status(case)
        ran = case.get("status", "run")
        if ran == "disabled":
            status = "skipped"
        elif status == "passed" and ran == "fail":
            status = "failed"
        elif ran == "notrun" and (status == "passed" or _could_not_start(case)):
            continue  # not skipped by itself: it could not run
        record(statuses, name, status)
        # a suite's own runner CTest runs whole, printing a line per case: each case too
        for case_name, case_result in case_statuses(_output(case)).items():
            record(statuses, f"{name}{SEPARATOR}{case_name}", case_result)
    return statuses


def _output(case: ElementTree.Element) -> str:
    return "".join(
        child.text or "" for child in case if local(child.tag) in ("system-out", "system-err")
    )


def _could_not_start(case: ElementTree.Element) -> bool:
    """Whether CTest could not start the test (its executable was not built), which it
    writes as a skip."""
    return any(
        local(child.tag) == "skipped" and (child.get("message") or "").startswith(COULD_NOT_START)
        for child in case
    )


def _outcome(text: str) -> TestStatus | None:
    outcome = text.removeprefix("***")
    if outcome == "Passed":
        return "passed"
    if outcome.startswith("Skipped") or outcome.startswith("Not Run (Disabled)"):
        return "skipped"
    if outcome.startswith("Not Run"):
        return None  # it could not run: no result
    return "failed"  # Failed, Timeout, Exception: SegFault, ...


def parse_ctest_console(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from CTest's console lines (``1/9 Test #1: name ....   Passed``)."""
    statuses: dict[str, TestStatus] = {}
    for found in _RESULT.finditer(output):
        status = _outcome(found.group("outcome"))
        if status is not None:
            record(statuses, found.group("name"), status)
    return statuses


def running_when_killed(output: str) -> str | None:
    """The test a killed run was in: the last one started without its result line."""
    done = set(parse_ctest_console(output))
    started = [m.group("name") for m in _START.finditer(output)]
    return next((name for name in reversed(started) if name not in done), None)


def check_arguments(test_id: str) -> str:
    """CTest's arguments that run the one test ``test_id`` (an exact match of its name); for
    a case of a suite CTest runs whole (``<ctest name>::<case>``), the suite too, whose
    report names the case."""
    suite, separator, _ = test_id.partition(SEPARATOR)
    return "-R " + _quoted_regex([test_id, suite] if separator and suite else [test_id])


def _quoted_regex(names: list[str]) -> str:
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", name) for name in names]
    pattern = "^" + (escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")") + "$"
    return "'" + pattern.replace("'", "'\\''") + "'"
