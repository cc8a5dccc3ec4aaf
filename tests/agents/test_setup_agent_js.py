"""The setup agent and the test generator on JavaScript / TypeScript: the prompts of the
repository's language (without Docker), and scripted conversations (a local chat-completions
look-alike) against repositories the tests make with real git, in real Docker on the Node
images (``swe-stream images base --node``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.setup_agent import SetupAgent, SetupFailure, documents, setup_messages, unavailable
from agents.testgen import (
    AgenticTestGenerator,
    Rejected,
    SubmitArgs,
    check_claims,
    submit_tool,
)
from agents.testgen import testgen_messages as generation_messages  # not a test: no test_
from agents.validate import ValidateStage
from schemas import PatchSet, ValidatedTask, ValidationReport
from streams.clients.git import RepoCache
from streams.clients.llm import LLMClient
from streams.core.settings import (
    DockerSettings,
    ExtractSettings,
    SetupAgentSettings,
    TestgenSettings,
    ValidateSettings,
)
from streams.evaluation.log_parsers import RUNNER_COMMANDS
from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.memory import RecipeTable
from streams.evaluation.recipes.model import InstallRecipe
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Proof, Validator
from streams.pipeline.recipe_memory import RecipeBook
from streams.pipeline.sinks import MemorySink
from tests.agents.js_setup_repos import (
    BUILD_STEP,
    FAIL_TO_PASS,
    PASS_TO_PASS,
    REPO,
    UNITS_JS,
    units_patches,
)
from tests.agents.repo_tasks import classified_for
from tests.agents.setup_repos import second_pr
from tests.agents.test_setup_agent import llm_settings, sample, tool_result
from tests.fakes.llm_server import FakeLLM
from tests.git_repos import make_pull_request_repo
from tests.streams.evaluation.test_js_recipes import tree

NODE_TEST = RUNNER_COMMANDS["node"].command  # node --test with swe-stream's reporter
PYTHONS = ["3.11", "3.13"]
NODES = ["18", "20", "24"]


def patch_set(repo: str, test_files: list[str]) -> PatchSet:
    return PatchSet(
        pipeline_version=1, repo=repo, number=7, instance_id=f"{repo.replace('/', '__')}-7",
        base_commit="a" * 40, patch="diff --git a/src/x b/src/x\n", test_patch="",
        problem_statement="toKm is off", created_at=datetime(2026, 11, 1, tzinfo=UTC),
        test_files=test_files, source_files=["src/units.js"], classification="easy", score=0.2,
    )  # fmt: skip


JS_TREE = {
    "README.md": "# units\n\nRun `make test`.\n",
    "package.json": '{"name": "units", "scripts": {"test": "make test"}}\n',
    ".nvmrc": "20\n",
    "Makefile": "test:\n\tnode --test test/\n",
    "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {"": {"x": "y" * 3000}}}),
    ".github/workflows/ci.yml": "jobs: {test: {runs-on: ubuntu-latest}}\n",
    "tox.ini": "[testenv]\ncommands = pytest\n",
    "src/units.js": "module.exports = { secret_sauce: 1 };\n",
}
JS_RECIPE = InstallRecipe(
    "JavaScript", install_commands=("npm ci",), test_command="npm test --",
    test_runner="unknown", sources=("package-manager:npm", "node:24"),
)  # fmt: skip
PY_RECIPE = InstallRecipe(
    "Python", install_commands=("uv pip install -e .",), test_command="python -m pytest -rA",
    test_runner="pytest", python="3.11",
)  # fmt: skip


@pytest.mark.unit
def test_the_setup_prompts_are_the_repositorys_languages() -> None:
    js = SetupFailure(
        patch_set(REPO, ["test/units.test.js"]), tree(JS_TREE), JS_RECIPE, "no_test_runner",
        "JavaScript: no test runner swe-stream reads ('npm test --')",
    )  # fmt: skip
    system, user = (m["content"] for m in setup_messages(js, {"python": PYTHONS, "node": NODES}, 4))
    assert "JavaScript / TypeScript repository" in system and "/testbed/node_modules" in system
    assert "/opt/venv" not in system and "`python`: one of" not in system
    assert "`node`: the Node major, one of 18, 20, 24" in system
    assert "one of ava, jest, mocha, node, tap, uvu, vitest" in system
    assert f"  node: `{NODE_TEST}`" in system and "  jest: `npx jest --ci --verbose" in system
    assert "on Node 24" in system and "(4 submissions in all)" in system
    assert "The recipe that was tried (node 24):" in user and "(python" not in user
    assert "test runner: unknown" in user and "no_test_runner" in user
    # what a person reads first: package.json, .nvmrc, the Makefile, CI; a big lockfile by name
    assert "--- package.json\n" in user and "--- .nvmrc\n20" in user
    assert "--- Makefile\ntest:" in user and "--- .github/workflows/ci.yml" in user
    assert "--- package-lock.json: the lockfile (over 2000 bytes)" in user
    assert "yyyy" not in user and "--- tox.ini" not in user and "secret_sauce" not in user
    small = documents(
        tree(JS_TREE | {"yarn.lock": "# yarn lockfile v1\n"}), language_named("JavaScript")
    )
    assert "--- yarn.lock\n# yarn lockfile v1" in small

    python = SetupFailure(
        patch_set("o/py", ["tests/test_a.py"]), tree(JS_TREE), PY_RECIPE, "tests_skipped", "log"
    )
    system, user = (
        m["content"] for m in setup_messages(python, {"python": PYTHONS, "node": NODES}, 4)
    )
    assert system.startswith("You set up a Python repository's test environment")
    assert "/opt/venv" in system and "`python`: one of 3.11, 3.13." in system
    assert "node_modules" not in system and "Node major" not in system
    assert "The recipe that was tried (python 3.11):" in user
    assert "--- tox.ini" in user and "--- package.json" not in user and "--- .nvmrc" not in user


@pytest.mark.unit
def test_the_testgen_prompt_is_the_repositorys_language() -> None:
    recipe = InstallRecipe(
        "JavaScript", test_command="PATH=... mocha", test_runner="mocha", sources=("node:20",)
    )
    system, user = (
        m["content"] for m in generation_messages(patch_set(REPO, []), recipe, tree(JS_TREE))
    )
    assert "JavaScript / TypeScript repository" in system and "pytest" not in system
    assert "test runner, mocha, in the style of its own tests" in system
    assert "`test/math.test.js > add adds two numbers`" in system  # mocha's full title
    assert "Test framework: JavaScript, mocha (node 20)" in system
    assert "Test command (run in /testbed): PATH=... mocha <test files>" in system
    assert "toKm is off" in user and "package.json" in user
    jest = InstallRecipe("TypeScript", test_runner="jest", sources=("node:20",))
    (jest_system, _) = (
        m["content"] for m in generation_messages(patch_set(REPO, []), jest, tree({}))
    )
    assert "`test/math.test.js > add > adds two numbers` for it('adds two numbers')" in jest_system
    (py_system, _) = (m["content"] for m in generation_messages(patch_set("o/py", []), PY_RECIPE,
                                                              tree({})))  # fmt: skip
    assert py_system.startswith("You write a regression test for a bug fix in a Python")
    assert "pytest ids" in py_system and "Test framework: Python, pytest" in py_system
    assert " > " not in py_system

    # the tool's schema says which ids, as the language spells them; a rejection shows the
    # model the ids the run saw
    javascript, python_language = language_named("JavaScript"), language_named("Python")
    assert javascript is not None and python_language is not None
    js_tool = submit_tool(javascript.test_id_shape("jest"))
    py_tool = submit_tool(python_language.test_id_shape("pytest"))
    js_ids = js_tool.schema()["function"]["parameters"]["properties"]["fail_to_pass"]
    py_ids = py_tool.schema()["function"]["parameters"]["properties"]["fail_to_pass"]
    assert "then the titles of the describe blocks" in js_ids["description"]
    assert "a pytest node id (path::Class::test_name)" in py_ids["description"]
    report = ValidationReport(
        image="x", runs=2, duration_seconds=1,
        before={"t.test.js > a > b": "failed"}, after={"t.test.js > a > b": "passed"},
    )  # fmt: skip
    proof = Proof(report, ["t.test.js > a > b"], [])
    wrong = SubmitArgs(files={"t.test.js": "x"}, fail_to_pass=["t.test.js > b"])
    with pytest.raises(Rejected, match=r"The run's test ids: t\.test\.js > a > b$"):
        check_claims(proof, wrong)
    claimed_and_run = SubmitArgs(files={"t.test.js": "x"}, fail_to_pass=["t.test.js > a > b"])
    check_claims(proof, claimed_and_run)  # every claim held: nothing to say


def stage(
    repos: RepoCache,
    docker_client: Any,
    base_image: str,
    node_images: dict[str, str],
    llm: LLMClient,
    table: RecipeTable,
) -> tuple[ValidateStage, MemorySink]:
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}, "node": node_images},
        memory_mb=2048, cpus=1,
    )  # fmt: skip
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=1), 1,
                          memory=table)  # fmt: skip
    settings = SetupAgentSettings(command_timeout_seconds=240, memory_mb=1024, cpus=1)
    sink = MemorySink()
    book = RecipeBook(table, sink)
    book.mark_restored()
    setup = SetupAgent(llm, settings, validator)
    return ValidateStage(validator, None, setup, book, unavailable(settings, llm) or ""), sink


RIGHT = {
    "node": "20",
    "pre_test": [BUILD_STEP],
    "test_command": NODE_TEST,
    "test_runner": "node",
    "explanation": "make test builds dist/ (node scripts/build.js), then runs node --test",
}


@pytest.mark.docker
async def test_the_agent_names_the_runner_a_make_test_script_hides_and_the_build_before_it(
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
    node_images: dict[str, str],
    llm_server: FakeLLM,
) -> None:
    patches, repos, _ = await units_patches(tmp_path)
    assert patches.test_files == ["test/units.test.js"]
    script: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "Makefile"}),  # 1
        ("shell", {"command": "make test"}),  # 2: the Node images have no make
        ("shell", {"command": f"{BUILD_STEP} && node --test"}),  # 3: the tests run
        ("submit_recipe", {"python": "3.11", "test_runner": "node"}),  # 4: Python's interpreter
        ("submit_recipe", RIGHT | {"node": "16"}),  # 5: no image of Node 16
        ("submit_recipe", {k: v for k, v in RIGHT.items() if k != "pre_test"}),  # 6: no dist/
        ("submit_recipe", RIGHT),  # 7: accepted
    ]
    llm_server.reply_tool_calls(script)
    table = RecipeTable(tmp_path / "recipes.sqlite")
    runs = sample("swe_stream_setup_agent_runs_total", outcome="accepted")
    llm = LLMClient(llm_settings(llm_server))
    try:
        validate, _ = stage(repos, docker_client, base_image, node_images, llm, table)
        outcome = await validate(patches)
        assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
        (task,) = outcome.outputs
        assert isinstance(task, ValidatedTask)
        assert task.FAIL_TO_PASS == [FAIL_TO_PASS]
        assert task.PASS_TO_PASS == [PASS_TO_PASS]
        config = task.install_config
        assert config is not None and config.language == "JavaScript"
        assert config.base_image == node_images["20"] and "node:20" in config.recipe
        assert "agent" in config.recipe and config.version("python") is None
        assert config.test_runner == "node" and config.pre_test_commands == [BUILD_STEP]
        assert config.test_command == NODE_TEST
        assert len(llm_server.requests) == len(script)
        assert sample("swe_stream_setup_agent_runs_total", outcome="accepted") == runs + 1

        assert "test: build\n\tnode --test" in tool_result(llm_server, 1)
        assert json.loads(tool_result(llm_server, 2))["exit_code"] == 127
        ran = json.loads(tool_result(llm_server, 3))
        assert ran["exit_code"] == 0 and "pass 1" in ran["stdout"]
        wrong = tool_result(llm_server, 4)
        assert wrong.startswith("rejected: interpreter_of_another_language: `python` (3.11)")
        assert "3 left" in wrong
        unbuilt = tool_result(llm_server, 5)
        assert unbuilt.startswith("rejected: no_node_for_engines: no image for node 16; built: ")
        assert ", ".join(sorted(node_images, key=int)) in unbuilt and "2 left" in unbuilt
        no_build = tool_result(llm_server, 6)
        assert no_build.startswith("rejected: the tests did not run as they should")
        assert "no test passed (1 failed)" in no_build and "1 left" in no_build

        first = llm_server.requests[0].body
        system, user = first["messages"][0]["content"], first["messages"][1]["content"]
        assert "JavaScript / TypeScript repository" in system and "/opt/venv" not in system
        assert f"  node: `{NODE_TEST}`" in system
        assert "The recipe that was tried (node 24):" in user  # the PR's date: the newest
        assert "no_test_runner" in user and "test runner: unknown" in user
        assert "--- package.json" in user and "--- Makefile" in user
        assert "Developed on Node 20" in user and "actions/setup-node" in user

        # remembered with its Node major; the next PR gets it, no conversation at all
        (entry,) = table.all()
        assert (entry.source, entry.toolchain_versions) == ("agent", {"node": "20"})
        assert (entry.pre_test, entry.test_runner) == ([BUILD_STEP], "node")
        outcome = await validate(second_pr(patches))
        assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
        (again,) = outcome.outputs
        assert isinstance(again, ValidatedTask) and again.install_config is not None
        assert again.FAIL_TO_PASS == [FAIL_TO_PASS]
        assert "memory:agent" in again.install_config.recipe
        assert again.install_config.base_image == node_images["20"]
        assert len(llm_server.requests) == len(script)
    finally:
        await llm.aclose()


MAX_NODE_TEST = """const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { toKm } = require('../src/units.js');

describe('toKm', () => {
  it('converts a marathon', () => {
    assert.equal(Math.round(toKm(26.2) * 1000) / 1000, 42.165);
  });
});
"""


@pytest.mark.docker
async def test_testgen_writes_a_node_test_with_the_js_runners_ids(
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
    node_images: dict[str, str],
    llm_server: FakeLLM,
) -> None:
    base = {
        "package.json": json.dumps({"name": "units", "scripts": {"test": "node --test"}}),
        "src/units.js": UNITS_JS,
        "test/celsius.test.js": (
            "const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const { toCelsius } = require('../src/units.js');\n\n"
            "test('converts freezing', () => assert.equal(toCelsius(32), 0));\n"
        ),
    }
    fixed = UNITS_JS.replace("miles * 1.6", "miles * 1.609344")
    pr = make_pull_request_repo(
        tmp_path / "git", repo="swe-stream-test/units-js", base_files=base,
        pr_files={"src/units.js": fixed},
    )  # fmt: skip
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    from agents.extract import Extract

    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet) and patches.test_patch == ""
    new = "test/km.test.js"
    km = f"{new} > toKm > converts a marathon"
    files = {new: MAX_NODE_TEST}
    script: list[tuple[str, dict[str, Any]]] = [
        ("shell", {"command": f"cat > {new} <<'EOF'\n{MAX_NODE_TEST}EOF\nnode --test {new}"}),
        # the id without its describe block: not what the run names it
        ("submit_tests", {"files": files, "fail_to_pass": [f"{new} > converts a marathon"]}),
        ("submit_tests", {"files": files, "fail_to_pass": [km]}),
    ]
    llm_server.reply_tool_calls(script)
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}, "node": node_images},
        memory_mb=1024, cpus=1,
    )  # fmt: skip
    llm = LLMClient(llm_settings(llm_server))
    try:
        generator = AgenticTestGenerator(
            llm, TestgenSettings(max_turns=10, command_timeout_seconds=60),
            Limits.from_settings(docker),
        )  # fmt: skip
        validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=2), 1)
        outcome = await ValidateStage(validator, generator)(patches)
    finally:
        await llm.aclose()
    assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.tests_generated
    assert [km] == task.FAIL_TO_PASS
    assert task.PASS_TO_PASS == [] and task.testgen_turns == len(script)
    assert task.install_config is not None and task.install_config.test_runner == "node"
    ran = json.loads(tool_result(llm_server, 1))
    assert ran["exit_code"] == 1 and "fail 1" in ran["stdout"]  # fails before the fix
    rejected = tool_result(llm_server, 2)
    assert "these claims did not hold" in rejected
    assert f"The run's test ids: {km}" in rejected
    request = llm_server.requests[0].body
    system = request["messages"][0]["content"]
    assert "JavaScript / TypeScript repository" in system and "test runner, node" in system
    assert "`test/math.test.js > add > adds two numbers`" in system and "pytest" not in system
    (submit,) = [t for t in request["tools"] if t["function"]["name"] == "submit_tests"]
    ids = submit["function"]["parameters"]["properties"]["fail_to_pass"]["description"]
    assert "then the titles of the describe blocks" in ids
