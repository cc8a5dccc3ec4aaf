"""A CMake project's recipe: configured once in the instance image (Ninja, tests on, what the
project downloads at configure time found installed instead), built there, then each test run
builds what a patch changed and runs CTest through swe-ctest.

The compiler is an image's gcc (``toolchain``): the oldest whose CMake the project accepts
first (older code compiles best with the gcc of its time: newer ones refuse what they once
let through, a missing ``#include <cstdint>`` the best known), the newer ones after it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from importlib import resources

from packaging.version import InvalidVersion, Version

from streams.evaluation.recipes.languages import version_key
from streams.evaluation.recipes.languages.cpp.autotools import AutotoolsFacts
from streams.evaluation.recipes.languages.cpp.cmake import ROOT_LISTFILE, CMakeFacts
from streams.evaluation.recipes.languages.cpp.makefile import MakefileFacts
from streams.evaluation.recipes.languages.cpp.meson import MesonFacts
from streams.evaluation.recipes.languages.cpp.toolchain import DEBIAN_CMAKE, DEBIAN_GCC
from streams.evaluation.recipes.model import ENV_DIR, InstallRecipe

LANGUAGE_NAME = "C++"
C_ONLY = "C"  # a project whose ``project()`` names C and no C++: its tasks say C
RUNNER = "ctest"
MESON_RUNNER = "meson"  # swe-ctest --system meson: ``meson test``'s testlog.json
AUTOMAKE_RUNNER = "automake"  # swe-ctest --system automake: ``make check``'s .trs files
MAKE_RUNNER = "make-target"  # swe-ctest --system make: a plain Makefile's test target, run whole
RUNNER_SCRIPT = "swe-ctest.py"  # in ENV_DIR
BUILD_DIR = "build"
GOOGLETEST_SOURCES = "/usr/src/googletest"  # Debian's googletest package
# CMake 4 refuses a project asking for a CMake older than 3.5 without this
POLICY_MINIMUM = "3.5"
# the CMake of each image's gcc (the suite's): a project asking for a newer one is not tried
CMAKE_OF = {DEBIAN_GCC[suite]: cmake for suite, cmake in DEBIAN_CMAKE.items()}
MAX_TEST_SECONDS = 600


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def gcc_versions(facts: CMakeFacts, images: Mapping[str, str]) -> list[str | None]:
    """The gcc images to try, oldest first, leaving out those whose CMake is older than the
    project's ``cmake_minimum_required`` (none built: nothing to try)."""
    wanted = _version(facts.minimum)
    chosen: list[str | None] = []
    for version in sorted(images, key=version_key):
        cmake = _version(CMAKE_OF.get(version))
        if wanted is not None and cmake is not None and cmake < wanted:
            continue
        chosen.append(version)
    return chosen


def language_of_project(facts: CMakeFacts) -> str:
    """C for a project whose ``project()`` names C and not C++ (CMake's default is both)."""
    written = {language.upper() for language in facts.languages}
    return C_ONLY if written and "C" in written and "CXX" not in written else LANGUAGE_NAME


# words of a test option that turns on more than the tests: another toolchain, a tool or a
# stricter build the image may not have (a CUDA test target, assembly listings' tests)
EXTRA_WORDS = (
    "CUDA", "FUZZ", "BENCH", "ASSEMBLY", "ASM", "COVERAGE", "SANITIZ", "VALGRIND", "MEMCHECK",
    "WERROR", "PEDANTIC", "DOC", "EXAMPLE", "INSTALL", "PACKAGE",
)  # fmt: skip
# directories of code a project vendors: their options are the vendored project's own
VENDORED = frozenset({"third_party", "thirdparty", "3rdparty", "external", "extern", "vendor",
                      "deps", "contrib", "googletest", "gtest", "gmock"})  # fmt: skip


def options_for_tests(facts: CMakeFacts) -> list[str]:
    """The options to turn on for the tests: those guarding them whose names say tests, not
    something more, declared by the project itself (not by a project it vendors)."""
    chosen = []
    for option in facts.test_options:
        words = option.upper()
        declared = facts.option_files.get(option, ROOT_LISTFILE).lower().split("/")
        if "TEST" not in words or any(word in words for word in EXTRA_WORDS):
            continue
        if any(part in VENDORED or part.startswith(("gtest", "googletest")) for part in declared):
            continue
        chosen.append(option)
    return chosen


# the warnings a newer gcc adds or sharpens that a project's -Werror (its own, or a library's it
# vendors: GoogleTest 1.10's) turns into errors in code its own CI's gcc compiled: kept
# warnings (a -Wno-error=<name> outlasts a -Werror after it), not the PR's failures
NEWER_GCC_WARNINGS = (
    "maybe-uninitialized", "uninitialized", "stringop-overflow", "stringop-truncation",
    "array-bounds", "restrict", "use-after-free", "dangling-pointer", "deprecated-declarations",
    "format-truncation", "format-overflow", "free-nonheap-object",
)  # fmt: skip
NEWER_GXX_WARNINGS = (
    "class-memaccess", "deprecated-copy", "range-loop-construct", "redundant-move",
    "pessimizing-move",
)  # fmt: skip
# those a gcc before the major named does not know (it refuses the flag): named from it on
SINCE_GCC = {"dangling-reference": 13, "self-move": 13}


def warning_flags(names: Sequence[str], gcc: str | None = None) -> str:
    """``-Wno-error=`` of ``names`` and of those ``SINCE_GCC`` that gcc ``gcc`` knows."""
    major = int(gcc) if gcc and gcc.isdigit() else 0
    known = [*names, *(name for name, since in SINCE_GCC.items() if major >= since)]
    return " ".join(f"-Wno-error={name}" for name in known)


# what a configure-time download that Debian serves is (its name or source says it)
TEST_FRAMEWORKS = ("googletest", "gtest", "doctest", "catch")


def download_options(facts: CMakeFacts, turned_on: Sequence[str]) -> list[str]:
    """The options on by default that only add a configure-time download (test data, an
    extra library) that no Debian package serves: turned off, as the closed network would
    fail the whole configure (a test framework is found installed instead)."""
    guards = [
        option
        for content in facts.fetched
        if not any(f in f"{content.name} {content.source}".lower() for f in TEST_FRAMEWORKS)
        for option in content.guards
    ]
    return _on_by_default(facts, guards, turned_on)


def installed_options(facts: CMakeFacts) -> list[str]:
    """The options off by default that, turned on, find a package installed in place of its
    configure-time download (``if(NOT USE_SYSTEM_DOCTEST) FetchContent_Declare(doctest ...)
    else() find_package(doctest) endif()``): turned on, as the network is closed and the
    download's own targets are not what the package installed exports."""
    found: list[str] = []
    for content in facts.fetched:
        for option in content.unless:
            finds = any(
                package.name.lower() == content.name.lower() and option in package.guards
                for package in facts.packages
            )
            if finds and facts.options.get(option, "OFF").upper() == "OFF" and option not in found:
                found.append(option)
    return found


def bundled_options(facts: CMakeFacts, turned_on: Sequence[str]) -> list[str]:
    """The options on by default that, turned off, find a test framework installed
    (``if(FOO_USE_BUNDLED_GTEST) <its own download> else() find_package(GTest) endif()``):
    turned off, as Debian installs the framework and the network is closed."""
    negated = [
        option
        for package in facts.packages
        if any(framework in package.name.lower() for framework in TEST_FRAMEWORKS)
        for option in package.unless
    ]
    return _on_by_default(facts, negated, turned_on)


def _on_by_default(
    facts: CMakeFacts, options: Sequence[str], turned_on: Sequence[str]
) -> list[str]:
    """Those of ``options`` the project turns on by default that the tests do not need on."""
    on = [o for o in options if facts.options.get(o, "OFF").upper() == "ON" and o not in turned_on]
    return list(dict.fromkeys(on))


def reached_downloads(facts: CMakeFacts) -> list[str]:
    """The configure-time downloads the recipe's configure reaches: not those an option it
    leaves (or turns) off guards (``if(FOO_BUILD_EXAMPLES) add_subdirectory(examples)``, off
    by default), nor those an option it turns on skips (``if(NOT FOO_SYSTEM_DOCTEST)``)."""
    turned_on = options_for_tests(facts) + installed_options(facts)
    turned_off = download_options(facts, turned_on) + bundled_options(facts, turned_on)

    def on(option: str, unknown: str) -> bool:
        if option in turned_on or option in turned_off:
            return option in turned_on
        return facts.options.get(option, unknown).upper() == "ON"

    # an option the listfiles do not declare is taken as reaching the download
    return [
        content.name
        for content in facts.fetched
        if all(on(option, "ON") for option in content.guards)
        and not any(on(option, "OFF") for option in content.unless)
    ]


def configure_command(
    facts: CMakeFacts,
    gcc: str | None = None,
    defines: Sequence[str] = (),
    standard: str | None = None,
) -> str:
    """``cmake`` configuring the tree into ``BUILD_DIR``: Ninja (the image's generator), a
    debug build with its tests on (``BUILD_TESTING`` and every option that guards them), and
    configure-time downloads found installed first (GoogleTest from Debian's sources);
    ``standard``: the C++ standard the pull request's code asks for (``standard``)."""
    turned_on = options_for_tests(facts) + installed_options(facts)
    options = [
        "-DCMAKE_BUILD_TYPE=Debug",
        "-DBUILD_TESTING=ON",
        *(f"-D{option}=ON" for option in turned_on),
        *(f"-D{option}=OFF" for option in download_options(facts, turned_on)),
        *(f"-D{option}=OFF" for option in bundled_options(facts, turned_on)),
        "-DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=ALWAYS",
        f"-DCMAKE_C_FLAGS={warning_flags(NEWER_GCC_WARNINGS)}",
        "-DCMAKE_CXX_FLAGS="
        + " ".join([warning_flags(NEWER_GCC_WARNINGS + NEWER_GXX_WARNINGS, gcc), *defines]),
        *([f"-DCMAKE_CXX_STANDARD={standard}"] if standard else []),
    ]
    for content in facts.fetched:
        if "googletest" in content.source.lower() and "${" not in content.name:
            options.append(f"-DFETCHCONTENT_SOURCE_DIR_{content.name.upper()}={GOOGLETEST_SOURCES}")
    minimum = _version(facts.minimum)
    if minimum is not None and minimum < Version(POLICY_MINIMUM):
        options.append(f"-DCMAKE_POLICY_VERSION_MINIMUM={POLICY_MINIMUM}")
    return " ".join(["cmake", "-S", ".", "-B", BUILD_DIR, *map(shlex.quote, options)])


def build_command() -> str:
    """Everything that builds at the base commit (``-k 0``: one target that does not leaves
    the others; each test run builds again and says what does not compile)."""
    return f"cmake --build {BUILD_DIR} -- -k 0 || true"


def runner_program() -> bytes:
    """The script that builds what compiles and runs CTest (``RUNNER_SCRIPT``)."""
    return resources.files(__package__).joinpath("swe_ctest.py").read_bytes()


def test_command(system: str = "cmake", target: str | None = None) -> str:
    return (
        f"python3 {ENV_DIR}/{RUNNER_SCRIPT} --system {system} --build-dir {BUILD_DIR} "
        f"--timeout {MAX_TEST_SECONDS}" + (f" --target {shlex.quote(target)}" if target else "")
    )


def _gcc_recipe(
    language: str,
    build_file: str,
    install: Sequence[str],
    system: str,
    runner: str,
    version: str | None,
    images: Mapping[str, str],
    packages: Sequence[str],
    notes: Sequence[str],
    command: str | None = None,
) -> InstallRecipe:
    """The recipe the three build systems share the shape of: swe-ctest as the runner (``system``
    its mode), the image of gcc ``version``, the Debian ``packages`` the build finds."""
    return InstallRecipe(
        language=language,
        dependency_files={RUNNER_SCRIPT: runner_program()},
        install_commands=tuple(install),
        test_command=command or test_command(system),
        test_runner=runner,
        python=None,
        base_image=images.get(version) if version else None,
        system_packages=tuple(packages),
        sources=(build_file, *([f"gcc:{version}"] if version else [])),
        notes=tuple(notes),
    )


def cmake_recipe(
    facts: CMakeFacts,
    version: str | None,
    images: Mapping[str, str],
    packages: Sequence[str] = (),
    package_notes: Sequence[str] = (),
    defines: Sequence[str] = (),
    standard: str | None = None,
) -> InstallRecipe:
    """The recipe of a CMake project on the image of gcc ``version``, installing the Debian
    ``packages`` its build finds (``debian``; ``package_notes``: what was not found; ``defines``:
    what a framework it vendors needs to compile here, ``vendored``; ``standard``: the C++
    standard asked for)."""
    notes = [*facts.problems[:5], *package_notes]
    downloads = reached_downloads(facts)
    if downloads:
        notes.append(f"downloads at configure time: {', '.join(downloads[:10])}")
    install = (configure_command(facts, version, defines, standard), build_command())
    return _gcc_recipe(
        language_of_project(facts), ROOT_LISTFILE, install, "cmake", RUNNER, version, images,
        packages, notes,
    )  # fmt: skip


def meson_recipe(
    facts: MesonFacts,
    version: str | None,
    images: Mapping[str, str],
    packages: Sequence[str] = (),
    package_notes: Sequence[str] = (),
    standard: str | None = None,
) -> InstallRecipe:
    """The recipe of a Meson project on the image of gcc ``version``: configured into
    ``BUILD_DIR`` (a debug build, the options that turn its tests on, wraps not downloaded:
    a dependency Debian has is found installed; the C++ ``standard`` asked for), built with
    Ninja ``-k 0``, tested by ``meson test``."""
    written = {language.lower() for language in facts.languages}
    options = [
        "--buildtype=debug",
        "--wrap-mode=nodownload",
        *(f"-D{name}={value}" for name, value in sorted(facts.test_options.items())),
        *([f"-Dcpp_std=c++{standard}"] if standard and "cpp" in written else []),
    ]
    configure = " ".join(["meson", "setup", BUILD_DIR, *map(shlex.quote, options)])
    language = C_ONLY if written and "cpp" not in written and "c" in written else LANGUAGE_NAME
    install = (configure, f"ninja -C {BUILD_DIR} -k 0 || true")
    return _gcc_recipe(
        language, "meson.build", install, "meson", MESON_RUNNER, version, images, packages,
        package_notes,
    )  # fmt: skip


def autotools_recipe(
    facts: AutotoolsFacts,
    version: str | None,
    images: Mapping[str, str],
    packages: Sequence[str] = (),
    package_notes: Sequence[str] = (),
) -> InstallRecipe:
    """The recipe of an Autotools project on the image of gcc ``version``: ``configure``
    generated where the tree has none (``autoreconf -fi``), run in the tree, then everything
    ``make check`` needs built (``TESTS=``: none run), ``-k``; tested by ``make check``."""
    steps = [] if facts.has_configure_script else ["autoreconf -fi"]
    steps += ["./configure", 'make -k -j"$(nproc)" check TESTS= || true']
    language = LANGUAGE_NAME if facts.cxx else C_ONLY
    return _gcc_recipe(
        language, facts.configure, steps, "automake", AUTOMAKE_RUNNER, version, images,
        packages, package_notes,
    )  # fmt: skip


def make_recipe(
    facts: MakefileFacts,
    version: str | None,
    images: Mapping[str, str],
    packages: Sequence[str] = (),
    package_notes: Sequence[str] = (),
) -> InstallRecipe:
    """The recipe of a project built by a plain Makefile on the image of gcc ``version``: its
    default target built in the tree (``-k``), tested by its test target run whole (the
    cases its output says are tests of their own, as a suite CTest runs whole)."""
    install = ['make -k -j"$(nproc)" || true']
    language = LANGUAGE_NAME if facts.cxx else C_ONLY
    command = test_command("make", facts.test_target)
    return _gcc_recipe(
        language, facts.makefile, install, "make", MAKE_RUNNER, version, images, packages,
        package_notes, command,
    )  # fmt: skip
