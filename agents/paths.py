"""What a changed file of a pull request is: test, docs, source or other.

A SWE-bench task splits a merged PR's diff in two: the *test patch* (files that are tests) and
the *gold patch* (everything else); a usable PR changes at least one source file and at least
one test. SWE-bench itself calls a file a test when its path merely contains ``test``, ``e2e``
or ``testing`` anywhere, which also catches ``attestation.py`` and ``latest.py``; here the test
rules look at whole path components and at the naming conventions of each ecosystem instead.

Precedence, so the four kinds partition all paths: **test** (any directory or file naming
rule below) > **docs** > **source** (a code extension) > **other** (config, data, lock files,
images, ...). So ``tests/README.md`` and ``tests/data/x.json`` are tests (they belong to the
test patch, as in SWE-bench), ``docs/conf.py`` is docs.

Test rules:

- a directory named (any case) ``test``, ``tests``, ``testing``, ``spec``, ``specs``,
  ``__tests__``, ``__test__``, ``e2e``, ``testdata``, ``__snapshots__``, ``__mocks__``,
  ``__fixtures__``, ``cypress``, ``t`` (Perl, Git); or named ``test_*``/``tests-*``/
  ``*_tests``/``*-test`` (``sitemaps_tests``, ``integration-tests``), or a CamelCase
  ``*Tests``/``*Test`` (Xcode test targets such as ``MyAppTests``, ``MyAppUITests``);
- for code files only (a CI workflow ``test.yml`` or an OpenAPI ``api_spec.yaml`` is no test;
  data files of tests live in test directories), a stem (any case) ``test``/``tests``/
  ``conftest``, starting ``test_``/``test-``/``unittest_``, or ending ``_test(s)``,
  ``-test(s)``, ``_spec(s)``, ``-spec(s)``, ``_unittest(s)``, ``.test(s)``, ``.spec(s)``,
  ``.e2e``, ``.test-d`` (tsd's type tests), ``.cy`` (Cypress): ``test_x.py``, ``x_test.go``,
  ``x.test.tsx``, ``x_spec.rb``, ``x.e2e-spec.ts``, ``index.test-d.ts``, ``login.cy.js``;
  or a CamelCase stem (case-sensitive) ``Test*`` followed by a capital, digit or underscore,
  or ending ``Test``/``Tests``/``TestCase``/``Spec``/``Specs`` after a letter or digit, or
  ``IT`` after a lower-case letter or digit: ``FooTest.java``, ``UITests.swift``,
  ``FooSpec.scala``, ``FooIT.java``, ``TestFoo.java`` (but not ``Latest.java``,
  ``Contest.kt``, ``Testing.java``, ``SUBMIT.java``);
- Perl ``*.t`` files and ``*.snap`` snapshots.

Docs: a directory ``doc``/``docs``/``documentation``; extensions ``.md .markdown .mdx .rst
.txt .adoc .asciidoc .rdoc .textile``; well-known files ``README*``, ``CHANGELOG*``,
``CHANGES*``, ``HISTORY*``, ``LICENSE*``, ``NEWS*``, ``AUTHORS*``, ``CONTRIBUTING*``, ... unless
their extension is code or config (``history.py`` is source, ``authors.json`` other). Some
``.txt`` files are configuration, not prose: ``CMakeLists.txt``, ``*requirements*.txt``,
``*constraints*.txt``, ``robots.txt`` are other.

Tests inside source files: some languages keep tests in their source files too (Rust's
``#[cfg(test)] mod tests``); their plugin gives the line ranges of those tests
(``Language.test_line_ranges``). Such a file stays ``source`` here (a path says nothing about
its lines); extract splits its hunks with the file's text, and ``inline_test_lines`` tells
from a GitHub file patch alone whether a change touches such tests.
"""

from __future__ import annotations

import itertools
import re
from pathlib import PurePosixPath
from typing import Literal

from streams.evaluation.recipes.languages import Language, language_named

__all__ = [
    "DOCS_DIRS",
    "DOCS_EXTENSIONS",
    "DOCS_NAMES",
    "HUNK_HEADER",
    "LANGUAGES",
    "SOURCE_EXTENSIONS",
    "TEST_DIRS",
    "FileKind",
    "file_kind",
    "inline_test_language",
    "inline_test_lines",
    "is_docs_path",
    "is_source_path",
    "is_test_path",
    "language_of",
]

FileKind = Literal["test", "docs", "source", "other"]

# Code extension (lower case, no dot) -> GitHub (linguist) language name.
LANGUAGES: dict[str, str] = {
    "py": "Python",
    "pyi": "Python",
    "pyw": "Python",
    "pyx": "Cython",
    "pxd": "Cython",
    "js": "JavaScript",
    "jsx": "JavaScript",
    "mjs": "JavaScript",
    "cjs": "JavaScript",
    "ts": "TypeScript",
    "tsx": "TypeScript",
    "mts": "TypeScript",
    "cts": "TypeScript",
    "coffee": "CoffeeScript",
    "vue": "Vue",
    "svelte": "Svelte",
    "go": "Go",
    "rs": "Rust",
    "java": "Java",
    "kt": "Kotlin",
    "kts": "Kotlin",
    "scala": "Scala",
    "groovy": "Groovy",
    "clj": "Clojure",
    "cljs": "Clojure",
    "cljc": "Clojure",
    "rb": "Ruby",
    "rake": "Ruby",
    "php": "PHP",
    "c": "C",
    "h": "C",
    "cc": "C++",
    "cpp": "C++",
    "cxx": "C++",
    "c++": "C++",
    "hpp": "C++",
    "hh": "C++",
    "hxx": "C++",
    "h++": "C++",
    "cu": "Cuda",
    "cuh": "Cuda",
    "cs": "C#",
    "fs": "F#",
    "fsi": "F#",
    "fsx": "F#",
    "vb": "Visual Basic .NET",
    "swift": "Swift",
    "m": "Objective-C",
    "mm": "Objective-C++",
    "ex": "Elixir",
    "exs": "Elixir",
    "erl": "Erlang",
    "hrl": "Erlang",
    "hs": "Haskell",
    "lhs": "Haskell",
    "elm": "Elm",
    "ml": "OCaml",
    "mli": "OCaml",
    "lua": "Lua",
    "pl": "Perl",
    "pm": "Perl",
    "t": "Perl",
    "r": "R",
    "jl": "Julia",
    "dart": "Dart",
    "sh": "Shell",
    "bash": "Shell",
    "zsh": "Shell",
    "ps1": "PowerShell",
    "zig": "Zig",
    "nim": "Nim",
    "cr": "Crystal",
    "el": "Emacs Lisp",
    "lisp": "Common Lisp",
    "scm": "Scheme",
    "rkt": "Racket",
    "f90": "Fortran",
    "sol": "Solidity",
    "tcl": "Tcl",
}
SOURCE_EXTENSIONS: frozenset[str] = frozenset(LANGUAGES)

TEST_DIRS: frozenset[str] = frozenset(
    {
        "test",
        "tests",
        "testing",
        "spec",
        "specs",
        "__tests__",
        "__test__",
        "e2e",
        "testdata",
        "__snapshots__",
        "__mocks__",
        "__fixtures__",
        "cypress",
        "t",
    }
)
DOCS_DIRS: frozenset[str] = frozenset({"doc", "docs", "documentation"})
DOCS_EXTENSIONS: frozenset[str] = frozenset(
    {"md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "rdoc", "textile"}
)
# Well-known project files, matched (any case) as the whole name or a prefix before . - _
DOCS_NAMES: frozenset[str] = frozenset(
    {
        "README",
        "CHANGELOG",
        "CHANGES",
        "HISTORY",
        "LICENSE",
        "LICENCE",
        "COPYING",
        "NOTICE",
        "NEWS",
        "AUTHORS",
        "CONTRIBUTORS",
        "CONTRIBUTING",
        "CODE_OF_CONDUCT",
        "MAINTAINERS",
        "RELEASE_NOTES",
    }
)
# Extensions that make a DOCS_NAMES file config, data or an image rather than prose.
_NOT_PROSE_EXTENSIONS = frozenset(
    {"json", "yml", "yaml", "toml", "ini", "cfg", "conf", "xml", "lock", "csv", "tsv"}
    | {"png", "jpg", "jpeg", "gif", "svg", "ico", "webp"}
)
# .txt files that are configuration, not prose.
_CONFIG_TXT_RE = re.compile(r"cmakelists\.txt|robots\.txt|.*(?:requirements|constraints).*\.txt")

_TEST_DIR_RE = re.compile(r"tests?[_-].+|.+[_-]tests?", re.IGNORECASE)
_CAMEL_TEST_DIR_RE = re.compile(r".*[A-Za-z0-9]Tests?")
# File name rules apply to code files only: a CI workflow ``test.yml`` or an OpenAPI
# ``api_spec.yaml`` is no test (data files of tests live in test directories).
_TEST_STEM_RE = re.compile(
    r"""
    tests? | conftest
    | (?:unit)?test[_-].*
    | .+[_-](?:(?:unit)?tests?|specs?)
    | .+\.(?:tests?|specs?|e2e|test-d|cy)
    """,
    re.VERBOSE | re.IGNORECASE,
)
# a "unit test" prefix (C++ unittest_foo.cc)
_UNIT_TEST_PREFIX_RE = re.compile(r"unit(?:test)[_-].*", re.IGNORECASE)
_CAMEL_TEST_STEM_RE = re.compile(
    r"Test[A-Z0-9_].*|.*[A-Za-z0-9](?:Tests?|TestCase|Specs?)|.*[a-z0-9]IT"
)
_DOCS_NAME_RE = re.compile(rf"(?:{'|'.join(sorted(DOCS_NAMES))})(?:[._-].*)?", re.IGNORECASE)


def _parts(path: str) -> tuple[list[str], str, str, str]:
    """(directories, file name, stem, lower-case extension without the dot) of ``path``."""
    pure = PurePosixPath(path)
    if not pure.name or pure.name == "..":
        raise ValueError(f"not a file path: {path!r}")
    dirs = [part for part in pure.parent.parts if part != "/"]
    return dirs, pure.name, pure.stem, pure.suffix[1:].lower()


def _is_test(dirs: list[str], stem: str, ext: str) -> bool:
    if any(
        d.lower() in TEST_DIRS or _TEST_DIR_RE.fullmatch(d) or _CAMEL_TEST_DIR_RE.fullmatch(d)
        for d in dirs
    ):
        return True
    if ext in {"t", "snap"}:  # Perl tests, Jest/insta snapshots
        return True
    if ext == "py" and _UNIT_TEST_PREFIX_RE.fullmatch(stem):
        # pytest's discovery (test_*.py, *_test.py) is Python's convention: a module named
        # unittest_aliases.py is code (a C++ unittest_foo.cc is a test)
        return False
    return ext in SOURCE_EXTENSIONS and bool(
        _TEST_STEM_RE.fullmatch(stem) or _CAMEL_TEST_STEM_RE.fullmatch(stem)
    )


def _is_docs(dirs: list[str], name: str, ext: str) -> bool:
    if any(d.lower() in DOCS_DIRS for d in dirs):
        return True
    if ext in DOCS_EXTENSIONS:
        return not (ext == "txt" and _CONFIG_TXT_RE.fullmatch(name.lower()))
    return bool(
        _DOCS_NAME_RE.fullmatch(name)
        and ext not in SOURCE_EXTENSIONS
        and ext not in _NOT_PROSE_EXTENSIONS
    )


def file_kind(path: str) -> FileKind:
    """Classify a repository-relative file path (``/``-separated, as git and GitHub give it).

    ``test`` > ``docs`` > ``source`` > ``other``; see the module docstring for the rules.
    Raises ValueError for an empty path.
    """
    dirs, name, stem, ext = _parts(path)
    if _is_test(dirs, stem, ext):
        return "test"
    if _is_docs(dirs, name, ext):
        return "docs"
    if ext in SOURCE_EXTENSIONS:
        return "source"
    return "other"


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test file (or test data): ``file_kind(path) == "test"``."""
    return file_kind(path) == "test"


def is_docs_path(path: str) -> bool:
    """Whether ``path`` is documentation and not a test: ``file_kind(path) == "docs"``."""
    return file_kind(path) == "docs"


def is_source_path(path: str) -> bool:
    """Whether ``path`` is code that is neither a test nor docs: ``file_kind(path) == "source"``."""
    return file_kind(path) == "source"


def language_of(path: str) -> str | None:
    """The GitHub language name of ``path``'s extension (any kind of file), or None.

    Ambiguous extensions take their most common language: ``.h`` is C, ``.m`` Objective-C,
    ``.pl`` Perl, ``.fs`` F#.
    """
    _, _, _, ext = _parts(path)
    return LANGUAGES.get(ext)


# A unified diff's hunk header: old start and count, new start and count (a count of 1 may be
# left out), then the context git names (the line of the enclosing function or item).
HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)", re.DOTALL)
# The module Rust's unit tests live in by convention: a hunk changing a test inside it has
# its ``#[cfg(test)]`` above the hunk, but git's context line names the module.
_TEST_MODULE = ("mod", "tests")


def inline_test_language(path: str) -> Language | None:
    """The language plugin of source file ``path`` if its tests may live in source files,
    else None (a test, docs or other file, or a language whose tests are test files only)."""
    if file_kind(path) != "source":
        return None
    language = language_named(language_of(path))
    if language is None or language.test_line_ranges(path, "") is None:
        return None
    return language


def inline_test_lines(path: str, patch: str | None) -> int:
    """How many changed lines of ``patch`` (a GitHub file patch: its hunks only) are in hunks
    touching tests inside source file ``path``: their changed lines hold a test (``#[test]``,
    ``#[cfg(test)] ...``, as its language reads them) or their context is the test module.
    0 when there is no patch or ``path``'s tests live in test files only."""
    language = inline_test_language(path) if patch else None
    if language is None or not patch:
        return 0
    count = 0
    for context, changed in _patch_hunks(patch):
        words = context.replace("{", " ").split()
        in_test_module = _TEST_MODULE in itertools.pairwise(words)
        if in_test_module or language.test_line_ranges(path, "\n".join(changed)):
            count += len(changed)
    return count


def _patch_hunks(patch: str) -> list[tuple[str, list[str]]]:
    """(context, changed lines without their ``+``/``-``) of each hunk of a GitHub patch."""
    hunks: list[tuple[str, list[str]]] = []
    for line in patch.split("\n"):
        header = HUNK_HEADER.match(line) if line.startswith("@@") else None
        if header is not None:
            hunks.append((header[5], []))
        elif hunks and line[:1] in ("+", "-"):
            hunks[-1][1].append(line[1:])
    return hunks
