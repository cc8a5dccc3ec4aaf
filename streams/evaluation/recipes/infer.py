"""A repository's install recipes at one commit, in the order to try them: one per plausible
Python (``python_versions``), each made by the detector chain of its language
(``python_recipe``), a per-repository override applied last (``overrides``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime

from packaging.version import InvalidVersion, Version

from streams.evaluation.environments import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import RepositoryOverride, apply_override
from streams.evaluation.recipes.python_project import ProjectFacts, read_project
from streams.evaluation.recipes.python_recipe import RecipeContext, python_recipe
from streams.evaluation.recipes.python_versions import python_order

log = logging.getLogger("swe_stream.recipes")

_VERSION_IN_TAG = re.compile(r"\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev)\d+)?")


def version_of_tag(tag: str | None) -> str | None:
    """A PEP 440 version from a release tag (``v1.2.3``, ``release-2.0``), or None."""
    if not tag:
        return None
    for candidate in (tag, *_VERSION_IN_TAG.findall(tag)):
        try:
            return str(Version(candidate))
        except InvalidVersion:
            continue
    return None


def is_python_tree(tree: TreeFiles) -> bool:
    names = set(tree.names)
    return bool({"pyproject.toml", "setup.py", "setup.cfg"} & names) or any(
        name.endswith(".py") for name in names
    )


def declared_pythons(facts: ProjectFacts) -> list[str]:
    """The Pythons the project says it is tested on."""
    versions = [*facts.classifier_pythons, *facts.ci.python_versions]
    if facts.tox is not None:
        versions += facts.tox.pythons
    if facts.nox is not None:
        for session in facts.nox.sessions:
            versions += session.pythons
    return versions


def infer_recipes(
    tree: TreeFiles,
    *,
    repo: str,
    python_images: dict[str, str],
    created_at: datetime | None = None,
    release_tag: Callable[[], str | None] = lambda: None,
    override: RepositoryOverride | None = None,
) -> tuple[list[InstallRecipe], ProjectFacts | None]:
    """The recipes to try (best first) and the facts they were made of; no recipe when the
    tree is no Python project, or its ``requires-python`` excludes every Python there is."""
    if not is_python_tree(tree):
        return [], None
    facts = read_project(tree.names, tree.read)
    for problem in facts.problems:
        log.info("%s: %s", repo, problem)
    pythons: list[str | None]
    if override is not None and override.python:
        pythons = [override.python]
    elif not python_images:  # no base image per Python: the default one, whatever it has
        pythons = [None]
    else:
        pythons = list(
            python_order(python_images, facts.requires_python, declared_pythons(facts), created_at)
        )
    version = version_of_tag(release_tag()) if facts.scm_version else None
    exclude_newer = created_at.strftime("%Y-%m-%d") if created_at else None
    recipes = []
    for python in pythons:
        context = RecipeContext(
            names=tree.names,
            read=tree.read,
            facts=facts,
            python=python,
            base_image=python_images.get(python, "") if python else "",
            exclude_newer=exclude_newer,
            version=version,
        )
        recipes.append(apply_override(python_recipe(context), override))
    return recipes, facts
