"""Cargo features as the repository's CI tests with them: the feature options of its
``cargo test`` runs.

A crate may gate tests behind features (``#[cfg(feature = "serde")]``) that ``cargo test``
alone does not build; its CI then runs ``cargo test --all-features`` or ``cargo test
--features serde,std``. A recipe takes the CI run that enables the most: ``--all-features``
first, then the longest feature list (``--no-default-features`` kept with its list). Runs of a
nightly toolchain (``cargo +nightly test``) are passed by: the images have stable rustcs.

``cargo hack test --feature-powerset`` (or ``--each-feature``) tests every feature, each
combination on a run of its own; one run of every feature of the root manifest's
``[features]`` but those it excludes (``--exclude-features``, ``--skip``: features that
cannot go together, such as ``max_level_*`` ones) builds every test any of them gates. A
feature list from the job's matrix (``--features "${{ matrix.features }}"``) is read the same
way: every value the matrix gives, in one run.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from typing import Any

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.ci import matrix_values, read_ci
from streams.evaluation.recipes.sources.shell import split_commands
from streams.evaluation.recipes.sources.tree import SourceTree

ALL_FEATURES = "--all-features"
NO_DEFAULT = "--no-default-features"
EVERY_FEATURE = ("--feature-powerset", "--each-feature")  # cargo hack's
EXCLUDED = ("--exclude-features", "--skip")


def declared_features(tree: TreeFiles) -> list[str]:
    """The features the root manifest's ``[features]`` declares (``default`` aside)."""
    data = tree.read("Cargo.toml", 1 << 20) if tree.has("Cargo.toml") else None
    try:
        table = tomllib.loads((data or b"").decode("utf-8", "replace")).get("features")
    except tomllib.TOMLDecodeError:
        return []
    return [name for name in table if name != "default"] if isinstance(table, dict) else []


def _expanded(word: str, matrix: Any) -> str:
    """``word`` with each ``${{ matrix.X }}`` replaced by all the values the matrix gives X
    (a run per value; one run of them all builds what each one gates)."""
    while "${{" in word:
        start = word.index("${{")
        end = word.find("}}", start)
        if end < 0:
            break
        expression = word[start + 3 : end].strip()
        key = expression.removeprefix("matrix.") if expression.startswith("matrix.") else None
        values = " ".join(dict.fromkeys(matrix_values(matrix, key))) if key else ""
        word = word[:start] + values + word[end + 2 :]
    return word


def _feature_options(words: Sequence[str], declared: Sequence[str] = ()) -> tuple[str, ...] | None:
    """The feature options of one ``cargo test`` command's words (after ``test``); None when
    it runs on a nightly or another target (not what an image can run). ``declared``: the
    features ``--feature-powerset`` stands for."""
    listed: list[str] = []
    flags: list[str] = []
    excluded: list[str] = []
    every = False
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
        elif word in EVERY_FEATURE:
            every = True
        elif word in EXCLUDED and at + 1 < len(words):
            excluded += words[at + 1].replace(",", " ").split()
            at += 1
        elif word in ("--target", "-Z") or word.startswith(("--target=", "-Z")):
            return None
        at += 1
    if every:
        listed += [f for f in declared if f not in excluded]
    options = sorted(set(flags))
    if listed and ALL_FEATURES not in flags:
        options += ["--features", ",".join(sorted(set(listed)))]
    return tuple(options)


def ci_feature_runs(tree: TreeFiles) -> list[tuple[str, ...]]:
    """The feature options of each ``cargo test`` command the tree's CI runs, in order."""
    source = SourceTree(tree.names, tree.read, tree.why_unreadable)
    found: list[tuple[str, ...]] = []
    declared: list[str] | None = None  # read when a run asks
    for job in read_ci(source).jobs:
        for step in job.steps:
            for command in split_commands(step.run or ""):
                words = [_expanded(w, job.matrix) for w in command.words]
                if not words or words[0] != "cargo":
                    continue
                rest = words[1:]
                if rest and rest[0].startswith("+"):
                    if not rest[0].startswith("+stable"):
                        continue  # a nightly or a pinned old toolchain's run
                    rest = rest[1:]
                if rest[:1] == ["hack"] and "test" in rest:
                    # cargo hack test: its own options and the test's, on either side
                    rest = ["test", *(w for w in rest[1:] if w != "test")]
                if not rest or rest[0] != "test":
                    continue
                if declared is None and any(w in EVERY_FEATURE for w in rest):
                    declared = declared_features(tree)
                options = _feature_options(rest[1:], declared or ())
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
