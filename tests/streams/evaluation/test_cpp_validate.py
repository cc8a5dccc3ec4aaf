"""C and C++ end to end: CMake repositories the tests make with git in the set-up styles of real
projects, each with a PR that fixes a bug and adds the tests that show it, through extract and
the validate stage (real Docker, Debian's gcc, CMake, Ninja and GoogleTest images), validated
with three runs; exported as a task directory, the harness resolves it with the gold patch and
not with a patch that fixes nothing, and ``swe-stream validate``'s check finds the empty patch
unresolved.

The style: the tests behind an option off by default (``CALC_BUILD_TESTS``), in a directory of
their own; one GoogleTest binary whose cases CTest discovers, one CTest runs whole; GoogleTest
fetched at configure time (``FetchContent``, found installed: no network); a test patch that
does not compile without the fix (its binary's old case is PASS_TO_PASS, its new ones
FAIL_TO_PASS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.streams.evaluation.test_go_validate import validate_and_grade

pytestmark = pytest.mark.docker

ROOT_LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(calc VERSION 1.0 LANGUAGES CXX)
option(CALC_BUILD_TESTS "Build the tests" OFF)
add_library(calc src/calc.cpp)
target_include_directories(calc PUBLIC include)
if(CALC_BUILD_TESTS)
  enable_testing()
  add_subdirectory(tests)
endif()
"""
TEST_LISTS = """\
include(FetchContent)
FetchContent_Declare(googletest
  URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.zip)
FetchContent_MakeAvailable(googletest)
include(GoogleTest)
add_executable(calc_test calc_test.cpp)
target_link_libraries(calc_test calc GTest::gtest_main)
gtest_discover_tests(calc_test)
add_executable(range_test range_test.cpp)
target_link_libraries(range_test calc GTest::gtest_main)
add_test(NAME range COMMAND range_test)
"""
HEADER = "#pragma once\nint add(int a, int b);\nint clamp(int v, int lo, int hi);\n"
SOURCE = """\
#include "calc.h"
int add(int a, int b) { return a + b; }
int clamp(int v, int lo, int hi) {
  if (v < lo) return lo;
  return v;  // the bug: a value above hi is kept
}
"""
FIXED = SOURCE.replace(
    "  return v;  // the bug: a value above hi is kept\n", "  return v > hi ? hi : v;\n"
)
CALC_TEST = """\
#include <gtest/gtest.h>
#include "calc.h"

TEST(Calc, Adds) { EXPECT_EQ(add(2, 3), 5); }
"""
RANGE_TEST = """\
#include <gtest/gtest.h>
#include "calc.h"

TEST(Range, Low) { EXPECT_EQ(clamp(-4, 0, 9), 0); }
"""


def test_a_cmake_project_whose_test_patch_does_not_compile_without_the_fix(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    base = {
        "CMakeLists.txt": ROOT_LISTS,
        "include/calc.h": HEADER,
        "src/calc.cpp": SOURCE,
        "tests/CMakeLists.txt": TEST_LISTS,
        "tests/calc_test.cpp": CALC_TEST,
        "tests/range_test.cpp": RANGE_TEST,
        "README.md": "calc\n",
    }
    fix = {
        "include/calc.h": HEADER + "int mul(int a, int b);\n",
        "src/calc.cpp": FIXED + "int mul(int a, int b) { return a * b; }\n",
        # mul does not exist before the fix: calc_test does not compile there
        "tests/calc_test.cpp": CALC_TEST
        + "TEST(Calc, Muls) { EXPECT_EQ(mul(2, 3), 6); }\n"
        + "TEST(Calc, ClampsHigh) { EXPECT_EQ(clamp(12, 0, 9), 9); }\n",
        "tests/range_test.cpp": RANGE_TEST
        + "TEST(Range, High) { EXPECT_EQ(clamp(10, 0, 9), 9); }\n",
    }
    oldest = dict(sorted(cxx_images.items())[:1])  # gcc 12: bookworm's
    task = validate_and_grade(
        tmp_path, "swe-stream-test/calc-cpp", base, fix, docker_client, base_image, oldest, "gcc"
    )
    assert task.FAIL_TO_PASS == [
        "Calc.ClampsHigh",
        "Calc.Muls",
        "range",  # the binary CTest runs whole fails before the fix
        "range_test::Range.High",
    ]
    assert task.PASS_TO_PASS == ["Calc.Adds", "range_test::Range.Low"]
    config = task.install_config
    assert config is not None and config.language == "C++" and config.test_runner == "ctest"
    assert config.version("gcc") == "12"
    assert any("-DCALC_BUILD_TESTS=ON" in command for command in config.install_commands)
