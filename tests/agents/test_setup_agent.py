"""The environment-setup agent: scripted multi-turn conversations (a local chat-completions
look-alike), real Docker, a real git repository whose tests need a build step its CI runs."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client import REGISTRY
from pydantic import SecretStr

from agents.setup_agent import SetupAgent, unavailable
from agents.validate import ValidateStage
from schemas import PatchSet, RememberedRecipe, ValidatedTask
from streams.clients.git import RepoCache
from streams.clients.llm import LLMClient
from streams.core.settings import DockerSettings, LLMSettings, SetupAgentSettings, ValidateSettings
from streams.evaluation.recipes.memory import RecipeTable, dependency_fingerprint
from streams.evaluation.validator import Validator
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import PATCHES, RECIPES, VALIDATED
from streams.pipeline.recipe_memory import RecipeBook
from streams.pipeline.sinks import MemorySink
from tests.agents.conftest import start_stage_worker
from tests.agents.setup_repos import BUILD_STEP, polyglot_patches, second_pr
from tests.agents.test_validate import wait_for
from tests.fakes.llm_server import FakeLLM
from tests.workers import stop, wait_for_metrics

APT_GETTEXT = "apt-get update -qq && apt-get install -y -qq --no-install-recommends gettext"
FETCH_DEBIAN = (
    "python3 -c \"import urllib.request as u; print(u.urlopen('http://deb.debian.org/debian/',"
    ' timeout=20).status)"'
)
RIGHT = {"system_packages": ["gettext"], "pre_test": [BUILD_STEP], "explanation": "msgfmt"}


def llm_settings(server: FakeLLM) -> LLMSettings:
    return LLMSettings(
        base_url=server.base_url,
        model="test/setup",
        api_key=SecretStr("sk-or-test-setup"),
        backoff_seconds=0.05,
        max_backoff_seconds=0.2,
    )


def docker_settings(base_image: str) -> DockerSettings:
    return DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        memory_mb=1024,
        cpus=1,
    )


def stage(
    repos: RepoCache,
    docker_client: Any,
    base_image: str,
    llm: LLMClient | None,
    table: RecipeTable,
    **agent: Any,
) -> tuple[ValidateStage, MemorySink]:
    validator = Validator(
        repos, lambda: docker_client, docker_settings(base_image), ValidateSettings(runs=1), 1,
        memory=table,
    )  # fmt: skip
    settings = SetupAgentSettings(**({"command_timeout_seconds": 240} | agent))
    setup = SetupAgent(llm, settings, validator) if llm is not None else None
    sink = MemorySink()
    book = RecipeBook(table, sink)
    book.mark_restored()
    reason = unavailable(settings, llm or LLMClient(LLMSettings(api_key=None)))
    return ValidateStage(validator, None, setup, book, reason or ""), sink


def tool_result(server: FakeLLM, request: int) -> str:
    messages = server.requests[request].body["messages"]
    content = [m for m in messages if m["role"] == "tool"][-1]["content"]
    assert isinstance(content, str)
    return content


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0


@pytest.mark.docker
async def test_the_agent_finds_the_build_step_its_ci_runs_and_the_next_pr_remembers_it(
    tmp_path: Path, docker_client: Any, base_image: str, llm_server: FakeLLM
) -> None:
    patches, repos, _ = await polyglot_patches(tmp_path)
    assert patches.test_files == ["tests/test_messages.py"]
    script: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "README.md"}),  # 1
        ("shell", {"command": BUILD_STEP}),  # 2: msgfmt is not there
        ("submit_recipe", {"pre_test": [BUILD_STEP]}),  # 3: refused, it failed
        ("shell", {"command": APT_GETTEXT}),  # 4: Debian's mirror, through the proxy
        ("shell", {"command": BUILD_STEP}),  # 5: now it works here
        ("shell", {"command": "python -m pytest -q tests"}),  # 6: the tests run
        ("shell", {"command": f"env; {FETCH_DEBIAN}"}),  # 7: no secret; a registry answers
        ("submit_recipe", {"pre_test": [BUILD_STEP]}),  # 8: no gettext in a fresh image
        ("submit_recipe", RIGHT),  # 9: accepted
    ]
    llm_server.reply_tool_calls(script)
    table = RecipeTable(tmp_path / "recipes.sqlite")
    runs = sample("swe_stream_setup_agent_runs_total", outcome="accepted")
    llm = LLMClient(llm_settings(llm_server))
    try:
        validate, sink = stage(repos, docker_client, base_image, llm, table)
        outcome = await validate(patches)
        assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
        (task,) = outcome.outputs
        assert isinstance(task, ValidatedTask)
        assert task.FAIL_TO_PASS == ["tests/test_messages.py::test_farewell_fr"]
        assert task.PASS_TO_PASS == ["tests/test_messages.py::test_greeting_fr"]
        config = task.install_config
        assert config is not None and "agent" in config.recipe and "override" not in config.recipe
        assert config.system_packages == ["gettext"] and BUILD_STEP in config.pre_test_commands
        assert len(llm_server.requests) == len(script)
        assert sample("swe_stream_setup_agent_runs_total", outcome="accepted") == runs + 1

        assert "Messages in several languages" in tool_result(llm_server, 1)
        failed = json.loads(tool_result(llm_server, 2))
        assert failed["exit_code"] == 127 and "msgfmt" in failed["stderr"]
        assert tool_result(llm_server, 3).startswith("refused: these commands failed")
        assert json.loads(tool_result(llm_server, 4))["exit_code"] == 0
        assert json.loads(tool_result(llm_server, 5))["exit_code"] == 0
        assert "1 passed" in json.loads(tool_result(llm_server, 6))["stdout"]
        env = json.loads(tool_result(llm_server, 7))
        assert "sk-or-test-setup" not in env["stdout"] and "GITHUB_TOKEN" not in env["stdout"]
        assert env["stdout"].rstrip().endswith("200")  # a registry, through the proxy
        rejected = tool_result(llm_server, 8)
        assert rejected.startswith("rejected: the instance image did not build")
        assert "msgfmt: command not found" in rejected and "3 left" in rejected  # refused: free

        first = llm_server.requests[0].body
        user = first["messages"][1]["content"]
        assert "tests_skipped" in user and "build_translations.sh" in user  # log + README
        assert "ubuntu-latest" in user  # the CI workflow
        assert {t["function"]["name"] for t in first["tools"]} == {
            "shell", "read_file", "submit_recipe",
        }  # fmt: skip

        (entry,) = table.all()
        assert (entry.source, entry.system_packages, entry.pre_test) == (
            "agent", ["gettext"], [BUILD_STEP],
        )  # fmt: skip
        assert [key for key, _ in sink.on(RECIPES.name)] == [entry.key.encode()]

        # the repository's next PR: the remembered recipe, no conversation at all
        outcome = await validate(second_pr(patches))
        assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
        (again,) = outcome.outputs
        assert isinstance(again, ValidatedTask) and again.install_config is not None
        assert "memory:agent" in again.install_config.recipe
        assert len(llm_server.requests) == len(script)
    finally:
        await llm.aclose()


@pytest.mark.docker
async def test_without_a_key_the_reason_says_so_and_a_budget_stops_the_agent(
    tmp_path: Path, docker_client: Any, base_image: str, llm_server: FakeLLM
) -> None:
    patches, repos, _ = await polyglot_patches(tmp_path)
    table = RecipeTable()
    validate, _ = stage(repos, docker_client, base_image, None, table)
    outcome = await validate(patches)
    assert (outcome.status, outcome.reason) == ("rejected", "tests_skipped")
    assert "no setup agent: no LLM API key" in (outcome.detail or "")
    assert table.all() == []  # the tests never ran: nothing to remember

    for _ in range(3):
        llm_server.reply_tool_call("shell", {"command": "ls"})
    llm = LLMClient(llm_settings(llm_server))
    try:
        validate, _ = stage(repos, docker_client, base_image, llm, table, max_turns=2)
        outcome = await validate(patches)
    finally:
        await llm.aclose()
    assert (outcome.status, outcome.reason) == ("rejected", "setup_agent_turn_limit")
    assert "nothing accepted in 2 turns" in (outcome.detail or "")
    assert "before the agent: tests_skipped" in (outcome.detail or "")
    assert len(llm_server.requests) == 2


async def produce(bootstrap: str, patches: PatchSet) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        key = patches.key.encode()
        await producer.send_and_wait(PATCHES.name, key=key, value=patches.to_json())
    finally:
        await producer.stop()


async def remembered(bootstrap: str) -> list[RememberedRecipe]:
    records = read_topic_to_end(bootstrap, RECIPES.name)
    return [RememberedRecipe.from_json(record.value) async for record in records]


@pytest.mark.docker
@pytest.mark.integration
def test_a_recipe_survives_a_worker_restart(
    bootstrap: str, tmp_path: Path, docker_client: Any, base_image: str, llm_server: FakeLLM
) -> None:
    patches, _, pr = asyncio.run(polyglot_patches(tmp_path))
    llm_server.reply_tool_call("submit_recipe", RIGHT)
    env = {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_EXTRACT_REPOS_DIR": str(tmp_path / "repos"),
        "SWE_STREAM_DOCKER_BASE_IMAGE": base_image,
        "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
        "SWE_STREAM_VALIDATION_RUNS": "1",
        "SWE_STREAM_LLM_BASE_URL": llm_server.base_url,
        "OPENROUTER_API_KEY": "sk-or-test-restart",
        "SWE_STREAM_TESTGEN_MODE": "off",
    }
    app_id = f"validate-restart-{os.getpid()}-{time.monotonic_ns()}"  # one group, restarted
    # one worker restarted, on a fresh disk: the same static member of the group (on Kafka, a
    # new one would wait out the stopped one's session before the group let it in)
    env["SWE_STREAM_WORKER_GROUP_INSTANCE_ID"] = app_id
    for number, patch_set in ((1, patches), (2, second_pr(patches))):
        # each worker has a data dir of its own: the second one knows only what the topic says
        data = {"SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / f"worker-{number}")}
        log = tmp_path / f"worker-{number}.log"
        process, metrics_port = start_stage_worker(bootstrap, "validate", log, env | data, app_id)
        try:
            wait_for_metrics(metrics_port, process, log)
            asyncio.run(produce(bootstrap, patch_set))
            values = asyncio.run(wait_for(bootstrap, VALIDATED.name, number, process, log, 600))
        finally:
            if process.poll() is None:
                assert stop(process) == 0, log.read_text()[-3000:]
    tasks = sorted((ValidatedTask.from_json(v) for v in values), key=lambda t: t.number)
    assert [t.number for t in tasks] == [1, 2]
    sources = [t.install_config.recipe if t.install_config else [] for t in tasks]
    assert "agent" in sources[0] and "memory:agent" in sources[1]
    assert len(llm_server.requests) == 1  # the restarted worker asked no model
    entries = asyncio.run(remembered(bootstrap))
    assert {e.source for e in entries} == {"agent"} and entries[-1].pre_test == [BUILD_STEP]


@pytest.mark.docker
async def test_a_recipe_of_another_pipeline_version_is_verified_before_it_is_trusted(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    patches, repos, _ = await polyglot_patches(tmp_path)
    table = RecipeTable()
    validate, _ = stage(repos, docker_client, base_image, None, table)
    validator = validate.validator
    validator.pipeline_version = 2  # a replay under version 2 of what version 1 remembered
    tree = validator.tree(patches.repo, patches.base_commit)
    old = RememberedRecipe(
        pipeline_version=1,
        repo=patches.repo,
        fingerprint=dependency_fingerprint(tree),
        source="agent",
        python="3.11",
        pre_test=["true"],  # wrong: compiles nothing
        instance_id=patches.instance_id,
        base_commit=patches.base_commit,
        tests=1,
        verified_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    table.put(old)
    stale = sample("swe_stream_recipe_memory_lookups_total", result="stale")
    outcome = await validate(patches)
    assert (outcome.status, outcome.reason) == ("rejected", "tests_skipped")
    assert sample("swe_stream_recipe_memory_lookups_total", result="stale") == stale + 1
    assert "recipe_rejected" in (outcome.detail or "")  # what the stale one showed, kept

    table.put(old.model_copy(update={"system_packages": ["gettext"], "pre_test": [BUILD_STEP]}))
    reverified = sample("swe_stream_recipe_memory_lookups_total", result="reverified")
    outcome = await validate(patches)
    assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
    assert sample("swe_stream_recipe_memory_lookups_total", result="reverified") == reverified + 1
    (entry,) = table.all()
    assert (entry.pipeline_version, entry.source) == (2, "agent")  # trusted from now on
