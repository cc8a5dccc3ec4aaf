"""What the provisioner says when no recipe's images build: a submodule the build reads that
is not there is the cause (``needed_submodules``)."""

from __future__ import annotations

import pytest

from streams.evaluation.provisioner import needed_submodules
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit


def test_a_missing_submodule_the_failed_build_names_is_the_cause() -> None:
    given = tree({"CMakeLists.txt": ""})
    given.missing_submodules = {
        "tests/munit": "submodule tests/munit (https://example.org/munit) at 114805e1bab0: gone",
        "third-party/mruby": "submodule third-party/mruby: not a repository we can clone",
    }
    relative = [
        "gcc 12: instance step `RUN cmake -S . -B build` failed:\n"
        "CMake Error at tests/CMakeLists.txt:7 (add_executable):\n"
        "  Cannot find source file:\n\n    munit/munit.c\n"
    ]
    assert needed_submodules(given, relative) == [given.missing_submodules["tests/munit"]]
    whole = ['CMake Error: add_subdirectory given source "tests/munit" which is not a dir']
    assert needed_submodules(given, whole) == [given.missing_submodules["tests/munit"]]
    # a longer name holding the submodule's, or another file: not the submodule
    unrelated = ["fatal error: libmunit/munit.h: No such file\nmy-tests/munit.c failed\n"]
    assert needed_submodules(given, unrelated) == []
    assert needed_submodules(tree({"a.c": ""}), relative) == []
