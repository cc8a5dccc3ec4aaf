"""A language is a plugin: a toy "make test" language defined only in the tests
(``tests/fakes/make_language.py``) is registered the way a third-party distribution registers
one, by an entry point of the group ``swe_stream.languages`` in its installed metadata, and a
repository of it validates end to end (real git, real Docker): no edit elsewhere."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agents.enrich import known
from agents.extract import Extract
from agents.setup_agent import SUBMIT
from agents.validate import ValidateStage
from schemas import PatchSet, RememberedRecipe, ValidatedTask
from streams.cli.recipes import summary
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation import log_parsers
from streams.evaluation.images import build_toolchain_images, split_tag
from streams.evaluation.recipes import languages as registry
from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.memory import (
    RecipeTable,
    as_override,
    dependency_files,
    interpreter_fields,
    remembered_entry,
)
from streams.evaluation.recipes.overrides import (
    RepositoryOverride,
    interpreter_problem,
    load_overrides,
)
from streams.evaluation.validator import Validator
from streams.offline.local_repo import make_pull_request_repo
from streams.pipeline.recipe_memory import RecipeBook
from tests.agents.repo_tasks import classified_for
from tests.streams.evaluation.test_js_recipes import tree

MAKEFILE = """\
test:
\t@status=0; for t in $(or $(TESTS),$(wildcard tests/*.sh)); do \\
\t  echo "RUN $$t"; if sh $$t; then echo "PASS $$t"; else echo "FAIL $$t"; status=1; fi; \\
\tdone; exit $$status
"""
CALC = "add() { echo $(($1 - $2)); }\nmul() { echo $(($1 * $2)); }\n"
FIXED = "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n"
MUL_TEST = '. ./src/calc.sh\n[ "$(mul 2 3)" = 6 ]\n'
ADD_TEST = '. ./src/calc.sh\n[ "$(add 2 3)" = 5 ]\n'
BASE = {"Makefile": MAKEFILE, "src/calc.sh": CALC, "tests/test_mul.sh": MUL_TEST, "README": "x\n"}


def install_plugin(site: Path) -> None:
    """What ``pip install`` of a distribution declaring the toy language leaves behind: its
    metadata, with the entry point, on ``sys.path``."""
    info = site / "swe_stream_make_language-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: swe-stream-make-language\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[swe_stream.languages]\nmake = tests.fakes.make_language:MakeLanguage\n"
    )


@pytest.fixture
def make_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    install_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    registry.reload()
    yield
    monkeypatch.undo()
    importlib.invalidate_caches()
    registry.reload()


@pytest.mark.unit
def test_without_the_plugin_the_toy_repository_is_no_language() -> None:
    registry.reload()
    assert registry.language_of(tree(BASE)) is None
    assert "make-lines" not in log_parsers.LOG_PARSERS


@pytest.mark.unit
def test_the_entry_point_registers_the_language_everywhere(make_plugin: None) -> None:
    make = registry.language_named("Make")
    assert make is not None and make in registry.languages()
    toy = tree(BASE)
    assert registry.language_of(toy) is make
    # a Python project with a Makefile stays Python's: built-ins come first
    assert registry.language_of(tree({**BASE, "setup.py": ""})).name == "Python"  # type: ignore[union-attr]
    recipes, facts = infer_recipes(toy, repo="o/calc")
    assert [r.test_runner for r in recipes] == ["make-lines"]
    assert facts == {"tests": ["tests/test_mul.sh"]}
    assert log_parsers.log_parser("make-lines").parse("RUN tests/a.sh\nPASS tests/a.sh\n") == {
        "tests/a.sh": "passed"
    }
    assert log_parsers.file_of("tests/a.sh", "Make") == "tests/a.sh"
    assert log_parsers.check_command("make test", "make-lines", "tests/a.sh") == (
        "make test tests/a.sh"
    )
    assert dependency_files(toy) == ["Makefile"]
    assert "Make" in known()  # enrich keeps its repositories' PRs by default


@pytest.mark.unit
def test_a_plugins_versioned_toolchain_is_configured_overridden_and_remembered(
    make_plugin: None, tmp_path: Path
) -> None:
    toy = tree(BASE)
    # its images: its own by default, the settings' under its toolchain's name (both spellings)
    own = registry.configured_images()["make"]
    assert own == {"4.3": "swe-stream-test/make:bookworm", "4.4": "swe-stream-test/make:trixie"}
    for docker in (
        DockerSettings(make_images={"4.3": "mk:1"}),  # type: ignore[call-arg]
        DockerSettings(toolchain_images={"make": {"4.3": "mk:1"}}),
    ):
        assert registry.configured_images(docker.toolchain_images)["make"] == {"4.3": "mk:1"}
    images = {"make": {"4.3": "mk:1", "4.4": "mk:2"}}
    recipes, _ = infer_recipes(toy, repo="o/calc", images=images)
    assert [(r.base_image, r.sources[-1]) for r in recipes] == [
        ("mk:2", "make:4.4"),
        ("mk:1", "make:4.3"),
    ]
    # an override names its version under the toolchain's name, checked as the plugin says
    path = tmp_path / "overrides.yaml"
    path.write_text('repositories:\n  o/calc:\n    make: "4.3"\n')
    override = load_overrides(path).lookup("o/calc")
    (pinned,) = infer_recipes(toy, repo="o/calc", images=images, override=override)[0]
    assert pinned.base_image == "mk:1" and pinned.sources[-1] == "make:4.3"
    assert infer_recipes(toy, repo="o/calc", images={"make": {}}, override=override)[0] == []
    with pytest.raises(ValidationError, match="no Make toolchain version"):
        RepositoryOverride(make="5")  # type: ignore[call-arg]
    assert interpreter_problem("Python", RepositoryOverride(make="4.3")) is not None  # type: ignore[call-arg]
    # what validation records and remembers: the version under the toolchain's name
    entry = remembered_entry(
        recipes[0], toy, repo="o/calc", instance_id="o__calc-1", base_commit="c" * 40, tests=2,
        pipeline_version=1,
    )  # fmt: skip
    assert entry.toolchain_versions == {"make": "4.4"}
    assert RememberedRecipe.from_json(entry.to_json()).version("make") == "4.4"
    assert " make 4.4 " in summary(entry)
    assert as_override(entry).version("make") == "4.4"
    assert interpreter_fields(recipes[0]) == {"make": "4.4"}
    # the setup agent's submission names its version too
    submission = SUBMIT.schema()["function"]["parameters"]["properties"]
    assert submission["make"]["pattern"] == r"^4\.\d+$" and "python" in submission


@pytest.mark.unit
def test_a_plugin_that_does_not_load_is_left_out_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    info = tmp_path / "broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[swe_stream.languages]\nbroken = no_such_module:X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        names = [language.name for language in registry.reload()]
    finally:
        monkeypatch.undo()
        registry.reload()
    assert names[:6] == ["Go", "Rust", "Java", "C++", "Python", "JavaScript"]
    assert "broken" not in names
    assert "language plugin broken (no_such_module:X) does not load" in caplog.text


@pytest.mark.docker
async def test_a_toy_language_repository_validates_end_to_end(
    make_plugin: None, tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    pr = make_pull_request_repo(
        tmp_path / "git",
        repo="swe-stream-test/calc-sh",
        base_files=BASE,
        # the PR's test files run: the new one, and one it touches that passed before
        pr_files={
            "src/calc.sh": FIXED,
            "tests/test_add.sh": ADD_TEST,
            "tests/test_mul.sh": "# mul is multiplication\n" + MUL_TEST,
        },
    )
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(classified_for(pr))
    (patches,) = outcome.outputs
    assert isinstance(patches, PatchSet)
    # its toolchain's image, built as `swe-stream images base --toolchains` builds a plugin's
    make = registry.language_named("Make")
    assert make is not None and make.toolchain_images is not None
    MAKE_IMAGES = make.toolchain_images
    prefix, suite = split_tag(base_image)
    (built,) = build_toolchain_images(
        MAKE_IMAGES, {suite: MAKE_IMAGES.by_suite[suite]}, base_prefix=prefix, client=docker_client
    )
    # built again only when its definition changes (an upgrade's new steps or variables)
    one_suite = {suite: MAKE_IMAGES.by_suite[suite]}
    changed = dataclasses.replace(MAKE_IMAGES, note="a definition of another version")
    for images, expected in ((MAKE_IMAGES, False), (changed, True), (MAKE_IMAGES, True)):
        (again,) = build_toolchain_images(
            images, one_suite, base_prefix=prefix, client=docker_client
        )
        assert (again.tag, again.built) == (built.tag, expected)
    version = MAKE_IMAGES.by_suite[suite]
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {}, "node": {}},
        make_images={version: built.tag},  # its setting, under its toolchain's name
        cache_level="env",
    )  # type: ignore[call-arg]
    settings = ValidateSettings(runs=2, test_timeout_seconds=120)
    table = RecipeTable()
    validator = Validator(repos, lambda: docker_client, docker, settings, 1, memory=table)
    book = RecipeBook(table)
    book.mark_restored()  # nothing to restore: no topic
    stage = ValidateStage(validator, recipes=book)
    validated = await stage(patches)
    assert validated.status == "accepted", (validated.reason, validated.detail)
    (task,) = validated.outputs
    assert isinstance(task, ValidatedTask)
    assert task.FAIL_TO_PASS == ["tests/test_add.sh"]
    assert task.PASS_TO_PASS == ["tests/test_mul.sh"]
    assert task.install_config.language == "Make"
    assert task.install_config.test_runner == "make-lines"
    # it ran on its toolchain's image, said under the toolchain's name, and is remembered so
    assert task.install_config.base_image == built.tag
    assert task.install_config.toolchain_versions == {"make": version}
    (entry,) = table.all()
    assert entry.toolchain_versions == {"make": version} and entry.repo == pr.repo
    # its checks are the runner's own command with the test appended
    assert any(check.endswith("'tests/test_add.sh'") or check.endswith("tests/test_add.sh")
               for check in task.checks)  # fmt: skip
    assert "tests.fakes.make_language" in sys.modules
