"""The tests a Go test patch adds or changes: ``<package import path>/<TestName>`` of each
top-level test function whose lines a hunk adds, removes or changes.

A test patch that does not compile without the fix takes its whole package out of the run
with the test patch alone; three runs then tell an old test of the package (it passed at the
base: PASS_TO_PASS) from one the patch changed (it cannot have passed before the fix: its
new body never ran there). Which function a changed line is in is read as git writes hunks:
the function named in the hunk header (the last ``func`` line above the hunk), then each
``func`` line the hunk passes."""

from __future__ import annotations

import posixpath
import re

from streams.evaluation.recipes.languages.go.recipe import GoFacts, module_of

_FILE = re.compile(r"^\+\+\+ b/(\S+_test\.go)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_TEST_FUNC = re.compile(r"^func ((?:Test|Example|Fuzz|Benchmark)(?:[^\Wa-z]\w*)?)\s*\(")
_ANY_FUNC = re.compile(r"^func\b")


def changed_tests(facts: GoFacts, test_patch: str) -> list[str]:
    """The ids of the top-level tests ``test_patch`` adds or changes (in files ``*_test.go``
    of the tree's modules)."""
    found: dict[str, None] = {}
    package: str | None = None
    current: str | None = None
    for line in test_patch.splitlines():
        if line.startswith("diff --git "):
            package = current = None
            continue
        if (match := _FILE.match(line)) is not None:
            package = _import_path(facts, match.group(1))
            continue
        if package is None:
            continue
        if (hunk := _HUNK.match(line)) is not None:
            current = _function(hunk.group(1))
            continue
        body = line[1:] if line[:1] in ("+", "-", " ") else None
        if body is None:
            continue
        if _ANY_FUNC.match(body):
            current = _function(body)
        if line[:1] in ("+", "-") and current is not None and body.strip():
            found[f"{package}/{current}"] = None
    return list(found)


def _function(text: str) -> str | None:
    match = _TEST_FUNC.match(text)
    return match.group(1) if match else None


def _import_path(facts: GoFacts, path: str) -> str | None:
    """The import path of the package of a file of the tree (None: no module holds it)."""
    home = module_of(facts, path)
    if home is None:
        return None
    module = facts.modules[home].module
    if not module:
        return None
    directory = posixpath.dirname(path)
    relative = posixpath.relpath(directory or ".", home)
    return module if relative == "." else f"{module}/{relative}"
