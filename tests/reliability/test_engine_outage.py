"""The Docker engine goes away in the middle of a run, and comes back.

``swe-stream mine`` reaches the engine through a socket proxy the test controls (only this
process: other tests use the engine's own socket). At the run's first ``exec`` (a build step
or a test run in flight) the proxy cuts every connection and stops listening; the test waits
until the worker says it is waiting for the engine, keeps it away a few seconds more, then
restores it. The PR must still end with its true result: validated with the same
FAIL_TO_PASS / PASS_TO_PASS as without an outage, exported once, and no ledger entry or dead
letter says `failed`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from streams.offline.world import OfflineWorld
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.docker_proxy import DockerSocketProxy
from tests.workers import TASK, env_for

pytestmark = pytest.mark.docker

TESTS = "tests/test_temperature.py::"


def wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert process.poll() is None, log.read_text(errors="replace")[-4000:]
        assert time.monotonic() < deadline, f"no {text!r}:\n" + log.read_text()[-4000:]
        time.sleep(0.2)


def test_validation_waits_for_the_engine_and_ends_with_the_true_result(
    demo_world: OfflineWorld, tmp_path: Path
) -> None:
    world = demo_world
    proxy = DockerSocketProxy(tmp_path / "docker.sock")
    out, log = tmp_path / "out", tmp_path / "mine.log"
    env = env_for(world, tmp_path / "data") | {
        "DOCKER_HOST": proxy.url,
        "SWE_STREAM_WORKER_OUTAGE_BACKOFF_SECONDS": "0.5",
        "SWE_STREAM_WORKER_OUTAGE_MAX_BACKOFF_SECONDS": "2",
    }
    args = ["mine", "--once", "--from", world.hour, "-o", str(out), "--metrics-port", "0"]
    with open(log, "wb") as sink:
        mine = subprocess.Popen(
            [SWE_STREAM, *args, "--no-live"], cwd=REPO_ROOT, env=env, stdout=sink, stderr=sink
        )
    try:
        proxy.wait_for("POST", r"/exec/[^/]+/start$", timeout=420)
        proxy.cut()
        wait_for_line(log, "docker does not answer", mine, timeout=120)
        time.sleep(4)  # a few backoff rounds against the absent engine
        assert mine.poll() is None, log.read_text()[-4000:]
        proxy.restore()
        assert mine.wait(timeout=600) == 0, log.read_text()[-4000:]
    finally:
        if mine.poll() is None:
            mine.kill()
        proxy.close()
    said = log.read_text()
    assert "docker is back after" in said and "validate resumed" in said, said[-4000:]
    assert said.count("docker does not answer") == 1, said[-4000:]  # once per outage
    if "(tried again later)" in said:  # a container the cut engine could not remove
        assert "container(s) the engine would not remove earlier" in said, said[-4000:]

    # the true result: the same task as without an outage, exported once
    assert f"tasks exported: 1 (to {out})" in said
    (row,) = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert row["FAIL_TO_PASS"] == [TESTS + "test_fahrenheit_to_celsius"]
    assert sorted(row["PASS_TO_PASS"]) == [
        TESTS + "test_boiling_point",
        TESTS + "test_freezing_point",
    ]
    assert (out / TASK / "workspace.yaml").is_file()
    entries = [
        json.loads(line) for line in (out / ".swe-stream" / "ledger.jsonl").read_text().splitlines()
    ]
    # (PRs of the real hour the GitHub stand-in does not serve fail at enrich, as always)
    assert [e for e in entries if e["status"] == "failed" and e["stage"] != "enrich"] == []
    ours = [(e["stage"], e["status"]) for e in entries if e["repo"] == world.pull_request.repo.repo]
    assert ("validate", "accepted") in ours and ("export", "exported") in ours, ours
