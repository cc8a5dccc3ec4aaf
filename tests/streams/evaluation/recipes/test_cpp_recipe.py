"""The C/C++ plugin's decisions, without Docker: which trees are C/C++ projects, the gcc images
tried (the project's CMake minimum), the CMake recipe (Ninja, tests on, configure-time downloads
found installed, CMake 4's policy floor), the Debian packages of what it finds, the test cases
a test patch changes, what did not compile and the check command of one test."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from streams.clients.debian_contents import DebianContents
from streams.evaluation.image_builds import PACKAGE_CACHE_MOUNT
from streams.evaluation.recipes.languages import Inputs, language_named, language_of
from streams.evaluation.recipes.languages.cpp.changed import changed_cases
from streams.evaluation.recipes.languages.cpp.cmake import read_cmake
from streams.evaluation.recipes.languages.cpp.compiled import build_failures
from streams.evaluation.recipes.languages.cpp.debian import (
    Wanted,
    module_files,
    packages_of,
    wanted_of_cmake,
)
from streams.evaluation.recipes.languages.cpp.recipe import (
    NEWER_GCC_WARNINGS,
    gcc_versions,
    options_for_tests,
    warning_flags,
)
from streams.evaluation.recipes.languages.cpp.standard import standard_asked
from streams.evaluation.recipes.languages.cpp.toolchain import CXX_IMAGES
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from tests.fakes.debian_archive import debian_archive
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

IMAGES = {"12": "swe-stream/cxx:bookworm", "14": "swe-stream/cxx:trixie", "16": "cxx:forky"}
LISTS = """\
cmake_minimum_required(VERSION {minimum})
project(calc LANGUAGES {languages})
option(CALC_BUILD_TESTS "tests" OFF)
find_package(ZLIB REQUIRED)
find_package(Frobnicator)
include(FetchContent)
FetchContent_Declare(googletest URL https://github.com/google/googletest/archive/v1.14.0.zip)
FetchContent_MakeAvailable(googletest)
add_library(calc src/calc.c)
if(CALC_BUILD_TESTS)
  enable_testing()
  add_subdirectory(tests)
endif()
"""


def cmake_tree(
    minimum: str = "3.14", languages: str = "C CXX", extra: dict[str, str] | None = None
) -> TreeFiles:
    files = {
        "CMakeLists.txt": LISTS.format(minimum=minimum, languages=languages),
        "src/calc.c": "int add(int a, int b) { return a + b; }\n",
        "tests/CMakeLists.txt": "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n",
        "tests/t.cpp": "int main() { return 0; }\n",
        **(extra or {}),
    }
    return tree(files)


def test_a_cmake_project_with_sources_is_cpp_and_one_with_python_packaging_is_not() -> None:
    language = language_of(cmake_tree())
    assert language is not None and language.name == "C++" and language.compiled
    assert language_named("C") is language and language_named("cpp") is language
    # a Python package with a CMake-built extension and Python tests is Python's
    python = tree(
        {
            "CMakeLists.txt": "project(ext CXX)\nadd_library(ext MODULE ext.cpp)\n",
            "ext.cpp": "int f() { return 1; }\n",
            "pyproject.toml": "[project]\nname = 'ext'\n",
            "ext/__init__.py": "",
            "tests/test_ext.py": "def test_f(): pass\n",
        }
    )
    assert (found := language_of(python)) is not None and found.name == "Python"
    # a C++ library with Python bindings and tools, whose CMake project has tests, is C++'s
    bindings = cmake_tree(
        extra={
            "setup.py": "from setuptools import setup\n",
            "bindings/b.py": "",
            "src/more.cpp": "",
            "src/more.h": "",
        }
    )
    assert (found := language_of(bindings)) is not None and found.name == "C++"
    # more Python than C/C++: Python's, whatever its CMake project holds
    scripts = cmake_tree(extra={f"scripts/s{n}.py": "" for n in range(3)})
    assert (found := language_of(scripts)) is not None and found.name == "Python"
    assert language_of(tree({"CMakeLists.txt": "project(x)\n", "README.md": "x"})) is None


def test_a_go_module_of_integration_tests_beside_a_c_library_is_the_librarys() -> None:
    go_mod = {"go.mod": "module example.com/lib\n\ngo 1.21\n", "it/server_test.go": "package it\n"}
    sources = {f"lib/part{n}.c": "int f(void) { return 0; }\n" for n in range(12)}
    library = cmake_tree(extra={**go_mod, **sources})
    assert (found := language_of(library)) is not None and found.name == "C++"
    # a Go project with a C part (cgo, a vendored C library) stays Go's: its Go sources are
    # not ten times fewer
    go_project = cmake_tree(
        extra={**go_mod, **{f"pkg/p{n}.go": "package pkg\n" for n in range(2)}, **sources}
    )
    assert (found := language_of(go_project)) is not None and found.name == "Go"


@pytest.mark.parametrize(
    ("minimum", "tried"),
    [
        ("3.14", ["12", "14", "16"]),  # oldest gcc first
        ("3.28", ["14", "16"]),  # bookworm's CMake is 3.25
        ("3.31.7", ["16"]),
        ("4.9", []),
    ],
)
def test_the_gcc_images_tried_are_those_whose_cmake_the_project_accepts(
    minimum: str, tried: list[str]
) -> None:
    facts = read_cmake(cmake_tree(minimum))
    assert facts is not None
    assert gcc_versions(facts, IMAGES) == tried


def test_the_recipe_configures_with_the_tests_on_and_downloads_found_installed() -> None:
    language = language_named("C++")
    assert language is not None
    given = cmake_tree("2.8.12")
    recipes, _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    assert [r.base_image for r in recipes] == list(IMAGES.values())
    recipe = recipes[0]
    assert recipe.language == "C++" and recipe.test_runner == "ctest"
    configure, build = recipe.install_commands
    words = shlex.split(configure)
    assert words[:6] == ["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Debug"]
    assert {"-DBUILD_TESTING=ON", "-DCALC_BUILD_TESTS=ON"} <= set(words)
    assert "-DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest" in words
    assert "-DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=ALWAYS" in words
    assert "-DCMAKE_POLICY_VERSION_MINIMUM=3.5" in words  # 2.8.12: CMake 4 refuses it without
    flags = {word.split("=", 1)[0]: word.split("=", 1)[1] for word in words if "_FLAGS=" in word}
    assert "-Wno-error=maybe-uninitialized" in flags["-DCMAKE_C_FLAGS"]
    assert "-Wno-error=class-memaccess" in flags["-DCMAKE_CXX_FLAGS"]
    assert "self-move" not in flags["-DCMAKE_CXX_FLAGS"]  # gcc 12 refuses a flag it lacks
    assert "-Wno-error=self-move" in recipes[1].install_commands[0]  # gcc 14 has it
    assert build == "cmake --build build -- -k 0 || true"
    assert recipe.system_packages == ()  # no file list to look packages up in
    assert any("ZLIB, Frobnicator" in note for note in recipe.notes)
    assert any("googletest" in note for note in recipe.notes)
    assert "swe-ctest.py" in recipe.dependency_files
    assert recipe.test_command.startswith(
        "python3 /opt/swe-env/swe-ctest.py --system cmake --build-dir build"
    )
    assert recipe.sources == ("CMakeLists.txt", "gcc:12") and language.version_of(recipe) == "12"
    report = language.report_file("ctest", "/tmp/p")
    assert report is not None and report.arguments == "--report /tmp/p/report.swe-ctest.xml"
    # a project of C alone makes tasks of C; a newer CMake needs no policy floor
    (c_only, *_), _ = language.infer(cmake_tree("3.20", "C"), Inputs("o/r", images={"gcc": IMAGES}))
    assert c_only.language == "C"
    assert not any("POLICY_VERSION" in command for command in c_only.install_commands)


def test_an_option_that_only_adds_a_download_is_turned_off() -> None:
    # test data fetched from a git repository, on by default: no Debian package serves it,
    # and the closed network would fail the configure; the test framework is found installed
    data = (
        'option(CALC_DATA_TESTS "the data-driven tests" ON)\n'
        "if(CALC_DATA_TESTS)\n"
        "  FetchContent_Declare(calc_data GIT_REPOSITORY https://example.org/calc-data.git)\n"
        "  FetchContent_MakeAvailable(calc_data)\n"
        "endif()\n"
        "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n"
    )
    language = language_named("C++")
    assert language is not None
    given = cmake_tree(extra={"tests/CMakeLists.txt": data})
    (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    words = shlex.split(recipe.install_commands[0])
    assert "-DCALC_DATA_TESTS=OFF" in words and "-DCALC_BUILD_TESTS=ON" in words
    assert not any(word.startswith("-DCALC_BUILD_TESTS=OFF") for word in words)


def first_recipe(tests_listfile: str) -> InstallRecipe:
    """The first recipe of the project ``cmake_tree`` makes, with ``tests_listfile`` as its
    tests' listfile."""
    language = language_named("C++")
    assert language is not None
    given = cmake_tree(extra={"tests/CMakeLists.txt": tests_listfile})
    (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
    return recipe


def configure_words(tests_listfile: str) -> list[str]:
    """The words of the configure command of ``first_recipe``."""
    return shlex.split(first_recipe(tests_listfile).install_commands[0])


def test_an_option_that_finds_the_installed_package_in_place_of_its_download_is_turned_on() -> None:
    # the download (a fork of the framework) is taken unless the option is on; on, the
    # package is found installed (Debian's doctest-dev), its targets what the tests link
    fetched = (
        'option(CALC_SYSTEM_DOCTEST "use the system doctest" OFF)\n'
        "if(NOT CALC_SYSTEM_DOCTEST)\n"
        "  FetchContent_Declare(doctest GIT_REPOSITORY https://example.org/doctest.git)\n"
        "  FetchContent_MakeAvailable(doctest)\n"
        "else()\n"
        "  find_package(doctest REQUIRED)\n"
        "endif()\n"
        'option(CALC_OFFLINE "no downloads" OFF)\n'
        "if(NOT CALC_OFFLINE)\n"
        "  FetchContent_Declare(data GIT_REPOSITORY https://example.org/data.git)\n"
        "endif()\n"
        "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n"
    )
    words = configure_words(fetched)
    assert "-DCALC_SYSTEM_DOCTEST=ON" in words
    # an option whose else finds nothing says nothing of what it turns on
    assert not any(word.startswith("-DCALC_OFFLINE") for word in words)


def test_the_notes_name_the_downloads_the_configure_reaches_alone() -> None:
    """A download under an option off by default (examples), one under an option the recipe
    turns off (extra data), one an option it turns on skips (the system doctest): none is
    reached; a download the configure always reaches is said."""
    listfile = (
        'option(CALC_BUILD_EXAMPLES "the examples" OFF)\n'
        "if(CALC_BUILD_EXAMPLES)\n"
        "  FetchContent_Declare(reflect GIT_REPOSITORY https://example.org/reflect.git)\n"
        "endif()\n"
        'option(CALC_DATA_TESTS "the data-driven tests" ON)\n'
        "if(CALC_DATA_TESTS)\n"
        "  FetchContent_Declare(calc_data GIT_REPOSITORY https://example.org/calc-data.git)\n"
        "endif()\n"
        'option(CALC_SYSTEM_DOCTEST "use the system doctest" OFF)\n'
        "if(NOT CALC_SYSTEM_DOCTEST)\n"
        "  FetchContent_Declare(doctest GIT_REPOSITORY https://example.org/doctest.git)\n"
        "else()\n"
        "  find_package(doctest REQUIRED)\n"
        "endif()\n"
        "FetchContent_Declare(fmt GIT_REPOSITORY https://example.org/fmt.git)\n"
        "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n"
    )
    recipe = first_recipe(listfile)
    said = [note for note in recipe.notes if note.startswith("downloads at configure time")]
    assert said == ["downloads at configure time: googletest, fmt"]  # googletest: cmake_tree's


def test_an_option_whose_off_branch_finds_the_test_framework_installed_is_turned_off() -> None:
    # on by default, the project builds its own copy of GoogleTest (a download); off, it
    # finds the one Debian installs
    bundled = (
        'option(CALC_USE_BUNDLED_GTEST "the bundled GoogleTest" ON)\n'
        'option(CALC_FAST "a faster build" ON)\n'
        "if(CALC_USE_BUNDLED_GTEST)\n  include(cmake/GoogleTest.cmake)\n"
        "else()\n  find_package(GTest CONFIG REQUIRED)\nendif()\n"
        "if(CALC_FAST)\n  add_definitions(-DFAST)\nelse()\n  find_package(ZLIB)\nendif()\n"
        "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n"
    )
    words = configure_words(bundled)
    assert "-DCALC_USE_BUNDLED_GTEST=OFF" in words
    assert not any(word.startswith("-DCALC_FAST") for word in words)  # not a test framework


ADDED_BEHIND_CXX17 = """\
--- a/tests/test_calc.cpp
+++ b/tests/test_calc.cpp
@@ -1,2 +1,6 @@
 #include <gtest/gtest.h>
+#if __cplusplus >= 201703L
+TEST(Calc, StringView) { EXPECT_EQ(add(std::string_view("1"), 1), 2); }
+#endif
+#if __cplusplus > 201103L  // C++14 and on: every image's default
"""


def test_a_test_added_behind_a_newer_standard_is_built_with_that_standard() -> None:
    assert standard_asked([ADDED_BEHIND_CXX17]) == "17"
    assert standard_asked([ADDED_BEHIND_CXX17.replace(">= 201703L", "> 201402L")]) == "17"
    assert standard_asked([ADDED_BEHIND_CXX17.replace("201703L", "202002L")]) == "20"
    assert standard_asked([ADDED_BEHIND_CXX17.replace(">= 201703L", ">= 201402L")]) is None
    removed = ADDED_BEHIND_CXX17.replace(
        "+#if __cplusplus >= 201703L", "-#if __cplusplus >= 201703L"
    )
    assert standard_asked([removed]) is None  # a condition the patch takes away asks nothing
    language = language_named("C++")
    assert language is not None
    inputs = Inputs("o/r", images={"gcc": IMAGES}, diffs=(ADDED_BEHIND_CXX17,))
    (recipe, *_), _ = language.infer(cmake_tree(), inputs)
    assert "-DCMAKE_CXX_STANDARD=17" in shlex.split(recipe.install_commands[0])
    (plain, *_), _ = language.infer(cmake_tree(), Inputs("o/r", images={"gcc": IMAGES}))
    assert "CMAKE_CXX_STANDARD" not in plain.install_commands[0]


def test_a_vendored_catch2_older_than_glibcs_signal_stack_change_compiles_without_it() -> None:
    language = language_named("C++")
    assert language is not None

    def cxx_flags(version: str) -> str:
        header = f"/*\n *  Catch v{version}\n */\nconstexpr int size = MINSIGSTKSZ;\n"
        given = cmake_tree(extra={"tests/catch.hpp": header})
        (recipe, *_), _ = language.infer(given, Inputs("o/r", images={"gcc": IMAGES}))
        words = shlex.split(recipe.install_commands[0])
        return next(w for w in words if w.startswith("-DCMAKE_CXX_FLAGS="))

    assert "-DCATCH_CONFIG_NO_POSIX_SIGNALS" in cxx_flags("2.8.0").split()
    assert "-Wno-error=class-memaccess" in cxx_flags("2.8.0").split()
    assert "-DCATCH_CONFIG_NO_POSIX_SIGNALS" not in cxx_flags("2.13.10")


WARNED = """\
#include <string.h>
char buffer[4];
void copy(void) { strcpy(buffer, "too long"); }
int main(void) { int unset; return unset; }
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_kept_warnings_outlast_a_projects_werror_after_them(tmp_path: Path) -> None:
    source = tmp_path / "warned.c"
    source.write_text(WARNED)
    strict = ["gcc", "-c", "-O2", "-Wall", "-Werror", str(source), "-o", str(tmp_path / "w.o")]
    assert subprocess.run(strict, capture_output=True).returncode != 0
    # the recipe's flags come first (CMAKE_C_FLAGS), the project's -Werror after them
    kept = [*strict[:3], *warning_flags(NEWER_GCC_WARNINGS).split(), *strict[3:]]
    compiled = subprocess.run(kept, capture_output=True, text=True)
    assert compiled.returncode == 0 and "[-Wuninitialized]" in compiled.stderr, compiled.stderr


def test_no_image_has_the_cmake_asked_for() -> None:
    language = language_named("C++")
    assert language is not None
    facts = read_cmake(cmake_tree("4.9"))
    assert language.versions(facts, Inputs("o/r", images={"gcc": IMAGES})) == []
    reason, detail = language.no_recipe(facts, Inputs("o/r", images={"gcc": IMAGES}))
    assert reason == "no_cmake_for_cmake_minimum" and "4.9" in detail and "CMake 3.25.1" in detail


FIND_FROB = """\
find_path(FROB_INCLUDE_DIR NAMES frob/frob.h PATH_SUFFIXES frob1)
find_library(FROB_LIBRARY NAMES frob ${FROB_NAMES})
find_file(FROB_TOOL NAMES frob.exe)
find_program(FROB_CONFIG NAMES frob-config)
find_program(FROB_DOC NAMES frob-doc)
"""


def test_the_files_a_find_module_looks_for() -> None:
    compiled, programs = module_files(FIND_FROB)
    assert compiled == (
        "usr/include/frob/frob.h",
        "usr/include/x86_64-linux-gnu/frob/frob.h",
        "usr/include/frob1/frob/frob.h",
        "usr/lib/x86_64-linux-gnu/libfrob.so",
        "usr/lib/libfrob.so",
    )  # not the Windows tool, not a name made of variables
    assert programs == ("usr/bin/frob-config", "bin/frob-config")  # the first program alone


def test_what_each_package_a_cmake_project_finds_needs() -> None:
    lists = (
        "project(calc)\nfind_package(Frob)\nfind_package(ZLIB REQUIRED)\n"
        "find_package(Threads)\nfind_package(Doxygen)\nfind_package(BISON REQUIRED)\n"
        "find_package(Boost COMPONENTS filesystem)\nfind_package(calc CONFIG)\n"
        "pkg_check_modules(GLIB REQUIRED glib-2.0>=2.50 calc)\n"
    )
    modules = {
        "ZLIB": "find_path(ZLIB_INCLUDE_DIR NAMES zlib.h)\n",
        "Threads": "include(CheckIncludeFile)\n",
        "Doxygen": "find_program(DOXYGEN_EXECUTABLE NAMES doxygen)\n",
        "BISON": "find_program(BISON_EXECUTABLE NAMES bison win_bison)\n",
    }
    given = tree({"CMakeLists.txt": lists, "cmake/FindFrob.cmake": FIND_FROB})
    facts = read_cmake(given)
    assert facts is not None
    wanted = {w.name: w.groups for w in wanted_of_cmake(facts, given, modules.get)}
    assert wanted["Frob"][1] == module_files(FIND_FROB)[0]  # the tree's own module
    assert wanted["ZLIB"] == (
        ("ZLIBConfig.cmake", "zlib-config.cmake"),
        ("usr/include/zlib.h", "usr/include/x86_64-linux-gnu/zlib.h"),
    )
    assert wanted["Threads"] == () and wanted["Doxygen"] == ()  # nothing; an optional tool
    assert wanted["BISON"][1] == (
        "usr/bin/bison",
        "bin/bison",
        "usr/bin/win_bison",
        "bin/win_bison",
    )
    assert wanted["Boost"] == (
        ("BoostConfig.cmake", "boost-config.cmake", "boost_filesystem-config.cmake"),
        ("boost.pc", "usr/lib/x86_64-linux-gnu/libboost.so", "usr/lib/libboost.so",
         "usr/include/boost.h", "usr/include/x86_64-linux-gnu/boost.h"),
    )  # fmt: skip
    assert wanted["glib-2.0"] == (("glib-2.0.pc",),)
    assert "calc" not in wanted  # the project's own package, found by its examples


def test_the_packages_chosen_for_the_files_found() -> None:
    curl = ("libcurl4-gnutls-dev", "libcurl4-nss-dev", "libcurl4-openssl-dev")
    holders: dict[str, list[tuple[str, tuple[str, ...]]]] = {
        "curl/curl.h": [("usr/include/x86_64-linux-gnu/curl/curl.h", curl)],
        "libcurl.so": [("usr/lib/x86_64-linux-gnu/libcurl.so", curl[2:])],
        "BoostConfig.cmake": [
            (
                "usr/lib/x86_64-linux-gnu/cmake/Boost-1.81.0/BoostConfig.cmake",
                ("libboost1.81-dev",),
            ),
            ("usr/lib/x86_64-linux-gnu/cmake/Boost-1.9.0/BoostConfig.cmake", ("libboost1.9-dev",)),
        ],
        "zlib.h": [("usr/include/zlib.h", ("zlib1g-dev",))],
    }
    wanted = [
        Wanted("CURL", (("CURLConfig.cmake",), ("curl/curl.h", "libcurl.so"))),
        Wanted("Boost", (("BoostConfig.cmake",), ("boost.h",))),
        Wanted("ZLIB", (("zlib.h", "zconf.h"),)),
        Wanted("Threads", ()),
        Wanted("Frob", (("FrobConfig.cmake",), ("frob.h",))),
    ]
    packages, unknown = packages_of(wanted, holders)
    # one curl that gives the header and the library (GnuTLS's and OpenSSL's conflict)
    assert packages == ["libcurl4-openssl-dev", "libboost1.81-dev", "zlib1g-dev"]
    assert unknown == ["Frob"]


def test_a_cross_compilers_or_another_architectures_file_is_not_the_native_builds() -> None:
    holders: dict[str, list[tuple[str, tuple[str, ...]]]] = {
        "zlib.pc": [
            ("usr/lib/x86_64-linux-gnu/pkgconfig/zlib.pc", ("zlib1g-dev",)),
            ("usr/x86_64-w64-mingw32/lib/pkgconfig/zlib.pc", ("libz-mingw-w64-dev",)),
        ],
        "libquux.so": [("usr/lib/i386-linux-gnu/libquux.so", ("libquux-dev-i386",))],
        "quux.h": [("usr/lib/gcc-cross/aarch64-linux-gnu/12/include/quux.h", ("gcc-12-cross",))],
    }
    wanted = [Wanted("zlib", (("zlib.pc",),)), Wanted("-lquux", (("libquux.so",), ("quux.h",)))]
    assert packages_of(wanted, holders) == (["zlib1g-dev"], ["-lquux"])


def test_the_recipe_installs_the_packages_of_the_files_its_build_finds(tmp_path: Path) -> None:
    language = language_named("C++")
    assert language is not None
    extra = {
        "tests/CMakeLists.txt": "find_package(fmt CONFIG REQUIRED)\nadd_test(NAME t COMMAND t)\n"
    }
    with debian_archive() as archive:
        files = DebianContents(archive.mirror, tmp_path)
        (recipe, *_), _ = language.infer(
            cmake_tree("3.14", extra=extra),
            Inputs("o/r", images={"gcc": IMAGES}, system_files=files),
        )
        assert recipe.system_packages == ("zlib1g-dev", "libfmt-dev")
        assert any("bookworm holds a file of: Frobnicator" in note for note in recipe.notes)
        # no file list to read: nothing installed, and the notes say why
        down = DebianContents(archive.mirror.replace("/debian", "/gone"), tmp_path / "x")
        (recipe, *_), _ = language.infer(
            cmake_tree("3.14"), Inputs("o/r", images={"gcc": IMAGES}, system_files=down)
        )
        assert recipe.system_packages == ()
        assert any("bookworm's file list could not be read" in note for note in recipe.notes)


BASE_TEST = """\
#include <gtest/gtest.h>
#include "calc.h"

TEST(Calc, Adds) {
  EXPECT_EQ(add(2, 3), 5);
}

TEST(Calc, Clamps) {
  EXPECT_EQ(clamp(5, 0, 3), 3);
}
"""
TEST_PATCH = """\
diff --git a/tests/calc_test.cpp b/tests/calc_test.cpp
--- a/tests/calc_test.cpp
+++ b/tests/calc_test.cpp
@@ -7,5 +7,10 @@ TEST(Calc, Adds) {
\x20
 TEST(Calc, Clamps) {
   EXPECT_EQ(clamp(5, 0, 3), 3);
+  EXPECT_EQ(clamp(-1, 0, 3), 0);
 }
+
+TEST(Calc, Muls) {
+  EXPECT_EQ(mul(2, 3), 6);
+}
diff --git a/tests/README.md b/tests/README.md
--- /dev/null
+++ b/tests/README.md
@@ -0,0 +1 @@
+TEST(Not, ACase) {}
"""


def test_the_cases_a_test_patch_adds_or_changes() -> None:
    given = tree({"tests/calc_test.cpp": BASE_TEST})
    assert changed_cases(given, TEST_PATCH) == ["Calc.Clamps", "Calc.Muls"]
    language = language_named("C++")
    assert language is not None and language.tests_changed(given, TEST_PATCH) == changed_cases(
        given, TEST_PATCH
    )
    assert language.test_line_ranges("tests/calc_test.cpp", BASE_TEST) == [(4, 6), (8, 10)]
    assert language.test_line_ranges("README.md", BASE_TEST) is None


PROGRAM_BASE = "#include <assert.h>\nint main() {\n  int error = 0;\n  return error;\n}\n"
PROGRAM_PATCH = """\
diff --git a/test/gtx/gtx_decompose.cpp b/test/gtx/gtx_decompose.cpp
--- a/test/gtx/gtx_decompose.cpp
+++ b/test/gtx/gtx_decompose.cpp
@@ -1,5 +1,6 @@
 #include <assert.h>
 int main() {
   int error = 0;
+  error += recompose() != 1;
   return error;
 }
"""


def test_a_changed_test_program_of_no_cases_is_the_test_named_after_it() -> None:
    given = tree({"test/gtx/gtx_decompose.cpp": PROGRAM_BASE})
    changed = changed_cases(given, PROGRAM_PATCH)
    assert changed == ["program:gtx_decompose"]
    language = language_named("C++")
    assert language is not None
    ids = ["test-gtx_decompose", "test-gtx_decompose_more", "gtx_decompose_test::A.B", "other"]
    assert language.changed_ids(changed, ids) == ["test-gtx_decompose"]


NINJA_LOG = """\
[1/4] Building CXX object CMakeFiles/calc.dir/calc.cpp.o
[2/4] Building CXX object CMakeFiles/broken_test.dir/tests/broken_test.cpp.o
FAILED: CMakeFiles/broken_test.dir/tests/broken_test.cpp.o
/usr/bin/c++ -o CMakeFiles/broken_test.dir/tests/broken_test.cpp.o -c tests/broken_test.cpp
tests/broken_test.cpp:4:20: error: 'mul' was not declared in this scope
    4 | TEST(Calc, Muls) { EXPECT_EQ(mul(2, 3), 6); }
[3/4] Linking CXX executable good_test
ninja: build stopped: subcommand failed.
swe-ctest: did not compile CMakeFiles/broken_test.dir/tests/broken_test.cpp.o
"""


def test_what_did_not_compile_and_what_the_compiler_said() -> None:
    failures = build_failures(NINJA_LOG)
    obj = "CMakeFiles/broken_test.dir/tests/broken_test.cpp.o"
    assert list(failures) == [obj]
    assert failures[obj].splitlines()[0] == (
        "tests/broken_test.cpp:4:20: error: 'mul' was not declared in this scope"
    )
    assert build_failures(NINJA_LOG.replace("swe-ctest: did not compile", "x")) == {}
    language = language_named("C++")
    assert language is not None and language.compile_failures("ctest", NINJA_LOG) == failures


def test_a_check_command_runs_one_test() -> None:
    language = language_named("C++")
    assert language is not None
    command = "python3 /opt/swe-env/swe-ctest.py --build-dir build"
    assert language.check_command(command, "ctest", "Calc.Adds") == (
        f"{command} --tests-regex '^Calc\\.Adds$'"
    )
    assert language.check_command(command, "ctest", "whole_test::Whole.Works") == (
        f"GTEST_FILTER=Whole.Works {command}"
    )
    assert language.check_command(command, "pytest", "x") is None
    assert language.touches_compiled_sources("diff --git a/src/calc.cpp b/src/calc.cpp\n")
    assert language.touches_compiled_sources("diff --git a/CMakeLists.txt b/CMakeLists.txt\n")
    assert not language.touches_compiled_sources("diff --git a/README.md b/README.md\n")


def test_only_options_that_turn_on_the_tests_alone_are_set() -> None:
    lists = """\
option(LIB_BUILD_TESTS "tests" OFF)
option(LIB_CUDA_TEST "CUDA tests" OFF)
option(LIB_BUILD_EXAMPLES "examples" OFF)
if(LIB_BUILD_TESTS OR LIB_CUDA_TEST OR LIB_BUILD_EXAMPLES)
  enable_testing()
  add_subdirectory(tests)
endif()
add_subdirectory(third_party/googletest)
"""
    vendored = "option(gtest_build_tests OFF)\nif(gtest_build_tests)\n  add_test(g g)\nendif()\n"
    facts = read_cmake(
        tree(
            {
                "CMakeLists.txt": lists,
                "third_party/googletest/CMakeLists.txt": vendored,
                "tests/CMakeLists.txt": "add_test(NAME t COMMAND t)\n",
            }
        )
    )
    assert facts is not None
    assert facts.test_options == [
        "LIB_BUILD_TESTS",
        "LIB_CUDA_TEST",
        "LIB_BUILD_EXAMPLES",
        "gtest_build_tests",
    ]
    # a CUDA toolchain, examples, a vendored project's own tests: not the project's tests alone
    assert options_for_tests(facts) == ["LIB_BUILD_TESTS"]


def test_the_compiler_cache_is_the_hosts_package_cache() -> None:
    # every image build mounts the host's package cache there: the next build of the same
    # sources (a repository's next PR, the next gcc image tried) is served from ccache
    environment = dict(CXX_IMAGES.environment)
    assert environment["CCACHE_DIR"] == f"{PACKAGE_CACHE_MOUNT}/ccache"
    assert environment["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
