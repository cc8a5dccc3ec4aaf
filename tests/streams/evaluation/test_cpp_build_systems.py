"""C beyond CMake, end to end: a Meson project, an Autotools ``make check`` project and a plain
Makefile's ``check`` target, each a
repository the test makes with git, with a PR that fixes a bug and adds the test that shows it,
through extract and validate (real Docker, Debian's gcc, Meson, Ninja, autoconf and automake),
exported, and graded by the harness: the gold patch resolves the task, an empty patch does not
(the other gradings are ``test_go_validate.py``'s: the same harness in every language).

The styles: Meson's ``test()`` per executable behind a boolean ``tests`` option that is off by
default (``meson_options.txt``), a library found with ``dependency('zlib')`` (Debian's
zlib1g-dev, by its ``zlib.pc``); Automake's parallel harness (``TESTS`` of check programs, one
``.trs`` each), ``configure`` generated from ``configure.ac`` (``autoreconf -fi``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from tests.streams.evaluation.test_cpp_validate import (
    C_CRC_BASE,
    C_CRC_TEST,
    C_HEADER,
    C_SOURCE,
    C_WORDS_TEST,
)
from tests.streams.evaluation.test_go_validate import validate_and_grade

pytestmark = pytest.mark.docker

MESON_BUILD = """\
project('sums', 'c', version: '1.0')
zlib = dependency('zlib')
sums = static_library('sums', 'src/sums.c', dependencies: zlib,
                      include_directories: include_directories('.'))
if get_option('tests')
  subdir('tests')
endif
"""
MESON_TESTS = """\
foreach name : ['crc', 'words']
  exe = executable('test_' + name, 'test_' + name + '.c', link_with: sums,
                   dependencies: zlib, include_directories: include_directories('..'))
  test(name, exe)
endforeach
"""
MESON_OPTIONS = "option('tests', type: 'boolean', value: false, description: 'the tests')\n"
FIXED = C_SOURCE.replace(" - 1);  /* the bug */", ");")


def validate_sums(
    tmp_path: Path,
    name: str,
    build_files: dict[str, str],
    docker_client: Any,
    base_image: str,
    cxx_images: dict[str, str],
) -> ValidatedTask:
    """The sums project (a checksum off by one) with ``build_files``, validated and graded."""
    base = {
        **build_files,
        "sums.h": C_HEADER,
        "src/sums.c": C_SOURCE,
        "tests/test_crc.c": C_CRC_BASE,
        "tests/test_words.c": C_WORDS_TEST,
    }
    fix: dict[str, str | None] = {"src/sums.c": FIXED, "tests/test_crc.c": C_CRC_TEST}
    oldest = dict(sorted(cxx_images.items())[:1])
    return validate_and_grade(
        tmp_path, f"swe-stream-test/{name}", base, fix, docker_client, base_image, oldest, "gcc",
        graded_empty=True,
    )  # fmt: skip


@pytest.mark.timeout(900)  # five builds (validation's three runs, the harness's two)
def test_a_meson_project_with_its_tests_behind_an_option(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    files = {
        "meson.build": MESON_BUILD,
        "meson_options.txt": MESON_OPTIONS,
        "tests/meson.build": MESON_TESTS,
    }
    task = validate_sums(tmp_path, "sums-meson", files, docker_client, base_image, cxx_images)
    assert task.FAIL_TO_PASS == ["crc"]
    assert task.PASS_TO_PASS == ["words"]
    config = task.install_config
    assert config is not None and config.language == "C" and config.test_runner == "meson"
    assert config.system_packages == ["zlib1g-dev"]  # dependency('zlib'): its zlib.pc
    assert any("-Dtests=true" in command for command in config.install_commands)


CONFIGURE_AC = """\
AC_INIT([sums], [1.0])
AM_INIT_AUTOMAKE([foreign subdir-objects])
AC_PROG_CC
AC_PROG_RANLIB
AC_CHECK_LIB([z], [crc32], [], [AC_MSG_ERROR([zlib is needed])])
AC_CONFIG_FILES([Makefile])
AC_OUTPUT
"""
MAKEFILE_AM = """\
noinst_LIBRARIES = libsums.a
libsums_a_SOURCES = src/sums.c sums.h
check_PROGRAMS = tests/test_crc tests/test_words
tests_test_crc_LDADD = libsums.a -lz
tests_test_words_LDADD = libsums.a -lz
TESTS = $(check_PROGRAMS)
"""


@pytest.mark.timeout(900)  # five builds, each running autoreconf and configure first
def test_an_autotools_project_tested_by_make_check(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    files = {"configure.ac": CONFIGURE_AC, "Makefile.am": MAKEFILE_AM}
    task = validate_sums(tmp_path, "sums-autotools", files, docker_client, base_image, cxx_images)
    assert task.FAIL_TO_PASS == ["tests/test_crc"]
    assert task.PASS_TO_PASS == ["tests/test_words"]
    config = task.install_config
    assert config is not None and config.language == "C" and config.test_runner == "automake"
    assert config.system_packages == ["zlib1g-dev"]  # AC_CHECK_LIB([z]): its libz.so
    assert config.install_commands[0] == "autoreconf -fi"


PLAIN_MAKEFILE = """\
CFLAGS ?= -O0 -I.
LDLIBS = -lz
TESTS = tests/test_crc tests/test_words
all: libsums.a
libsums.a: src/sums.o
\t$(AR) rcs $@ $^
tests/%: tests/%.c libsums.a
\t$(CC) $(CFLAGS) -o $@ $< libsums.a $(LDLIBS)
check: $(TESTS)
\t@n=0; failed=0; for t in $(TESTS); do n=$$((n+1)); \\
\t  if ./$$t; then echo "ok $$n - $$t"; else echo "not ok $$n - $$t"; failed=1; fi; \\
\tdone; exit $$failed
.PHONY: all check
"""


@pytest.mark.timeout(900)  # five builds
def test_a_plain_makefile_project_whose_check_target_prints_its_cases(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    files = {"Makefile": PLAIN_MAKEFILE}
    task = validate_sums(tmp_path, "sums-make", files, docker_client, base_image, cxx_images)
    # the target runs every test: it and its cases (its TAP lines) are the tests
    assert task.FAIL_TO_PASS == ["check", "check::tests/test_crc"]
    assert task.PASS_TO_PASS == ["check::tests/test_words"]
    config = task.install_config
    assert config is not None and config.language == "C" and config.test_runner == "make-target"
    assert config.system_packages == ["zlib1g-dev"]  # LDLIBS = -lz: its libz.so


SUITE_LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(units C)
enable_testing()
add_library(units src/units.c)
target_include_directories(units PUBLIC include)
add_subdirectory(tests)
"""
# the suite's sources found by a glob: a test file the PR adds joins the one binary
SUITE_TESTS_LISTS = """\
file(GLOB suite_sources CONFIGURE_DEPENDS *.c)
add_executable(suite ${suite_sources})
target_link_libraries(suite units)
add_test(NAME units COMMAND suite)
"""
# ``warms_up`` fails the first two times it runs in a box before the test patch (swe-ctest
# runs a failed test again alone), as a flaky test may: in the base's first run alone
SUITE_MAIN = """\
#include <stdio.h>
#include <string.h>
#include "units.h"
int more_cases(int number) __attribute__((weak));
int main(void) {
  int ok = to_km(0) == 0;
  printf("%s 1 - converts_nothing\\n", ok ? "ok" : "not ok");
  int runs = 0;
  FILE *count = fopen("/tmp/units-runs", "r");
  if (count) { if (fscanf(count, "%d", &runs) != 1) runs = 0; fclose(count); }
  if ((count = fopen("/tmp/units-runs", "w"))) { fprintf(count, "%d", runs + 1); fclose(count); }
  char miles[4096];  /* the test patch's file, beside this one: present in no base run */
  snprintf(miles, sizeof miles, "%s", __FILE__);
  char *slash = strrchr(miles, '/');
  if (slash) snprintf(slash + 1, sizeof miles - (size_t)(slash + 1 - miles), "miles.c");
  FILE *patched = fopen(miles, "r");
  if (patched) fclose(patched);
  int warmed = patched != NULL || runs >= 2;
  printf("%s 2 - warms_up\\n", warmed ? "ok" : "not ok");
  return (ok ? 0 : 1) + (warmed ? 0 : 1) + (more_cases ? more_cases(3) : 0);
}
"""
MILES_CASES = """\
#include <stdio.h>
#include "units.h"
int more_cases(int number) {
  int ok = to_miles(16.09344) > 9.999 && to_miles(16.09344) < 10.001;
  printf("%s %d - converts_to_miles\\n", ok ? "ok" : "not ok", number);
  return ok ? 0 : 1;
}
"""


@pytest.mark.timeout(900)  # three builds and a grading
def test_a_new_test_file_in_a_suites_one_binary_leaves_the_old_cases_passing(
    tmp_path: Path, docker_client: Any, base_image: str, cxx_images: dict[str, str]
) -> None:
    # the PR's test file is new (none of its test files is at the base) and does not compile
    # without the fix, so the whole suite has no result with the test patch alone: the base
    # is still run, and says the old cases passed there. A case that failed in the base's one
    # run and passes with the fix (``warms_up``) would be taken for one the fix makes pass:
    # the base runs again, where it passes, so it is flaky
    base = {
        "CMakeLists.txt": SUITE_LISTS,
        "include/units.h": "double to_km(double miles);\n",
        "src/units.c": '#include "units.h"\ndouble to_km(double miles) { return miles * 1.6; }\n',
        "tests/CMakeLists.txt": SUITE_TESTS_LISTS,
        "tests/main.c": SUITE_MAIN,
    }
    fix: dict[str, str | None] = {
        "include/units.h": "double to_km(double miles);\ndouble to_miles(double km);\n",
        "src/units.c": '#include "units.h"\ndouble to_km(double miles) { return miles * 1.6; }\n'
        "double to_miles(double km) { return km / 1.609344; }\n",
        "tests/miles.c": MILES_CASES,
    }
    oldest = dict(sorted(cxx_images.items())[:1])
    task = validate_and_grade(
        tmp_path, "swe-stream-test/units-suite", base, fix, docker_client, base_image, oldest,
        "gcc", graded_empty=True,
    )  # fmt: skip
    assert task.FAIL_TO_PASS == ["units::converts_to_miles"]
    assert task.PASS_TO_PASS == ["units::converts_nothing"]
    validation = task.validation
    assert validation is not None and validation.runs == 4  # the base ran twice
    assert validation.flaky == ["units", "units::warms_up"]
