"""Always-on on one machine loses nothing: ``swe-stream run`` with no cluster named starts
Apache Kafka with its storage in the worker's data directory; killed with SIGKILL mid-run and
started again, it finds every topic and every record it had, and does not ingest again the
hours it had finished."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from schemas import LedgerEntry
from streams.core.settings import KafkaSettings
from streams.kafka.apache import metadata_broker_count
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.offsets import topic_bounds
from streams.kafka.topics import ALL_TOPICS, GHARCHIVE_HOURS, LEDGER, PULL_REQUEST_EVENTS
from tests.conftest import REPO_ROOT, SWE_STREAM, start_kafka
from tests.fakes.gharchive_server import FakeGHArchive
from tests.fakes.github_server import serve_github, serve_hour
from tests.reliability.pipeline_runs import scan
from tests.workers import worker_env

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

HOURS = ("2015-01-01-0", "2015-01-01-1")


def run_command(data: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [SWE_STREAM, "run", "--from", "2015-01-01T00", "--no-live", "--metrics-port", "0",
             "-o", str(data.parent / "out")],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


def node_of(data: Path) -> tuple[int, list[int]]:
    """The local Kafka's port and pids, as its storage's record says (0, [] before one)."""
    try:
        state = json.loads((data / "kafka" / "cluster.json").read_text())
        return int(state["nodes"][0]["port"]), [int(pid) for pid in state["pids"]]
    except (OSError, ValueError, KeyError, IndexError):
        return 0, []


def bootstrap_of(
    data: Path, run: subprocess.Popen[bytes], log: Path, earlier: int = 0, timeout: float = 180
) -> str:
    """The local Kafka's bootstrap once its node (not the ``earlier`` one) answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert run.poll() is None, log.read_text()[-4000:]
        port, pids = node_of(data)
        fresh = bool(pids) and earlier not in pids
        if fresh and port and metadata_broker_count("127.0.0.1", port) == 1:
            return f"127.0.0.1:{port}"
        time.sleep(0.5)
    pytest.fail(f"run's Kafka never answered:\n{log.read_text()[-4000:]}")


async def snapshot(bootstrap: str) -> dict[str, int]:
    """Records per catalog topic (end minus start of each partition)."""
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        present = await admin.partitions()
    counts = {}
    for spec in ALL_TOPICS:
        if spec.name in present:
            bounds = await topic_bounds(bootstrap, spec.name)
            counts[spec.name] = sum(end - start for start, end in bounds.values())
    return counts


async def ledger_values(bootstrap: str) -> set[bytes]:
    return {record.value async for record in read_topic_to_end(bootstrap, LEDGER.name)}


@pytest.mark.timeout(900)
def test_run_killed_with_sigkill_finds_every_topic_and_record_when_started_again(
    tmp_path: Path, gharchive_server: FakeGHArchive, fixtures_dir: Path
) -> None:
    start_kafka().stop()  # Java here (and the jars installed), or unavailable
    events = [e for hour in HOURS for e in scan(fixtures_dir / "gharchive" / f"{hour}.json.gz")]
    prs = {e.key for e in events}
    data = tmp_path / "data"
    log = tmp_path / "run.log"
    with serve_github({}) as github:
        serve_hour(github, events)  # PRs enrich, classify, then fail at extract (no remote)
        env = worker_env() | {
            "SWE_STREAM_GHARCHIVE_BASE_URL": gharchive_server.base_url,
            "SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1",
            "SWE_STREAM_GITHUB_API_URL": github.base_url,
            "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": f"file://{tmp_path}/none/{{owner}}/{{repo}}.git",
            "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
            "SWE_STREAM_WORKER_DATA_DIR": str(data),
            "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
            "SWE_STREAM_SCORE_BACKEND": "heuristic",
        }
        env.pop("OPENROUTER_API_KEY", None)
        first = run_command(data, env, log)
        try:
            bootstrap = bootstrap_of(data, first, log)
            # mid-run: both hours published, the stages part of the way through them
            deadline = time.monotonic() + 300
            while True:
                assert first.poll() is None, log.read_text()[-4000:]
                assert time.monotonic() < deadline, log.read_text()[-4000:]
                before = asyncio.run(snapshot(bootstrap))
                published = before.get(PULL_REQUEST_EVENTS.name, 0) == len(events)
                hours_done = before.get(GHARCHIVE_HOURS.name, 0) >= len(HOURS)
                if published and hours_done and before.get(LEDGER.name, 0) >= len(prs) // 2:
                    break
                time.sleep(0.5)
            ledger_before = asyncio.run(ledger_values(bootstrap))
            _, (node,) = node_of(data)
            os.kill(first.pid, signal.SIGKILL)  # no handler runs
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()

        second = run_command(data, env, log)
        try:
            # its node, once the killed run's has stopped (it holds the storage until then),
            # on the same ports
            assert bootstrap_of(data, second, log, earlier=node) == bootstrap
            after = asyncio.run(snapshot(bootstrap))
            ledger_after = asyncio.run(ledger_values(bootstrap))
            time.sleep(3)  # a while running again: the finished hours are not ingested again
            again = asyncio.run(snapshot(bootstrap))
        finally:
            second.send_signal(signal.SIGTERM)
            code = second.wait(120)
    print(f"topics before the kill: {len(before)}, after the restart: {len(after)}; records "
          f"before: {sum(before.values())}, after: {sum(after.values())}")  # fmt: skip
    assert code == 0, log.read_text()[-4000:]
    assert set(after) == set(before) == {t.name for t in ALL_TOPICS}
    assert all(after[name] >= count for name, count in before.items()), (before, after)
    assert ledger_before <= ledger_after  # every ledger entry written before the kill is there
    assert {LedgerEntry.from_json(v).key for v in ledger_before} <= prs  # whole records
    assert again[PULL_REQUEST_EVENTS.name] == before[PULL_REQUEST_EVENTS.name] == len(events)
    assert "Apache Kafka" in log.read_text()
