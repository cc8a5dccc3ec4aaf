"""Meson's and Autotools' build files read as their own languages split them (no Docker): the
project, the dependencies and libraries found, the tests and the options that turn them on;
the recipes made of them; their runners' console lines."""

from __future__ import annotations

import pytest

from streams.evaluation.failures import failure_cause
from streams.evaluation.recipes.languages import Inputs, language_named
from streams.evaluation.recipes.languages.cpp.autotools import macro_calls, read_autotools
from streams.evaluation.recipes.languages.cpp.case_lines import (
    anything_protocol_statuses,
    case_statuses,
)
from streams.evaluation.recipes.languages.cpp.console import (
    parse_automake_console,
    parse_make_console,
    parse_meson_console,
)
from streams.evaluation.recipes.languages.cpp.debian import wanted_of_autotools, wanted_of_meson
from streams.evaluation.recipes.languages.cpp.makefile import read_makefile
from streams.evaluation.recipes.languages.cpp.meson import calls, read_meson
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

IMAGES = {"12": "swe-stream/cxx:bookworm", "14": "swe-stream/cxx:trixie"}
MESON = """\
project('nvm', ['c'], meson_version: '>= 0.62.0',
        default_options: ['c_std=gnu99', 'wrap_mode=nofallback'])  # a comment's 'quote
json = dependency('json-c', version: '>=0.13', required: get_option('json-c'),
                  fallback : ['json-c', 'json_c_dep'])
none = dependency('', required: false)
msg = '''a 'multi-line'
string with dependency('nope')'''
subdir('test')
"""
MESON_TEST = "test('main', executable('t', 't.c'), suite: ['unit'])\ntest('nvm', exe)\n"
OPTIONS = """\
option('tests', type: 'boolean', value: false)
option('unit-tests', type: 'feature', value: 'disabled')
option('docs', type: 'boolean', value: false)
option('test-timeout', type: 'integer', value: 30)
option('asan_tests', type: 'boolean', value: false)
"""


def test_a_meson_project_read_from_its_build_files() -> None:
    given = tree(
        {
            "meson.build": MESON,
            "test/meson.build": MESON_TEST,
            "meson_options.txt": OPTIONS,
            "src/a.c": "",
        }
    )
    facts = read_meson(given)
    assert facts is not None
    assert (facts.project, facts.languages) == ("nvm", ("c",))
    assert facts.dependencies == ["json-c"]  # not the empty one, nor one in a string
    assert facts.tests == ["main", "nvm"]
    assert facts.test_options == {"tests": "true", "unit-tests": "enabled"}
    assert facts.build_files == ["meson.build", "test/meson.build"]
    (wanted,) = wanted_of_meson(facts)
    assert wanted.groups[0] == ("json-c.pc",)
    language = language_named("C")
    assert language is not None and language.detect(given)
    (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    assert recipe.language == "C" and recipe.test_runner == "meson"
    assert recipe.install_commands[0] == (
        "meson setup build --buildtype=debug --wrap-mode=nodownload -Dtests=true "
        "-Dunit-tests=enabled"
    )
    assert "--system meson" in recipe.test_command
    assert language.check_command(recipe.test_command, "meson", "main") == (
        f"{recipe.test_command} --test main"
    )
    # a C++ standard a pull request's code asks for is meson's cpp_std (a project of C++)
    diff = "+++ b/t.cpp\n+#if __cplusplus >= 201703L\n"
    asked = Inputs("o/r", images={"gcc": IMAGES}, diffs=(diff,))
    (c_only, *_), _ = language.infer(given, asked)
    assert "cpp_std" not in c_only.install_commands[0]
    cpp = tree({"meson.build": MESON.replace("['c']", "['c', 'cpp']"), "src/a.cpp": ""})
    (both, *_), _ = language.infer(cpp, asked)
    assert both.install_commands[0].endswith(" -Dcpp_std=c++17")


def test_of_a_trees_build_systems_the_one_that_declares_tests_is_read() -> None:
    # a CMake project for users' builds beside the Meson project its tests are declared in
    cmake = "cmake_minimum_required(VERSION 3.14)\nproject(nvm C)\nadd_library(nvm src/a.c)\n"
    files = {"CMakeLists.txt": cmake, "meson.build": MESON, "test/meson.build": MESON_TEST}
    language = language_named("C")
    assert language is not None
    given = tree({**files, "meson_options.txt": OPTIONS, "src/a.c": ""})
    (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    assert recipe.test_runner == "meson"
    # neither declares tests: CMake's, the first found
    untested = tree({"CMakeLists.txt": cmake, "meson.build": MESON, "src/a.c": ""})
    (recipe, *_), _ = language.infer(untested, Inputs("o/r", images={"gcc": IMAGES}))
    assert recipe.test_runner == "ctest"


def test_keyword_arguments_do_not_take_the_next_calls_strings() -> None:
    (first, second) = calls("a('x', k: false)\nb('y', k: c('z'), j: ['p', 'q'])\n")[:2]
    assert (first.strings, first.keywords) == (["x"], {"k": "false"})
    assert (second.strings, second.keywords) == (["y"], {"k": "c", "j": "p"})


CONFIGURE = """\
dnl a comment with AC_CHECK_LIB([nope], [f])
AC_INIT([jq], [1.7], [https://github.com/x/y/issues])
AC_PROG_CC
# another: PKG_CHECK_MODULES([X], [ignored])
AC_CHECK_LIB([m], [floor])
AC_SEARCH_LIBS([dlopen], [dl dld], [], [AC_MSG_ERROR([no dlopen])])
PKG_CHECK_MODULES([ONIG], [oniguruma >= 6.1 libyaml-0.1], [have=yes], [have=no])
AC_CHECK_LIB([$LIBVAR], [f])
AS_IF([test "x$with_oniguruma" != xbuiltin], [
  AC_CHECK_HEADER([oniguruma.h], [AC_CHECK_LIB([onig], [onig_version])])
])
"""


def test_an_autotools_project_read_from_its_configure_ac() -> None:
    assert macro_calls("A([x, (y)], [z])B()")[0] == ("A", ["x, (y)", "z"])
    given = tree(
        {
            "configure.ac": CONFIGURE,
            "Makefile.am": "SUBDIRS = .\n",
            "tests/Makefile.am": "TESTS = t1 t2\n",
            "src/jq.c": "",
        }
    )
    facts = read_autotools(given)
    assert facts is not None
    assert facts.project == "jq" and not facts.cxx and not facts.has_configure_script
    assert facts.modules == ["oniguruma", "libyaml-0.1"]
    assert facts.libraries == ["m", "dl", "dld", "onig"]  # the last inside AS_IF
    assert facts.automake_tests
    assert [w.name for w in wanted_of_autotools(facts)] == [
        "oniguruma", "libyaml-0.1", "-lm", "-ldl", "-ldld", "-lonig",
    ]  # fmt: skip
    language = language_named("C")
    assert language is not None and language.detect(given)
    (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    assert recipe.language == "C" and recipe.test_runner == "automake"
    assert recipe.install_commands[:2] == ("autoreconf -fi", "./configure")
    # a configure.ac without Automake is not a build the plugin reads
    assert not language.detect(tree({"configure.ac": CONFIGURE, "src/jq.c": ""}))


def test_the_console_lines_of_meson_test_and_make_check() -> None:
    meson = (
        " 1/3 nvm:unit / main        OK              0.01s\n"
        " 2/3 nvm / crc              FAIL            0.02s   exit status 1\n"
        " 3/3 slow                   SKIP            0.00s\n"
    )
    assert parse_meson_console(meson) == {"main": "passed", "crc": "failed", "slow": "skipped"}
    automake = "PASS: tests/test_words\nFAIL: tests/test_crc\nXFAIL: known\nSKIP: later\n"
    assert parse_automake_console(automake) == {
        "tests/test_words": "passed", "tests/test_crc": "failed", "known": "passed",
        "later": "skipped",
    }  # fmt: skip


def test_tap_lines() -> None:
    output = (
        "TAP version 13\n1..5\nok 1 - adds\nnot ok 2 - subtracts\nok 3 # SKIP no tty\n"
        "not ok 4 - later # TODO\n    ok 1 - a subtest's line\nok 5 adds\nBail out! x\n"
    )
    assert anything_protocol_statuses(output) == {
        "adds": "passed",  # twice, a description without its dash the second time
        "subtracts": "failed",
        "#3": "skipped",  # no description: its number
        "later": "passed",  # a failure said to be known (TODO) is not this change's
    }


@pytest.mark.parametrize(
    ("reason", "log", "cause"),
    [
        (
            "install_failed",
            "  Each download failed!\n    error: downloading "
            "'https://github.com/google/googletest/archive/v1.14.0.zip' failed\n",
            "the build downloads at configure time "
            "(https://github.com/google/googletest/archive/v1.14.0.zip)",
        ),
        (
            "install_failed",
            "CMake Warning at CMakeLists.txt:4 (find_package):\n  By not providing "
            '"FindFrob.cmake" in CMAKE_MODULE_PATH this project has asked CMake',
            "the build did not find a package (Frob)",
        ),
        (
            "install_failed",
            "Run-time dependency json-c found: NO\n"
            'meson.build:9:4: ERROR: Dependency "json-c" not found, tried pkgconfig',
            "the build did not find a package (json-c)",
        ),
        (
            "tests_did_not_run",
            "compile failure: test/prefix/googletest/CMakeFiles/gtest.dir/src/gtest-all.cc.o: "
            "In file included from /testbed/test/gtest-1.10.0/googletest/src/gtest-all.cc:42:",
            "a library the project vendors does not compile with this gcc "
            "(test/prefix/googletest/CMakeFiles/gtest.dir/src/gtest-all.cc.o)",
        ),
        (
            "tests_did_not_run",
            "compile failure: test/gtest.o:\n/testbed/test/gtest-1.10.0/googletest/src/"
            "gtest-death-test.cc:1301:24: error: 'dummy' may be used uninitialized",
            "a library the project vendors does not compile with this gcc "
            "(/testbed/test/gtest-1.10.0/googletest/src/gtest-death-test.cc)",
        ),
    ],
)
def test_the_causes_of_a_failed_build(reason: str, log: str, cause: str) -> None:
    found = failure_cause(reason, log)
    assert found is not None and found.startswith(cause), found


def test_unity_lines_and_both_kinds_at_once() -> None:
    output = (
        "tests/misc_tests.c:47:cjson_array_foreach_should_loop_over_arrays:PASS\n"
        "tests/misc_tests.c:88:cjson_get_object_item_should_get_object_items:"
        "\x1b[41mFAIL\x1b[00m: Expected 1 Was 0\n"
        "tests/misc_tests.c:90:skipped_on_this_platform:IGNORE\n"
        "-----------------------\n3 Tests 1 Failures 1 Ignored\nFAIL\n"
        "ok 1 - a tap case\n"
    )
    assert case_statuses(output) == {
        "a tap case": "passed",
        "cjson_array_foreach_should_loop_over_arrays": "passed",
        "cjson_get_object_item_should_get_object_items": "failed",
        "skipped_on_this_platform": "skipped",
    }


def test_munit_lines_and_check_mark_lines() -> None:
    # µnit's (a suite registered as one CTest test), then a hand-written runner's marks in
    # terminal colours, the pass mark with the text-presentation selector after it
    output = (
        "Running test suite with seed 0x5c3a1b2d...\n"
        "/session/recv_request_headers        [ OK    ] [ 0.00001234 / 0.00001200 CPU ]\n"
        "/session/recv_continuation           [ ERROR ]\n"
        "/map/each                            [ FAIL  ]\n"
        "/map/ipv6                            [ SKIP  ]\n"
        "2 of 4 (50%) tests successful, 1 (25%) test skipped.\n"
        "\x1b[32m  \u2714\ufe0e\x1b[0m test_mat4_identity            0\n"
        "\x1b[1m\x1b[31m  \U00010107\x1b[1m\x1b[37m test_vec2_center \x1b[0m"
        "\x1b[33m- expected 1.0\x1b[0m\n"
        "  \u2713 other_case\n"
        # as CTest's report writes a colour's escape
        "[NON-XML-CHAR-0x1B][32m  \u2714\ufe0e[NON-XML-CHAR-0x1B][0m glm_mul     0\n"
        "Suite: nghttp2_session\n  Test: session_recv ...passed\n"
        "  Test: session_recv_data ...FAILED\n    1. tests/t.c:12  - 0 == rv\n"
        "Test Name    \u2714 is passed\n"  # a legend, not a case: the mark is not first
    )
    assert case_statuses(output) == {
        "/session/recv_request_headers": "passed",
        "/session/recv_continuation": "failed",
        "/map/each": "failed",
        "/map/ipv6": "skipped",
        "test_mat4_identity": "passed",
        "test_vec2_center": "failed",
        "other_case": "passed",
        "glm_mul": "passed",
        "session_recv": "passed",
        "session_recv_data": "failed",
    }


PLAIN_MAKEFILE = """\
# a library and its tests, built by make alone
CFLAGS ?= -O2 -Wall
LIB := libcodec.a
SRC = codec.c \\
      util.c
TESTS = $(wildcard tests/*.c)
LDLIBS += -lz $(shell pkg-config --libs libcurl) -lm $(EXTRA_LIBS)

default: $(LIB)
$(LIB): $(SRC:.c=.o)
\t$(AR) rcs $@ $^
%.o: %.c
\t$(CC) $(CFLAGS) -c $< -o $@
ifeq ($(OS),Windows_NT)
EXT = .exe
endif
define HELP
check: not a rule, the body of a variable
endef
test: CFLAGS += -g
test check: $(LIB)
\t$(MAKE) -C tests run: all
.PHONY: default test check
"""


def test_a_plain_makefile_is_read_for_its_rules_and_test_target() -> None:
    project = tree({"Makefile": PLAIN_MAKEFILE, "codec.c": "", "util.c": "", "tests/t.c": ""})
    facts = read_makefile(project)
    assert facts is not None
    assert facts.targets == ["default", "test", "check", ".PHONY"]
    assert facts.test_target == "check" and not facts.cxx
    assert facts.libraries == ["z", "m"] and facts.modules == ["libcurl"]
    language = language_named("C")
    assert language is not None and language.detect(project)
    (recipe, *_), _ = language.infer(project, Inputs("o/r", images={"gcc": IMAGES}))
    assert recipe.language == "C" and recipe.test_runner == "make-target"
    assert recipe.install_commands == ('make -k -j"$(nproc)" || true',)
    assert recipe.test_command.endswith(
        "--system make --build-dir build --timeout 600 --target check"
    )
    # a test program's own rule runs beside the target; the target's cases, with the target
    checks = {
        t: language.check_command(recipe.test_command, "make-target", t)
        for t in ("check", "check::a/b", "tests/test-fuzzer")
    }
    assert checks == {
        "check": recipe.test_command,
        "check::a/b": recipe.test_command,
        "tests/test-fuzzer": f"{recipe.test_command} --program tests/test-fuzzer",
    }
    # a Makefile without a test target, or beside another language's project, is not C's
    assert not language.detect(tree({"Makefile": "all:\n\tcc x.c\n", "x.c": ""}))
    node = tree({"Makefile": PLAIN_MAKEFILE, "codec.c": "", "package.json": '{"name": "x"}'})
    assert not language.detect(node)


def test_a_plain_makefiles_console_names_its_target() -> None:
    output = (
        "swe-ctest: running make -k -j 2 check\nok 1 - encodes\nnot ok 2 - decodes\n"
        "make: *** [Makefile:20: check] Error 1\n"
    )
    assert parse_make_console(output) == {"check::encodes": "passed", "check::decodes": "failed"}
    assert parse_make_console("ok 1 - before any run\n") == {}
