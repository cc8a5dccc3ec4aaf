"""swe-ctest on a real CMake project the test makes (CMake, Ninja and GoogleTest of the host,
as the C/C++ images have them), built once at its base as an image is, then given a test that
no longer compiles: what does not compile is said, its stale executable removed (its tests have
no result, not the old code's), the others build and run; the one report holds CTest's results
and the cases of a GoogleTest binary CTest runs whole."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.cpp import swe_ctest
from streams.evaluation.recipes.languages.cpp.compiled import build_failures
from streams.evaluation.recipes.languages.cpp.gtest import parse_gtest_xml
from streams.evaluation.recipes.languages.cpp.report import parse_swe_ctest_report

pytestmark = pytest.mark.unit

LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(calc CXX)
enable_testing()
find_package(GTest REQUIRED)
include(GoogleTest)
add_library(calc calc.cpp)
foreach(name good broken whole)
  add_executable(${name}_test tests/${name}_test.cpp)
  target_link_libraries(${name}_test calc GTest::gtest_main)
endforeach()
gtest_discover_tests(good_test)
gtest_discover_tests(broken_test)
add_test(NAME whole COMMAND whole_test)
"""
FILES = {
    "CMakeLists.txt": LISTS,
    "calc.cpp": "int add(int a, int b) { return a + b; }\n",
    "tests/good_test.cpp": "#include <gtest/gtest.h>\nint add(int, int);\n"
    "TEST(Calc, Adds) { EXPECT_EQ(add(2, 3), 5); }\n"
    "TEST(Calc, Fails) { EXPECT_EQ(add(1, 1), 3); }\n",
    "tests/broken_test.cpp": "#include <gtest/gtest.h>\nint add(int, int);\n"
    "TEST(Old, Adds) { EXPECT_EQ(add(1, 2), 3); }\n",
    "tests/whole_test.cpp": "#include <gtest/gtest.h>\nint add(int, int);\n"
    "TEST(Whole, Works) { EXPECT_EQ(add(0, 0), 0); }\n",
}
# a test the fix's code would make compile: it does not compile before it
BROKEN = (
    "#include <gtest/gtest.h>\nint add(int, int);\nint sub(int, int);\n"
    'TEST(Old, Adds) { EXPECT_EQ(add(1, 2), 3); }\nstatic_assert(false_value, "x");\n'
)


def run(directory: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(Path(swe_ctest.__file__)), "--jobs", "2", *arguments],
        cwd=directory, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_what_compiles_runs_and_what_does_not_is_said(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "build"], cwd=tmp_path, check=True, capture_output=True)
    at_base = run(tmp_path, "--report", "base.xml")
    assert parse_swe_ctest_report((tmp_path / "base.xml").read_bytes()) == {
        "Calc.Adds": "passed",
        "Calc.Fails": "failed",
        "Old.Adds": "passed",
        "whole": "passed",
        # CTest runs whole_test whole: its cases are the binary's; good_test's are CTest's
        "whole_test::Whole.Works": "passed",
    }, at_base.stdout

    (tmp_path / "tests" / "broken_test.cpp").write_text(BROKEN)
    broken = run(tmp_path, "--report", "report.xml", "tests/broken_test.cpp")
    assert broken.returncode != 0, broken.stdout
    obj = "CMakeFiles/broken_test.dir/tests/broken_test.cpp.o"
    assert f"swe-ctest: did not compile {obj}" in broken.stdout
    failures = build_failures(broken.stdout)
    assert list(failures) == [obj] and "false_value" in failures[obj], failures
    # the base's broken_test is gone: its old case has no result, not the old code's pass
    assert "swe-ctest: removed stale build/broken_test" in broken.stdout
    assert not (tmp_path / "build" / "broken_test").exists()
    statuses = parse_swe_ctest_report((tmp_path / "report.xml").read_bytes())
    assert statuses == {
        "Calc.Adds": "passed",
        "Calc.Fails": "failed",
        "whole": "passed",
        "whole_test::Whole.Works": "passed",
    }
    # the GoogleTest reports of this run only (an earlier run's are removed first); two
    # cases of one binary running at once may write one file together (GoogleTest names it
    # by the binary): such a report is left out of swe-ctest's, as it is here
    cases: dict[str, str] = {}
    for report in sorted((tmp_path / "build" / "gtest-reports").glob("*.xml")):
        assert report.name.startswith(("good_test", "whole_test")), report.name
        try:
            cases.update(parse_gtest_xml(report.read_bytes(), swe_ctest.binary_of(str(report))))
        except ValueError:
            continue
    assert "whole_test::Whole.Works" in cases and set(cases) <= {
        "good_test::Calc.Adds", "good_test::Calc.Fails", "whole_test::Whole.Works"
    }  # fmt: skip


def test_a_reports_binary_is_its_name_without_googletests_number() -> None:
    assert swe_ctest.binary_of("/b/gtest-reports/calc_test.xml") == "calc_test"
    assert swe_ctest.binary_of("/b/gtest-reports/calc_test_3.xml") == "calc_test"
    assert swe_ctest.binary_of("/b/gtest-reports/test_2x.xml") == "test_2x"


TAP_RUNNER = """\
#include <stdio.h>
int main(void) {
  printf("1..4\\n");
  for (int i = 0; i < 80; i++) printf("# more than CTest keeps of a passing test, line %d\\n", i);
  printf("ok 1 - platform_output\\nok 2 - udp_send # SKIP no network\\n");
  printf("not ok 3 - known # TODO fixed later\\nok 4 - tty\\n");
  return 0;
}
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_the_tap_cases_of_a_suite_ctest_runs_whole_are_tests_of_their_own(
    tmp_path: Path,
) -> None:
    lists = "project(t C)\nenable_testing()\nadd_executable(runner runner.c)\n"
    (tmp_path / "CMakeLists.txt").write_text(lists + "add_test(NAME suite COMMAND runner)\n")
    (tmp_path / "runner.c").write_text(TAP_RUNNER)
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    ran = run(tmp_path, "--report", "report.xml")
    assert parse_swe_ctest_report((tmp_path / "report.xml").read_bytes()) == {
        "suite": "passed",
        "suite::platform_output": "passed",
        "suite::udp_send": "skipped",
        "suite::known": "passed",
        "suite::tty": "passed",  # past CTest's 1 KiB of a passing test's output
    }, ran.stdout
