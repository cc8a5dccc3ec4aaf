"""The test cases a C/C++ test patch adds or changes: each case (``tests_in_source``) of a
changed C/C++ source that a line the patch adds falls in, named as CTest names a discovered
case (``Suite.Name``, a Catch2 or doctest case's name). A case whose binary CTest runs whole is
``<binary>::Suite.Name`` in a run's results, which the tree alone cannot tell (the binary is
CMake's target): those are found by the three runs themselves (a case not at the base is new).
"""

from __future__ import annotations

from streams.evaluation.recipes.languages.cpp.tests_in_source import find_cases
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import file_patches, new_side, touched_by

__all__ = ["SOURCE_SUFFIXES", "changed_cases"]

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".ipp")
_MAX_SOURCE = 8 << 20  # a larger base file is read as its hunks alone


def changed_cases(tree: TreeFiles, test_patch: str) -> list[str]:
    """The names of the cases ``test_patch`` adds or changes (``tree``: the base), sorted."""
    found: set[str] = set()
    for patch in file_patches(test_patch):
        if not patch.new or not patch.new.lower().endswith(SOURCE_SUFFIXES):
            continue
        text, added = new_side(tree, patch, _MAX_SOURCE)
        for case in touched_by(find_cases(text), added, lambda c: (c.start, c.end)):
            found.add(case.name)
    return sorted(found)
