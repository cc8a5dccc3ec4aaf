"""The recipe memory's decisions, without Docker: fingerprints, the table, what is tried first,
what verification accepts, and the scripted agent's answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from agents.setup_agent import SubmitRecipeArgs, _Session, documents, unavailable
from schemas import RememberedRecipe
from streams.clients.llm import LLMClient
from streams.core.settings import LLMSettings, SetupAgentSettings
from streams.evaluation.grading import recipe_problem
from streams.evaluation.recipes.memory import (
    RecipeTable,
    as_override,
    dependency_fingerprint,
    layered,
    remembered_entry,
    trusted,
)
from streams.evaluation.recipes.model import InstallRecipe, RecipeOrigin
from streams.evaluation.recipes.overrides import RepositoryOverride, apply_override
from streams.evaluation.validator import task_recipe_change
from streams.offline.scripted_agent import AgentScript
from tests.streams.evaluation.test_recipes import tree

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def entry(repo: str = "o/r", fingerprint: str = "a" * 16, **fields: object) -> RememberedRecipe:
    values: dict[str, object] = {
        "pipeline_version": 1, "repo": repo, "fingerprint": fingerprint, "source": "heuristic",
        "python": "3.11", "instance_id": "o__r-1", "base_commit": "b" * 40, "tests": 3,
        "verified_at": NOW,
    }  # fmt: skip
    return RememberedRecipe.model_validate(values | fields)


def test_the_fingerprint_follows_dependency_files_not_sources() -> None:
    base = {"pyproject.toml": "[project]\nname='x'\n", "x/core.py": "A = 1\n"}
    same = dependency_fingerprint(tree(base))
    assert dependency_fingerprint(tree(base | {"x/core.py": "A = 2\n"})) == same
    assert dependency_fingerprint(tree(base | {"tests/test_x.py": "def test(): pass\n"})) == same
    for changed in (
        {"pyproject.toml": "[project]\nname='y'\n"},
        {"requirements/test.txt": "pytest\n"},
        {"tox.ini": "[tox]\n"},
    ):
        assert dependency_fingerprint(tree(base | changed)) != same, changed
    assert len(same) == 16 and int(same, 16) >= 0


def test_the_table_keeps_the_latest_per_key_and_offers_the_own_fingerprint_first(
    tmp_path: Path,
) -> None:
    table = RecipeTable(tmp_path / "memory" / "recipes.sqlite")
    old = entry(fingerprint="1" * 16, verified_at=NOW - timedelta(days=2))
    newer = entry(fingerprint="2" * 16, verified_at=NOW - timedelta(days=1), python="3.9")
    own = entry(fingerprint="3" * 16, verified_at=NOW - timedelta(days=3))
    table.load([old, newer, own, entry(repo="other/r")])
    assert [e.fingerprint for e in table.candidates("O/R", "3" * 16)] == ["3" * 16, "2" * 16]
    assert [e.fingerprint for e in table.candidates("o/r", "9" * 16)] == ["2" * 16]
    assert table.candidates("nobody/r", "3" * 16) == []
    # the topic's older entry does not undo what was learned (or edited) here since
    table.put(entry(fingerprint="3" * 16, source="edited", verified_at=NOW))
    table.load([entry(fingerprint="3" * 16, source="agent", verified_at=NOW - timedelta(days=9))])
    assert table.get("o/r", "3" * 16).source == "edited"  # type: ignore[union-attr]
    table.put(entry(fingerprint="3" * 16, deleted=True))
    assert table.get("o/r", "3" * 16) is None
    table.close()
    reopened = RecipeTable(tmp_path / "memory" / "recipes.sqlite")  # a restart
    assert sorted(e.fingerprint for e in reopened.all()) == ["1" * 16, "2" * 16, "a" * 16]


def test_an_entry_is_the_change_it_makes_over_inference() -> None:
    agent = entry(source="agent", system_packages=["gettext"], pre_test=["make -C locale"])
    change = as_override(agent)
    assert change.version("python") == "3.11" and change.system_packages == ["gettext"]
    assert change.install is None and change.test_command is None
    user = RepositoryOverride(pre_test=["make translations"])
    assert layered(change, user).pre_test == ["make translations"]  # type: ignore[union-attr]
    assert layered(change, user).system_packages == ["gettext"]  # type: ignore[union-attr]
    assert layered(None, user) is user and layered(change, None) is change
    inferred = InstallRecipe("python", test_command="pytest", pre_test_commands=("x",))
    applied = apply_override(inferred, change)
    assert applied.pre_test_commands == ("make -C locale",) and applied.test_command == "pytest"
    assert applied.origin.source == "override" and applied == apply_override(inferred, change)
    # what a validation remembers of it: the Python and the change, from the recipe's origin
    made = InstallRecipe(
        "Python", python="3.9",
        origin=RecipeOrigin("agent", {"system_packages": ["gettext"], "test_runner": "pytest"}),
    )  # fmt: skip
    learned = remembered_entry(
        made, tree({"setup.py": "x"}), repo="o/r", instance_id="o__r-2", base_commit="c" * 40,
        tests=5, pipeline_version=2,
    )  # fmt: skip
    assert (learned.source, learned.version("python"), learned.system_packages) == (
        "agent",
        "3.9",
        ["gettext"],
    )
    assert learned.test_runner == "pytest" and learned.env is None and learned.tests == 5
    assert trusted(learned, 2) and not trusted(learned, 3)
    with pytest.raises(ValidationError, match="no log parser for 'karma'"):
        RepositoryOverride(test_runner="karma")


def test_verification_wants_a_passing_test() -> None:
    assert recipe_problem({"t::a": "passed", "t::b": "failed"}) is None
    assert "did not run" in (recipe_problem({}) or "")
    assert recipe_problem({"t::a": "skipped", "t::b": "skipped"}) == "all 2 tests skipped"
    assert (
        recipe_problem({"t::a": "error", "t::b": "failed"}) == "no test passed (1 error, 1 failed)"
    )


def test_the_agent_is_off_without_a_key_or_a_budget() -> None:
    keyed = LLMClient(LLMSettings(api_key=SecretStr("sk-or-test-setup")))
    keyless = LLMClient(LLMSettings(api_key=None))
    assert unavailable(SetupAgentSettings(), keyed) is None
    assert "no LLM API key" in (unavailable(SetupAgentSettings(), keyless) or "")
    assert "setup_agent.mode" in (unavailable(SetupAgentSettings(mode="off"), keyed) or "")
    zero = unavailable(SetupAgentSettings(max_turns=0, max_seconds=0), keyed) or ""
    assert "max_turns, max_seconds is 0" in zero


def test_a_command_that_failed_in_exploration_is_refused() -> None:
    session = _Session.__new__(_Session)
    session.exit_codes = {"make locale": 2, "pip install -e .": 0}
    refused = session._refused(
        SubmitRecipeArgs(pre_test=["make locale "], install=["pip install -e ."])
    )
    assert refused is not None and "`make locale ` (exit code 2)" in refused
    assert "pip install" not in refused
    assert session._refused(SubmitRecipeArgs(pre_test=["never ran"])) is None
    with pytest.raises(ValidationError):
        SubmitRecipeArgs(python="2.7")


def test_the_first_message_shows_what_a_person_reads_first() -> None:
    files = {
        "README.rst": "Run make before the tests.\n",
        ".github/workflows/ci.yml": "jobs: {}\n",
        "tox.ini": "[testenv]\ncommands = pytest\n",
        "src/x.py": "secret_sauce = 1\n",
    }
    shown = documents(tree(files))
    assert "--- README.rst\nRun make" in shown and "--- .github/workflows/ci.yml" in shown
    assert "--- tox.ini" in shown and "secret_sauce" not in shown


def test_the_scripted_agent_answers_by_turn_and_repository(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(
        "conversations:\n"
        "  - repository: o/r\n    purpose: setup\n    turns:\n"
        "      - tool: shell\n        arguments: {command: ls}\n"
        "      - tool: submit_recipe\n        arguments: {pre_test: [make]}\n"
    )
    script = AgentScript.load(path)
    tools = [{"type": "function", "function": {"name": "submit_recipe"}}]
    first = {"messages": [{"role": "user", "content": "Repository: O/R (pull request #1)"}]}
    reply = script.reply(first | {"tools": tools})
    call = reply["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "shell" and call["arguments"] == '{"command": "ls"}'
    later = {
        "messages": [*first["messages"], {"role": "assistant"}, {"role": "tool"}],
        "tools": tools,
    }
    call = script.reply(later)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "submit_recipe"
    done = {"messages": [*later["messages"], {"role": "assistant"}], "tools": tools}
    assert "tool_calls" not in script.reply(done)["choices"][0]["message"]
    other = script.reply({"messages": [{"role": "user", "content": "Repository: x/y"}]})
    assert "tool_calls" not in other["choices"][0]["message"]
    (tmp_path / "bad.yaml").write_text("conversations:\n  - turns: []\n")
    with pytest.raises(ValueError, match="conversation 1"):
        AgentScript.load(tmp_path / "bad.yaml")


def test_an_exported_task_carries_its_recipe() -> None:
    config = {
        "language": "python", "python": "3.11", "system_packages": ["gettext"],
        "env_commands": ["uv pip install -r /opt/swe-env/r.txt"],
        "install_commands": ["uv pip install -e ."],
        "pre_test_commands": ["make -C locale"], "test_command": "python -m pytest -rA",
        "test_runner": "pytest", "environment": {}, "recipe": ["agent"],
    }  # fmt: skip
    change = task_recipe_change(config)
    assert change is not None and change.system_packages == ["gettext"]
    assert change.pre_test == ["make -C locale"] and change.environment is None
    applied = apply_override(InstallRecipe("python", env_commands=("x",)), change)
    assert applied.env_commands == ("uv pip install -r /opt/swe-env/r.txt",)
    assert task_recipe_change({}) is None  # an old task: inferred again
    assert task_recipe_change(config | {"python": "2.7"}) is None  # unusable: inferred again
    assert change.version("node") is None
    # a JS task builds on the Node major it was validated on (its recipe's node:N source)
    js = config | {"language": "JavaScript", "python": None, "test_runner": "mocha",
                   "recipe": ["package-manager:npm", "node:20", "runner:mocha:test"]}  # fmt: skip
    js_change = task_recipe_change(js)
    assert js_change is not None and (js_change.version("node"), js_change.version("python")) == (
        "20",
        None,
    )
