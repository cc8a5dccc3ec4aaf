"""swe-ctest on a real CMake project the test makes (CMake, Ninja and GoogleTest of the host,
as the C/C++ images have them), built once at its base as an image is, then given a test that
no longer compiles: what does not compile is said, its stale executable removed (its tests have
no result, not the old code's), the others build and run; the one report holds CTest's results
and the cases of a GoogleTest binary CTest runs whole."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
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


def built_at_base(tmp_path: Path, files: dict[str, str]) -> None:
    """``files`` written to ``tmp_path``, configured with Ninja and built, as an image is."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "build"], cwd=tmp_path, check=True, capture_output=True)


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_what_compiles_runs_and_what_does_not_is_said(tmp_path: Path) -> None:
    built_at_base(tmp_path, FILES)
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


GLOBBED = """\
cmake_minimum_required(VERSION 3.14)
project(calc CXX)
enable_testing()
find_package(GTest REQUIRED)
add_library(calc STATIC calc.cpp)
file(GLOB test_sources CONFIGURE_DEPENDS tests/*.cpp)
add_executable(calc_check ${test_sources})
target_link_libraries(calc_check calc GTest::gtest_main)
add_test(NAME calc::test COMMAND calc_check)
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_a_stale_program_of_globbed_sources_is_removed(tmp_path: Path) -> None:
    """Test sources globbed with CONFIGURE_DEPENDS (CMake checks the glob on every build, so a
    dry run of the build stops at the manifest and names nothing to link): the program one of
    them no longer compiles into is found in Ninja's graph and removed, its test not run
    (not the old program's pass)."""
    files = {
        "CMakeLists.txt": GLOBBED,
        "calc.cpp": FILES["calc.cpp"],
        "tests/whole_test.cpp": FILES["tests/whole_test.cpp"],
        "tests/broken_test.cpp": FILES["tests/broken_test.cpp"],
    }
    built_at_base(tmp_path, files)
    assert (tmp_path / "build" / "calc_check").exists()
    dry = subprocess.run(
        ["cmake", "--build", "build", "--", "-n"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "Linking" not in dry.stdout  # what the dry run alone would have found

    (tmp_path / "tests" / "broken_test.cpp").write_text(BROKEN)
    broken = run(tmp_path, "--report", "report.xml", "tests/broken_test.cpp")
    assert "swe-ctest: removed stale build/calc_check" in broken.stdout, broken.stdout
    assert not (tmp_path / "build" / "calc_check").exists()
    assert (tmp_path / "build" / "libcalc.a").exists()  # a library is not a program
    assert parse_swe_ctest_report((tmp_path / "report.xml").read_bytes()) == {}


def test_ninja_query_outputs_are_read_section_by_section() -> None:
    answer = (
        "obj/a.o:\n  input: CXX_COMPILER\n    ../a.cpp\n    || order_only\n"
        "  outputs:\n    libcalc.a\n  validations:\n    check_a\n"
        "libcalc.a:\n  input: AR\n    obj/a.o\n  outputs:\n    bin/tool\n    bin/test\n"
    )
    assert swe_ctest._query_outputs(answer) == ["libcalc.a", "bin/tool", "bin/test"]


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


CATCH2_TEST = """\
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
TEST_CASE("adds") { REQUIRE(1 + 1 == 2); }
TEST_CASE("breaks") { REQUIRE(1 + 1 == 3); }
TEST_CASE("has sections") {
  SECTION("first") { REQUIRE(true); }
  SECTION("second") { REQUIRE(false); }
}
"""
DOCTEST_TEST = """\
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
TEST_CASE("sums") { CHECK(2 + 2 == 4); }
TEST_CASE("differs") { CHECK(2 - 2 == 1); }
"""
# the statuses of those two binaries run whole, and of each of their cases
FRAMEWORK_CASES = {
    "catch_whole": "failed",
    "catch_whole::adds": "passed",
    "catch_whole::breaks": "failed",
    "catch_whole::has sections/first": "passed",
    "catch_whole::has sections/second": "failed",
    "doctest_whole": "failed",
    "doctest_whole::sums": "passed",
    "doctest_whole::differs": "failed",
}
FRAMEWORKS_LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(frameworks CXX)
enable_testing()
find_package(Catch2 REQUIRED)
find_package(doctest REQUIRED)
add_executable(catch_cases catch_cases.cpp)
target_link_libraries(catch_cases Catch2::Catch2)
add_executable(doctest_cases doctest_cases.cpp)
target_link_libraries(doctest_cases doctest::doctest)
add_test(NAME catch_whole COMMAND catch_cases)
add_test(NAME doctest_whole COMMAND doctest_cases)
add_test(NAME catch_one COMMAND catch_cases adds)
# a command CTest runs before the tests, printing before what CTest says
file(WRITE "${CMAKE_BINARY_DIR}/CTestCustom.cmake"
     "set(CTEST_CUSTOM_PRE_TEST \\"${CMAKE_COMMAND} -E echo {informational}\\")\n")
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_the_cases_of_a_catch2_or_doctest_binary_ctest_runs_whole_are_tests_of_their_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "CMakeLists.txt").write_text(FRAMEWORKS_LISTS)
    (tmp_path / "catch_cases.cpp").write_text(CATCH2_TEST)
    (tmp_path / "doctest_cases.cpp").write_text(DOCTEST_TEST)
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    ran = run(tmp_path, "--report", "report.xml")
    assert parse_swe_ctest_report((tmp_path / "report.xml").read_bytes()) == {
        **FRAMEWORK_CASES,
        "catch_one": "passed",  # one case: CTest's result is the case's
    }, ran.stdout


MUNIT_RUNNER = """\
#include <stdio.h>
int main(void) {
  printf("/codec/encodes [ OK    ] [ 0.00001 / 0.00001 CPU ]\\n");
  printf("/codec/decodes [ OK    ] [ 0.00001 / 0.00001 CPU ]\\n");
  return 0;
}
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_a_test_program_the_default_build_leaves_out_is_built_for_its_test(
    tmp_path: Path,
) -> None:
    # as nghttp2-style projects do: the suite is EXCLUDE_FROM_ALL, a `check` target builds it
    lists = (
        "cmake_minimum_required(VERSION 3.14)\nproject(t C)\nenable_testing()\n"
        "add_executable(runner EXCLUDE_FROM_ALL tests/runner.c)\n"
        "add_test(NAME suite COMMAND runner)\n"
        "add_custom_target(check COMMAND ctest DEPENDS runner)\n"
    )
    (tmp_path / "CMakeLists.txt").write_text(lists)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "runner.c").write_text(MUNIT_RUNNER)
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "build"], cwd=tmp_path, check=True, capture_output=True)
    assert not (tmp_path / "build" / "runner").exists()  # the default build leaves it out
    ran = run(tmp_path, "--report", "report.xml")
    assert parse_swe_ctest_report((tmp_path / "report.xml").read_bytes()) == {
        "suite": "passed",
        "suite::/codec/encodes": "passed",
        "suite::/codec/decodes": "passed",
    }, ran.stdout

    (tmp_path / "tests" / "runner.c").write_text("int main(void) { return }\n")
    broken = run(tmp_path, "--report", "broken.xml")
    assert "swe-ctest: removed stale build/runner" in broken.stdout, broken.stdout
    assert "suite::/codec/encodes" not in parse_swe_ctest_report(
        (tmp_path / "broken.xml").read_bytes()
    )


ROOT_REFUSING_RUNNER = """\
#include <stdio.h>
#include <unistd.h>
int main(void) {
  if (geteuid() == 0) { fprintf(stderr, "The test suite cannot be run as root.\\n"); return 1; }
  FILE *scratch = fopen("scratch.txt", "w");  /* its build tree is the user's own */
  if (scratch == NULL) { printf("not ok 1 - writes\\n"); return 1; }
  fclose(scratch);
  printf("ok 1 - writes\\n");
  return 0;
}
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
@pytest.mark.skipif(os.geteuid() != 0, reason="runs as root, as the sandbox's tests do")
def test_a_suite_that_refuses_root_runs_again_as_an_unprivileged_user() -> None:
    # not under pytest's tmp_path: its root is readable by root alone
    project = Path(tempfile.mkdtemp(prefix="swe-ctest-root-"))
    try:
        project.chmod(0o755)
        lists = "project(t C)\nenable_testing()\nadd_executable(runner runner.c)\n"
        (project / "CMakeLists.txt").write_text(
            lists
            + "add_test(NAME suite COMMAND runner)\nadd_test(NAME other COMMAND sh -c false)\n"
        )
        (project / "runner.c").write_text(ROOT_REFUSING_RUNNER)
        configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
        subprocess.run(configure, cwd=project, check=True, capture_output=True)
        ran = run(project, "--report", "report.xml")
        assert "refused to run as root, run again as uid 65534: suite" in ran.stdout, ran.stdout
        assert parse_swe_ctest_report((project / "report.xml").read_bytes()) == {
            "suite": "passed",
            "suite::writes": "passed",
            "other": "failed",  # failing for another reason: not run again
        }, ran.stdout
        assert ran.returncode != 0
    finally:
        shutil.rmtree(project)


PLAIN_MAKEFILE = """\
CFLAGS ?= -O0
all: libcodec.a
libcodec.a: codec.o
\t$(AR) rcs $@ $^
runner: runner.c libcodec.a
\t$(CC) $(CFLAGS) -o $@ runner.c libcodec.a
check: runner
\t./runner
.PHONY: all check
"""
CODEC_RUNNER = """\
#include <stdio.h>
int codec(void);
int main(void) {
  printf("ok 1 - links\\n\\x01\\x1b[1mbinary output\\x1b[0m\\n");
  printf("%s 2 - encodes\\n", codec() == 1 ? "ok" : "not ok");
  return codec() == 1 ? 0 : 1;
}
"""


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_a_plain_makefiles_test_target_runs_whole_with_its_cases(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(PLAIN_MAKEFILE)
    (tmp_path / "codec.c").write_text("int codec(void) { return 0; }\n")
    (tmp_path / "runner.c").write_text(CODEC_RUNNER)
    failing = run(tmp_path, "--system", "make", "--target", "check", "--report", "before.xml")
    assert failing.returncode != 0
    assert parse_swe_ctest_report((tmp_path / "before.xml").read_bytes()) == {
        "check": "failed",
        "check::links": "passed",
        "check::encodes": "failed",
    }, failing.stdout
    (tmp_path / "codec.c").write_text("int codec(void) { return 1; }\n")
    passing = run(tmp_path, "--system", "make", "--target", "check", "--report", "after.xml")
    assert passing.returncode == 0, passing.stdout
    assert parse_swe_ctest_report((tmp_path / "after.xml").read_bytes()) == {
        "check": "passed",
        "check::links": "passed",
        "check::encodes": "passed",
    }


PROGRAMS_ROOT = """\
check:
\t$(MAKE) -C tests essentials
.PHONY: check
"""
PROGRAMS_TESTS = """\
CFLAGS ?= -O0
essentials:
\t@echo "ok 1 - essentials"
fuzzer: fuzzer.c ../codec.c
\t$(CC) $(CFLAGS) -o $@ $^
test-fuzzer: fuzzer
\t./fuzzer
%.o: %.c
\t$(CC) -c $<
.PHONY: essentials test-fuzzer
"""
# the test program asks for what only the fix adds: it does not link before it
FUZZER = "int codec_bound(int size);\nint main(void) { return codec_bound(4) == 8 ? 0 : 1; }\n"


@pytest.mark.skipif(not all(map(shutil.which, ("make", "cc"))), reason="needs make and cc")
def test_a_changed_test_programs_own_rule_runs_beside_the_test_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Makefile").write_text(PROGRAMS_ROOT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "Makefile").write_text(PROGRAMS_TESTS)
    (tmp_path / "tests" / "fuzzer.c").write_text(FUZZER)
    (tmp_path / "codec.c").write_text("int codec(void) { return 0; }\n")
    assert swe_ctest.make_targets(str(tmp_path / "tests")) >= {"fuzzer", "test-fuzzer"}
    assert "%.o" not in swe_ctest.make_targets(str(tmp_path / "tests"))
    args = ("--system", "make", "--target", "check", "--report")
    before = run(tmp_path, *args, "before.xml", "tests/fuzzer.c", "tests/README")
    assert before.returncode != 0
    assert parse_swe_ctest_report((tmp_path / "before.xml").read_bytes()) == {
        "tests/test-fuzzer": "failed",  # it did not link
        "check": "passed",
        "check::essentials": "passed",
    }, before.stdout
    (tmp_path / "codec.c").write_text("int codec_bound(int size) { return 2 * size; }\n")
    after = run(tmp_path, *args, "after.xml", "--program", "tests/test-fuzzer")
    assert after.returncode == 0, after.stdout
    assert parse_swe_ctest_report((tmp_path / "after.xml").read_bytes())["tests/test-fuzzer"] == (
        "passed"
    )
    # a test program of no rule of its own: the test target alone
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "other.c").write_text(FUZZER)
    assert swe_ctest.program_targets(["tests/other.c", "codec.c", "tests/fuzzer.c"]) == [
        ("tests", "test-fuzzer")
    ]


# two tests that hold one resource (a port, a file): the second fails while the first has it
HOLDER = """\
touch held
for i in $(seq 30); do [ -e seen ] && break; sleep 0.1; done
rm -f held
"""
CONTENDER = """\
for i in $(seq 30); do
  if [ -e held ]; then touch seen; echo "the resource is taken"; exit 1; fi
  sleep 0.1
done
echo "the resource was free"
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest"))), reason="needs CMake and Ninja"
)
def test_a_test_that_fails_only_beside_another_runs_again_alone(tmp_path: Path) -> None:
    (tmp_path / "holder.sh").write_text(HOLDER)
    (tmp_path / "contender.sh").write_text(CONTENDER)
    (tmp_path / "CMakeLists.txt").write_text(
        "project(t NONE)\nenable_testing()\n"
        "add_test(NAME holder COMMAND sh ${CMAKE_SOURCE_DIR}/holder.sh)\n"
        "add_test(NAME contender COMMAND sh ${CMAKE_SOURCE_DIR}/contender.sh)\n"
    )
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    ran = run(tmp_path, "--report", "report.xml")
    assert "failed beside other tests, run again alone: contender" in ran.stdout, ran.stdout
    assert parse_swe_ctest_report((tmp_path / "report.xml").read_bytes()) == {
        "holder": "passed",
        "contender": "passed",
    }
    assert ran.returncode == 0, ran.stdout


FRAMEWORKS_MESON = """\
project('frameworks', 'cpp')
catch2 = dependency('catch2')
doctest = dependency('doctest')
test('catch_whole', executable('catch_cases', 'catch_cases.cpp', dependencies: catch2))
test('doctest_whole', executable('doctest_cases', 'doctest_cases.cpp', dependencies: doctest))
"""


@pytest.mark.skipif(not all(map(shutil.which, ("meson", "ninja"))), reason="needs Meson and Ninja")
def test_the_cases_of_a_catch2_or_doctest_binary_meson_runs_are_tests_of_their_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "meson.build").write_text(FRAMEWORKS_MESON)
    (tmp_path / "catch_cases.cpp").write_text(CATCH2_TEST)
    (tmp_path / "doctest_cases.cpp").write_text(DOCTEST_TEST)
    subprocess.run(["meson", "setup", "build"], cwd=tmp_path, check=True, capture_output=True)
    ran = run(tmp_path, "--system", "meson", "--report", "report.xml")
    statuses = parse_swe_ctest_report((tmp_path / "report.xml").read_bytes())
    assert statuses == FRAMEWORK_CASES, ran.stdout


def test_a_catch2_or_doctest_summary_of_more_than_one_case_names_its_framework() -> None:
    framework_of = swe_ctest.framework_of
    assert framework_of("===\nAll tests passed (12 assertions in 3 test cases)\n") == "catch2"
    assert framework_of("test cases: 4 | 3 passed | 1 failed\nassertions: 9 | 8 passed\n") == (
        "catch2"
    )
    doctest = "[doctest] test cases:  5 |  5 passed | 0 failed | 0 skipped\n"
    assert framework_of(f"[NON-XML-CHAR-0x1B][0m{doctest}") == "doctest"
    # one case (a case CTest discovered, run alone): CTest's result is the case's
    assert framework_of("All tests passed (1 assertion in 1 test case)\n") is None
    assert framework_of("[doctest] test cases: 1 | 1 passed | 0 failed | 7 skipped\n") is None
    assert framework_of("100% tests passed, 0 tests failed out of 3\n") is None


# as libarchive registers its tests: one CTest test per DEFINE_TEST line, read when CMake
# configures (no dependency of the build)
LISTED_TESTS = """\
cmake_minimum_required(VERSION 3.14)
project(t C)
enable_testing()
add_executable(units tests/test_units.c)
file(STRINGS tests/test_units.c lines REGEX "^DEFINE_TEST")
foreach(line ${lines})
  string(REGEX MATCH "DEFINE_TEST\\\\(([a-z_0-9]+)\\\\)" found "${line}")
  add_test(NAME ${CMAKE_MATCH_1} COMMAND units ${CMAKE_MATCH_1})
endforeach()
"""
LISTED_UNITS = """\
#define DEFINE_TEST(name) int name(void)
DEFINE_TEST(test_one) { return 0; }
int main(int argc, char **argv) { (void)argv; return argc > 1 ? 0 : 1; }
"""


@pytest.mark.skipif(
    not all(map(shutil.which, ("cmake", "ninja", "ctest", "git"))), reason="needs CMake, Ninja"
)
def test_a_test_a_patch_adds_where_cmake_reads_the_sources_is_registered(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "CMakeLists.txt").write_text(LISTED_TESTS)
    (tmp_path / "tests" / "test_units.c").write_text(LISTED_UNITS)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("build/\n*.xml\n")  # as the testbed's
    configure = ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"]
    subprocess.run(configure, cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "build"], cwd=tmp_path, check=True, capture_output=True)
    at_base = run(tmp_path, "--report", "base.xml")
    assert parse_swe_ctest_report((tmp_path / "base.xml").read_bytes()) == {"test_one": "passed"}, (
        at_base.stdout
    )

    with (tmp_path / "tests" / "test_units.c").open("a") as units:
        units.write("DEFINE_TEST(test_two) { return 0; }\n")
    patched = run(tmp_path, "--report", "patched.xml")
    assert parse_swe_ctest_report((tmp_path / "patched.xml").read_bytes()) == {
        "test_one": "passed",
        "test_two": "passed",
    }, patched.stdout
    # the patch taken off again (the base run once more): CMake sees the tree as it was
    subprocess.run(["git", "checkout", "-q", "HEAD", "--", "."], cwd=tmp_path, check=True)
    restored = run(tmp_path, "--report", "restored.xml")
    assert parse_swe_ctest_report((tmp_path / "restored.xml").read_bytes()) == {
        "test_one": "passed"
    }, restored.stdout
    # and a tree as CMake last saw it is not configured again
    seen = tmp_path / "build" / swe_ctest.TREE_SEEN
    written = seen.stat().st_mtime_ns
    os.utime(seen, ns=(written - 10**9, written - 10**9))
    run(tmp_path, "--report", "again.xml")
    assert seen.stat().st_mtime_ns == written - 10**9
