"""``swe-stream images push`` and the harness's pull, on the real Docker engine and a real
registry on loopback (``tests.registries``), with the task the pipeline made from a repository
the test builds (``tests.harness_tasks``) and a second task of the same repository."""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from agents.export import TaskExporter, registry_pusher
from schemas import ScoredTask
from streams.evaluation.prebuild import KEPT_LEVEL
from streams.evaluation.publish import push_task_image
from streams.evaluation.registry import image_reference, repository_component
from streams.evaluation.sandbox import remove_orphans
from streams.evaluation.taskdir import (
    WORKSPACE,
    load_workspace,
    read_dataset,
    task_dirs_to_dataset,
)
from streams.evaluation.validator import task_environment
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.harness_tasks import TASK, engine_for, task_copy
from tests.harness_tasks import kept_instances as kept_instances  # the fixture
from tests.harness_tasks import made as made  # the module fixture: the exported task
from tests.registries import docker_config, registry
from tests.workers import worker_env

pytestmark = pytest.mark.docker


def two_tasks(made: Any, tasks: Path, kept: list[str]) -> list[Path]:
    """Two PRs of the exported task's repository (numbers and instance ids of their own, so
    their own instance images), with their dataset.jsonl beside them."""
    first, second = task_copy(made, tasks, TASK), task_copy(made, tasks, f"{TASK}-second")
    kept += [load_workspace(path / WORKSPACE).instance_id for path in (first, second)]
    task_dirs_to_dataset(tasks, tasks / "dataset.jsonl")
    return [first, second]


def push(made: Any, base_image: str, tasks: Path, registry_name: str, **env: str) -> Any:
    """``swe-stream images push --json`` with the harness tests' settings."""
    root, pr, _ = made
    variables = (
        worker_env()
        | {
            "SWE_STREAM_DOCKER_BASE_IMAGE": base_image,
            "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
            "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
            "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
        }
        | env
    )
    return subprocess.run(
        [SWE_STREAM, "images", "push", "--registry", registry_name, "-i", str(tasks), "--json"],
        cwd=REPO_ROOT, env=variables, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def pulled() -> float:
    labels = {"layer": "instance", "result": "pulled"}
    return REGISTRY.get_sample_value("swe_stream_images_total", labels) or 0.0


def test_push_sends_shared_layers_once_and_the_harness_pulls_the_image(
    made: Any, base_image: str, docker_client: Any, tmp_path: Path, kept_instances: list[str]
) -> None:
    tasks = tmp_path / "tasks"
    first, second = two_tasks(made, tasks, kept_instances)
    with registry(tmp_path / "registry") as served:
        namespace = f"{served.address}/swe"
        done = push(made, base_image, tasks, namespace)
        assert done.returncode == 0, done.stdout + done.stderr
        report = {row["task"]: row for row in json.loads(done.stdout)}
        one, two = report[TASK], report[f"{TASK}-second"]
        # the first task sends its tools, env and instance layers; the second only its own
        assert one["layers_sent"] >= 2 and one["bytes_sent"] > 0, one
        assert two["layers_sent"] == 1 and two["layers_present"] == one["layers_sent"] - 1, two
        assert two["bytes_sent"] * 5 < one["bytes_sent"], (one, two)
        stored = served.blob_bytes()

        # the rows name the images, under both names
        repo = load_workspace(first / WORKSPACE).repo
        expected = {
            TASK: image_reference(namespace, repo, load_workspace(first / WORKSPACE).number),
            f"{TASK}-second": image_reference(
                namespace, repo, load_workspace(second / WORKSPACE).number
            ),
        }
        for directory in (first, second):
            assert load_workspace(directory / WORKSPACE).image_name == expected[directory.name]
        rows = read_dataset(tasks / "dataset.jsonl")
        assert sorted(row["image_name"] for row in rows) == sorted(expected.values())
        assert all(row["docker_image"] == row["image_name"] for row in rows)
        tags = served.tags(f"swe/{repository_component(repo)}")
        assert tags == sorted(reference.rsplit(":", 1)[1] for reference in expected.values())

        # pushing again sends nothing
        again = push(made, base_image, tasks, namespace)
        assert again.returncode == 0, again.stdout + again.stderr
        assert {row["bytes_sent"] for row in json.loads(again.stdout)} == {0}
        assert served.blob_bytes() == stored

        # the harness pulls a pushed task's image that is not on the engine, builds nothing
        docker_client.images.remove(expected[TASK], force=True)
        engine = engine_for(made, docker_client, base_image, tmp_path)
        task = load_workspace(first / WORKSPACE)
        before = pulled()
        environment = task_environment(engine.validator, task)
        try:
            assert environment.instance.tag == expected[TASK] and not environment.instance.built
            assert pulled() == before + 1
            # the push's process has ended: its pushed image is nobody's orphan
            remove_orphans(docker_client)
            assert docker_client.images.get(expected[TASK])
            gold = engine.validator.evaluate(
                environment, task.patch, task.test_patch, task.FAIL_TO_PASS, task.PASS_TO_PASS
            )
            assert gold.resolved
        finally:
            environment.release()
        assert docker_client.images.get(expected[TASK])  # not the harness's to drop

    # the registry gone, a task whose image is neither local nor reachable is built again
    docker_client.images.remove(expected[TASK], force=True)
    environment = task_environment(engine.validator, task)
    try:
        assert environment.instance.tag != expected[TASK]
    finally:
        environment.release()


def test_push_credentials_come_from_dockers_config_and_stay_out_of_the_output(
    made: Any, base_image: str, tmp_path: Path, kept_instances: list[str]
) -> None:
    tasks = tmp_path / "tasks"
    two_tasks(made, tasks, kept_instances)
    shutil.rmtree(tasks / f"{TASK}-second")
    password = f"pw-{secrets.token_hex(8)}"
    with registry(tmp_path / "registry", ("swe", password)) as served:
        namespace = f"{served.address}/private"
        nobody = docker_config(tmp_path / "no-login", "other.example:5000", "x", "y")
        refused = push(made, base_image, tasks, namespace, DOCKER_CONFIG=str(nobody))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        [row] = json.loads(refused.stdout)
        assert not row["pushed"] and "push of" in row["error"], row
        assert load_workspace(tasks / TASK / WORKSPACE).image_name is None

        login = docker_config(tmp_path / "login", served.address, "swe", password)
        done = push(made, base_image, tasks, namespace, DOCKER_CONFIG=str(login))
        assert done.returncode == 0, done.stdout + done.stderr
        assert load_workspace(tasks / TASK / WORKSPACE).image_name
        written = "".join(path.read_text() for path in tasks.rglob("*") if path.is_file())
        for text in (done.stdout, done.stderr, refused.stdout, refused.stderr, written):
            assert password not in text


def image_pushes(result: str) -> float:
    return REGISTRY.get_sample_value("swe_stream_image_pushes_total", {"result": result}) or 0.0


async def test_the_export_stage_pushes_with_export_registry_and_never_loses_a_task(
    made: Any, base_image: str, docker_client: Any, tmp_path: Path, kept_instances: list[str]
) -> None:
    """``export.registry``: the export stage pushes each task's image and its rows name it; a
    registry that does not answer still exports the task, without an image, counted."""
    root = made[0]
    exported = ScoredTask.model_validate_json((root / f"{TASK}.scored.json").read_text())
    number = 1000 + secrets.randbelow(10**9)  # an instance of its own (``task_copy``)
    instance_id = f"{exported.instance_id.rsplit('-', 1)[0]}-{number}"
    scored = exported.model_copy(update={"number": number, "instance_id": instance_id})
    kept_instances.append(scored.instance_id)
    validator = engine_for(made, docker_client, base_image, tmp_path).validator
    with pytest.raises(ValueError, match="cache level 'instance'"):  # the engine's own: env
        await asyncio.to_thread(push_task_image, validator, made[2], "127.0.0.1:1/x")
    validator.docker = validator.docker.model_copy(update={"cache_level": KEPT_LEVEL})
    with registry(tmp_path / "registry") as served:
        namespace = f"{served.address}/exported"
        stage = TaskExporter(tmp_path / "out", 1, registry_pusher(validator, namespace))
        before = image_pushes("pushed")
        outcome = await stage(scored)
        assert image_pushes("pushed") == before + 1
        [exported] = outcome.outputs
        task = load_workspace(Path(exported.export_dir) / WORKSPACE)
        assert task.image_name == image_reference(namespace, scored.repo, scored.number)
        assert served.tags(f"exported/{repository_component(scored.repo)}") == [
            f"pr-{scored.number}"
        ]
        [row] = read_dataset(tmp_path / "out" / "dataset.jsonl")
        assert row["image_name"] == row["docker_image"] == task.image_name
    # nothing answers there now: the task is exported all the same, without an image
    failed = image_pushes("failed")
    gone = TaskExporter(tmp_path / "out2", 1, registry_pusher(validator, namespace))
    [exported] = (await gone(scored)).outputs
    assert load_workspace(Path(exported.export_dir) / WORKSPACE).image_name is None
    assert image_pushes("failed") == failed + 1
    with pytest.raises(ValueError, match="--registry"):
        registry_pusher(validator, "http://nowhere")
