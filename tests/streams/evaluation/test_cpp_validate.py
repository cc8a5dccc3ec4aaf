"""C and C++ end to end: CMake repositories the tests make with git in the set-up styles of real
projects, each with a PR that fixes a bug and adds the tests that show it, through extract and
the validate stage (real Docker, Debian's gcc, CMake, Ninja and GoogleTest images), validated
with three runs; exported as a task directory, the harness resolves it with the gold patch
and not with an empty one (a patch that fixes nothing, and ``swe-stream validate``'s check, are
graded in ``test_go_validate.py``: the same harness in every language).

The style: the tests behind an option off by default (``CALC_BUILD_TESTS``), in a directory of
their own; one GoogleTest binary whose cases CTest discovers, one CTest runs whole; GoogleTest
fetched at configure time (``FetchContent``, found installed: no network); a test patch that
does not compile without the fix (its binary's old case is PASS_TO_PASS, its new ones
FAIL_TO_PASS); a C project linking a Debian library (zlib, found with ``find_package``),
tested by plain executables (``add_test``: a test is its exit status), graded with the gold
patch alone (the other gradings do not depend on the language)."""

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


# five builds of a C++ project with GoogleTest (three validation runs, the harness's two), each
# compiling on two cores shared with four other test workers (a fresh machine's compiler cache
# is empty): 72 s alone, 300 s on CI
@pytest.mark.timeout(900)
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
        tmp_path, "swe-stream-test/calc-cpp", base, fix, docker_client, base_image, oldest, "gcc",
        graded_empty=True,
    )  # fmt: skip
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


C_LISTS = """\
cmake_minimum_required(VERSION 3.10)
project(sums C)
find_package(ZLIB REQUIRED)
add_library(sums src/sums.c)
target_include_directories(sums PUBLIC include)
target_link_libraries(sums ZLIB::ZLIB)
enable_testing()
foreach(name crc words)
  add_executable(test_${name} tests/test_${name}.c)
  target_link_libraries(test_${name} sums)
  add_test(NAME ${name} COMMAND test_${name})
endforeach()
"""
C_HEADER = "#pragma once\nunsigned long checksum(const char *text);\nint words(const char *t);\n"
C_SOURCE = """\
#include <string.h>
#include <zlib.h>
#include "sums.h"
unsigned long checksum(const char *text) {
  return crc32(0L, (const unsigned char *)text, (unsigned)strlen(text) - 1);  /* the bug */
}
int words(const char *t) {
  int n = 0, in = 0;
  for (; *t; t++) { if (*t == ' ') in = 0; else if (!in) { in = 1; n++; } }
  return n;
}
"""
# the crc test before the PR checks nothing of the checksum's value: it passes at the base,
# fails with the PR's test alone and passes with the fix
C_CRC_BASE = '#include "sums.h"\nint main(void) { return checksum("ab") != 0 ? 0 : 1; }\n'
C_CRC_TEST = """\
#include <zlib.h>
#include "sums.h"
int main(void) {
  return checksum("a") == crc32(0L, (const unsigned char *)"a", 1) ? 0 : 1;
}
"""
C_WORDS_TEST = '#include "sums.h"\nint main(void) { return words("two words") == 2 ? 0 : 1; }\n'


def test_a_c_project_with_a_debian_library_and_plain_test_executables(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    base = {
        "CMakeLists.txt": C_LISTS,
        "include/sums.h": C_HEADER,
        "src/sums.c": C_SOURCE,
        "tests/test_crc.c": C_CRC_BASE,
        "tests/test_words.c": C_WORDS_TEST,
    }
    fix = {
        "src/sums.c": C_SOURCE.replace(" - 1);  /* the bug */", ");"),
        "tests/test_crc.c": C_CRC_TEST,
    }
    oldest = dict(sorted(cxx_images.items())[:1])
    task = validate_and_grade(
        tmp_path, "swe-stream-test/sums-c", base, fix, docker_client, base_image, oldest, "gcc",
        graded_empty=True,
    )  # fmt: skip
    assert task.FAIL_TO_PASS == ["crc"]
    assert task.PASS_TO_PASS == ["words"]
    config = task.install_config
    assert config is not None and config.language == "C"  # project() names C alone
    assert config.system_packages == ["zlib1g-dev"]  # find_package(ZLIB), from Debian
