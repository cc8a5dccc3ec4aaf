"""A recipe's Node major as a recipe's Python is: set by an override (``node``), honoured by
inference, refused by ``Validator.recipe_with`` when it has no image or the repository is a
Python one, kept by the recipe memory; the other language's interpreter ignored by inference.
Without Docker: trees in memory, the validator's images given."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas import RememberedRecipe
from streams.cli.recipes import summary
from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import interpreter_of, language_named
from streams.evaluation.recipes.languages.javascript.language import NO_NODE
from streams.evaluation.recipes.languages.javascript.recipe import UVU_PASS_LINES
from streams.evaluation.recipes.languages.python.language import NO_PYTHON
from streams.evaluation.recipes.memory import (
    as_override,
    dependency_fingerprint,
    is_change,
    layered,
    remembered_entry,
)
from streams.evaluation.recipes.model import InstallRecipe, RecipeOrigin
from streams.evaluation.recipes.overrides import (
    WRONG_INTERPRETER,
    RepositoryOverride,
    apply_override,
    interpreter_problem,
    load_overrides,
)
from streams.evaluation.validator import ValidationFailed
from tests.streams.evaluation.test_js_recipes import tree
from tests.streams.evaluation.test_language_dispatch import NODES, PYTHONS, offline_validator

pytestmark = pytest.mark.unit

WHEN = datetime(2026, 11, 1, tzinfo=UTC)
PACKAGE = json.dumps(
    {"name": "p", "version": "1.0.0", "scripts": {"test": "mocha"},
     "devDependencies": {"mocha": "^10"}}
)  # fmt: skip
LOCK = json.dumps({"lockfileVersion": 3, "packages": {"": {}}})
JS = {"package.json": PACKAGE, "package-lock.json": LOCK, "test/a.test.js": "it('a', () => {})"}
PYTHON = {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n', "tests/test_a.py": ""}


def node_of(recipe: InstallRecipe) -> str | None:
    """The Node major a recipe runs on, as its language reads it (None for Python's)."""
    language = language_named(recipe.language)
    return language.version_of(recipe) if language and language.toolchain == "node" else None


def js_recipes(override: RepositoryOverride | None = None) -> list[InstallRecipe]:
    recipes, facts = infer_recipes(
        tree(JS), repo="o/js", images={"node": NODES}, created_at=WHEN, override=override
    )
    assert facts is not None
    return recipes


def test_the_override_file_takes_a_node_major(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text('repositories:\n  o/js:\n    node: "20"\n    pre_test: ["npm run build"]\n')
    override = load_overrides(path).lookup("O/JS")
    assert override is not None and override.toolchain_versions == {"node": "20"}
    for bad in ("v20", "20.1", "lts", ""):
        with pytest.raises(ValidationError):
            RepositoryOverride(node=bad)
    path.write_text("repositories:\n  o/js:\n    nodejs: '20'\n")  # a typo is an error
    with pytest.raises(ValueError, match="nodejs"):
        load_overrides(path)


def test_inference_tries_only_the_node_the_override_names_if_it_has_an_image() -> None:
    inferred = js_recipes()
    assert [node_of(r) for r in inferred] == ["24", "20", "18"]  # the PR's date: newest first
    (only,) = js_recipes(RepositoryOverride(node="18"))
    assert (node_of(only), interpreter_of(only), only.base_image) == ("18", "node 18", NODES["18"])
    assert only.test_runner == "mocha" and "node:18" in only.sources
    assert js_recipes(RepositoryOverride(node="16")) == []  # no image: no recipe at all
    # the interpreter of the other language is ignored by inference
    assert js_recipes(RepositoryOverride(python="3.11")) == inferred
    assert all(r.python is None for r in js_recipes(RepositoryOverride(python="3.11")))
    python, _ = infer_recipes(
        tree(PYTHON), repo="o/py", images={"python": PYTHONS, "node": NODES},
        override=RepositoryOverride(node="20"),
    )  # fmt: skip
    assert [(r.python, node_of(r), interpreter_of(r)) for r in python] == [
        ("3.11", None, "python 3.11")
    ]


def test_an_overrides_node_without_an_image_says_so_through_the_validator() -> None:
    validator = offline_validator(JS, NODES)
    validator.overrides.repositories["o/r"] = RepositoryOverride(node="16")
    with pytest.raises(ValidationFailed) as failed:
        validator.recipes("o/r", "0" * 40, WHEN)
    assert failed.value.reason == NO_NODE
    assert "has no image" in failed.value.detail and "18, 20, 24" in failed.value.detail


def test_a_js_pre_test_override_is_rebuilt_after_a_source_patch_but_not_uvus_pass_lines() -> None:
    (mocha,) = js_recipes(RepositoryOverride(node="20"))
    built = apply_override(mocha, RepositoryOverride(pre_test=["npm run build"]))
    assert built.pre_test_commands == built.rebuild_commands == ("npm run build",)
    uvu = InstallRecipe(
        "JavaScript", test_runner="uvu", pre_test_commands=(UVU_PASS_LINES,), sources=("node:20",)
    )
    changed = apply_override(uvu, RepositoryOverride(pre_test=[UVU_PASS_LINES, "tsc"]))
    assert changed.rebuild_commands == ("tsc",)
    python = InstallRecipe("Python", python="3.11", rebuild_commands=("make ext",))
    # Python's rebuild steps are its compiled extensions': an override's pre_test is not one
    assert apply_override(python, RepositoryOverride(pre_test=["msgfmt"])).rebuild_commands == (
        "make ext",
    )


def test_the_other_languages_interpreter_is_refused_in_a_submitted_change() -> None:
    assert interpreter_problem("JavaScript", RepositoryOverride(node="20")) is None
    assert interpreter_problem("Python", RepositoryOverride(python="3.11")) is None
    js = interpreter_problem("JavaScript", RepositoryOverride(python="3.11")) or ""
    assert "`python` (3.11) is for Python repositories" in js and "`node`" in js
    py = interpreter_problem("Python", RepositoryOverride(node="20")) or ""
    assert "`node` (20) is for JavaScript / TypeScript repositories" in py

    validator = offline_validator(JS, NODES)

    def submitted(**change: object) -> ValidationFailed:
        with pytest.raises(ValidationFailed) as failed:
            validator.recipe_with(
                "o/r", "0" * 40, tree(JS), WHEN, RepositoryOverride(**change), "agent"
            )
        return failed.value

    assert submitted(python="3.11").reason == WRONG_INTERPRETER
    unbuilt = submitted(node="16")
    assert unbuilt.reason == NO_NODE and unbuilt.detail == "no image for node 16; built: 18, 20, 24"
    recipe = validator.recipe_with(
        "o/r", "0" * 40, tree(JS), WHEN, RepositoryOverride(node="18", test_runner="mocha"), "agent"
    )
    assert (node_of(recipe), recipe.base_image) == ("18", NODES["18"])
    assert recipe.sources[-1] == "agent" and recipe.origin.change == {"test_runner": "mocha"}

    python = offline_validator(PYTHON, NODES)
    with pytest.raises(ValidationFailed) as failed:
        python.recipe_with("o/py", "0" * 40, tree(PYTHON), WHEN, RepositoryOverride(node="20"), "a")
    assert failed.value.reason == WRONG_INTERPRETER
    with pytest.raises(ValidationFailed) as failed:
        python.recipe_with(
            "o/py", "0" * 40, tree(PYTHON), WHEN, RepositoryOverride(python="3.9"), "a"
        )
    assert failed.value.reason == NO_PYTHON


def test_the_memory_keeps_a_js_recipes_node_major_as_a_python_recipes_python() -> None:
    (agent,) = js_recipes(RepositoryOverride(node="20", pre_test=["npm run build"]))
    # its origin as remembered_recipes makes it: the change, the interpreter in it too
    origin = RecipeOrigin("agent", {"pre_test": ["npm run build"], "node": "20"})
    agent = dataclasses.replace(agent, origin=origin)
    entry = remembered_entry(
        agent, tree(JS), repo="o/js", instance_id="o__js-1", base_commit="c" * 40, tests=2,
        pipeline_version=1,
    )  # fmt: skip
    assert (entry.version("node"), entry.version("python"), entry.pre_test) == (
        "20",
        None,
        ["npm run build"],
    )
    assert RememberedRecipe.from_json(entry.to_json()) == entry
    change = as_override(entry)
    assert (change.version("node"), change.version("python"), change.pre_test) == (
        "20",
        None,
        ["npm run build"],
    )
    assert not is_change(RepositoryOverride(node="20")) and is_change(change)
    # made again by inference at a later commit: that Node major alone
    (again,) = js_recipes(change)
    assert (node_of(again), again.pre_test_commands) == ("20", ("npm run build",))
    # the user's override file wins, field by field, its node included
    user = RepositoryOverride(node="24")
    assert layered(change, user).version("node") == "24"  # type: ignore[union-attr]
    assert layered(change, user).pre_test == ["npm run build"]  # type: ignore[union-attr]
    assert layered(change, RepositoryOverride(install=["npm ci"])).version("node") == "20"  # type: ignore[union-attr]
    assert "node 20" in summary(entry) and "changes: pre_test" in summary(entry)
    # a heuristic Python recipe: its Python, no node
    python = InstallRecipe("Python", python="3.11", sources=("node:20",))
    learned = remembered_entry(
        python, tree(PYTHON), repo="o/py", instance_id="o__py-1", base_commit="c" * 40,
        tests=1, pipeline_version=1,
    )  # fmt: skip
    assert (learned.version("python"), learned.version("node")) == ("3.11", None)
    assert "python 3.11" in summary(learned)


def test_a_js_trees_fingerprint_follows_its_package_files_and_lockfile() -> None:
    same = dependency_fingerprint(tree(JS))
    assert dependency_fingerprint(tree(JS | {"src/a.js": "x"})) == same
    assert dependency_fingerprint(tree(JS | {"test/b.test.js": "it('b')"})) == same
    for changed in (
        {"package.json": PACKAGE.replace("^10", "^11")},
        {"package-lock.json": LOCK.replace("3", "2")},
        {".nvmrc": "20\n"},
        {"packages/a/package.json": "{}"},
    ):
        assert dependency_fingerprint(tree(JS | changed)) != same, changed
    assert dependency_fingerprint(tree(JS | {"node_modules/x/package.json": "{}"})) == same
    # a Python project's fingerprint is its Python files' alone, a package.json or not
    python = dependency_fingerprint(tree(PYTHON))
    assert dependency_fingerprint(tree(PYTHON | {"package.json": PACKAGE})) == python
