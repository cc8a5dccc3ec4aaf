"""A CMake project's facts read off its listfiles, as a recipe needs them: the options that
turn its tests on, the packages it finds, what it downloads at configure time and its tests,
across the directories it adds and the listfiles it includes."""

from __future__ import annotations

import pytest

from streams.evaluation.recipes.languages.cpp.cmake import FetchedContent, FoundPackage, read_cmake
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

ROOT = """\
cmake_minimum_required(VERSION 3.11...3.28)
project(spd VERSION 1.2 LANGUAGES CXX)
option(SPD_BUILD_TESTS "Build tests" OFF)
option(SPD_BUILD_EXAMPLE "Build example" ON)
option(SPD_NO_EXCEPTIONS "" OFF)
find_package(Threads REQUIRED)
find_package(Boost 1.70 COMPONENTS filesystem system REQUIRED)
include(cmake/deps.cmake)
include(${SOMEWHERE}/ignored.cmake)
if(SPD_BUILD_TESTS OR NOT SPD_NO_EXCEPTIONS)
  enable_testing()
  add_subdirectory(tests)
endif()
if(SPD_BUILD_EXAMPLE)
  add_subdirectory(example)
else()
  add_subdirectory(tests)
endif()
"""
DEPS = """\
find_package(PkgConfig)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib>=1.2 libzstd)
"""
TESTS = """\
find_package(Catch2 3 QUIET)
if(NOT Catch2_FOUND)
  include(FetchContent)
  FetchContent_Declare(Catch2 GIT_REPOSITORY https://github.com/catchorg/Catch2.git GIT_TAG v3.5.3)
  FetchContent_MakeAvailable(Catch2)
endif()
add_executable(spd-tests test_a.cpp)
catch_discover_tests(spd-tests)
add_test(NAME spd-smoke COMMAND spd-tests --smoke)
add_test(legacy-name spd-tests)
add_test(NAME ${GENERATED} COMMAND x)
file(DOWNLOAD https://example.org/data.bin ${CMAKE_BINARY_DIR}/data.bin)
"""


def test_a_project_read_across_its_directories_and_includes() -> None:
    facts = read_cmake(
        tree({"CMakeLists.txt": ROOT, "cmake/deps.cmake": DEPS, "tests/CMakeLists.txt": TESTS,
              "example/CMakeLists.txt": "add_executable(example main.cpp)\n", "src/a.cpp": ""})
    )  # fmt: skip
    assert facts is not None and facts.problems == []
    assert (facts.minimum, facts.project, facts.languages) == ("3.11", "spd", ("CXX",))
    assert facts.options == {
        "SPD_BUILD_TESTS": "OFF", "SPD_BUILD_EXAMPLE": "ON", "SPD_NO_EXCEPTIONS": "OFF"
    }  # fmt: skip
    # the option named around the tests; a negated one, or one whose else() adds them, not
    assert facts.test_options == ["SPD_BUILD_TESTS"]
    assert facts.listfiles == [
        "CMakeLists.txt", "cmake/deps.cmake", "tests/CMakeLists.txt", "example/CMakeLists.txt"
    ]  # fmt: skip
    assert facts.packages == [
        FoundPackage("Threads", (), True),
        FoundPackage("Boost", ("filesystem", "system"), True),
        FoundPackage("PkgConfig", (), False, "cmake/deps.cmake"),
        FoundPackage(
            "Catch2",
            (),
            False,
            "tests/CMakeLists.txt",
            ("SPD_BUILD_TESTS",),
            ("SPD_NO_EXCEPTIONS",),
        ),
    ]
    assert facts.pkg_modules == ["zlib>=1.2", "libzstd"]  # the prefix (ZLIB) is no module
    assert facts.fetched == [
        FetchedContent("Catch2", "https://github.com/catchorg/Catch2.git",
                       "fetchcontent_declare", "tests/CMakeLists.txt", ("SPD_BUILD_TESTS",),
                       ("SPD_NO_EXCEPTIONS",)),
        FetchedContent("data.bin", "https://example.org/data.bin", "file", "tests/CMakeLists.txt",
                       ("SPD_BUILD_TESTS",), ("SPD_NO_EXCEPTIONS",)),
    ]  # the options around the subdirectory's add_subdirectory guard its downloads  # fmt: skip
    assert facts.tests == ["spd-smoke", "legacy-name"] and facts.discovered == ["spd-tests"]
    assert facts.testing


def test_no_root_listfile_is_no_cmake_project_and_a_broken_one_says_where() -> None:
    assert read_cmake(tree({"src/CMakeLists.txt": "project(x)\n"})) is None
    facts = read_cmake(tree({"CMakeLists.txt": "project(x C)\nadd_subdirectory(t)\n",
                             "t/CMakeLists.txt": "add_test(NAME a\n"}))  # fmt: skip
    assert facts is not None and facts.project == "x" and facts.languages == ("C",)
    assert facts.problems == ["t/CMakeLists.txt: line 1: add_test( is never closed"]


def test_a_directory_added_twice_or_in_a_loop_is_read_once() -> None:
    files = {
        "CMakeLists.txt": "add_subdirectory(a)\nadd_subdirectory(a)\n",
        "a/CMakeLists.txt": "add_subdirectory(..)\nadd_test(t x)\n",
    }
    facts = read_cmake(tree(files))
    assert facts is not None and facts.listfiles == ["CMakeLists.txt", "a/CMakeLists.txt"]
    assert facts.tests == ["t"]


def test_an_option_read_through_its_value_guards_the_tests_as_one_named() -> None:
    lists = (
        "project(t CXX)\n"
        'option(T_BUILD_TESTS "the tests" OFF)\n'
        "if(${T_BUILD_TESTS} OR ${T_OTHER})\n  add_subdirectory(tests)\nendif()\n"
    )
    facts = read_cmake(tree({"CMakeLists.txt": lists, "tests/CMakeLists.txt": "add_test(a b)\n"}))
    assert facts is not None and facts.test_options == ["T_BUILD_TESTS"]
