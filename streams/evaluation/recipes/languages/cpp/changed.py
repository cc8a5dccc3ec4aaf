"""The test cases a C/C++ test patch adds or changes: each case (``tests_in_source``) of a
changed C/C++ source that a line the patch adds falls in, named as CTest names a discovered
case (``Suite.Name``, a Catch2 or doctest case's name). A case whose binary CTest runs whole is
``<binary>::Suite.Name`` in a run's results, which the tree alone cannot tell (the binary is
CMake's target): those are found by the three runs themselves (a case not at the base is new).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from streams.evaluation.recipes.languages.cpp.gtest import SEPARATOR
from streams.evaluation.recipes.languages.cpp.tests_in_source import find_cases
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import file_patches, new_side, touched_by

__all__ = ["PROGRAM", "SOURCE_SUFFIXES", "changed_cases", "program_tests"]

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".ipp")
_MAX_SOURCE = 8 << 20  # a larger base file is read as its hunks alone
PROGRAM = "program:"  # a changed test program's name, until the runs name its test
MIN_PROGRAM_STEM = 4  # a shorter file name (``t.c``) names no test by itself
_MAIN = re.compile(r"\bint\s+main\s*\(")


def changed_cases(tree: TreeFiles, test_patch: str) -> list[str]:
    """The names of the cases ``test_patch`` adds or changes (``tree``: the base), sorted; a
    changed test program of no cases (its own ``main``) as ``PROGRAM<stem>``."""
    found: set[str] = set()
    for patch in file_patches(test_patch):
        if not patch.new or not patch.new.lower().endswith(SOURCE_SUFFIXES):
            continue
        text, added = new_side(tree, patch, _MAX_SOURCE)
        cases = find_cases(text)
        for case in touched_by(cases, added, lambda c: (c.start, c.end)):
            found.add(case.name)
        stem = posixpath.splitext(posixpath.basename(patch.new))[0]
        if added and not cases and _MAIN.search(text) and len(stem) >= MIN_PROGRAM_STEM:
            found.add(PROGRAM + stem)
    return sorted(found)


def program_tests(stem: str, ids: Iterable[str]) -> list[str]:
    """The tests a changed test program's source (``stem``) is, by their names: the CTest
    names holding the stem as a word of their own (``test-gtx_decompose`` for
    ``gtx_decompose.cpp``), not a case of another's."""
    word = re.compile(rf"(?:^|[^A-Za-z0-9_]){re.escape(stem)}(?:$|[^A-Za-z0-9_])")
    return [test for test in ids if SEPARATOR not in test and word.search(test)]
