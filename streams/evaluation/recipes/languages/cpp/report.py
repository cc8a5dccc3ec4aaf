"""swe-ctest's report (``--report``): CTest's JUnit report and each GoogleTest binary's own in
one ``<swe-ctest>`` document, read into one set of statuses.

CTest's tests come first, by their CTest names. A GoogleTest binary's cases are added as
``<binary>::<Suite.Case>`` where CTest ran the binary whole (one ``add_test`` for all its
cases); where CTest knows its cases one by one (``gtest_discover_tests``: a CTest test per
case, named ``Suite.Case``), they are CTest's already and are not added twice. A Catch2 or
doctest binary CTest or Meson ran whole, run again with its JUnit reporter, adds its cases as
``<test>::<case>`` (``unit_tests::parses a flag``; Catch2's sections ``case/section``).
"""

from __future__ import annotations

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import ROOTS, case_status, local, record, testcases
from streams.evaluation.recipes.languages.cpp.ctest import ctest_statuses
from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR, gtest_statuses, split_case_id
from streams.evaluation.recipes.sources.loaders import XmlRefused, parse_xml

__all__ = ["REPORT", "parse_swe_ctest_report"]

REPORT = "swe-ctest"  # the report kind (``LogParser.report``), and the document's root


def parse_swe_ctest_report(data: bytes) -> dict[str, TestStatus]:
    """Per-test statuses of a swe-ctest report (ValueError when it is none)."""
    try:
        root = parse_xml(data)
    except XmlRefused:
        raise ValueError("a swe-ctest report with a DOCTYPE or an ENTITY is refused") from None
    if local(root.tag) != REPORT:
        raise ValueError(f"not a swe-ctest report: root element <{local(root.tag)}>")
    statuses: dict[str, TestStatus] = {}
    for child in root:
        if local(child.tag) in ROOTS:
            statuses.update(ctest_statuses(child))
    for holder in root:
        test = holder.get("test")
        if local(holder.tag) == "cases" and test:
            for report in holder:
                for case in testcases(report):
                    if case.get("name"):
                        record(statuses, f"{test}{SEPARATOR}{case.get('name')}", case_status(case))
    cases: dict[str, dict[str, TestStatus]] = {}
    for holder in root:
        binary = holder.get("binary")
        if local(holder.tag) != "gtest" or not binary:
            continue
        for report in holder:
            for test, status in gtest_statuses(report, binary).items():
                record(cases.setdefault(binary, {}), test, status)
    for found in cases.values():
        names = {split[1] for test in found if (split := split_case_id(test)) is not None}
        if names and names <= statuses.keys():
            continue  # discovered: CTest ran each case as a test of its own
        for test, status in found.items():
            record(statuses, test, status)
    return statuses
