"""Fixtures of the stage tests: the real fixture hours as the records ingest publishes."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agents.ingest_scan import HourScanner
from schemas import (
    RawPullRequestEvent,
)
from streams.kafka.broker import free_port
from streams.kafka.client import read_topic_to_end
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import worker_env


@cache
def _scan(path: Path) -> tuple[RawPullRequestEvent, ...]:
    hour = path.name.split(".", 1)[0]
    scanner = HourScanner(hour, pipeline_version=1)
    outputs = scanner.feed(path.read_bytes()) + scanner.close()
    return tuple(RawPullRequestEvent.from_json(o[1]) for o in outputs if isinstance(o, tuple))


@pytest.fixture(scope="session")
def hour_events(fixtures_dir: Path) -> Callable[[str], list[RawPullRequestEvent]]:
    """``hour_events("2015-01-01-0")`` (or ``"2015-01-01-0.slim"``): the hour's records."""

    def load(name: str) -> list[RawPullRequestEvent]:
        return list(_scan(fixtures_dir / "gharchive" / f"{name}.json.gz"))

    return load


@pytest.fixture(scope="session")
def hour_json(fixtures_dir: Path) -> Callable[[str], list[dict[str, Any]]]:
    """The hour's PullRequestEvents as GH Archive wrote them (for independent expectations)."""

    def load(name: str) -> list[dict[str, Any]]:
        path = fixtures_dir / "gharchive" / f"{name}.json.gz"
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            events = [json.loads(line) for line in lines]
        return [e for e in events if e["type"] == "PullRequestEvent"]

    return load


def start_stage_worker(
    bootstrap: str,
    stages: str,
    log: Path,
    env: dict[str, str] | None = None,
    app_id: str | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """``swe-stream worker --stages STAGES`` on the broker, a fresh consumer group (or
    ``app_id``'s: a restarted worker), logging to ``log``; returns the process and its metrics
    port (stop it with ``stop``)."""
    metrics_port = free_port()
    app_id = app_id or f"{stages.replace(',', '-')}-{os.getpid()}-{time.monotonic_ns()}"
    command = [
        SWE_STREAM, "worker", "--bootstrap", bootstrap, "--stages", stages,
        "--app-id", app_id,
        "--web-port", str(free_port()), "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=worker_env() | (env or {}),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, metrics_port


def ingest_file(bootstrap: str, path: Path, *extra: str) -> None:
    """``swe-stream ingest --source PATH`` into the broker; fails the test if it fails."""
    command = [SWE_STREAM, "ingest", "--bootstrap", bootstrap, "--source", str(path), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


async def wait_for(
    bootstrap: str,
    topic: str,
    count: int,
    process: subprocess.Popen[bytes],
    log: Path,
    timeout: float = 120,
) -> list[bytes]:
    """At least ``count`` values of ``topic``; fails early if the worker dies."""
    deadline = time.monotonic() + timeout
    values: list[bytes] = []
    while time.monotonic() < deadline:
        values = [r.value async for r in read_topic_to_end(bootstrap, topic)]
        if len(values) >= count:
            return values
        if process.poll() is not None:
            pytest.fail(f"worker exited:\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.5)
    pytest.fail(f"{topic}: {len(values)} < {count} records\n{log.read_text()[-3000:]}")
