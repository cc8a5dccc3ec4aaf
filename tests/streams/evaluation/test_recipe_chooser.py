"""The recipe chooser alone (``streams.evaluation.recipe_chooser``), without Docker or a clone:
trees in memory, an engine that has some images; the recipes it gives and in which order, the
rejections; and the ``Validator`` façade's delegation to it."""

from __future__ import annotations

import io
import json
import logging
import tarfile
from datetime import UTC, datetime
from typing import Any

import docker.errors
import pytest

from schemas import RememberedRecipe
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.reasons import UNSUPPORTED, ValidationFailed
from streams.evaluation.recipe_chooser import RecipeChooser, own_sources, with_missing_submodules
from streams.evaluation.recipes.languages.javascript.language import NO_NODE
from streams.evaluation.recipes.languages.python.language import NO_PYTHON
from streams.evaluation.recipes.memory import RecipeTable, dependency_fingerprint
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import WRONG_INTERPRETER, RepositoryOverride
from streams.evaluation.validator import Validator

pytestmark = pytest.mark.unit

COMMIT = "0" * 40
PYTHONS = {"3.10": "b:bullseye", "3.11": "b:bookworm", "3.12": "b:trixie"}
NODES = {"18": "n:bookworm", "20": "n:trixie"}
BUILT = {"b:bookworm", "b:trixie", "n:trixie"}  # no 3.10, no Node 18
PYTHON_TREE = {
    "pyproject.toml": '[project]\nname = "p"\nversion = "1"\nrequires-python = ">=3.10"\n',
    "tests/test_a.py": "def test_a():\n    pass\n",
}
JS_TREE = {
    "package.json": json.dumps(
        {"name": "p", "version": "1.0.0", "scripts": {"test": "vitest"}, "devDependencies": {}}
    ),
    "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {"": {}}}),
}


def archive(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Clones:
    """A ``RepoCache``'s face to the chooser: one repository's files, at any commit."""

    def __init__(self, files: dict[str, str], problems: dict[str, str] | None = None):
        self.files = files
        self.problems = dict(problems or {})
        self.ensured: list[tuple[str, str]] = []

    def ensure(self, repo: str, commit: str) -> None:
        self.ensured.append((repo, commit))

    def archive_with_submodules(self, repo: str, commit: str) -> tuple[bytes, dict[str, str]]:
        return archive(self.files), self.problems

    def release_tag(self, repo: str, commit: str) -> str | None:
        return None


class Engine:
    """A Docker client's image list: ``images.get`` finds the tags in ``tags``."""

    def __init__(self, tags: set[str]):
        self.images = self
        self.tags = tags
        self.asked: list[str] = []

    def get(self, tag: str) -> str:
        self.asked.append(tag)
        if tag not in self.tags:
            raise docker.errors.ImageNotFound(tag)
        return tag


def chooser(
    files: dict[str, str] = PYTHON_TREE,
    built: set[str] = BUILT,
    memory: RecipeTable | None = None,
    pipeline_version: int = 1,
    **settings: Any,
) -> RecipeChooser:
    engine = Engine(built)
    return RecipeChooser(
        Clones(files),  # type: ignore[arg-type]
        lambda: engine,
        DockerSettings(toolchain_images={"python": PYTHONS, "node": NODES}),
        ValidateSettings(**settings),
        pipeline_version,
        memory=memory,
    )


def remembered(tree: TreeFiles, **fields: Any) -> RememberedRecipe:
    values: dict[str, Any] = {
        "pipeline_version": 1, "repo": "o/r", "fingerprint": dependency_fingerprint(tree),
        "source": "agent", "python": "3.11", "instance_id": "o__r-1", "base_commit": "b" * 40,
        "tests": 3, "verified_at": datetime.now(UTC),
    }  # fmt: skip
    return RememberedRecipe.model_validate(values | fields)


def pythons(recipes: list[InstallRecipe]) -> list[str | None]:
    return [recipe.python for recipe in recipes]


def test_the_tree_is_the_clones_archive_at_the_commit(caplog: pytest.LogCaptureFixture) -> None:
    clones = Clones(PYTHON_TREE, problems={"vendor/x": "submodule vendor/x is not there"})
    found = RecipeChooser(
        clones,  # type: ignore[arg-type]
        lambda: Engine(BUILT),
        DockerSettings(),
        ValidateSettings(),
        1,
    )
    with caplog.at_level(logging.INFO, "swe_stream.validator"):
        tree = found.tree("o/r", COMMIT)
    assert tree.names == sorted(PYTHON_TREE) and clones.ensured == [("o/r", COMMIT)]
    assert "submodule vendor/x is not there" in caplog.text
    assert tree.missing_submodules == {"vendor/x": "submodule vendor/x is not there"}


def test_every_recipe_says_which_submodules_the_tree_lacks() -> None:
    """Whatever the language: each recipe notes the submodules the clone could not give (a
    run without a test result is then ``submodule_missing``), once, not where the language's
    own note names it already."""
    why = "submodule vendor/x (https://example.org/x.git) at 0123456789ab: no such host"
    clones = Clones(JS_TREE, problems={"vendor/x": why})
    found = RecipeChooser(
        clones,  # type: ignore[arg-type]
        lambda: Engine(BUILT),
        DockerSettings(toolchain_images={"python": PYTHONS, "node": NODES}),
        ValidateSettings(),
        1,
    )
    _, recipes = found.recipes("o/r", COMMIT)
    assert recipes and all(recipe.notes.count(why) == 1 for recipe in recipes)
    _, plain = chooser(JS_TREE).recipes("o/r", COMMIT)
    assert all(why not in recipe.notes for recipe in plain)
    own = InstallRecipe(language="Python", notes=("submodule vendor/x (url) is not available",))
    tree = TreeFiles(archive(PYTHON_TREE))
    tree.missing_submodules = {"vendor/x": why}
    assert with_missing_submodules(own, tree) is own


def test_the_interpreter_images_are_those_the_engine_has(caplog: pytest.LogCaptureFixture) -> None:
    assert chooser().toolchain_images("python") == {"3.11": "b:bookworm", "3.12": "b:trixie"}
    assert chooser().toolchain_images("node") == {"20": "n:trixie"}
    with caplog.at_level(logging.WARNING, "swe_stream.validator"):
        assert chooser(built=set()).toolchain_images("python") == {}
    assert "none of the base images" in caplog.text


def test_inferred_recipes_newest_python_first_up_to_the_attempts() -> None:
    tree, recipes = chooser().recipes("o/r", COMMIT)
    assert tree.has("pyproject.toml")
    assert pythons(recipes) == ["3.12", "3.11"]  # 3.10 has no image on the engine
    assert [r.base_image for r in recipes] == ["b:trixie", "b:bookworm"]
    assert all(not r.origin.remembered for r in recipes)
    _, one = chooser(max_python_attempts=1).recipes("o/r", COMMIT)
    assert pythons(one) == ["3.12"]


def test_remembered_recipes_come_before_inferences() -> None:
    tree = TreeFiles(archive(PYTHON_TREE))
    memory = RecipeTable()
    memory.put(remembered(tree, pre_test=["make build"]))
    _, recipes = chooser(memory=memory).recipes("o/r", COMMIT)
    first, *inferred = recipes
    assert first.python == "3.11" and first.pre_test_commands == ("make build",)
    assert first.sources[-1] == "memory:agent"
    assert first.origin.remembered and first.origin.trusted
    assert first.origin.change == {"pre_test": ["make build"]}
    assert pythons(inferred) == ["3.12", "3.11"]
    # written by another pipeline version: used, but verified first
    (again, *_) = chooser(memory=memory, pipeline_version=2).recipes("o/r", COMMIT)[1]
    assert again.origin.remembered and not again.origin.trusted


def test_a_remembered_recipe_on_a_python_not_built_is_skipped() -> None:
    tree = TreeFiles(archive(PYTHON_TREE))
    memory = RecipeTable()
    memory.put(remembered(tree, python="3.10"))
    _, recipes = chooser(memory=memory).recipes("o/r", COMMIT)
    assert pythons(recipes) == ["3.12", "3.11"]
    assert not any(r.origin.remembered for r in recipes)


def test_a_tree_of_no_known_language_is_unsupported() -> None:
    with pytest.raises(ValidationFailed) as failed:
        chooser({"main.go": "package main\n"}).recipes("o/r", COMMIT)
    assert failed.value.reason == UNSUPPORTED


def test_a_javascript_tree_gets_the_node_images_the_engine_has() -> None:
    _, recipes = chooser(JS_TREE).recipes("o/r", COMMIT)
    assert recipes and {r.base_image for r in recipes} == {"n:trixie"}
    assert all(r.test_runner == "vitest" and "node:20" in r.sources for r in recipes)


def test_a_change_over_inference_names_its_source() -> None:
    choose = chooser()
    tree = choose.tree("o/r", COMMIT)
    change = RepositoryOverride(python="3.11", pre_test=["make build"])
    recipe = choose.recipe_with("o/r", COMMIT, tree, None, change, "agent")
    assert recipe.python == "3.11" and recipe.pre_test_commands == ("make build",)
    assert recipe.sources[-1] == "agent" and "override" not in recipe.sources
    # the interpreter is the recipe's own, not part of the change remembered
    assert recipe.origin.source == "agent" and recipe.origin.change == {"pre_test": ["make build"]}


@pytest.mark.parametrize(
    ("files", "change", "reason"),
    [
        (PYTHON_TREE, RepositoryOverride(python="3.10"), NO_PYTHON),  # no image built
        (JS_TREE, RepositoryOverride(node="18"), NO_NODE),
        (PYTHON_TREE, RepositoryOverride(node="20"), WRONG_INTERPRETER),
    ],
)
def test_a_change_the_engine_cannot_run_is_refused(
    files: dict[str, str], change: RepositoryOverride, reason: str
) -> None:
    choose = chooser(files)
    tree = choose.tree("o/r", COMMIT)
    with pytest.raises(ValidationFailed) as failed:
        choose.recipe_with("o/r", COMMIT, tree, None, change, "agent")
    assert failed.value.reason == reason


def test_override_is_a_source_only_when_the_users_file_took_part() -> None:
    recipe = InstallRecipe(language="Python", sources=("build:setup.py", "override"))
    assert own_sources(recipe, None) == ("build:setup.py",)
    user = RepositoryOverride(pre_test=["make"])
    assert own_sources(recipe, user) == ("build:setup.py", "override")


# -- through the Validator façade ------------------------------------------------------------


def offline_validator(engine: Engine) -> Validator:
    return Validator(
        Clones(PYTHON_TREE),  # type: ignore[arg-type]
        lambda: engine,
        DockerSettings(toolchain_images={"python": PYTHONS, "node": NODES}),
        ValidateSettings(),
        pipeline_version=1,
    )


def test_the_validator_delegates_to_its_chooser() -> None:
    engine = Engine(BUILT)
    validator = offline_validator(engine)
    assert validator._client is None  # the client is made when a part first needs it
    _, recipes = validator.recipes("o/r", COMMIT)
    assert pythons(recipes) == ["3.12", "3.11"] and validator._client is engine
    assert validator.toolchain_images("python") == validator.chooser.toolchain_images("python")
    assert validator.limits == validator.prover.limits


def test_what_is_set_on_the_validator_reaches_its_parts() -> None:
    validator = offline_validator(Engine(BUILT))
    validator.pipeline_version = 2  # a replay under another version
    assert validator.chooser.pipeline_version == validator.prover.pipeline_version == 2
    given = TreeFiles(archive(JS_TREE))
    validator.tree = lambda repo, commit: given  # type: ignore[assignment]
    images = {
        "python": dict(PYTHONS),
        "node": {"18": "n:bookworm"},
        "go": {},
        "rust": {},
        "java": {},
        "gcc": {},
    }
    validator.toolchain_images = lambda toolchain: images[toolchain]  # type: ignore[assignment]
    tree, recipes = validator.recipes("o/r", COMMIT)
    assert tree is given and {r.base_image for r in recipes} == {"n:bookworm"}
    assert validator.docker is validator.provisioner.docker is validator.prover.docker
