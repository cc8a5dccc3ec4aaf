"""validate: FAIL_TO_PASS / PASS_TO_PASS proven by running the tests in Docker (real engine,
the offline base image) for a repository the test makes with git; flaky, hanging, already
passing, fuzz-needing; env image reuse; and extract + validate in a worker on the broker."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client import REGISTRY

from agents.extract import Extract
from agents.setup_agent import documents
from agents.validate import ValidateStage, proven_by
from schemas import InstallConfig, PatchSet, ValidatedTask
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.recipes.languages import language_named
from streams.evaluation.validator import NO_FAIL_TO_PASS, Validator
from streams.kafka.topics import CLASSIFIED, VALIDATED
from streams.offline.local_repo import SymbolicLink, make_pull_request_repo
from streams.pipeline.stage import Outcome
from tests.agents.conftest import start_stage_worker, wait_for
from tests.agents.repo_tasks import (
    BASE_FILES,
    FLAKY,
    HANGS,
    REPO,
    classified_for,
    make_calc_repo,
    pr_files,
)
from tests.workers import stop, wait_for_metrics

F2P = ["tests/test_ops.py::test_add"]
P2P = ["tests/test_ops.py::test_sub", "tests/test_ops.py::test_sub_negative"]


def settings(base_image: str, **overrides: Any) -> tuple[DockerSettings, ValidateSettings]:
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        cache_level="env",
        memory_mb=1024,
        cpus=1,
    )
    return docker, ValidateSettings(**({"runs": 3, "test_timeout_seconds": 120} | overrides))


async def patches_for(
    root: Path, files: dict[str, str | None] | None = None, number: int = 1
) -> tuple[PatchSet, RepoCache]:
    pr = make_calc_repo(root / "git", files)
    repos = RepoCache(root / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(classified_for(pr, number))
    (patches,) = outcome.outputs
    assert isinstance(patches, PatchSet)
    return patches, repos


def validator(
    repos: RepoCache, docker_client: Any, base_image: str, **overrides: Any
) -> ValidateStage:
    docker, validate = settings(base_image, **overrides)
    return ValidateStage(Validator(repos, lambda: docker_client, docker, validate, 1))


@pytest.mark.unit
def test_an_accepted_pr_s_line_says_what_proves_it(validated_tasks: list[ValidatedTask]) -> None:
    """The one INFO line of a PR validate accepted: its tests, runs and environment."""
    task = validated_tasks[0]
    f2p, p2p = len(task.FAIL_TO_PASS), len(task.PASS_TO_PASS)
    assert proven_by(Outcome.accept(task)) == (
        f"{f2p} FAIL_TO_PASS and {p2p} PASS_TO_PASS test(s) over 1 run(s)"
    )
    config = InstallConfig(
        language="Python", base_image="b", env_image="e", instance_image="i",
        test_command="pytest", python="3.9",
    )  # fmt: skip
    generated = task.model_copy(update={"install_config": config, "tests_generated": True})
    assert proven_by(Outcome.accept(generated)) == (
        f"{f2p} FAIL_TO_PASS and {p2p} PASS_TO_PASS generated test(s) over 1 run(s), "
        "pytest on Python 3.9"
    )
    assert proven_by(Outcome.accept()) == "no task emitted"  # a line never fails a record


def env_images(result: str) -> float:
    return (
        REGISTRY.get_sample_value("swe_stream_images_total", {"layer": "env", "result": result})
        or 0
    )


@pytest.mark.docker
async def test_fail_to_pass_is_the_new_test_and_pass_to_pass_the_old_ones(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    patches, repos = await patches_for(tmp_path)
    outcome = await validator(repos, docker_client, base_image)(patches)
    assert outcome.status == "accepted", outcome.reason
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == P2P
    report = task.validation
    assert report.runs == 4 and report.before["tests/test_ops.py::test_add"] == "failed"
    assert report.flaky == [] and report.timed_out == []
    assert 0 < report.test_seconds < report.duration_seconds
    config = task.install_config
    assert config is not None and config.base_image == base_image
    assert config.env_image.startswith("swe-stream/env:swe-stream-test__calc-")
    assert "-m pytest" in config.test_command
    assert task.checks == [f"{config.test_command} {t}" for t in F2P + P2P]
    assert task.instance_id == "swe-stream-test__calc-1" and task.base_commit == patches.base_commit
    row = task.to_swebench()
    assert row["FAIL_TO_PASS"] == F2P and row["patch"] == patches.patch


@pytest.mark.docker
async def test_a_second_task_of_the_repository_reuses_the_env_image(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    first, repos = await patches_for(tmp_path / "one")
    second, repos2 = await patches_for(tmp_path / "two", pr_files(FLAKY), number=2)
    check = validator(repos, docker_client, base_image, runs=1)
    task1 = (await check(first)).outputs[0]
    built, reused = env_images("built"), env_images("reused")
    task2 = (await validator(repos2, docker_client, base_image, runs=1)(second)).outputs[0]
    assert isinstance(task1, ValidatedTask) and isinstance(task2, ValidatedTask)
    assert task1.install_config and task2.install_config
    assert task1.install_config.env_image == task2.install_config.env_image
    assert env_images("built") == built and env_images("reused") == reused + 1
    image_id = docker_client.images.get(task2.install_config.env_image).id
    assert image_id == docker_client.images.get(task1.install_config.env_image).id
    assert task1.install_config.instance_image != task2.install_config.instance_image


@pytest.mark.docker
async def test_a_new_test_that_already_passes_is_rejected(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    files = pr_files()
    files["tests/test_ops.py"] = (files["tests/test_ops.py"] or "").replace(
        "assert add(2, 3) == 5",
        "assert add(2, 0) == 2",  # true before the fix too
    )
    patches, repos = await patches_for(tmp_path, files)
    outcome = await validator(repos, docker_client, base_image, runs=1)(patches)
    assert (outcome.status, outcome.reason) == ("rejected", NO_FAIL_TO_PASS)


@pytest.mark.docker
async def test_a_flaky_test_is_dropped(tmp_path: Path, docker_client: Any, base_image: str) -> None:
    patches, repos = await patches_for(tmp_path, pr_files(FLAKY))
    (task,) = (await validator(repos, docker_client, base_image)(patches)).outputs
    assert isinstance(task, ValidatedTask)
    assert task.validation.flaky == ["tests/test_ops.py::test_flaky"]
    assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == P2P


@pytest.mark.docker
async def test_a_hanging_test_is_killed_at_the_timeout_and_reported(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    patches, repos = await patches_for(tmp_path, pr_files(HANGS))
    check = validator(repos, docker_client, base_image, runs=1, test_timeout_seconds=8)
    (task,) = (await check(patches)).outputs
    assert isinstance(task, ValidatedTask)
    assert task.validation.timed_out == ["tests/test_ops.py::test_zz_hangs"]
    assert task.validation.after["tests/test_ops.py::test_zz_hangs"] == "error"
    assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == P2P


@pytest.mark.docker
async def test_a_patch_that_needs_fuzz_still_applies(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    patches, repos = await patches_for(tmp_path)
    # a context line of the fix's hunk no longer matches the base exactly
    fuzzy = patches.patch.replace("\n def add(a, b):\n", "\n def add(a, b):  # renamed\n", 1)
    assert fuzzy != patches.patch
    outcome = await validator(repos, docker_client, base_image, runs=1)(
        patches.model_copy(update={"patch": fuzzy})
    )
    assert outcome.status == "accepted", outcome.reason
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.FAIL_TO_PASS == F2P


async def produce(bootstrap: str, record: Any) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            CLASSIFIED.name, key=record.key.encode(), value=record.to_json()
        )
    finally:
        await producer.stop()


@pytest.mark.docker
@pytest.mark.integration
def test_extract_and_validate_workers_make_the_task(
    bootstrap: str, tmp_path: Path, base_image: str, docker_client: Any
) -> None:
    pr = make_calc_repo(tmp_path / "git")
    log = tmp_path / "worker.log"
    env = {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_EXTRACT_REPOS_DIR": str(tmp_path / "repos"),
        "SWE_STREAM_DOCKER_BASE_IMAGE": base_image,
        "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
        "SWE_STREAM_VALIDATION_RUNS": "2",
    }
    process, metrics_port = start_stage_worker(bootstrap, "extract,validate", log, env)
    try:
        wait_for_metrics(metrics_port, process, log)
        asyncio.run(produce(bootstrap, classified_for(pr)))
        (value,) = asyncio.run(wait_for(bootstrap, VALIDATED.name, 1, process, log, timeout=600))
        task = ValidatedTask.from_json(value)
        assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == P2P
        assert task.key == "swe-stream-test/calc#1" and task.validation.runs == 3
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()[-3000:]


@pytest.mark.docker
async def test_a_pyproject_linked_to_a_host_file_leaks_nothing_of_it(
    tmp_path: Path, docker_client: Any, base_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A repository whose pyproject.toml is a symbolic link to a file of the host (absolute,
    and one up past the root): validation never reads it; its content is in no log line, no
    outcome (what the ledger and the tasks are made of) and no prompt of the setup agent."""
    secret = tmp_path / "host" / "pyproject.toml"
    secret.parent.mkdir()
    token = "host-secret-5e1f0c"
    secret.write_text(f'[project]\nname = "{token}"\ndependencies = ["{token}-dep"]\n')
    pr = make_pull_request_repo(
        tmp_path / "git",
        repo=REPO,
        base_files={
            **BASE_FILES,
            "pyproject.toml": SymbolicLink(str(secret)),
            "setup.cfg": SymbolicLink("../" * 8 + str(secret).lstrip("/")),
        },
        pr_files=pr_files(),
    )
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    caplog.set_level(logging.DEBUG)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet)
    stage = validator(repos, docker_client, base_image, runs=1)
    outcome = await stage(patches)
    tree = await asyncio.to_thread(stage.validator.chooser.tree, REPO, patches.base_commit)
    assert set(tree.escaping) == {"pyproject.toml", "setup.cfg"}
    shown = documents(tree)
    facts = language_named("Python").facts(tree)  # type: ignore[union-attr]
    assert "pyproject.toml: a symbolic link out of the repository; not read" in facts.problems
    said = [
        caplog.text,
        repr(outcome.reason),
        repr(outcome.detail),
        *(record.model_dump_json() for record in outcome.outputs),
        shown,
        repr(facts),
    ]
    assert not [text for text in said if token in text]
    # no project the container can install (both files lead nowhere there): a clean rejection
    assert (outcome.status, outcome.reason) == ("rejected", "install_failed"), outcome.detail
