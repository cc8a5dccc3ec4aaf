"""What a test framework a project vendors needs of a newer C library: Catch2 before 2.13.5
sizes its signal stack as a constant expression of ``MINSIGSTKSZ``, which glibc 2.34 made a
call (``sysconf``), so its single header no longer compiles on any image's Debian. Its own
switch, ``CATCH_CONFIG_NO_POSIX_SIGNALS``, leaves the signal handlers out: a case that
crashes then ends its binary, as CTest reports it anyway."""

from __future__ import annotations

import posixpath
import re

from streams.evaluation.recipes.model import TreeFiles

__all__ = ["compatibility_defines"]

SINGLE_HEADERS = frozenset({"catch.hpp", "catch2.hpp"})
_VERSION = re.compile(rb"Catch v(\d+)\.(\d+)\.(\d+)")
SIGNAL_STACK_FIXED = (2, 13, 5)
HEAD_BYTES = 4096  # the version is in the header's opening comment
MAX_HEADER_BYTES = 4 << 20


def compatibility_defines(tree: TreeFiles) -> list[str]:
    """The defines (``-D`` flags) the frameworks the tree vendors need to compile here."""
    for path in tree.names:
        if posixpath.basename(path).lower() not in SINGLE_HEADERS:
            continue
        head = tree.read(path, MAX_HEADER_BYTES) or b""
        found = _VERSION.search(head[:HEAD_BYTES])
        if found is not None and tuple(map(int, found.groups())) < SIGNAL_STACK_FIXED:
            return ["-DCATCH_CONFIG_NO_POSIX_SIGNALS"]
    return []
