"""The C++ standard a pull request's new code is written for: a test the patch adds inside
``#if __cplusplus >= 201703L`` compiles to nothing under the older standard a project builds
with by default (``CXX_STANDARD 11`` unless the user set ``CMAKE_CXX_STANDARD``), so it would
never run. The build is configured with the newest standard its added preprocessor lines ask
for, where that is newer than what every gcc image gives without asking (C++14)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["standard_asked"]

# ``__cplusplus`` compared with a standard's value in a preprocessor condition
_COMPARED = re.compile(r"__cplusplus\s*(>=|>)\s*(\d{6})L?")
# each standard's ``__cplusplus``, oldest first
STANDARDS = ((201103, "11"), (201402, "14"), (201703, "17"), (202002, "20"), (202302, "23"))
GIVEN = "14"  # what no image needs to be asked for (gcc 11 on defaults to gnu++17)


def standard_asked(diffs: Sequence[str]) -> str | None:
    """The standard (``17``) the lines the diffs add to preprocessor conditions ask for, if
    one is newer than ``GIVEN``."""
    least = 0
    for diff in diffs:
        for line in diff.splitlines():
            if not line.startswith("+") or line.startswith("+++"):
                continue
            directive = line[1:].lstrip()
            if not directive.startswith("#"):
                continue
            for operator, value in _COMPARED.findall(directive):
                least = max(least, int(value) + (1 if operator == ">" else 0))
    asked = next((name for value, name in STANDARDS if value >= least), None) if least else None
    return asked if asked is not None and int(asked) > int(GIVEN) else None
