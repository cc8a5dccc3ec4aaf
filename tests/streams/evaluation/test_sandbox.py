"""The sandbox: commands run in a real container (the offline base image) with a timeout,
separate stdout / stderr, bounded output and bounded files."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from streams.evaluation.sandbox import KILLED, Limits, Sandbox, remove_orphans


@pytest.fixture
def box(docker_client: Any, base_image: str) -> Iterator[Sandbox]:
    with Sandbox(docker_client, base_image, Limits(512, 1.0, 64), workdir="/") as sandbox:
        yield sandbox


@pytest.mark.docker
def test_exit_code_and_streams_come_back_apart(box: Sandbox) -> None:
    result = box.run("echo out; echo err >&2; exit 3", timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.output == "out\nerr\n" and not result.timed_out
    assert 0 <= result.inner_seconds <= result.seconds


@pytest.mark.docker
def test_a_command_past_its_timeout_is_killed(box: Sandbox) -> None:
    result = box.run("echo started; sleep 60", timeout=2)
    assert result.timed_out and result.exit_code == KILLED
    assert result.stdout == "started\n"  # what it printed before it was killed is kept
    assert result.seconds < 30


@pytest.mark.docker
def test_a_background_process_does_not_hold_the_command_open(box: Sandbox) -> None:
    started = time.monotonic()
    result = box.run("(sleep 120; echo late) & echo detached", timeout=60)
    assert result.exit_code == 0 and result.stdout == "detached\n"
    assert time.monotonic() - started < 30  # not the 120 s of the background sleep


@pytest.mark.docker
def test_endless_output_comes_back_as_its_first_and_last_bytes(box: Sandbox) -> None:
    result = box.run("seq 1 100000; echo tail-marker", timeout=30, output_limit=2000)
    head, cut, tail = result.stdout.partition("\n[... ")
    assert cut and head.startswith("1\n2\n3\n") and len(head) == 1000
    produced = len("".join(f"{i}\n" for i in range(1, 100001))) + len("tail-marker\n")
    assert tail.startswith(f"{produced - 2000} bytes cut ...]\n")
    assert tail.endswith("100000\ntail-marker\n")
    assert len(result.stdout) < 2100


@pytest.mark.docker
def test_no_file_may_grow_past_the_file_limit(box: Sandbox) -> None:
    result = box.run("yes > /tmp/big", timeout=30, file_limit=1 << 20)
    assert result.exit_code != 0 and not result.timed_out
    assert "File size limit exceeded" in result.stderr
    size = box.run("stat -c %s /tmp/big", timeout=10).stdout.strip()
    assert int(size) == 1 << 20


@pytest.mark.docker
def test_a_kill_before_the_timeout_is_not_a_timeout(box: Sandbox) -> None:
    result = box.run("kill -KILL $$", timeout=30)  # as the memory limit's OOM killer does
    assert result.exit_code == KILLED and not result.timed_out and result.seconds < 20


@pytest.mark.docker
@pytest.mark.parametrize("ending", ["kill", "remove"])
def test_a_container_that_ends_under_a_command_ends_the_command_and_the_next(
    docker_client: Any, base_image: str, ending: str
) -> None:
    """The memory limit's OOM killer may pick the container's PID 1 (a disk filler's page
    cache): the engine then drops the running exec, whose inspection may answer 404 (a CI
    run's harness made that the engine's own error, test_error; the race is not forced here).
    The command comes back killed, and the next one too, saying why."""
    with Sandbox(docker_client, base_image, Limits(512, 1.0, 64), workdir="/") as box:
        end = {"kill": box.container.kill, "remove": lambda: box.container.remove(force=True)}
        ender = threading.Timer(2.0, end[ending])
        ender.start()
        try:
            result = box.run("echo started; sleep 60", timeout=30)
        finally:
            ender.cancel()
        assert result.exit_code == KILLED and not result.timed_out, result
        assert result.seconds < 20, result
        after = box.run("git diff", timeout=30)
        assert after.exit_code == KILLED, after
        said = "swe-stream: the container ended while the command ran ("
        assert after.output.startswith(said), after.output
        # what the engine said of it: killed, or being removed (or gone)
        assert any(state in after.output for state in ("exit code 137", "removed", "removing"))


@pytest.mark.docker
def test_a_sandbox_leaves_no_volume_of_its_image_behind(
    docker_client: Any, base_image: str
) -> None:
    """An image that declares a volume (the env and instance images: the package cache's
    mount point) gives each container an anonymous volume; the sandbox removes it with the
    container (one was left per test run: 11,752 here after some days of tests)."""
    builder = docker_client.containers.create(base_image, ["true"])
    try:
        image = builder.commit("swe-stream-test/volume", "declared",
                               changes=["VOLUME /var/cache/swe-stream"])  # fmt: skip
    finally:
        builder.remove(force=True, v=True)
    try:
        with Sandbox(docker_client, image.id, Limits(256, 0.5, 32), workdir="/") as sandbox:
            assert sandbox.run("echo cached > /var/cache/swe-stream/x", timeout=30).exit_code == 0
            assert sandbox.container is not None
            sandbox.container.reload()
            (volume,) = [m["Name"] for m in sandbox.container.attrs["Mounts"]
                         if m["Type"] == "volume"]  # fmt: skip
        assert volume not in {v.name for v in docker_client.volumes.list()}
    finally:
        docker_client.images.remove(image.id, force=True)


@pytest.mark.docker
def test_a_read_only_sandbox_writes_only_to_memory_bounded_places(
    docker_client: Any, base_image: str
) -> None:
    limits = Limits(256, 1.0, 64, writable_mb=128)
    with Sandbox(docker_client, base_image, limits, workdir="/usr/share/doc") as box:
        # the working directory holds the image's files, writable; files go in as usual
        assert box.run("test -s /usr/share/doc/bash/copyright", timeout=10).exit_code == 0
        box.put_file("/run/swe-stream/note.txt", "hello")
        written = box.run("cat /run/swe-stream/note.txt && touch new /tmp/t", timeout=10)
        assert (written.exit_code, written.stdout) == (0, "hello\n")
        assert box.run("touch /etc/x", timeout=10).exit_code != 0  # the rest is read-only
        # many files under the per-file cap: the tmpfs, not the host's disk, runs out
        filled = box.run(
            "for i in $(seq 8); do fallocate -l 50M /tmp/f$i || exit 9; done", timeout=30
        )
        assert filled.exit_code == 9 and "No space left on device" in filled.stderr
        # nothing it prints to PID 1's output is stored by Docker
        box.run("head -c 10M /dev/zero > /proc/1/fd/1", timeout=30)
        box.container.reload()
        assert box.container.attrs["HostConfig"]["LogConfig"]["Type"] == "none"
        container_id = box.container_id
    assert docker_client.containers.list(all=True, filters={"id": container_id}) == []


@pytest.mark.docker
def test_containers_of_a_killed_process_are_removed_by_the_next_one(
    docker_client: Any, base_image: str, box: Sandbox
) -> None:
    import signal
    import subprocess
    import sys

    # a process makes a sandbox, says which, and is killed before it can remove it
    script = (
        "import docker, sys, time\n"
        "from streams.evaluation.sandbox import Limits, Sandbox\n"
        "box = Sandbox(docker.from_env(), sys.argv[1], Limits(256, 0.5, 32), workdir='/')\n"
        "box.__enter__()\n"
        "print(box.container_id, flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, base_image], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    orphan = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert docker_client.containers.get(orphan).status == "running"  # left behind

    remove_orphans(docker_client)  # (another test process of the host may have done it first)
    # (the low-level list: other tests' containers may come and go meanwhile)
    remaining = {c["Id"] for c in docker_client.api.containers(all=True)}
    assert orphan not in remaining
    assert box.container_id in remaining  # this live process's sandbox is left alone


@pytest.mark.docker
def test_workers_removing_the_same_orphans_at_once_all_succeed(
    docker_client: Any, base_image: str
) -> None:
    """Several workers start together after a crash: each lists the orphans and removes them,
    and one may remove a container another has just listed. None of them may fail for it."""
    import socket
    import threading

    from streams.evaluation.sandbox import OWNER_LABEL, listed_containers

    dead_owner = f"{socket.gethostname()}:{2**22 + 1}:-"  # above pid_max: never alive
    orphans = {
        docker_client.api.create_container(base_image, ["true"], labels={OWNER_LABEL: dead_owner})[
            "Id"
        ]
        for _ in range(24)
    }
    removed: list[int] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            removed.append(remove_orphans(docker_client))
        except BaseException as error:  # the race this test is about
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    # every worker finished, and every orphan is gone (how many each one counts is not
    # checked, not even that one counted any: the engine may answer two removals of one
    # container both with success, and other test processes of this host remove dead owners'
    # containers too, any validator when it first uses Docker: CI saw all six count none)
    assert len(removed) == len(threads)
    left = {c["Id"] for c in listed_containers(docker_client, f"{OWNER_LABEL}={dead_owner}")}
    assert left == set()
    assert not orphans & {c["Id"] for c in docker_client.api.containers(all=True)}


@pytest.mark.docker
def test_images_removed_while_they_are_listed_do_not_fail_the_listing(
    docker_client: Any, base_image: str
) -> None:
    """Other processes remove their dropped images at any moment: listing a repository's tags
    must not fail when an image listed is gone before it is looked at (the high-level list
    inspects each image it lists, and failed a CI run for it)."""
    import secrets
    import threading

    import docker.errors

    from streams.evaluation.sandbox import listed_image_tags

    repository = f"swe-stream-test/listing-{secrets.token_hex(4)}"
    container = docker_client.api.create_container(base_image, ["true"])["Id"]
    try:
        tags = []
        for number in range(16):  # distinct images: each commit carries its own label
            docker_client.api.commit(
                container, repository, f"t{number}", changes=[f"LABEL n={number}"]
            )
            tags.append(f"{repository}:t{number}")
    finally:
        docker_client.api.remove_container(container, force=True)
    assert {tag for _, found in listed_image_tags(docker_client, repository) for tag in found} == (
        set(tags)
    )
    errors: list[BaseException] = []
    done = threading.Event()

    def lister() -> None:
        while not done.is_set():
            try:
                listed_image_tags(docker_client, repository)
            except BaseException as error:  # the race this test is about
                errors.append(error)
                return

    threads = [threading.Thread(target=lister) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for tag in tags:
            with contextlib.suppress(docker.errors.NotFound):
                docker_client.api.remove_image(tag, force=True)
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
    assert listed_image_tags(docker_client, repository) == []
