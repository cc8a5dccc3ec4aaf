"""A worker run as a subprocess by the tests: its environment, its stop, its metrics, and the
shout topics (``tests.fakes.shout_stage``) it reads and writes on the embedded broker; and
``swe-stream broker``, the embedded broker as a process of its own."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.kafka.broker import free_port
from streams.offline.world import OfflineWorld
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.shout_stage import HEARD, SHOUTED, Utterance


def worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_STREAM_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["SWE_STREAM_WORKER_DATA_DIR"] = str(
        Path(os.environ.get("TMPDIR", "/tmp")) / "swe-stream-test"
    )
    return env


def stop(process: subprocess.Popen[Any]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def stop_all(processes: dict[str, subprocess.Popen[Any]]) -> dict[str, int]:
    """SIGTERM to each process in the order given (a broker after its clients), every one
    of them even when one does not stop: their exit codes (-9: it had to be killed)."""
    codes = {}
    for name, process in processes.items():
        try:
            codes[name] = process.returncode if process.poll() is not None else stop(process)
        except subprocess.TimeoutExpired:
            codes[name] = process.wait()
        if process.stdout is not None:
            process.stdout.close()
    return codes


def start_broker_command(
    stderr_path: Path | None = None, port: int | None = None
) -> tuple[subprocess.Popen[str], str, int]:
    """``swe-stream broker [--port P]`` once its broker answers: the command, its bootstrap
    and the broker's pid."""
    command = [SWE_STREAM, "broker"] + (["--port", str(port)] if port else [])
    with open(stderr_path or os.devnull, "w") as stderr:  # the child keeps its own copy
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert process.stdout is not None
    bootstrap = process.stdout.readline().split("bootstrap: ")[1].strip()
    pid = int(process.stdout.readline().split("broker pid: ")[1])
    return process, bootstrap, pid


def wait_for_metrics(port: int, process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"worker exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
                return reply.read().decode()
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"worker never served /metrics:\n{log.read_text()[-3000:]}")


async def produce(bootstrap: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(HEARD.name, key=key, value=value)
    finally:
        await producer.stop()


async def read(
    bootstrap: str,
    topic: str,
    count: int,
    worker: subprocess.Popen[bytes] | None = None,
    timeout: float = 120,
    log: Path | None = None,
) -> list[tuple[bytes, bytes]]:
    """At least ``count`` records of ``topic``; fails early if ``worker`` dies meanwhile
    (with the end of its ``log``)."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    found: list[tuple[bytes, bytes]] = []
    try:
        async with asyncio.timeout(timeout):
            while len(found) < count:
                if worker is not None and worker.poll() is not None:
                    said = log.read_text(errors="replace")[-6000:] if log else ""
                    raise AssertionError(f"worker exited with {worker.returncode}\n{said}")
                batch = await consumer.getmany(timeout_ms=500)
                found += [(m.key, m.value) for msgs in batch.values() for m in msgs]
    finally:
        await consumer.stop()
    return found


async def create_test_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(HEARD.name, 4, 1),
                NewTopic(HEARD.dlq_name, 4, 1),
                NewTopic(SHOUTED.name, 4, 1),
            ]
        )
    finally:
        await admin.close()


# the offline world's task, and a worker's environment pointed at that world
TASK = "swe-stream-demo-units-1"


def env_for(world: OfflineWorld, data: Path) -> dict[str, str]:
    env = {k: v for k, v in worker_env().items() if k != "OPENROUTER_API_KEY"}
    return env | {
        "SWE_STREAM_GHARCHIVE_BASE_URL": world.gharchive_url,
        "SWE_STREAM_GITHUB_API_URL": world.github_url,
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": world.git_url_template,
        "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
        "SWE_STREAM_WORKER_DATA_DIR": str(data),
        "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
        "SWE_STREAM_SCORE_BACKEND": "heuristic",
        # one test run with the fix, not three: what these runs are about is the pipeline;
        # dropping flaky tests over repeated runs is the prover's tests' and the demos'
        "SWE_STREAM_VALIDATION_RUNS": "1",
    }


def start_shout_worker(
    module: str, bootstrap: str, utterances: list[Utterance], env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str, int]:
    """The shout app of ``module`` as a worker in a group of its own, after ``utterances``
    were produced; its process, group and metrics port."""
    asyncio.run(create_test_topics(bootstrap))
    asyncio.run(produce(bootstrap, [(u.key.encode(), u.to_json()) for u in utterances]))
    group = f"{module.rsplit('.', 1)[-1]}-{os.getpid()}-{time.monotonic_ns()}"
    metrics_port = free_port()
    process = launch_shout_worker(module, bootstrap, group, env, log, metrics_port)
    return process, group, metrics_port


def restart_shout_worker(
    module: str, bootstrap: str, group: str, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """The shout app of ``module`` started again in ``group``, appending to ``log``."""
    return launch_shout_worker(module, bootstrap, group, env, log, free_port())


def launch_shout_worker(
    module: str, bootstrap: str, group: str, env: dict[str, str], log: Path, metrics_port: int
) -> subprocess.Popen[bytes]:
    command = [
        SWE_STREAM, "worker", "--app", f"{module}:app",
        "--bootstrap", bootstrap, "--app-id", group,
        "--web-port", str(free_port()), "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, cwd=REPO_ROOT, env=worker_env() | env, stdout=out, stderr=out
        )
