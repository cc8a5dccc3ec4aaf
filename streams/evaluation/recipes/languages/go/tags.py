"""Build tags as the repository tests with them: the ``-tags`` of its CI's ``go test`` runs.

A repository may test twice, once with a tag (``go test ./...`` and ``go test -tags
binary_log ./...``): files constrained by ``//go:build binary_log`` are built only in the
second run. A recipe takes the tags of a CI run that names a tag a changed file's
``//go:build`` line names (the PR changes code only that run builds); else the tags every
CI ``go test`` run passes (a repository that always tests with them); else none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.ci import read_ci
from streams.evaluation.recipes.sources.shell import split_commands
from streams.evaluation.recipes.sources.tree import SourceTree

# an identifier of a build constraint, and whether it is negated (``!binary_log``: a file
# built only without the tag)
_TERM = re.compile(r"(!?)\s*([A-Za-z0-9_.]+)")
MAX_CONSTRAINT_BYTES = 64 << 10  # a build constraint is in a file's first lines


def ci_tag_sets(tree: TreeFiles) -> list[tuple[str, ...]]:
    """The tags of each ``go test`` command the tree's CI runs (an empty tuple: a run
    without tags), in the order the CI files give them."""
    source = SourceTree(tree.names, tree.read, tree.why_unreadable)
    found: list[tuple[str, ...]] = []
    for job in read_ci(source).jobs:
        for step in job.steps:
            for command in split_commands(step.run or ""):
                words = command.words
                if words[:2] == ("go", "test"):
                    found.append(_tags(words[2:]))
    return found


def _tags(words: Sequence[str]) -> tuple[str, ...]:
    for at, word in enumerate(words):
        value = None
        if word in ("-tags", "--tags") and at + 1 < len(words):
            value = words[at + 1]
        elif word.startswith(("-tags=", "--tags=")):
            value = word.split("=", 1)[1]
        if value is not None:
            return tuple(sorted(t for t in re.split(r"[,\s]+", value) if t))
    return ()


def constraint_tags(tree: TreeFiles, path: str) -> set[str]:
    """The identifiers a file's ``//go:build`` line names, but negated ones (none: no such
    line, or a file the base does not have)."""
    data = tree.read(path, MAX_CONSTRAINT_BYTES) if tree.has(path) else None
    if data is None:
        return set()
    for line in data.decode("utf-8", "replace").splitlines():
        stripped = line.strip()
        if stripped.startswith("//go:build "):
            terms = _TERM.findall(stripped[len("//go:build ") :])
            return {name for negated, name in terms if not negated}
        if stripped.startswith("package "):
            break  # constraints come before the package clause
    return set()


def build_tags(tree: TreeFiles, changed_files: Sequence[str]) -> tuple[str, ...]:
    """The tags a recipe's ``go test`` passes (see the module's docstring)."""
    runs = ci_tag_sets(tree)
    if not runs:
        return ()
    named = set().union(*(constraint_tags(tree, p) for p in changed_files if p.endswith(".go")))
    for tags in runs:
        if named & set(tags):
            return tags
    common = set(runs[0]).intersection(*map(set, runs[1:]))
    return tuple(sorted(common))
