"""A repository's install recipes at one commit, in the order to try them: one per plausible
interpreter, each made by the detector chain of its language, a per-repository override
applied last (``overrides``).

The language is a parameter, not a branch: ``LANGUAGES`` holds each one's detector (is this
tree one of its projects?), its inference (Python: ``python_recipe`` per plausible Python of
``python_versions``; JavaScript / TypeScript: ``js_recipe.infer_js_recipes`` per Node major of
``node_versions``) and why a tree of it has no recipe; the first language whose detector
accepts the tree makes the recipes (Python first: a Python project with a package.json for its
docs or front end is tested with pytest)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from packaging.version import InvalidVersion, Version

from streams.evaluation.log_parsers import LOG_PARSERS
from streams.evaluation.recipes.languages.javascript.package import JsFacts
from streams.evaluation.recipes.languages.javascript.recipe import infer_js_recipes, is_js_tree
from streams.evaluation.recipes.languages.python.project import ProjectFacts, read_project
from streams.evaluation.recipes.languages.python.recipe import RecipeContext, python_recipe
from streams.evaluation.recipes.languages.python.versions import python_order
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import RepositoryOverride, apply_override

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


@dataclass(frozen=True)
class Inputs:
    """What inference may use beyond the tree: the base images per interpreter version, the
    PR's date and changed files, the release tag (asked only when needed), an override."""

    repo: str
    python_images: dict[str, str]
    node_images: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    changed_files: Sequence[str] = ()
    release_tag: Callable[[], str | None] = lambda: None
    override: RepositoryOverride | None = None


@dataclass(frozen=True)
class Language:
    """One language's detector chain: whether a tree is its project, its recipes (best first)
    with the facts they were made of, and why there is none (a rejection's reason and detail)."""

    name: str
    detects: Callable[[TreeFiles], bool]
    infer: Callable[[TreeFiles, Inputs], tuple[list[InstallRecipe], Any]]
    no_recipe: Callable[[Any, Inputs], tuple[str, str]]


NO_PYTHON = "no_python_for_requires_python"  # requires-python excludes every base image
NO_NODE = "no_node_for_engines"  # engines.node excludes every Node image
NO_RUNNER = "no_test_runner"  # the test script runs nothing a log parser reads


def _python_recipes(tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
    return python_recipes(
        tree,
        repo=inputs.repo,
        python_images=inputs.python_images,
        created_at=inputs.created_at,
        release_tag=inputs.release_tag,
        override=inputs.override,
    )


def _no_python(facts: ProjectFacts, inputs: Inputs) -> tuple[str, str]:
    pythons = ", ".join(sorted(inputs.python_images))
    return NO_PYTHON, (
        f"requires-python {facts.requires_python!r} excludes every Python with a base image "
        f"({pythons})"
    )


def _js_recipes(tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
    recipes, facts = infer_js_recipes(
        tree,
        node_images=inputs.node_images,
        created_at=inputs.created_at,
        changed_files=inputs.changed_files,
        override=inputs.override,
    )
    return recipes, facts


def _no_node(facts: JsFacts, inputs: Inputs) -> tuple[str, str]:
    engines = facts.root.engines_node
    nodes = ", ".join(sorted(inputs.node_images, key=int)) or "none built"
    if inputs.override is not None and inputs.override.node is not None:
        return NO_NODE, f"the override's node {inputs.override.node} has no image ({nodes})"
    if engines is None:  # every Node fits: an override names one with no image
        return NO_NODE, f"the Node major the override names has no image (built: {nodes})"
    return NO_NODE, f"engines.node {engines!r} excludes every Node with an image ({nodes})"


LANGUAGES: tuple[Language, ...] = (
    Language("Python", is_python_tree, _python_recipes, _no_python),
    Language("JavaScript", is_js_tree, _js_recipes, _no_node),
)


def language_of(tree: TreeFiles) -> Language | None:
    """The first language of ``LANGUAGES`` whose detector accepts ``tree``."""
    return next((language for language in LANGUAGES if language.detects(tree)), None)


def infer_for(tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any, Language | None]:
    """The recipes of ``tree``'s language (``language_of``), their facts and the language;
    none of the three when no language recognises the tree."""
    language = language_of(tree)
    if language is None:
        return [], None, None
    recipes, facts = language.infer(tree, inputs)
    return recipes, facts, language


def runnable(recipe: InstallRecipe) -> bool:
    """Whether a log parser reads ``recipe``'s test runner (else its runs give no statuses)."""
    return recipe.test_runner in LOG_PARSERS


def infer_recipes(
    tree: TreeFiles,
    *,
    repo: str,
    python_images: dict[str, str],
    created_at: datetime | None = None,
    release_tag: Callable[[], str | None] = lambda: None,
    override: RepositoryOverride | None = None,
    node_images: dict[str, str] | None = None,
    changed_files: Sequence[str] = (),
) -> tuple[list[InstallRecipe], Any]:
    """The recipes to try (best first) and the facts they were made of, by the tree's
    language (``LANGUAGES``); no recipe when no language recognises it, or its interpreter
    constraint excludes every base image there is."""
    inputs = Inputs(
        repo=repo,
        python_images=python_images,
        node_images=node_images or {},
        created_at=created_at,
        changed_files=changed_files,
        release_tag=release_tag,
        override=override,
    )
    recipes, facts, _ = infer_for(tree, inputs)
    return recipes, facts


def python_recipes(
    tree: TreeFiles,
    *,
    repo: str,
    python_images: dict[str, str],
    created_at: datetime | None = None,
    release_tag: Callable[[], str | None] = lambda: None,
    override: RepositoryOverride | None = None,
) -> tuple[list[InstallRecipe], ProjectFacts | None]:
    """Python's recipes to try (best first) and the facts they were made of; no recipe when the
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
