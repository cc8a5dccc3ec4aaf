"""GoogleTest's XML reports (``--gtest_output=xml``, or ``GTEST_OUTPUT=xml:<dir>/`` for every
binary a run starts): a case's id is ``<binary>::<Suite>.<Case>`` (``args-test::ArgsTest.
Basic``, ``calc_test::Small/Param.Positive/2``), for a CTest test that runs a whole GoogleTest
binary, whose cases CTest does not know one by one.

Statuses: a ``<failure>`` fails a case; ``result="skipped"`` (``GTEST_SKIP``) and a disabled
case (``status="notrun"``) are skipped; else it passed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import case_status, record, report_root, testcases

__all__ = ["case_id", "gtest_statuses", "parse_gtest_xml", "split_case_id"]

SEPARATOR = "::"


def case_id(binary: str, suite: str, case: str) -> str:
    return f"{binary}{SEPARATOR}{suite}.{case}"


def split_case_id(test_id: str) -> tuple[str, str] | None:
    """(binary, ``Suite.Case``) of a case id; None for a CTest name."""
    binary, separator, case = test_id.partition(SEPARATOR)
    if not separator or not binary or "." not in case:
        return None
    return binary, case


def parse_gtest_xml(data: str | bytes, binary: str) -> dict[str, TestStatus]:
    """Per-case statuses of one binary's report (ValueError when it is no such report)."""
    return gtest_statuses(report_root(data, "GoogleTest XML report"), binary)


def gtest_statuses(root: ElementTree.Element, binary: str) -> dict[str, TestStatus]:
    """Per-case statuses of a GoogleTest report's root, as ids of ``binary``."""
    statuses: dict[str, TestStatus] = {}
    for case in testcases(root):
        suite, name = case.get("classname", ""), case.get("name", "")
        if not suite or not name:
            continue
        status = case_status(case)
        if status == "passed" and (
            case.get("result") == "skipped" or case.get("status") == "notrun"
        ):
            status = "skipped"
        record(statuses, case_id(binary, suite, name), status)
    return statuses
