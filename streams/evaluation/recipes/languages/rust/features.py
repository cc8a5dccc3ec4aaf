"""Cargo features as the repository's CI tests with them: the feature options of its
``cargo test`` runs.

A crate may gate tests behind features (``#[cfg(feature = "serde")]``) that ``cargo test``
alone does not build; its CI then runs ``cargo test --all-features`` or ``cargo test
--features serde,std``. A recipe takes the CI run that enables the most: ``--all-features``
first, then the longest feature list (``--no-default-features`` kept with its list). Runs of a
nightly toolchain (``cargo +nightly test``) are passed by: the images have stable rustcs.
"""

from __future__ import annotations

from collections.abc import Sequence

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.ci import read_ci
from streams.evaluation.recipes.sources.shell import split_commands
from streams.evaluation.recipes.sources.tree import SourceTree

ALL_FEATURES = "--all-features"
NO_DEFAULT = "--no-default-features"


def _feature_options(words: Sequence[str]) -> tuple[str, ...] | None:
    """The feature options of one ``cargo test`` command's words (after ``test``); None when
    it runs on a nightly or another target (not what an image can run)."""
    listed: list[str] = []
    flags: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word == "--":
            break
        if word in (ALL_FEATURES, NO_DEFAULT):
            flags.append(word)
        elif word in ("--features", "-F") and at + 1 < len(words):
            listed += words[at + 1].replace(",", " ").split()
            at += 1
        elif word.startswith("--features="):
            listed += word.split("=", 1)[1].replace(",", " ").split()
        elif word in ("--target", "-Z") or word.startswith(("--target=", "-Z")):
            return None
        at += 1
    options = sorted(set(flags))
    if listed and ALL_FEATURES not in flags:
        options += ["--features", ",".join(sorted(set(listed)))]
    return tuple(options)


def ci_feature_runs(tree: TreeFiles) -> list[tuple[str, ...]]:
    """The feature options of each ``cargo test`` command the tree's CI runs, in order."""
    source = SourceTree(tree.names, tree.read, tree.why_unreadable)
    found: list[tuple[str, ...]] = []
    for job in read_ci(source).jobs:
        for step in job.steps:
            for command in split_commands(step.run or ""):
                words = list(command.words)
                if not words or words[0] != "cargo":
                    continue
                rest = words[1:]
                if rest and rest[0].startswith("+"):
                    if not rest[0].startswith("+stable"):
                        continue  # a nightly or a pinned old toolchain's run
                    rest = rest[1:]
                if not rest or rest[0] != "test":
                    continue
                options = _feature_options(rest[1:])
                if options is not None:
                    found.append(options)
    return found


def feature_options(tree: TreeFiles) -> tuple[str, ...]:
    """The feature options a recipe's ``cargo test`` passes (see the module's docstring)."""
    runs = ci_feature_runs(tree)
    if not runs:
        return ()
    if any(ALL_FEATURES in run for run in runs):
        return (ALL_FEATURES,)

    def enabled(run: tuple[str, ...]) -> int:
        return len(run[run.index("--features") + 1].split(",")) if "--features" in run else 0

    best = max(runs, key=enabled)
    return best if enabled(best) else ()
