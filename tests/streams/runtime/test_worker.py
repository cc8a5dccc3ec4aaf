"""A Faust worker, started as a subprocess against the embedded broker, consumes one topic
and produces transformed records to another; read back with plain aiokafka."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemas import DeadLetter, LedgerEntry
from streams.kafka.broker import free_port
from streams.kafka.topics import ALL_TOPICS
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.shout_stage import HEARD, SHOUTED, Utterance
from tests.workers import (
    create_test_topics,
    produce,
    read,
    stop,
    wait_for_metrics,
    worker_env,
)

pytestmark = pytest.mark.integration

GOOD = 20


@pytest.fixture
def worker_log(tmp_path: Path) -> Path:
    return tmp_path / "worker.log"


@pytest.fixture
def shout_worker(bootstrap: str, worker_log: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    asyncio.run(create_test_topics(bootstrap))
    metrics_port = free_port()
    command = [
        SWE_STREAM,
        "worker",
        "--app",
        "tests.fakes.shout_app:app",
        "--bootstrap",
        bootstrap,
        "--app-id",
        f"shout-{os.getpid()}-{time.monotonic_ns()}",
        "--web-port",
        str(free_port()),
        "--metrics-port",
        str(metrics_port),
    ]
    with open(worker_log, "wb") as log:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=worker_env(), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        yield process, metrics_port
    finally:
        if process.poll() is None:
            stop(process)


def test_worker_transforms_records_and_dead_letters_bad_ones(
    bootstrap: str, shout_worker: tuple[subprocess.Popen[bytes], int], worker_log: Path
) -> None:
    process, metrics_port = shout_worker
    good = [
        Utterance(pipeline_version=1, repo="octo/hello", number=n, text=f"hello {n}")
        for n in range(1, GOOD + 1)
    ]
    records = [(u.key.encode(), u.to_json()) for u in good]
    empty = Utterance(pipeline_version=1, repo="octo/hello", number=100, text="")
    boom = Utterance(pipeline_version=1, repo="octo/hello", number=101, text="boom")
    garbage = b'{"not": "an utterance"'
    records += [(empty.key.encode(), empty.to_json()), (boom.key.encode(), boom.to_json())]
    records += [(b"octo/hello#102", garbage)]
    asyncio.run(produce(bootstrap, records))

    try:
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, GOOD, process))
    except (AssertionError, TimeoutError):
        pytest.fail(f"no output from the worker:\n{worker_log.read_text()[-4000:]}")
    by_key = {key: Utterance.from_json(value) for key, value in shouted}
    assert len(shouted) == GOOD, "each good record is transformed exactly once"
    assert {k.decode(): u.text for k, u in by_key.items()} == {u.key: u.text.upper() for u in good}

    letters = [DeadLetter.from_json(v) for _, v in asyncio.run(read(bootstrap, HEARD.dlq_name, 2))]
    assert sorted(letter.error_type for letter in letters) == ["RuntimeError", "ValidationError"]
    assert {letter.original_value() for letter in letters} == {boom.to_json(), garbage}

    ledger = [
        LedgerEntry.from_json(v) for _, v in asyncio.run(read(bootstrap, "swe.ledger", GOOD + 2))
    ]
    statuses = {entry.number: (entry.status, entry.reason) for entry in ledger}
    assert statuses[100] == ("rejected", "empty-text")
    assert statuses[101][0] == "failed"
    assert all(statuses[n] == ("accepted", None) for n in range(1, GOOD + 1))

    exposition = wait_for_metrics(metrics_port, process, worker_log)
    assert f'swe_stream_stage_records_in_total{{stage="shout"}} {GOOD + 3}.0' in exposition
    assert f'swe_stream_stage_records_out_total{{stage="shout"}} {GOOD}.0' in exposition
    assert 'swe_stream_dlq_records_total{topic="test.heard"} 2.0' in exposition
    assert stop(process) == 0


def test_faust_cli_runs_the_pipeline_app(bootstrap: str, worker_log: Path) -> None:
    """``faust -A streams.runtime.worker_app worker`` works too, configured from the environment."""
    metrics_port = free_port()
    env = worker_env() | {
        "SWE_STREAM_KAFKA_BOOTSTRAP": bootstrap,
        "SWE_STREAM_KAFKA_IDEMPOTENCE": "off",
        "SWE_STREAM_KAFKA_REBALANCE_TIMEOUT_SECONDS": "3",
        "SWE_STREAM_WORKER_APP_ID": f"faust-cli-{time.monotonic_ns()}",
        "SWE_STREAM_WORKER_WEB_PORT": str(free_port()),
        "SWE_STREAM_WORKER_METRICS_PORT": str(metrics_port),
    }
    faust = str(Path(sys.executable).with_name("faust"))
    with open(worker_log, "wb") as log:
        process = subprocess.Popen(
            [faust, "-A", "streams.runtime.worker_app", "worker", "-l", "info"],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        exposition = wait_for_metrics(metrics_port, process, worker_log)
        assert "swe_stream_stage_records_in_total" in exposition
    finally:
        assert stop(process) == 0, worker_log.read_text()[-3000:]


def test_worker_on_its_own_embedded_broker_stops_cleanly_on_ctrl_c(worker_log: Path) -> None:
    """The README's main command: no --bootstrap, then Ctrl-C (SIGINT to the whole group)."""
    from tests.streams.kafka.test_broker import gone, tansu_pids

    for _ in range(3):  # a port free_port() chose can be taken before the worker binds it
        metrics_port = free_port()
        command = [
            SWE_STREAM,
            "worker",
            "--web-port",
            str(free_port()),
            "--metrics-port",
            str(metrics_port),
            "--app-id",
            f"ctrl-c-{time.monotonic_ns()}",
        ]
        with open(worker_log, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=worker_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, like a shell job
            )
        deadline = time.monotonic() + 20
        while process.poll() is None and time.monotonic() < deadline:
            said = worker_log.read_text(errors="replace")
            if "Address already in use" in said or "Worker ready" in said:
                break
            time.sleep(0.2)
        if "Address already in use" not in worker_log.read_text(errors="replace"):
            break
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    try:
        wait_for_metrics(metrics_port, process, worker_log)
        brokers = tansu_pids(parent=process.pid)
        assert len(brokers) == 1, "the worker started exactly one embedded broker"
        time.sleep(6)  # let the consumer group settle, as a user would before Ctrl-C
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    text = worker_log.read_text()
    assert f"topics ready: {len(ALL_TOPICS)} created" in text
    assert "[ERROR]" not in text, text[-3000:]
    assert all(gone(pid) for pid in brokers), "broker outlived the worker"
