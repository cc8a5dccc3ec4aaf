"""A repository's install recipes at one commit, in the order to try them: one per plausible
toolchain version, each made by the language of the tree, a per-repository override applied
last (``overrides``).

The language is a plugin, not a branch: the registry (``recipes.languages``) holds each
language's detector (is this tree one of its projects?), its inference and why a tree of it
has no recipe; the first language in detection order whose detector accepts the tree makes the
recipes (Python first: a Python project with a package.json for its docs or front end is
tested with Python's runner)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from streams.evaluation.log_parsers import LOG_PARSERS
from streams.evaluation.recipes.languages import Inputs, Language, SystemFiles, language_of
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import RepositoryOverride, apply_override

__all__ = [
    "NO_RUNNER",
    "Inputs",
    "infer_for",
    "infer_recipes",
    "language_of",
    "runnable",
]

NO_RUNNER = "no_test_runner"  # the test script runs nothing a log parser reads


def infer_for(tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any, Language | None]:
    """The recipes of ``tree``'s language (``language_of``), their facts and the language;
    none of the three when no language recognises the tree."""
    language = language_of(tree)
    if language is None:
        return [], None, None
    recipes, facts = language.infer(tree, inputs)
    # the override wins over inference, field by field, whatever the language (its toolchain
    # version was the only one tried: ``Language.pinned_versions``)
    return [apply_override(r, inputs.override) for r in recipes], facts, language


def runnable(recipe: InstallRecipe) -> bool:
    """Whether a log parser reads ``recipe``'s test runner (else its runs give no statuses)."""
    return recipe.test_runner in LOG_PARSERS


def infer_recipes(
    tree: TreeFiles,
    *,
    repo: str,
    created_at: datetime | None = None,
    release_tag: Callable[[], str | None] = lambda: None,
    override: RepositoryOverride | None = None,
    changed_files: Sequence[str] = (),
    images: Mapping[str, Mapping[str, str]] | None = None,
    diffs: tuple[str, ...] = (),
    system_files: SystemFiles | None = None,
) -> tuple[list[InstallRecipe], Any]:
    """The recipes to try (best first) and the facts they were made of, by the tree's
    language; no recipe when no language recognises it, or its toolchain constraint excludes
    every image there is."""
    inputs = Inputs(
        repo=repo,
        images={name: dict(versions) for name, versions in (images or {}).items()},
        created_at=created_at,
        changed_files=changed_files,
        diffs=diffs,
        release_tag=release_tag,
        override=override,
        system_files=system_files,
    )
    recipes, facts, _ = infer_for(tree, inputs)
    return recipes, facts
