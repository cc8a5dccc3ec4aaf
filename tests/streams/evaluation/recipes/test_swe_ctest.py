"""swe-ctest on a real CMake project the test makes (CMake, Ninja and GoogleTest of the host,
as the C/C++ images have them): a test target that does not compile is said and leaves the
others to build and run; CTest's JUnit report and each GoogleTest binary's own are written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.cpp import swe_ctest
from streams.evaluation.recipes.languages.cpp.ctest import parse_ctest_junit
from streams.evaluation.recipes.languages.cpp.gtest import parse_gtest_xml

pytestmark = pytest.mark.unit

LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(calc CXX)
enable_testing()
find_package(GTest REQUIRED)
include(GoogleTest)
add_library(calc calc.cpp)
foreach(name good broken)
  add_executable(${name}_test tests/${name}_test.cpp)
  target_link_libraries(${name}_test calc GTest::gtest_main)
endforeach()
gtest_discover_tests(good_test)
add_test(NAME broken_whole COMMAND broken_test)
"""
FILES = {
    "CMakeLists.txt": LISTS,
    "calc.cpp": "int add(int a, int b) { return a + b; }\n",
    "tests/good_test.cpp": "#include <gtest/gtest.h>\nint add(int, int);\n"
    "TEST(Calc, Adds) { EXPECT_EQ(add(2, 3), 5); }\n"
    "TEST(Calc, Fails) { EXPECT_EQ(add(1, 1), 3); }\n",
    # a test the fix's code would make compile: it does not compile before it
    "tests/broken_test.cpp": "#include <gtest/gtest.h>\nint sub(int, int);\n"
    'TEST(Calc, Subs) { EXPECT_EQ(sub(3, 2), 1); }\nstatic_assert(false_value, "x");\n',
}


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_what_compiles_runs_and_what_does_not_is_said(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(
        ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"], cwd=tmp_path, check=True,
        capture_output=True,
    )  # fmt: skip
    script = Path(swe_ctest.__file__)
    run = subprocess.run(
        [sys.executable, str(script), "--jobs", "2", "--junit", "report.xml", "tests/x.cpp"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode != 0, run.stdout
    assert "swe-ctest: did not compile CMakeFiles/broken_test.dir/tests/broken_test.cpp.o" in (
        run.stdout
    )
    assert "false_value" in run.stdout  # what the compiler said is in the log
    statuses = parse_ctest_junit((tmp_path / "report.xml").read_bytes())
    # the discovered cases of the binary that built; the whole broken binary could not run
    assert statuses == {"Calc.Adds": "passed", "Calc.Fails": "failed", "broken_whole": "error"}
    # each discovered case runs the binary alone: its report, numbered when two run at once
    reports = sorted((tmp_path / "build" / "gtest-reports").glob("*.xml"))
    assert reports and all(report.name.startswith("good_test") for report in reports)
    cases: dict[str, str] = {}
    for report in reports:
        cases.update(parse_gtest_xml(report.read_bytes(), "good_test"))
    assert cases == {"good_test::Calc.Adds": "passed", "good_test::Calc.Fails": "failed"}
