"""Python as a plugin: detection, inference per plausible Python, its runners (pytest,
unittest), its rejection reasons, dependency files, agent prompts and test-id rules."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from streams.evaluation.log_parsers.base import LogParser, ReportFile
from streams.evaluation.recipes.languages import Cause, Inputs, Language, version_key
from streams.evaluation.recipes.languages.python import prompts
from streams.evaluation.recipes.languages.python.facts import ProjectFacts, read_project
from streams.evaluation.recipes.languages.python.recipe import RecipeContext, python_recipe
from streams.evaluation.recipes.languages.python.requirements import is_requirements_name
from streams.evaluation.recipes.languages.python.runners import junit, pytest, unittest
from streams.evaluation.recipes.languages.python.versions import python_order
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

log = logging.getLogger("swe_stream.recipes")

NO_PYTHON = "no_python_for_requires_python"  # requires-python excludes every base image
_VERSION_IN_TAG = re.compile(r"\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev)\d+)?")
# files whose content decides how a Python project installs (a change to one of them may
# need another recipe); test and source files do not
DEPENDENCY_FILES = frozenset(
    {
        "pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "Pipfile",
        "Pipfile.lock", "poetry.lock", "pdm.lock", "uv.lock", "environment.yml",
        ".python-version", "MANIFEST.in", "pytest.ini", "conftest.py",
    }
)  # fmt: skip
# the Python (major.minor) of each Debian suite's python3, which the base images of that suite
# carry (``swe-stream images base``; the engine's ``images.PYTHON_SUITES`` says the same)
BASE_IMAGE_PYTHONS = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13", "forky": "3.14"}
BASE_IMAGE_PREFIX = "swe-stream/base"
# the hosts pip and uv fetch from
PYPI = ("pypi.org", "files.pythonhosted.org", "*.pythonhosted.org")
# sources of a compiled extension: the recipe's rebuild steps run again after a patch to one
_COMPILED_SOURCE = re.compile(
    r"^diff --git a/\S+\.(?:c|h|cc|cpp|cxx|hpp|pyx|pxd|pxi|f|f90|rs)\s", re.MULTILINE
)


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


def python_versions(facts: ProjectFacts, inputs: Inputs) -> list[str | None]:
    """The Pythons to try, best first (``versions.python_order``); None alone: the default
    base image, whatever Python it has. An override's ``python`` is the only one tried."""
    pinned = LANGUAGE.pinned_versions(inputs)
    if pinned is not None:
        return pinned
    images = inputs.images_of("python")
    if not images:  # no base image per Python: the default one
        return [None]
    declared = declared_pythons(facts)
    return list(python_order(images, facts.requires_python, declared, inputs.created_at))


def python_recipes(tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
    """Python's recipes to try (best first) and the facts they were made of; no recipe when the
    tree is no Python project, or its ``requires-python`` excludes every Python there is."""
    if not is_python_tree(tree):
        return [], None
    facts = read_project(tree.names, tree.read, tree.why_unreadable)
    for problem in facts.problems:
        log.info("%s: %s", inputs.repo, problem)
    images = inputs.images_of("python")
    version = version_of_tag(inputs.release_tag()) if facts.scm_version else None
    created_at = inputs.created_at
    exclude_newer = created_at.strftime("%Y-%m-%d") if created_at else None
    recipes = []
    for python in python_versions(facts, inputs):
        context = RecipeContext(
            names=tree.names,
            read=tree.read,
            facts=facts,
            python=python,
            base_image=images.get(python, "") if python else "",
            exclude_newer=exclude_newer,
            version=version,
        )
        recipes.append(python_recipe(context))
    return recipes, facts


class Python(Language):
    name = "Python"
    toolchain = "python"
    version_pattern = r"^3\.\d+$"
    registries = PYPI
    order = 10  # first: a Python project with a package.json for its docs is tested with pytest
    runners = {
        "pytest": LogParser(pytest.parse_pytest_output, pytest.running_when_killed, "junit"),
        "unittest": LogParser(unittest.parse_unittest_output, unittest.running_when_killed),
    }
    reports = {"junit": junit.parse_junit_xml}
    default_runner = "pytest"
    project_files = frozenset(
        {
            "pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "pytest.ini",
            "Pipfile", "Pipfile.lock", "poetry.lock", "pdm.lock", "uv.lock",
        }
    )  # fmt: skip
    no_recipe_reasons = (NO_PYTHON,)
    causes = (
        Cause(
            "install_failed",
            r"requires a different Python",
            "no Python image satisfies the project's requires-python",
        ),
    )
    setup_prompt = prompts.SETUP
    test_file_hint = "name it test_*.py or *_test.py, or put it under a tests/ directory"
    testgen_prompt = prompts.TESTGEN

    def detect(self, tree: TreeFiles) -> bool:
        return is_python_tree(tree)

    def facts(self, tree: TreeFiles) -> ProjectFacts | None:
        return (
            read_project(tree.names, tree.read, tree.why_unreadable)
            if is_python_tree(tree)
            else None
        )

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        return python_versions(facts, inputs)

    def infer(self, tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
        return python_recipes(tree, inputs)

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        pythons = ", ".join(sorted(inputs.images_of("python"), key=version_key))
        return NO_PYTHON, (
            f"requires-python {facts.requires_python!r} excludes every Python with a base "
            f"image ({pythons})"
        )

    def default_images(self) -> dict[str, str]:
        # the base images themselves (its toolchain has no images of its own)
        return {v: f"{BASE_IMAGE_PREFIX}:{suite}" for suite, v in BASE_IMAGE_PYTHONS.items()}

    def version_of(self, recipe: InstallRecipe) -> str | None:
        return recipe.python

    def test_id_shape(self, runner: str) -> str:
        return "a pytest node id (path::Class::test_name)"

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_COMPILED_SOURCE.search(patch))

    def file_of(self, test_id: str) -> str | None:
        # ``path::name``: pytest's node ids, unittest's and JUnit's as swe-stream spells them
        return test_id.split("::", 1)[0] or None if "::" in test_id else None

    def report_file(self, runner: str, directory: str) -> ReportFile | None:
        if runner != "pytest":
            return None
        # xunit1 keeps each test's file, so node ids can be rebuilt exactly
        path = f"{directory}/report.xml"
        return ReportFile(path, f"--junitxml={path} -o junit_family=xunit1")

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return sorted(n for n in names if n in DEPENDENCY_FILES or is_requirements_name(n))


LANGUAGE = Python()
