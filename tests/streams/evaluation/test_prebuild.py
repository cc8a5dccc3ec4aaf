"""``swe-stream images instances``: the env and instance images of exported tasks built ahead of
the harness (SWE-bench's prepare_images), on the real Docker engine, with tasks the pipeline
made from a repository the test builds (``tests.harness_tasks``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.environments import INSTANCE_REPOSITORY, ImageBuildError
from streams.evaluation.harness import evaluate_all
from streams.evaluation.prebuild import (
    PreparedTask,
    failure_reason,
    prepare_task,
    read_task_sources,
    summary_line,
)
from streams.evaluation.sandbox import listed_image_tags
from streams.evaluation.taskdir import WORKSPACE, export_task, load_workspace
from streams.evaluation.validator import ValidationFailed, Validator, task_environment
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.harness_tasks import TASK, engine_for
from tests.harness_tasks import made as made  # the module fixture: the exported task
from tests.workers import worker_env

FAILING_STEP = "echo cannot install units >&2; exit 3"


def images_built(layer: str) -> float:
    labels = {"layer": layer, "result": "built"}
    return REGISTRY.get_sample_value("swe_stream_images_total", labels) or 0.0


def copy_task(made: Any, tasks: Path, letter: str, token: str, **config: Any) -> Path:
    """The exported task again under another id and instance id (its own instance image),
    with ``config`` over its install_config."""
    root = made[0]
    data = yaml.safe_load((root / "tasks" / TASK / WORKSPACE).read_text())
    data["id"] = f"{TASK}-{letter}"
    data["instance_id"] = f"{data['instance_id']}{letter}{token}"
    data["install_config"] = data["install_config"] | config
    target = tasks / data["id"]
    shutil.copytree(root / "tasks" / TASK, target)
    (target / WORKSPACE).write_text(yaml.safe_dump(data, sort_keys=False))
    return target


def prebuild(made: Any, base_image: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``swe-stream images instances ARGUMENTS`` with the settings of ``engine_for``'s harness."""
    env = worker_env() | {
        "SWE_STREAM_DOCKER_BASE_IMAGE": base_image,
        "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
    }
    if made is not None:
        root, pr, _ = made
        env |= {
            "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
            "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
        }
    return subprocess.run(
        [SWE_STREAM, "images", "instances", *arguments],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def task_lines(stdout: str, task: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(f"{task}: ")]


def remove_images(docker_client: Any, token: str, *tags: str) -> None:
    """This test's instance images (the token is in their instance ids), and ``tags``."""
    import docker.errors

    for _, image_tags in listed_image_tags(docker_client, INSTANCE_REPOSITORY):
        tags += tuple(tag for tag in image_tags if token in tag)
    for tag in tags:
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(tag, force=True)


@pytest.mark.docker
def test_prebuilt_images_are_the_harness_s_and_it_builds_nothing(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    token = secrets.token_hex(3)  # instance ids (and so images) of this test run alone
    tasks = tmp_path / "tasks"
    good = [copy_task(made, tasks, letter, token) for letter in "ab"]
    try:
        done = prebuild(made, base_image, "-i", str(tasks), "-j", "2")
        assert done.returncode == 0, done.stderr[-3000:]
        for task in good:
            (line,) = task_lines(done.stdout, task.name)
            assert line.startswith(f"{task.name}: built "), done.stdout
            assert "instance" in line.split("(")[0], line
        assert done.stdout.splitlines()[-1] == "2 tasks: 2 built, 0 cached, 0 failed"

        # a second run finds them all: nothing built, the same images
        again = prebuild(made, base_image, "-i", str(tasks), "-j", "2", "--json")
        assert again.returncode == 0, again.stderr[-3000:]
        rows = {row["task"]: row for row in json.loads(again.stdout)}
        assert {name: (row["status"], row["built"]) for name, row in rows.items()} == {
            task.name: ("cached", []) for task in good
        }
        assert again.stderr.splitlines()[-1] == "2 tasks: 0 built, 2 cached, 0 failed"
        images = {
            name: docker_client.images.get(row["instance_image"]) for name, row in rows.items()
        }
        envs = {row["env_image"] for row in rows.values()}
        assert len(envs) == 1  # one repository, one recipe: one env image for both

        # the harness's own setup names the same images, and finds them there
        root, pr, _ = made
        docker = DockerSettings(
            base_image=base_image,
            toolchain_images={"python": {"3.11": base_image}},
            cache_level="instance",
        )
        validator = Validator(
            RepoCache(root / "cache", pr.url_template),
            lambda: docker_client,
            docker,
            ValidateSettings(),
            1,
        )
        for task in good:
            environment = task_environment(validator, load_workspace(task / WORKSPACE))
            assert (environment.instance.tag, environment.instance.built) == (
                rows[task.name]["instance_image"],
                False,
            )
            assert (environment.env.tag, environment.env.built) == (envs.pop(), False)
            envs.add(environment.env.tag)

        # a harness run at the default cache level (env) builds nothing, and drops nothing
        engine = engine_for(made, docker_client, base_image, tmp_path, agent_command="true")
        assert engine.validator.docker.cache_level == "env"
        before = {layer: images_built(layer) for layer in ("env", "instance")}
        report = asyncio.run(evaluate_all(engine, good, parallel=2))
        assert (report.total, report.unresolved, report.setup_error) == (2, 2, 0), report
        assert {layer: images_built(layer) for layer in ("env", "instance")} == before
        for name, image in images.items():
            assert docker_client.images.get(rows[name]["instance_image"]).id == image.id
    finally:
        remove_images(docker_client, token)


@pytest.mark.docker
def test_a_task_that_cannot_install_fails_in_one_line_naming_its_step(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    token = secrets.token_hex(3)
    tasks = tmp_path / "tasks"
    config = made[2].install_config
    # an env recipe of its own: --force below rebuilds this env image, no other test's
    own_env = [*config.get("env_commands", []), f"echo {token}"]
    good = copy_task(made, tasks, "a", token, env_commands=own_env)
    failing = [*config.get("install_commands", []), FAILING_STEP]
    broken = copy_task(made, tasks, "c", token, install_commands=failing)
    env_tag = ""
    try:
        done = prebuild(made, base_image, "-i", str(tasks), "-j", "2")
        assert done.returncode == 1, done.stdout + done.stderr[-3000:]
        (line,) = task_lines(done.stdout, broken.name)
        assert line.startswith(f"{broken.name}: failed (instance step `RUN {FAILING_STEP}`"), line
        assert line.endswith("(exit code 3): cannot install units)"), line
        (line,) = task_lines(done.stdout, good.name)
        assert line.startswith(f"{good.name}: built env and instance in "), line
        assert done.stdout.splitlines()[-1] == "2 tasks: 1 built, 0 cached, 1 failed"

        # --force builds the good task's images again: a new env image under its tag, and an
        # instance image on it (whose tag names the env image's id), the old one gone
        cached = prebuild(made, base_image, "-i", str(good), "--json")
        (row,) = json.loads(cached.stdout)
        assert row["status"] == "cached", row
        env_tag, instance_tag = row["env_image"], row["instance_image"]
        first = docker_client.images.get(env_tag).id
        forced = prebuild(made, base_image, "-i", str(good), "--force", "--json")
        assert forced.returncode == 0, forced.stderr[-3000:]
        (row,) = json.loads(forced.stdout)
        assert (row["status"], row["built"], row["env_image"]) == (
            "built", ["env", "instance"], env_tag,
        ), row  # fmt: skip
        assert docker_client.images.get(env_tag).id != first
        docker_client.images.get(row["instance_image"])
        assert not docker_client.images.list(name=instance_tag)
    finally:
        remove_images(docker_client, token, *([env_tag] if env_tag else []))


@pytest.mark.unit
def test_unreadable_input_is_a_usage_error(tmp_path: Path) -> None:
    missing = prebuild(None, "swe-stream/base:none", "-i", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    bad = tmp_path / "dataset.jsonl"
    bad.write_text("{not json\n")
    broken = prebuild(None, "swe-stream/base:none", "-i", str(bad))
    assert broken.returncode == 2 and "line 1: invalid JSON" in broken.stderr
    empty = prebuild(None, "swe-stream/base:none", "-i", str(tmp_path), "-j", "0")
    assert empty.returncode == 2 and "-j must be 1 or more" in empty.stderr


@pytest.mark.unit
def test_tasks_are_read_from_task_directories_and_swe_bench_rows(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    rows = json.loads((fixtures_dir / "swebench" / "swe-bench-lite-5.json").read_text())
    dataset = tmp_path / "dataset.jsonl"
    broken = {**rows[1], "base_commit": "not-a-sha"}
    dataset.write_text("".join(json.dumps(row) + "\n" for row in [rows[0], broken]))
    first, second = read_task_sources(dataset)
    assert first.workspace is not None and first.workspace.instance_id == rows[0]["instance_id"]
    assert (first.name, first.problem) == (rows[0]["instance_id"], "")
    assert second.workspace is None and f"{dataset}: row 1: " in second.problem
    failed = prepare_task(None, second)  # type: ignore[arg-type]  # no validator is asked
    assert (failed.status, failed.error) == ("failed", second.problem)
    assert failed.line() == f"{rows[1]['instance_id']}: failed ({second.problem})"
    assert "\n" not in second.problem
    # task directories: a good one and an unreadable one, by name
    export_task(tmp_path / "tasks", first.workspace)
    (tmp_path / "tasks" / "zz-broken").mkdir()
    (tmp_path / "tasks" / "zz-broken" / WORKSPACE).write_text("[1, 2]\n")
    good, bad = read_task_sources(tmp_path / "tasks")
    assert good.workspace == first.workspace and good.name == first.workspace.id
    assert bad.workspace is None and bad.problem.startswith("unreadable task: ")
    assert read_task_sources(tmp_path / "tasks" / good.name) == [good]


@pytest.mark.unit
def test_a_failure_is_one_line_naming_the_layer_and_step() -> None:
    error = ImageBuildError(
        "building env image swe-stream/env:o__r-0123 failed (exit code 1)",
        "Collecting nothing\nERROR: No matching distribution found for nothing\n\n",
        "RUN pip install nothing",
        "env",
    )
    assert failure_reason(error) == (
        "env step `RUN pip install nothing` failed (exit code 1): "
        "ERROR: No matching distribution found for nothing"
    )
    assert failure_reason(ImageBuildError("base image b:1 is missing: run x")) == (
        "ImageBuildError: base image b:1 is missing: run x"
    )
    assert failure_reason(ValidationFailed("install_failed", "python 3.11: step\ntail")) == (
        "install_failed: python 3.11: step"
    )
    results = [
        PreparedTask("a", "built", built=("instance",), seconds=1.25, instance_image="i:a"),
        PreparedTask("b", "cached", instance_image="i:b"),
        PreparedTask("c", "failed", error="why"),
    ]
    assert [r.line() for r in results] == [
        "a: built instance in 1.2 s (i:a)",
        "b: cached (i:b)",
        "c: failed (why)",
    ]
    assert summary_line(results) == "3 tasks: 1 built, 1 cached, 1 failed"
