"""Recipe inference by language (the registry, ``recipes.languages``), and what the validator
makes of it without Docker: the chain a tree gets, the rejections that say why, the report a
runner's run is read with (pytest's JUnit, a JavaScript runner's from ``RUNNER_COMMANDS``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.log_parsers import RUNNER_COMMANDS, log_parser
from streams.evaluation.recipes.infer import NO_RUNNER, infer_recipes
from streams.evaluation.recipes.languages import language_of, languages
from streams.evaluation.recipes.languages.javascript.language import NO_NODE
from streams.evaluation.recipes.languages.javascript.recipe import RUNNER_OPTIONS
from streams.evaluation.recipes.languages.python.language import NO_PYTHON
from streams.evaluation.validator import (
    PATCH_DIR,
    UNSUPPORTED,
    ValidationFailed,
    Validator,
    report_file,
)
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

NODES = {"18": "n:bookworm", "20": "n:trixie", "24": "n:forky"}
PYTHONS = {"3.11": "b:bookworm"}
LOCK = json.dumps({"lockfileVersion": 3, "packages": {"": {}}})


def package(scripts: dict[str, str], **fields: Any) -> str:
    return json.dumps({"name": "p", "version": "1.0.0", "scripts": scripts, **fields})


@pytest.mark.parametrize(
    ("files", "language"),
    [
        ({"setup.py": "", "tests/test_a.py": ""}, "Python"),
        ({"package.json": package({"test": "jest"})}, "JavaScript"),
        # a Python project with a front end is tested with pytest
        ({"pyproject.toml": "", "package.json": package({"test": "jest"})}, "Python"),
        # a Go file without a go.mod is no module go builds
        ({"README.md": "", "main.go": ""}, None),
        # a Go module with a Python script and a docs site's package.json is tested with go
        ({"go.mod": "module m\n", "main.go": "", "gen.py": "", "package.json": "{}"}, "Go"),
        ({"README.md": "", "gen.rs": ""}, None),
        # a Maven project with a docs site's package.json and a script's pyproject.toml
        ({"pom.xml": "<project/>", "src/A.java": "", "package.json": "{}"}, "Java"),
        ({"build.gradle": "", "src/A.java": "", "setup.py": ""}, "Java"),  # rejected later
        ({"pom.xml": "<project/>", "README.md": ""}, None),  # no Java source
        # a CMake project with a Python tool is C++'s; a Python package building a native part
        # with CMake (and testing it with pytest) is Python's
        ({"CMakeLists.txt": "project(x)\n", "src/a.cpp": "", "src/a.h": "", "t.py": ""}, "C++"),
        (
            {"CMakeLists.txt": "", "a.cpp": "", "pyproject.toml": "", "tests/test_a.py": ""},
            "Python",
        ),
    ],
)
def test_the_first_language_whose_detector_accepts_the_tree(
    files: dict[str, str], language: str | None
) -> None:
    found = language_of(tree(files))
    assert (found.name if found else None) == language
    assert [lang.name for lang in languages()][:6] == [
        "Go", "Rust", "Java", "C++", "Python", "JavaScript"
    ]  # fmt: skip


def test_infer_recipes_dispatches_to_the_javascript_chain() -> None:
    files = {
        "package.json": package({"test": "jest --coverage"}, devDependencies={"jest": "^29"}),
        "package-lock.json": LOCK,
        "src/a.js": "",
    }
    recipes, facts = infer_recipes(
        tree(files), repo="o/r", images={"python": PYTHONS, "node": NODES},
        changed_files=["src/a.js", "test/a.test.js"],
    )  # fmt: skip
    assert facts is not None
    assert recipes and {r.base_image for r in recipes} <= set(NODES.values())
    assert all(r.test_runner == "jest" and r.python is None for r in recipes)
    assert all(" ".join(RUNNER_OPTIONS["jest"]) in r.test_command for r in recipes)


def test_runner_options_are_the_parser_sides() -> None:
    parser_side = {name: command.options for name, command in RUNNER_COMMANDS.items()}
    assert parser_side == RUNNER_OPTIONS


def test_report_files_per_runner() -> None:
    junit = report_file("pytest", log_parser("pytest"))
    assert junit is not None and junit.path == f"{PATCH_DIR}/report.xml"
    jest = report_file("jest", log_parser("jest"))
    assert jest is not None
    assert jest.arguments == f"--json --outputFile={PATCH_DIR}/report.jest-json"
    vitest = report_file("vitest", log_parser("vitest"))
    assert vitest is not None and "--reporter=json" in vitest.arguments
    # node's report options must come before its files: its console (our reporter) is read
    assert report_file("node", log_parser("node")) is None
    assert report_file("uvu", log_parser("uvu")) is None  # no report at all
    assert report_file("unittest", log_parser("unittest")) is None


def offline_validator(files: dict[str, str], nodes: dict[str, str]) -> Validator:
    """A validator whose tree and images are given (no clone, no engine)."""
    validator = Validator(
        repos=None,  # type: ignore[arg-type]
        docker_client=lambda: None,
        docker=DockerSettings(toolchain_images={"python": PYTHONS, "node": nodes}),
        settings=ValidateSettings(),
        pipeline_version=1,
    )
    given = tree(files)
    validator.tree = lambda repo, commit: given  # type: ignore[method-assign]
    images = {"python": dict(PYTHONS), "node": dict(nodes)}
    validator.toolchain_images = lambda toolchain: images.get(toolchain, {})  # type: ignore[method-assign]
    return validator


def rejection(files: dict[str, str], nodes: dict[str, str] = NODES) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as failed:
        offline_validator(files, nodes).recipes("o/r", "0" * 40)
    return failed.value


def test_rejections_say_why() -> None:
    none = rejection({"README.md": "", "main.go": ""})
    assert none.reason == UNSUPPORTED and "no language swe-stream knows" in none.detail
    old = rejection(
        {"package.json": package({"test": "jest"}, engines={"node": ">=26"}), "a.js": ""}
    )
    assert old.reason == NO_NODE and ">=26" in old.detail and "18, 20, 24" in old.detail
    nothing = rejection({"package.json": package({"test": "echo no tests && exit 1"})})
    assert nothing.reason == NO_RUNNER and "JavaScript" in nothing.detail
    python = rejection(
        {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\nrequires-python = ">=3.99"\n'}
    )
    assert python.reason == NO_PYTHON and ">=3.99" in python.detail


def test_javascript_recipes_through_the_validator() -> None:
    files = {
        "package.json": package({"test": "vitest"}, devDependencies={"vitest": "^3"}),
        "package-lock.json": LOCK,
    }
    _, recipes = offline_validator(files, NODES).recipes("o/r", "0" * 40)
    assert recipes and all(r.test_runner == "vitest" for r in recipes)
    assert recipes[0].base_image in NODES.values()
