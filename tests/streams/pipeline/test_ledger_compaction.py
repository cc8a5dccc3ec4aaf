"""The ledger really compacts (Apache Kafka; the embedded broker never compacts).

The pipeline mines the shipped GH Archive hour plus the demo repository's merge (one task)
on a Kafka node whose cleaner runs every half second, with ``swe.ledger`` rolling a segment
every half second and cleaning at any dirty ratio. Then:

- the broker compacts the ledger: one record per key is left, the latest written;
- the pipeline, run again over the same hour re-published (``mine --force``), recovers its
  ledger table from the compacted topic and skips every PR it had finished: no ledger entry
  for any of them, nothing validated or exported again;
- the processed PRs the ledger gives (``ledger export --pr-file``) are the same before and
  after compaction;
- a replay under a new pipeline version from the compacted state gives the same task.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from schemas import LedgerEntry
from streams.core.settings import KafkaSettings
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.topics import ALL_TOPICS, LEDGER
from streams.offline.world import OfflineWorld
from tests.conftest import REPO_ROOT, SWE_STREAM, start_kafka
from tests.workers import env_for

pytestmark = [pytest.mark.docker, pytest.mark.kafka]

# what makes the broker compact within seconds: production keeps Kafka's defaults (README)
FAST_CLEANER = {"log.cleaner.backoff.ms": "500"}
FAST_LEDGER = {
    "cleanup.policy": "compact",
    "segment.ms": "500",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}
MARKER = "swe-stream-test/segment-roll"
INSTANCE = "swe-stream-demo__units-1"  # the demo repository's task


async def prepare_topics(bootstrap: str) -> None:
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        await admin.create(ALL_TOPICS)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:  # AlterConfigs replaces the topic's configs: the catalog's, and the fast ones
        await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, LEDGER.name, FAST_LEDGER)]
        )
    finally:
        await admin.close()


async def ledger_records(bootstrap: str) -> list[tuple[int, int, bytes, bytes]]:
    """(partition, offset, key, value) of every record the ledger topic holds."""
    return [
        (r.partition, r.offset, r.key, r.value)
        async for r in read_topic_to_end(bootstrap, LEDGER.name)
    ]


def latest_by_key(records: list[tuple[int, int, bytes, bytes]]) -> dict[bytes, bytes]:
    return {key: value for _, _, key, value in sorted(records)}


async def roll_segments(bootstrap: str, partitions: int) -> None:
    """A record on every partition once its segment is older than segment.ms: the segment
    rolls, and what it held becomes the cleaner's (the active segment is never compacted)."""
    await asyncio.sleep(1.0)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    await producer.start()
    try:
        for partition in range(partitions):
            now = datetime.now(UTC)
            entry = LedgerEntry(
                pipeline_version=1, repo=MARKER, number=partition + 1, stage="prefilter",
                status="ignored", reason="segment_roll", first_seen_at=now, updated_at=now,
            )  # fmt: skip
            await producer.send_and_wait(
                LEDGER.name, entry.to_json(), entry.ledger_key.encode(), partition=partition
            )
    finally:
        await producer.stop()


def swe_stream(
    env: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [SWE_STREAM, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done


def task_of(directory: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in (directory / "dataset.jsonl").read_text().splitlines()]
    assert len(rows) == 1, rows
    row = rows[0]
    return {
        k: row[k]
        for k in (
            "instance_id",
            "patch",
            "test_patch",
            "FAIL_TO_PASS",
            "PASS_TO_PASS",
            "base_commit",
        )
    }


@pytest.mark.timeout(1200)
def test_the_compacted_ledger_keeps_each_prs_latest_entry_and_the_pipeline_skips_its_work(
    demo_world: OfflineWorld, tmp_path: Path
) -> None:
    cluster = start_kafka(overrides=FAST_CLEANER)
    try:
        bootstrap = cluster.bootstrap
        asyncio.run(prepare_topics(bootstrap))
        env = env_for(demo_world, tmp_path / "data")
        out = tmp_path / "out"
        mine = ["mine", "--once", "--bootstrap", bootstrap, "--from", demo_world.hour,
                "-o", str(out), "--no-live"]  # fmt: skip
        swe_stream(env, *mine)
        assert task_of(out)["instance_id"] == INSTANCE
        written = asyncio.run(ledger_records(bootstrap))
        latest = latest_by_key(written)
        export = ["ledger", "export", "--bootstrap", bootstrap, "--pr-file"]
        swe_stream(env, *export, str(tmp_path / "processed-before.jsonl"))
        assert len(written) > len(latest)  # a PR's transitions: something to compact

        partitions = 1 + max(p for p, _, _, _ in written)
        asyncio.run(roll_segments(bootstrap, partitions))
        deadline = time.monotonic() + 120
        while True:
            compacted = asyncio.run(ledger_records(bootstrap))
            keys = [key for _, _, key, _ in compacted]
            if len(keys) == len(set(keys)):
                break
            assert time.monotonic() < deadline, f"{len(keys)} records, {len(set(keys))} keys"
            time.sleep(1)
        print(f"ledger: {len(written)} records of {len(latest)} PRs compacted to {len(keys)}")
        # one record per key, the latest written (and the markers that rolled the segments)
        left = latest_by_key(compacted)
        markers = {k for k in left if k.startswith(MARKER.encode())}
        assert len(markers) == partitions
        assert {k: v for k, v in left.items() if k not in markers} == latest

        # the same processed PRs (swe-forge's file: each PR's final entry) from the compacted ledger
        swe_stream(env, *export, str(tmp_path / "processed-after.jsonl"))
        before = sorted((tmp_path / "processed-before.jsonl").read_text().splitlines())
        assert (
            before
            and sorted((tmp_path / "processed-after.jsonl").read_text().splitlines()) == before
        )

        # the pipeline again over the same hour, re-published: every finished PR is skipped
        swe_stream(env, *mine, "--force")
        after = asyncio.run(ledger_records(bootstrap))
        finished = {k for k, v in latest.items() if LedgerEntry.from_json(v).is_final()}
        again = [key for _, offset, key, _ in after if key in finished and
                 offset > max(o for _, o, k, _ in compacted if k == key)]  # fmt: skip
        assert finished and again == [], again
        assert task_of(out)["instance_id"] == INSTANCE  # not exported twice

        # a replay under version 2 from the compacted state: the same task
        replayed = swe_stream(
            env, "replay", "--bootstrap", bootstrap, "--from-topic", "pr.enriched",
            "--pipeline-version", "2", "-o", str(out), "--no-live",
        )  # fmt: skip
        assert "stopped: the replayed range is done" in replayed.stdout
        assert task_of(tmp_path / "out-v2") == task_of(out)
    finally:
        cluster.stop()
