"""environments: the env and instance layers on the real Docker engine, and what dropping
them after a task may touch when several processes share one engine."""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from streams.core import progress
from streams.core.progress import PROGRESS
from streams.evaluation.environments import EnvironmentBuilder, _build_lock, process_tag
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.sandbox import (
    BUILDER_LABEL,
    Sandbox,
    remove_orphan_images,
    remove_orphans,
)
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.docker

RECIPE = InstallRecipe("python", test_command="python3 -m pytest")


def tree() -> TreeFiles:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = b"print('hello from the testbed')\n"
        info = tarfile.TarInfo("hello.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return TreeFiles(buffer.getvalue())


# the same task's layers, built and dropped by another process on the same engine
OTHER_PROCESS = """
import sys

import docker

from streams.evaluation.environments import EnvironmentBuilder
from tests.streams.evaluation.test_environments import RECIPE, steps, tree

builder = EnvironmentBuilder(docker.from_env(), sys.argv[1], sys.argv[2])
env = builder.env_image("swe-stream-test/layers", RECIPE)
instance = builder.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
built = steps(builder.client, instance.id)
builder.release(env, instance)
print(env.tag)
print(instance.tag)
print(",".join(built))
"""


def steps(client: Any, image_id: str) -> list[str]:
    """The image and the build steps under it that exist on this engine, newest first."""
    return [step["Id"] for step in client.api.history(image_id) if step["Id"] != "<missing>"]


@pytest.mark.parametrize("cache_level", ["env", "base"])
def test_another_process_dropping_the_same_layers_leaves_ours(
    docker_client: Any, base_image: str, cache_level: str
) -> None:
    builder = EnvironmentBuilder(docker_client, base_image, cache_level)
    env = builder.env_image("swe-stream-test/layers", RECIPE)
    instance = builder.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
    try:
        assert instance.tag.endswith(process_tag()) and len(instance.tag.split(":", 1)[1]) <= 128
        assert env.tag.endswith(process_tag()) == (cache_level == "base")
        other = subprocess.run(
            [sys.executable, "-c", OTHER_PROCESS, base_image, cache_level],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=300,
            check=False,
        )
        assert other.returncode == 0, other.stderr[-3000:]
        other_env, other_instance, other_steps = other.stdout.split()
        assert other_instance != instance.tag  # a tag of its own, which it dropped
        assert not docker_client.images.list(name=other_instance)
        # and none of our build's steps were its: the classic builder would have reused them as
        # its cache, and removing its image would then delete steps under ours (the race that
        # failed a build with "imagedb/content/sha256/...: no such file or directory")
        kept = set(steps(docker_client, builder.tools_image(base_image).id))  # base's too
        if cache_level == "env":
            kept |= set(steps(docker_client, env.id))
        ours = set(steps(docker_client, instance.id)) - kept
        assert ours and not ours & set(other_steps.split(","))
        for step in ours:  # all still there
            docker_client.images.get(step)
        # ours is still there, and runs
        out = docker_client.containers.run(
            instance.tag, ["python3", "hello.py"], remove=True, network_mode="none"
        )
        assert out == b"hello from the testbed\n"
        assert docker_client.images.get(env.tag).id == env.id
        if cache_level == "env":  # a kept layer is shared: one tag for every process
            assert other_env == env.tag
    finally:
        builder.release(env, instance)
    assert not docker_client.images.list(name=instance.tag)


def test_two_builds_of_a_dropped_layer_in_one_process_are_apart(
    docker_client: Any, base_image: str
) -> None:
    """A PR validated twice at once by one worker (a record delivered again after a restart):
    dropping one build's image leaves the other's, with every step under it, in place."""
    builder = EnvironmentBuilder(docker_client, base_image, "env")
    env = builder.env_image("swe-stream-test/layers", RECIPE)
    first = builder.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
    second = builder.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
    try:
        assert first.tag != second.tag and second.built
        kept = set(steps(docker_client, env.id))
        first_steps = set(steps(docker_client, first.id)) - kept
        second_steps = set(steps(docker_client, second.id)) - kept
        assert first_steps and second_steps and not first_steps & second_steps
        builder.release(env, first)
        assert not docker_client.images.list(name=first.tag)
        for step in second_steps:
            docker_client.images.get(step)
        out = docker_client.containers.run(
            second.tag, ["python3", "hello.py"], remove=True, network_mode="none"
        )
        assert out == b"hello from the testbed\n"
    finally:
        builder.release(env, first)
        builder.release(env, second)
    assert not docker_client.images.list(name=second.tag)


def test_kept_layers_are_shared_and_a_long_task_id_fits_a_tag(
    docker_client: Any, base_image: str
) -> None:
    builder = EnvironmentBuilder(docker_client, base_image, "instance")
    env = builder.env_image("swe-stream-test/layers", RECIPE)
    long_id = "swe-stream-test__" + "x" * 300
    instance = builder.instance_image(long_id, env, tree(), RECIPE)
    try:
        assert process_tag() not in instance.tag and process_tag() not in env.tag
        assert len(instance.tag.split(":", 1)[1]) == 128
        again = EnvironmentBuilder(docker_client, base_image, "instance")
        reused = again.instance_image(long_id, env, tree(), RECIPE)
        assert (reused.tag, reused.id, reused.built) == (instance.tag, instance.id, False)
    finally:
        docker_client.images.remove(instance.tag, force=True)


def test_an_image_is_one_layer_over_its_parent_and_a_rebuild_shares_none_of_it(
    docker_client: Any, base_image: str
) -> None:
    """Reuse is by tag only: no step is taken from the engine's build cache (whose probe reads
    the parent's children, which another process may be removing: 'unable to find image
    "sha256:..."' in 6 of 348 classic builds here, with three processes building and dropping
    layers on one parent). An image is its parent plus one committed layer."""
    builder = EnvironmentBuilder(docker_client, base_image, "instance")
    env = builder.env_image("swe-stream-test/layers", RECIPE)
    instance_id = f"swe-stream-test__cache-{process_tag()}"
    first = builder.instance_image(instance_id, env, tree(), RECIPE)
    try:
        parent = docker_client.api.history(env.id)
        assert len(docker_client.api.history(first.id)) == len(parent) + 1
        docker_client.images.remove(first.tag)
        second = builder.instance_image(instance_id, env, tree(), RECIPE)
        assert second.built and second.tag == first.tag and second.id != first.id
        shown = docker_client.containers.run(
            second.tag, ["bash", "-c", "python hello.py && git log --format=%s"], remove=True
        )
        assert shown.decode().split() == ["hello", "from", "the", "testbed", "base"]
    finally:
        docker_client.images.remove(first.tag, force=True)


# a requirement no other test installs, so the cache volume starts without it
CACHED = "iniconfig==1.1.1"


@pytest.mark.parametrize("cached", [True, False], ids=["shared-cache", "no-cache"])
def test_a_second_build_takes_what_the_first_downloaded_from_the_shared_cache(
    docker_client: Any, base_image: str, cached: bool
) -> None:
    """Two env images of two repositories needing one wheel: with the shared package cache
    the second build prepares nothing (uv found it in the cache), without one it downloads it
    again."""
    volume = f"swe-stream-test-cache-{process_tag()}" if cached else ""
    builder = EnvironmentBuilder(docker_client, base_image, "base", package_cache=volume)
    images, outputs = [], []
    try:
        for repo in ("swe-stream-test/cache-a", "swe-stream-test/cache-b"):
            recipe = InstallRecipe("python", env_commands=(f"uv pip install {CACHED}",))
            env = builder.env_image(repo, recipe)
            images.append(env)
            assert env.built and builder.last_build is not None
            outputs.append(builder.last_build.records[-1].output_tail)
            assert "Installed 1 package" in outputs[-1], outputs[-1]
        assert "Prepared 1 package" in outputs[0]
        assert ("Prepared 1 package" in outputs[1]) is not cached, outputs[1]
        # what uv installed is compiled in the layer: a run imports it without compiling
        # (the images write no bytecode at run time)
        with Sandbox(docker_client, images[-1].tag, workdir="/") as box:
            found = box.run(
                "python -c 'import iniconfig, os; print(os.path.isfile(iniconfig.__cached__))'",
                timeout=60,
            )
            assert found.stdout.strip() == "True", found
    finally:
        for env in images:
            builder.release(env, None)
        if volume:
            docker_client.volumes.get(volume).remove(force=True)


# a process builds a task's layers at cache level "base" (both dropped after the task), says
# which, and dies before its task ends
DYING_PROCESS = """
import os, sys

import docker

from streams.evaluation.environments import EnvironmentBuilder
from tests.streams.evaluation.test_environments import RECIPE, tree

builder = EnvironmentBuilder(docker.from_env(), sys.argv[1], "base")
env = builder.env_image("swe-stream-test/layers", RECIPE)
instance = builder.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
print(env.tag, instance.tag, flush=True)
os.kill(os.getpid(), 9)
"""


def test_images_of_a_process_that_died_are_removed_by_the_next_one(
    docker_client: Any, base_image: str
) -> None:
    ours = EnvironmentBuilder(docker_client, base_image, "base")
    env = ours.env_image("swe-stream-test/layers", RECIPE)
    instance = ours.instance_image("swe-stream-test__layers-1", env, tree(), RECIPE)
    try:
        dying = subprocess.run(
            [sys.executable, "-c", DYING_PROCESS, base_image],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=300,
            check=False,
        )
        assert dying.returncode == -9, dying.stderr[-3000:]
        left = dying.stdout.split()
        assert len(left) == 2
        for tag in left:  # left behind
            docker_client.images.get(tag)
        # (not how many this call counted: other test processes of the host remove dead
        # processes' images too, as any validator does when it first uses Docker)
        remove_orphan_images(docker_client)
        # gone, by this call or by another process's removal still ending
        deadline = time.monotonic() + 15
        while any(docker_client.images.list(name=t) for t in left) and time.monotonic() < deadline:
            time.sleep(0.2)
        for tag in left:
            assert not docker_client.images.list(name=tag), tag
        # a live process's images, dropped layers included, are left alone
        assert docker_client.images.get(instance.tag).id == instance.id
        assert docker_client.images.get(env.tag).id == env.id
        assert docker_client.images.get(base_image)
    finally:
        ours.release(env, instance)


# a process that builds (or reuses) a kept env layer at a given moment, and says which
AT_ONCE = """
import sys, time

import docker

from streams.evaluation.environments import EnvironmentBuilder
from tests.streams.evaluation.test_environments import RECIPE

builder = EnvironmentBuilder(docker.from_env(), sys.argv[1], "env")
time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
env = builder.env_image(sys.argv[2], RECIPE)
print(env.tag, env.id, env.built)
"""


def test_processes_wanting_one_kept_layer_at_once_build_it_once(
    docker_client: Any, base_image: str
) -> None:
    """Workers of one host starting on PRs of the same repository: one builds its env image,
    the others wait for it and reuse it (without the build cache, each would otherwise build
    its own and all but the last would be left untagged)."""
    repo = f"swe-stream-test/once-{process_tag()}"
    start = time.time() + 3  # after every process has imported docker
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", AT_ONCE, base_image, repo, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    results = [out.split() for out, _ in outputs]
    try:
        for process, (_, err) in zip(processes, outputs, strict=True):
            assert process.returncode == 0, err[-3000:]
        assert len({tag for tag, _, _ in results}) == 1
        assert len({image_id for _, image_id, _ in results}) == 1  # one image
        assert sorted(built for _, _, built in results) == ["False", "False", "True"]
    finally:
        for image_id in {result[1] for result in results if len(result) == 3}:
            docker_client.images.remove(image_id, force=True)


def test_a_build_lock_that_cannot_be_made_leaves_the_build_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_directory = tmp_path / "tmp"
    not_a_directory.write_text("")  # where the lock directory should go
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_directory))
    entered = []
    with _build_lock("swe-stream/env:x"):
        entered.append(True)
    assert entered and "building swe-stream/env:x without a lock" in caplog.text
    caplog.clear()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with _build_lock("swe-stream/env:x"):  # and where it can be, it is
        entered.append(True)
    assert len(entered) == 2 and "without a lock" not in caplog.text
    assert len(list(tmp_path.glob("swe-stream-builds-*/*.lock"))) == 1


def test_a_build_shows_its_layer_step_and_time_while_it_runs(
    docker_client: Any,
    base_image: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The build reports to the progress registry (what the live view draws) and, through it,
    logs a step line every few seconds of a long step, and its end (its start at DEBUG)."""
    monkeypatch.setattr(progress, "STEP_LINE_SECONDS", 0.5)
    caplog.set_level(logging.INFO, logger="swe_stream.progress")
    seen: list[progress.BuildState] = []
    report = PROGRESS.build_output

    def spy(build_id: int, line: str) -> None:  # what a view reads while the build runs
        report(build_id, line)
        seen.extend(PROGRESS.snapshot().builds)

    monkeypatch.setattr(PROGRESS, "build_output", spy)
    slow = "for i in 1 2 3 4; do echo resolving part $i; sleep 0.5; done"
    recipe = InstallRecipe("python", env_commands=("true", slow))
    builder = EnvironmentBuilder(docker_client, base_image, "base", package_cache="")
    env = builder.env_image(f"swe-stream-test/progress-{process_tag()}", recipe)
    try:
        messages = [r.getMessage() for r in caplog.records if r.name == "swe_stream.progress"]
        assert f"image build started: env {env.tag} (2 steps)" not in messages  # DEBUG
        running = [m for m in messages if m.startswith(f"image build: env {env.tag} step 2/2 ")]
        assert running and any("resolving part" in m for m in running), messages
        assert any(m.startswith(f"image built: env {env.tag} in ") for m in messages)
        ours = [b for b in seen if b.tag == env.tag]
        assert ours and {(b.layer, b.step, b.steps, b.command) for b in ours} == {
            ("env", 2, 2, slow)
        }
        assert ours[-1].output == "resolving part 4"
        assert env.tag not in {b.tag for b in PROGRESS.snapshot().builds}  # over: gone
    finally:
        builder.release(env, None)


def test_a_build_container_a_dead_process_left_is_removed_and_its_images_children_are_not(
    docker_client: Any, base_image: str
) -> None:
    """A process killed mid-build leaves its build container running; the next process
    removes it by its builder label. An image a build committed carries that label emptied,
    so the sandboxes later made from it are never taken for a dead builder's."""
    builder = EnvironmentBuilder(docker_client, base_image, "base", package_cache="")
    env = builder.env_image(f"swe-stream-test/builder-{process_tag()}", RECIPE)
    dead = f"{socket.gethostname()}:999999999:-"  # no such pid
    left = docker_client.containers.create(
        env.tag, ["sleep", "infinity"], labels={BUILDER_LABEL: dead}, log_config={"type": "none"}
    )
    try:
        left.start()
    except docker.errors.APIError as error:
        # another test process's remove_orphans removed it between its creation and its
        # start (it is labelled with a dead builder): what this test shows, done early
        if error.status_code != 409:
            raise
    try:
        labels = docker_client.images.get(env.tag).labels
        assert labels.get(BUILDER_LABEL) == ""  # emptied on the committed image
        with Sandbox(docker_client, env.tag, workdir="/") as box:
            # gone, whoever removed it: other test processes of the host remove orphans too
            remove_orphans(docker_client)
            # another process's removal of it may still be in progress (the engine lists a
            # container until its removal ends, and refuses a second removal with a 409)
            deadline = time.monotonic() + 30
            remaining = {c["Id"] for c in docker_client.api.containers(all=True)}
            while left.id in remaining and time.monotonic() < deadline:
                time.sleep(0.5)
                remaining = {c["Id"] for c in docker_client.api.containers(all=True)}
            assert left.id not in remaining
            assert box.container_id in remaining  # made from a built image: left alone
    finally:
        with contextlib.suppress(Exception):
            left.remove(force=True)
        builder.release(env, None)
