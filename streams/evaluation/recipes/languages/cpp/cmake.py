"""What a CMake project's listfiles say a recipe needs, read from the tree (``listfile``): the
CMake it asks for, its options and which of them turn its tests on, the packages it finds
(``find_package``, ``pkg_check_modules``), what it downloads at configure time
(``FetchContent_Declare``, ``ExternalProject_Add``, ``file(DOWNLOAD)``) and its tests
(``add_test``, ``gtest_discover_tests`` and its kin, ``enable_testing``).

The root ``CMakeLists.txt`` is read, then every directory it adds (``add_subdirectory``) and
every listfile of the tree it includes (``include(cmake/x.cmake)``), each once, depth first as
CMake does. Conditions are not evaluated (the tree is read, not configured): an option that
guards the tests is one named, not negated, in an ``if()`` around an ``add_subdirectory`` of a
test directory, an ``enable_testing()`` or an ``add_test``.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from streams.evaluation.recipes.languages.cpp.listfile import Command, read_listfile
from streams.evaluation.recipes.model import TreeFiles

__all__ = ["CMakeFacts", "FetchedContent", "FoundPackage", "read_cmake"]

ROOT_LISTFILE = "CMakeLists.txt"
MAX_LISTFILES = 400
MAX_LISTFILE_BYTES = 2 << 20
TEST_DIRECTORIES = frozenset({"test", "tests", "testing"})
DISCOVERERS = frozenset(
    {"gtest_discover_tests", "gtest_add_tests", "catch_discover_tests", "doctest_discover_tests"}
)
# keywords of find_package's signature that end the package's name and version
_FIND_KEYWORDS = frozenset(
    {"EXACT", "QUIET", "REQUIRED", "COMPONENTS", "OPTIONAL_COMPONENTS", "CONFIG", "NO_MODULE",
     "MODULE", "NAMES", "CONFIGS", "HINTS", "PATHS", "GLOBAL", "NO_POLICY_SCOPE"}
)  # fmt: skip
_PKG_KEYWORDS = frozenset({"REQUIRED", "QUIET", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH",
                           "IMPORTED_TARGET", "GLOBAL"})  # fmt: skip


_PROJECT_KEYWORDS = frozenset({"VERSION", "DESCRIPTION", "HOMEPAGE_URL"})
PROJECT_LANGUAGES = frozenset({"C", "CXX", "CUDA", "OBJC", "OBJCXX", "FORTRAN", "ASM", "NONE"})


@dataclass(frozen=True)
class FoundPackage:
    """A ``find_package`` call: the package, the components asked for, whether it is required
    and the listfile that asks."""

    name: str
    components: tuple[str, ...] = ()
    required: bool = False
    listfile: str = ROOT_LISTFILE
    guards: tuple[str, ...] = ()  # the project's options in the conditions around it
    unless: tuple[str, ...] = ()  # those negated (``else()`` of ``if(FOO_BUNDLED_GTEST)``)


@dataclass(frozen=True)
class FetchedContent:
    """A download at configure time: its name, where from (a git repository or a URL) and the
    command that asks (``fetchcontent_declare``, ``externalproject_add``, ``file``) and the
    project's options in the conditions around it (``if(FOO_EXTRA_TESTS)``: off, no download;
    ``unless``: those negated, ``if(NOT FOO_SYSTEM_DOCTEST)``: on, no download)."""

    name: str
    source: str
    command: str
    listfile: str = ROOT_LISTFILE
    guards: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()


@dataclass
class CMakeFacts:
    minimum: str | None = None  # cmake_minimum_required's VERSION, its lower bound
    project: str | None = None
    languages: tuple[str, ...] = ()  # project()'s, as written (C, CXX)
    options: dict[str, str] = field(default_factory=dict)  # option -> its default, as written
    option_files: dict[str, str] = field(
        default_factory=dict
    )  # option -> the listfile declaring it
    test_options: list[str] = field(default_factory=list)  # options that guard the tests
    packages: list[FoundPackage] = field(default_factory=list)
    pkg_modules: list[str] = field(default_factory=list)  # pkg-config modules, as written
    fetched: list[FetchedContent] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # add_test's names (static ones)
    discovered: list[str] = field(default_factory=list)  # targets whose tests are discovered
    testing: bool = False  # enable_testing() or include(CTest)
    listfiles: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_cmake(tree: TreeFiles) -> CMakeFacts | None:
    """The facts of the tree's CMake project; None without a root ``CMakeLists.txt``."""
    if not tree.has(ROOT_LISTFILE):
        return None
    facts = CMakeFacts()
    _Walk(tree, facts).listfile(ROOT_LISTFILE)
    return facts


class _Walk:
    def __init__(self, tree: TreeFiles, facts: CMakeFacts) -> None:
        self.tree = tree
        self.facts = facts
        self.seen: set[str] = set()
        self.conditions: list[list[str]] = []  # the if()s around the command being read

    def listfile(self, path: str) -> None:
        if path in self.seen or len(self.seen) >= MAX_LISTFILES:
            return
        self.seen.add(path)
        data = self.tree.read(path, MAX_LISTFILE_BYTES)
        if data is None:
            why = self.tree.why_unreadable(path)
            if why:
                self.facts.problems.append(f"{path}: {why}")
            return
        self.facts.listfiles.append(path)
        parsed = read_listfile(data.decode("utf-8", errors="replace"))
        if parsed.problem:
            self.facts.problems.append(f"{path}: {parsed.problem}")
        depth = len(self.conditions)
        for command in parsed.commands:
            self.command(path, command)
        del self.conditions[depth:]  # an if() a listfile leaves open ends with it

    def command(self, path: str, command: Command) -> None:
        name, words = command.name, command.words
        if name == "if":
            self.conditions.append(words)
        elif name in ("elseif", "else"):
            if self.conditions:
                condition = self.conditions[-1]
                # the else of ``NOT X`` is X, the else of X is ``NOT X``; of more, nothing
                opposite = (
                    condition[1:] if len(condition) == 2 and condition[0] == "NOT"
                    else ["NOT", *condition] if len(condition) == 1 else []
                )  # fmt: skip
                self.conditions[-1] = words if name == "elseif" else opposite
        elif name == "endif":
            if self.conditions:
                self.conditions.pop()
        elif name == "add_subdirectory" and words:
            directory = _joined(path, words[0])
            if is_test_directory(posixpath.basename(directory)):
                self.guarded()
            self.listfile(posixpath.join(directory, ROOT_LISTFILE) if directory else ROOT_LISTFILE)
        elif name == "include" and words:
            self.include(path, words[0])
        else:
            self.declaration(path, name, words)

    def include(self, path: str, module: str) -> None:
        if module.lower() == "ctest":
            self.facts.testing = True
            self.guarded()
            return
        if "${" not in module and module.endswith(".cmake"):
            included = _joined(path, module)
            if self.tree.has(included):
                self.listfile(included)

    def declaration(self, path: str, name: str, words: list[str]) -> None:
        facts = self.facts
        if name == "cmake_minimum_required" and "VERSION" in words[:-1]:
            facts.minimum = facts.minimum or words[words.index("VERSION") + 1].split("...")[0]
        elif name == "project" and words and facts.project is None:
            facts.project = words[0]
            facts.languages = _project_languages(words[1:])
        elif name == "option" and words:
            facts.options.setdefault(words[0], words[2] if len(words) > 2 else "OFF")
            facts.option_files.setdefault(words[0], path)
        elif name == "cmake_dependent_option" and len(words) > 2:
            facts.options.setdefault(words[0], words[2])
            facts.option_files.setdefault(words[0], path)
        elif name == "enable_testing":
            facts.testing = True
            self.guarded()
        elif name == "add_test" and words:
            self.guarded()
            test = words[1] if words[0] == "NAME" and len(words) > 1 else words[0]
            if "${" not in test and test not in facts.tests:
                facts.tests.append(test)
        elif name in DISCOVERERS and words:
            self.guarded()
            if words[0] not in facts.discovered:
                facts.discovered.append(words[0])
        elif name == "find_package" and words:
            around = (self.options_around(), self.options_around(True))
            facts.packages.append(_found_package(words, path, *around))
        elif name in ("pkg_check_modules", "pkg_search_module") and len(words) > 1:
            modules = [w for w in words[1:] if w not in _PKG_KEYWORDS]
            facts.pkg_modules += [m for m in modules if m not in facts.pkg_modules]
        elif name in ("fetchcontent_declare", "externalproject_add") and words:
            source = _value_after(words, ("GIT_REPOSITORY", "URL", "SVN_REPOSITORY"))
            if source is not None:
                fetched = FetchedContent(
                    words[0], source, name, path, self.options_around(), self.options_around(True)
                )
                facts.fetched.append(fetched)
        elif name == "file" and len(words) > 2 and words[0] == "DOWNLOAD":
            named = posixpath.basename(words[2])
            fetched = FetchedContent(
                named, words[1], name, path, self.options_around(), self.options_around(True)
            )
            facts.fetched.append(fetched)

    def options_around(self, negated_ones: bool = False) -> tuple[str, ...]:
        """The options named (not negated; or negated ones) in the conditions around this
        command."""
        found: list[str] = []
        for condition in self.conditions:
            for at, written in enumerate(condition):
                # ``if(${FOO_TESTS})`` reads the option's value as ``if(FOO_TESTS)`` does
                word = (
                    written[2:-1] if written.startswith("${") and written.endswith("}") else written
                )
                negated = at > 0 and condition[at - 1] == "NOT"
                if word in self.facts.options and negated == negated_ones and word not in found:
                    found.append(word)
        return tuple(found)

    def guarded(self) -> None:
        """The options around this command guard the tests."""
        for option in self.options_around():
            if option not in self.facts.test_options:
                self.facts.test_options.append(option)


def is_test_directory(name: str) -> bool:
    """Whether a directory's name says it holds tests: test, tests, testing, and each of them
    after ``unit`` (``unit_tests``)."""
    name = name.lower()
    return name in TEST_DIRECTORIES or name.removeprefix("unit").lstrip("_-") in TEST_DIRECTORIES


def _joined(listfile: str, relative: str) -> str:
    """A path written in ``listfile`` as the tree names it (relative to its directory)."""
    relative = relative.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "").replace(
        "${CMAKE_CURRENT_LIST_DIR}/", ""
    )
    if relative.startswith("${PROJECT_SOURCE_DIR}/") or relative.startswith("${CMAKE_SOURCE_DIR}/"):
        return posixpath.normpath(relative.split("/", 1)[1])
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(listfile), relative))
    return "" if joined == "." else joined


def _project_languages(words: list[str]) -> tuple[str, ...]:
    # project(name LANGUAGES C CXX ...), or the short form project(name C CXX)
    after = words[words.index("LANGUAGES") + 1 :] if "LANGUAGES" in words else words
    found = []
    for word in after:
        if word in _PROJECT_KEYWORDS:
            break
        if word.upper() in PROJECT_LANGUAGES:
            found.append(word.upper())
    return tuple(found)


def _found_package(
    words: list[str], listfile: str, guards: tuple[str, ...], unless: tuple[str, ...]
) -> FoundPackage:
    components: list[str] = []
    if "COMPONENTS" in words:
        for word in words[words.index("COMPONENTS") + 1 :]:
            if word in _FIND_KEYWORDS:
                break
            components.append(word)
    return FoundPackage(words[0], tuple(components), "REQUIRED" in words, listfile, guards, unless)


def _value_after(words: list[str], keys: tuple[str, ...]) -> str | None:
    for at, word in enumerate(words[:-1]):
        if word in keys:
            return words[at + 1]
    return None
