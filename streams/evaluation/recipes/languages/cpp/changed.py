"""The test cases a C/C++ test patch adds or changes: each case (``tests_in_source``) of a
changed C/C++ source that a line the patch adds falls in, named as CTest names a discovered
case (``Suite.Name``, a Catch2 or doctest case's name). A case whose binary CTest runs whole is
``<binary>::Suite.Name`` in a run's results, which the tree alone cannot tell (the binary is
CMake's target): those are found by the three runs themselves (a case not at the base is new).
A C source of no such macros registers its cases by function (``registered``): each changed
function is named as itself and as the strings its directory's sources register it under.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR
from streams.evaluation.recipes.languages.cpp.registered import defined_functions, registered_names
from streams.evaluation.recipes.languages.cpp.tests_in_source import find_cases
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import file_patches, new_side, touched_by

__all__ = ["PROGRAM", "SOURCE_SUFFIXES", "changed_cases", "program_tests"]

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".ipp")
_MAX_SOURCE = 8 << 20  # a larger base file is read as its hunks alone
PROGRAM = "program:"  # a changed test program's name, until the runs name its test
MIN_PROGRAM_STEM = 4  # a shorter file name (``t.c``) names no test by itself
_MAIN = re.compile(r"\bint\s+main\s*\(")
_MAX_REGISTRARS = 64  # a test directory's sources read for registrations, at most


def changed_cases(tree: TreeFiles, test_patch: str) -> list[str]:
    """The names of the cases ``test_patch`` adds or changes (``tree``: the base), sorted; a
    changed test program of no cases (its own ``main``) as ``PROGRAM<stem>``."""
    found: set[str] = set()
    new_sides: dict[str, str] = {}
    functions: dict[str, set[str]] = {}  # a directory -> the functions changed in it
    for patch in file_patches(test_patch):
        if not patch.new or not patch.new.lower().endswith(SOURCE_SUFFIXES):
            continue
        text, added = new_side(tree, patch, _MAX_SOURCE)
        new_sides[patch.new] = text
        cases = find_cases(text)
        for case in touched_by(cases, added, lambda c: (c.start, c.end)):
            found.add(case.name)
        stem = posixpath.splitext(posixpath.basename(patch.new))[0]
        if added and not cases and _MAIN.search(text) and len(stem) >= MIN_PROGRAM_STEM:
            found.add(PROGRAM + stem)
        if added and not cases:
            touched = touched_by(defined_functions(text), added, lambda f: (f.start, f.end))
            directory = posixpath.dirname(patch.new)
            functions.setdefault(directory, set()).update(f.name for f in touched)
    for directory, names in functions.items():
        found.update(names - {"main"})
        found.update(registered_names(names, _directory_sources(tree, directory, new_sides)))
    return sorted(found)


def _directory_sources(tree: TreeFiles, directory: str, new_sides: dict[str, str]) -> list[str]:
    """The C/C++ sources of ``directory`` as the test patch leaves them (its own files' new
    sides, the others as the base has them), where a test function's registration is."""
    texts = [text for path, text in new_sides.items() if posixpath.dirname(path) == directory]
    prefix = f"{directory}/" if directory else ""
    others = [
        name
        for name in tree.names
        if name.startswith(prefix)
        and "/" not in name[len(prefix) :]
        and name.lower().endswith(SOURCE_SUFFIXES)
        and name not in new_sides
    ]
    for name in others[:_MAX_REGISTRARS]:
        data = tree.read(name, _MAX_SOURCE)
        if data is not None:
            texts.append(data.decode("utf-8", "replace"))
    return texts


def program_tests(stem: str, ids: Iterable[str]) -> list[str]:
    """The tests a changed test program's source (``stem``) is, by their names: the CTest
    names holding the stem as a word of their own (``test-gtx_decompose`` for
    ``gtx_decompose.cpp``), not a case of another's."""
    word = re.compile(rf"(?:^|[^A-Za-z0-9_]){re.escape(stem)}(?:$|[^A-Za-z0-9_])")
    return [test for test in ids if SEPARATOR not in test and word.search(test)]
