"""GoogleTest's XML report of a real run (``tests/data/cpp/gtest.xml``: the binary that CTest's
run in the same folder ran case by case) read as ``<binary>::<Suite.Case>`` ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.cpp.gtest import parse_gtest_xml, split_case_id

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "cpp"


def test_a_binarys_cases_with_the_statuses_ctest_gave_them() -> None:
    found = parse_gtest_xml((DATA / "gtest.xml").read_bytes(), "calc_test")
    assert found == {
        "calc_test::Calc.Adds": "failed",
        "calc_test::Calc.Multiplies": "passed",
        "calc_test::Calc.Skipped": "skipped",
        "calc_test::Fixture.Holds": "passed",
        # GoogleTest numbers a parameterized case; CTest's discovery names it by its value
        "calc_test::Small/Param.Positive/0": "passed",
        "calc_test::Small/Param.Positive/1": "passed",
        "calc_test::Small/Param.Positive/2": "failed",
    }
    assert split_case_id("calc_test::Small/Param.Positive/2") == (
        "calc_test", "Small/Param.Positive/2"
    )  # fmt: skip
    assert split_case_id("plain_check") is None and split_case_id("a::b") is None


def test_a_disabled_case_is_skipped() -> None:
    report = b"""<testsuites><testsuite name="S">
      <testcase name="DISABLED_x" status="notrun" result="suppressed" classname="S"/>
    </testsuite></testsuites>"""
    assert parse_gtest_xml(report, "b") == {"b::S.DISABLED_x": "skipped"}
