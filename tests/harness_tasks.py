"""The task the harness tests evaluate: the offline world's demo repository's PR
(``streams.offline.world``) through extract and validate, exported as a task directory (a
module-scoped fixture, imported by the test modules that use it), and engines to evaluate it."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet, ScoredTask, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.environments import INSTANCE_REPOSITORY, kept_tags, process_tag
from streams.evaluation.harness import RUN_LABEL, HarnessEngine, HarnessOptions
from streams.evaluation.sandbox import Limits, listed_image_tags
from streams.evaluation.taskdir import WORKSPACE, write_task_dir
from streams.evaluation.validator import Validator
from streams.offline.local_repo import PullRequestRepo
from streams.offline.world import make_demo_repository
from tests.agents.repo_tasks import classified_for

TASK = "swe-stream-demo-units-1"


def export_demo_task(
    root: Path, base_image: str, docker_client: Any, language: str = "python", task_id: str = TASK
) -> tuple[Path, PullRequestRepo, TaskWorkspace]:
    """The demo repository of ``language``'s PR through extract and validate, exported as the
    task directory ``root/tasks/task_id``: (root, the PR's repository, the task)."""
    pr = make_demo_repository(root / "git", language=language)
    repos = RepoCache(root / "cache", pr.url_template)

    async def validated() -> ValidatedTask:
        (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
        assert isinstance(patches, PatchSet)
        docker = DockerSettings(
            base_image=base_image,
            toolchain_images={"python": {"3.11": base_image}},
            memory_mb=1024,
            cpus=1,
        )
        check = ValidateStage(
            Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=1), 1)
        )
        (task,) = (await check(patches)).outputs
        assert isinstance(task, ValidatedTask), task
        return task

    loop = asyncio.new_event_loop()  # not asyncio.run: it would unset the tests' event loop
    try:
        task = loop.run_until_complete(validated())
    finally:
        loop.close()
    scored = ScoredTask(
        **task.model_dump(), quality_score=0.9, quality_reasoning="r", accepted=True
    )
    workspace = TaskWorkspace.from_scored(scored, task_id)
    write_task_dir(root / "tasks", workspace)
    # what the export stage is given, for the tests of the stage itself
    (root / f"{task_id}.scored.json").write_text(scored.model_dump_json())
    return root, pr, workspace


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, base_image: str, docker_client: Any) -> Any:
    """The demo repository's PR through extract and validate, exported as a task directory."""
    return export_demo_task(tmp_path_factory.mktemp("harness"), base_image, docker_client)


def engine_for(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path, **options: Any
) -> HarnessEngine:
    root, pr, _ = made
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        memory_mb=1024,
        cpus=1,
    )
    repos = RepoCache(root / "cache", pr.url_template)
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(), 1)
    settings = {"agent_timeout_seconds": 60.0, "test_timeout_seconds": 60.0} | options
    return HarnessEngine(
        validator,
        HarnessOptions(output_dir=tmp_path / "results", **settings),
        Limits.from_settings(docker),
    )


def agent_dir(tmp_path: Path, workspace: TaskWorkspace, script: str) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir(exist_ok=True)
    (directory / "fix.patch").write_text(workspace.patch)
    (directory / "run.sh").write_text(script)
    return directory


def evaluate(engine: HarnessEngine, made: Any) -> Any:
    return engine.evaluate(made[0] / "tasks" / TASK)


def containers_of(docker_client: Any, engine: HarnessEngine) -> list[Any]:
    label = f"{RUN_LABEL}={engine.options.run_id}"
    return list(docker_client.containers.list(all=True, filters={"label": label}))


def our_instance_images(docker_client: Any) -> set[str]:
    """The instance images this process built and has not dropped."""
    return {
        tag
        for _, tags in listed_image_tags(docker_client, INSTANCE_REPOSITORY)
        for tag in tags
        if tag.endswith(process_tag())
    }


def instance_builds() -> float:
    labels = {"layer": "instance", "result": "built"}
    return REGISTRY.get_sample_value("swe_stream_images_total", labels) or 0.0


def task_copy(made: Any, tasks: Path, name: str) -> Path:
    """The exported task as ``tasks/name`` under a PR number and instance id of its own: the
    kept instance image a push leaves (it builds at the kept level) is then no other test's,
    whose task's harness would reuse it instead of building."""
    number = 1000 + secrets.randbelow(10**9)
    data = yaml.safe_load((made[0] / "tasks" / TASK / WORKSPACE).read_text())
    data["instance_id"] = f"{data['instance_id'].rsplit('-', 1)[0]}-{number}"
    data |= {"id": name, "number": number}
    target = tasks / name
    shutil.copytree(made[0] / "tasks" / TASK, target)
    (target / WORKSPACE).write_text(yaml.safe_dump(data, sort_keys=False))
    return target


@pytest.fixture
def kept_instances(docker_client: Any) -> Iterator[list[str]]:
    """Instance ids whose kept instance images the test leaves: removed after it."""
    import docker.errors

    instance_ids: list[str] = []
    yield instance_ids
    for instance_id in instance_ids:
        for tag in kept_tags(docker_client, instance_id):
            if tag.startswith(INSTANCE_REPOSITORY):
                with contextlib.suppress(docker.errors.APIError):
                    docker_client.images.remove(tag, force=True)
