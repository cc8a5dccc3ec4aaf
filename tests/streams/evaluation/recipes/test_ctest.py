"""CTest's results read from a real run (``tests/data/cpp``: a CMake project with a
GoogleTest binary whose cases are discovered, a skipped and a parameterized case, and two
plain ``add_test`` executables, one failing; CMake 3.25, GoogleTest 1.12 from Debian): the
JUnit report and the console agree test for test."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.cpp.ctest import (
    check_arguments,
    parse_ctest_console,
    parse_ctest_junit,
    running_when_killed,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "cpp"
EXPECTED = {
    "Calc.Adds": "failed",
    "Calc.Multiplies": "passed",
    "Calc.Skipped": "skipped",
    "Fixture.Holds": "passed",
    "Small/Param.Positive/1": "passed",
    "Small/Param.Positive/2": "passed",
    "Small/Param.Positive/-1": "failed",
    "plain_check": "passed",
    "plain_fails": "failed",
}


def test_the_junit_report_and_the_console_of_one_run_agree() -> None:
    assert parse_ctest_junit((DATA / "ctest-junit.xml").read_bytes()) == EXPECTED
    assert parse_ctest_console((DATA / "ctest.log").read_text()) == EXPECTED


@pytest.mark.parametrize(
    ("line", "status"),
    [
        ("4/9 Test #4: t_disabled .......***Not Run (Disabled)   0.00 sec", "skipped"),
        ("5/9 Test #5: t_missing ........***Not Run   0.00 sec", None),
        ("6/9 Test #6: t_slow ...........***Timeout   1.51 sec", "failed"),
        ("7/9 Test #7: t_crash ..........***Exception: SegFault  0.01 sec", "failed"),
        ("10/12 Test #10: a name with spaces ...   Passed    0.30 sec", "passed"),
    ],
)
def test_each_console_outcome(line: str, status: str | None) -> None:
    found = parse_ctest_console(line)
    if status is None:  # it could not run: no result
        assert found == {}
        return
    ((name, outcome),) = found.items()
    assert outcome == status and name.startswith(("t_", "a name"))


def test_a_test_that_could_not_run_has_no_result_and_a_disabled_one_is_skipped() -> None:
    report = b"""<testsuite>
      <testcase name="missing" status="notrun"/>
      <testcase name="unbuilt" status="notrun"><skipped message="Unable to find executable"/>
      </testcase>
      <testcase name="skips" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/></testcase>
      <testcase name="off" status="disabled"/>
      <testcase name="ok" status="run"/>
    </testsuite>"""
    assert parse_ctest_junit(report) == {"skips": "skipped", "off": "skipped", "ok": "passed"}
    with pytest.raises(ValueError, match="not a CTest JUnit report"):
        parse_ctest_junit(b"<html/>")


def test_the_test_a_killed_run_was_in() -> None:
    log = (DATA / "ctest.log").read_text()
    cut = log[: log.index("4/9 Test #4")]
    assert running_when_killed(cut) == "Fixture.Holds"
    assert running_when_killed(log) is None


def test_a_check_runs_exactly_one_test_whatever_its_name_holds() -> None:
    names = ["Small/Param.Positive/-1", "it's (odd) [1]+", "plain_check"]
    for name in names:
        argument = check_arguments(name)
        words = subprocess.run(
            ["sh", "-c", f'for w in {argument}; do printf "%s\\n" "$w"; done'],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        assert words[0] == "-R"
        pattern = re.compile(words[1])  # CMake's regular expressions read these escapes alike
        assert [n for n in names if pattern.search(n)] == [name]


def test_a_check_of_a_case_ctest_runs_whole_runs_its_suite() -> None:
    argument = check_arguments("unit_tests::parses a flag")
    words = subprocess.run(
        ["sh", "-c", f'for w in {argument}; do printf "%s\\n" "$w"; done'],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    pattern = re.compile(words[1])
    names = ["unit_tests", "unit_tests_2", "unit_tests::parses a flag", "parses a flag"]
    assert [n for n in names if pattern.search(n)] == ["unit_tests", "unit_tests::parses a flag"]
