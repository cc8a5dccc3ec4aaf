"""C and C++ as a plugin: detection (a CMakeLists.txt at the root with C or C++ sources), the
toolchain images (Debian's gcc, CMake, Ninja and test frameworks per suite), the CMake recipe,
its runner (CTest through swe-ctest, with each GoogleTest binary's cases), test ids (CTest's
names, ``<binary>::Suite.Case`` for a binary CTest runs whole), check commands, causes and
prompts. A compiled language: validated with three runs (``compiled``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from streams.evaluation.log_parsers.base import LogParser, ReportFile
from streams.evaluation.recipes.languages import Cause, Inputs, Language, languages, version_key
from streams.evaluation.recipes.languages.cpp import prompts
from streams.evaluation.recipes.languages.cpp.autotools import (
    CONFIGURE_FILES,
    AutotoolsFacts,
    read_autotools,
)
from streams.evaluation.recipes.languages.cpp.changed import (
    PROGRAM,
    SOURCE_SUFFIXES,
    changed_cases,
    program_tests,
)
from streams.evaluation.recipes.languages.cpp.cmake import ROOT_LISTFILE, CMakeFacts, read_cmake
from streams.evaluation.recipes.languages.cpp.compiled import build_failures
from streams.evaluation.recipes.languages.cpp.console import (
    automake_running,
    meson_running_when_killed,
    parse_automake_console,
    parse_make_console,
    parse_meson_console,
)
from streams.evaluation.recipes.languages.cpp.ctest import (
    check_arguments,
    parse_ctest_console,
    running_when_killed,
)
from streams.evaluation.recipes.languages.cpp.debian import (
    debian_packages,
    host_cmake_module,
    wanted_of_autotools,
    wanted_of_cmake,
    wanted_of_meson,
)
from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR, split_case_id
from streams.evaluation.recipes.languages.cpp.makefile import (
    MAKEFILES,
    MakefileFacts,
    read_makefile,
)
from streams.evaluation.recipes.languages.cpp.meson import ROOT_BUILD, MesonFacts, read_meson
from streams.evaluation.recipes.languages.cpp.recipe import (
    AUTOMAKE_RUNNER,
    C_ONLY,
    CMAKE_OF,
    LANGUAGE_NAME,
    MAKE_RUNNER,
    MESON_RUNNER,
    RUNNER,
    autotools_recipe,
    cmake_recipe,
    gcc_versions,
    make_recipe,
    meson_recipe,
)
from streams.evaluation.recipes.languages.cpp.report import REPORT, parse_swe_ctest_report
from streams.evaluation.recipes.languages.cpp.standard import standard_asked
from streams.evaluation.recipes.languages.cpp.tests_in_source import find_cases
from streams.evaluation.recipes.languages.cpp.toolchain import CXX_IMAGES, SUITE_OF_GCC
from streams.evaluation.recipes.languages.cpp.vendored import compatibility_defines
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

NO_GCC = "no_cmake_for_cmake_minimum"  # the project asks for a CMake no image has
BUILD_FILES = (ROOT_LISTFILE, ROOT_BUILD, *CONFIGURE_FILES)  # CMake's, Meson's, Autoconf's
BuildFacts = CMakeFacts | MesonFacts | AutotoolsFacts | MakefileFacts
_CXX_SOURCE = re.compile(
    r"^diff --git a/\S+\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|ipp|inl)\s", re.MULTILINE | re.I
)
# the build's own files: a change to them is a change to what is compiled
_BUILD_FILE = re.compile(
    r"^diff --git a/(?:\S+/)?"
    r"(?:CMakeLists\.txt|\S+\.cmake|meson\.build|Makefile\.am|configure\.ac)\s",
    re.MULTILINE,
)


def has_tests(facts: BuildFacts | None) -> bool:
    """Whether a build declares tests of its own (CTest's, Meson's ``test()``, Automake's
    ``TESTS``, a plain Makefile's test target)."""
    if isinstance(facts, MakefileFacts):
        return facts.test_target is not None
    if isinstance(facts, CMakeFacts):
        return bool(facts.testing or facts.tests or facts.discovered)
    if isinstance(facts, MesonFacts):
        return bool(facts.tests)
    return isinstance(facts, AutotoolsFacts) and facts.automake_tests


class Cpp(Language):
    name = LANGUAGE_NAME
    title = "C / C++"
    spellings = frozenset({C_ONLY, "c", "cpp", "c++", "cxx"})
    toolchain = "gcc"
    version_pattern = r"^\d+$"  # an image's gcc major: "12"
    # its libraries are Debian's -dev packages
    registries = ("deb.debian.org",)
    # after Go, Rust and Java (a crate or a Maven build with a native part is theirs), before
    # Python and JavaScript, whose detection takes any tree with a script of theirs: a CMake
    # project with Python tools or bindings is C/C++ unless ``detect`` says otherwise
    order = 8
    compiled = True
    runs_whole_suite = True  # swe-ctest runs every test: the files asked for are the scope
    source_suffixes = SOURCE_SUFFIXES
    runners = {
        RUNNER: LogParser(parse_ctest_console, running_when_killed, report=REPORT),
        MESON_RUNNER: LogParser(parse_meson_console, meson_running_when_killed, report=REPORT),
        AUTOMAKE_RUNNER: LogParser(parse_automake_console, automake_running, report=REPORT),
        MAKE_RUNNER: LogParser(parse_make_console, automake_running, report=REPORT),
    }
    reports = {REPORT: parse_swe_ctest_report}
    default_runner = RUNNER
    project_files = frozenset({ROOT_LISTFILE, ROOT_BUILD, *CONFIGURE_FILES})
    # (not gcc and cmake: other languages' builds use them too, a cgo package, a -sys crate)
    vocabulary_words = frozenset({"ctest", "gtest", "googletest"})
    no_recipe_reasons = (NO_GCC,)
    causes = (
        Cause(
            "install_failed",
            r"error: downloading '([^']+)' failed|unable to access '([^']+)'",
            "the build downloads at configure time ({0}) and the network is closed: a Debian "
            "package of it found with FETCHCONTENT_TRY_FIND_PACKAGE_MODE, or its sources in the "
            "tree (FETCHCONTENT_SOURCE_DIR_<NAME>)",
        ),
        Cause(
            "install_failed",
            r"Could NOT find (\S+)|By not providing \"Find(\S+)\.cmake\"|"
            r"Dependency \"?([^\s\"]+)\"? not found",
            "the build did not find a package ({0}): name its Debian -dev package",
        ),
        Cause(
            "install_failed",
            r"No package '([^']+)' found|Package '([^']+)', required by",
            "pkg-config did not find a module ({0}): name its Debian -dev package",
        ),
        Cause(
            "install_failed",
            r"CMake (\S+) or higher is required|Meson version is (\S+) but project requires",
            "the project needs a newer build tool ({0}) than its image's",
        ),
        Cause(
            "install_failed",
            r"fatal error: (\S+): No such file or directory",
            "a header is missing ({0}): a Debian -dev package or a configure step",
        ),
        Cause(
            "tests_did_not_run",
            r"^compile failure: (\S*(?:googletest|gtest|gmock|catch2?|doctest|third_party|"
            r"thirdparty|3rdparty|external|vendor)/\S+?):|"
            r"^(\S*/(?:googletest|gtest|gmock|catch2?|doctest|third_party|thirdparty|3rdparty|"
            r"external|vendor)/\S+?):\d+(?::\d+)?: error:",
            "a library the project vendors does not compile with this gcc ({0}): an older gcc "
            "image, or Debian's package of it",
        ),
    )
    toolchain_images = CXX_IMAGES
    setup_prompt = prompts.SETUP
    testgen_prompt = prompts.TESTGEN
    test_file_hint = "add the case to a test source the build already compiles"

    def detect(self, tree: TreeFiles) -> bool:
        generated = tree.has(ROOT_LISTFILE) or tree.has(ROOT_BUILD) or tree.has("Makefile.am")
        plain = not generated and any(tree.has(name) for name in MAKEFILES)
        if not generated and not plain:
            return False  # (a configure.ac without Automake is not a build this reads)
        sources = sum(name.lower().endswith(SOURCE_SUFFIXES) for name in tree.names)
        scripts = sum(name.endswith(".py") for name in tree.names)
        if sources == 0 or sources <= scripts:
            return False  # a Python project that builds a native part with CMake
        if plain:
            # a Makefile is every language's task runner: only a tree of no other project
            # whose Makefile has a test target is a C/C++ one
            return not self._another_project_at_root(tree) and read_makefile(tree) is not None
        if not self._another_project_at_root(tree):
            return True
        # another language's project too (Python bindings, a package.json for its tools):
        # C/C++'s when its CMake project has tests of its own
        return has_tests(self.facts(tree))

    def _another_project_at_root(self, tree: TreeFiles) -> bool:
        """Whether the root holds a project file of another language (its ``project_files``)."""
        return any(
            tree.has(name)
            for language in languages()
            if language is not self
            for name in language.project_files
            if "/" not in name
        )

    def facts(self, tree: TreeFiles) -> BuildFacts | None:
        # where a tree has several build systems, the first that declares tests: CMake, the
        # one most projects keep current, first; a plain Makefile last (beside another build
        # it is often that build's wrapper). None declares tests: the first found.
        first: BuildFacts | None = None
        for read in (read_cmake, read_meson, read_autotools, read_makefile):
            found = read(tree)
            if has_tests(found):
                return found
            first = first or found
        return first

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        pinned = self.pinned_versions(inputs)
        if pinned is not None:
            return pinned
        images = inputs.images_of(self.toolchain)
        if isinstance(facts, CMakeFacts):
            return gcc_versions(facts, images)
        return [*sorted(images, key=version_key)] or [None]

    def recipe(
        self, tree: TreeFiles, facts: Any, version: str | None, inputs: Inputs
    ) -> InstallRecipe:
        images = inputs.images_of(self.toolchain)
        suite = SUITE_OF_GCC.get(version or "")
        standard = standard_asked(inputs.diffs)
        if isinstance(facts, MesonFacts):
            packages, notes = debian_packages(wanted_of_meson(facts), suite, inputs.system_files)
            return meson_recipe(facts, version, images, packages, notes, standard)
        if isinstance(facts, AutotoolsFacts | MakefileFacts):
            wanted = wanted_of_autotools(facts)
            packages, notes = debian_packages(wanted, suite, inputs.system_files)
            if isinstance(facts, MakefileFacts):
                return make_recipe(facts, version, images, packages, notes)
            return autotools_recipe(facts, version, images, packages, notes)
        wanted = wanted_of_cmake(facts, tree, host_cmake_module)
        packages, notes = debian_packages(wanted, suite, inputs.system_files)
        defines = compatibility_defines(tree)
        return cmake_recipe(facts, version, images, packages, notes, defines, standard)

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        built = inputs.images_of(self.toolchain)
        cmakes = ", ".join(f"gcc {v}: CMake {CMAKE_OF.get(v, '?')}" for v in sorted(built))
        minimum = facts.minimum if isinstance(facts, CMakeFacts) else None
        return (
            NO_GCC,
            f"no image's CMake is at least {minimum} ({cmakes or 'none built'}; "
            "swe-stream images base --toolchains)",
        )

    def interpreter(self, recipe: InstallRecipe) -> str:
        return f"gcc {self.version_of(recipe) or 'default'}"

    def report_file(self, runner: str, directory: str) -> ReportFile | None:
        if runner not in self.runners:
            return None
        path = f"{directory}/report.{REPORT}.xml"
        return ReportFile(path, f"--report {shlex.quote(path)}")

    def compile_failures(self, runner: str, output: str) -> dict[str, str]:
        return build_failures(output) if runner in self.runners else {}

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_CXX_SOURCE.search(patch) or _BUILD_FILE.search(patch))

    def tests_changed(self, tree: TreeFiles, test_patch: str) -> list[str]:
        return changed_cases(tree, test_patch)

    def changed_ids(self, changed: Sequence[str], ids: Iterable[str]) -> list[str]:
        # a case of a binary CTest runs whole is ``<binary>::<case>`` in the runs (Catch2's
        # sections ``<binary>::<case>/<section>``), which the tree alone cannot name
        ids = set(ids)
        names = {name for name in changed if not name.startswith(PROGRAM)}
        found = set(names)
        for name in set(changed) - names:  # a changed program's test, by its name
            found.update(program_tests(name.removeprefix(PROGRAM), ids))
        for test in ids:
            _, separator, case = test.partition(SEPARATOR)
            if separator and (case in names or case.split("/", 1)[0] in names):
                found.add(test)
        return sorted(found)

    def test_line_ranges(self, path: str, text: str) -> list[tuple[int, int]] | None:
        if not path.lower().endswith(SOURCE_SUFFIXES):
            return None
        return [(case.start, case.end) for case in find_cases(text)]

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        if runner == MESON_RUNNER:
            return f"{test_command} --test {shlex.quote(test_id)}"
        if runner == MAKE_RUNNER and SEPARATOR not in test_id and "/" in test_id:
            # a test program's own rule (``tests/test-fuzzer``), run beside the test target
            return f"{test_command} --program {shlex.quote(test_id)}"
        if runner in (AUTOMAKE_RUNNER, MAKE_RUNNER):
            return test_command  # make runs them all; the report names each
        if runner != RUNNER:
            return None
        split = split_case_id(test_id)
        if split is not None:  # one case of a binary CTest runs whole
            return f"GTEST_FILTER={shlex.quote(split[1])} {test_command}"
        return f"{test_command} --tests-regex {check_arguments(test_id).removeprefix('-R ')}"

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return sorted(
            n
            for n in names
            if n.rsplit("/", 1)[-1] in (*BUILD_FILES, "vcpkg.json", "conanfile.txt")
            or (n in MAKEFILES)
            or (n.endswith(".cmake") and n.count("/") <= 1)
        )

    def test_id_shape(self, runner: str) -> str:
        return (
            "the test's CTest name: Suite.Case for a GoogleTest case CTest discovers, the "
            "add_test name for a whole binary, whose GoogleTest cases are "
            "<binary>::Suite.Case (calc_test::Calc.Adds), and whose Catch2 or doctest cases "
            "are <add_test name>::<case> (unit_tests::parses a flag)"
        )
