"""Group offsets on both brokers: finding a time (Kafka's ListOffsets by time; the embedded
broker's is not faithful, so its timestamps are scanned), ``swe-stream offsets show|reset``, and
the refusal to move a group that has live members."""

from __future__ import annotations

import asyncio
import subprocess
from datetime import UTC, datetime

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.kafka.offsets import (
    committed_offsets,
    group_positions,
    offsets_at_time,
    parse_partition_offsets,
    parse_time_ms,
    topic_bounds,
)
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import worker_env

TOPIC = "stamped"
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


async def produce_stamped(bootstrap: str, count: int) -> list[tuple[int, int, int]]:
    """``count`` records stamped T0, T0+1 s, ... over 3 partitions, sent one by one (the
    broker keeps each in its own batch); returns (partition, offset, timestamp) of each."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, 3, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    placed = []
    try:
        for i in range(count):
            stamp = T0 + i * 1000
            meta = await producer.send_and_wait(
                TOPIC, f"record {i}".encode(), f"key-{i}".encode(), timestamp_ms=stamp
            )
            placed.append((meta.partition, meta.offset, stamp))
    finally:
        await producer.stop()
    return placed


def first_at_or_after(placed: list[tuple[int, int, int]], when: int) -> dict[int, int]:
    """What a faithful ListOffsets by time answers: per partition, the first offset stamped at
    or after ``when``, else the partition's end."""
    result = {}
    for partition in range(3):
        rows = sorted((o, t) for p, o, t in placed if p == partition)
        result[partition] = next((o for o, t in rows if t >= when), len(rows))
    return result


def offsets_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWE_STREAM, "offsets", *args, "--bootstrap", bootstrap],
        cwd=REPO_ROOT,
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def committed_column(stdout: str) -> dict[int, str]:
    rows = [line.split() for line in stdout.splitlines() if line.strip()[:1].isdigit()]
    return {int(row[0]): row[3] for row in rows}


@pytest.mark.unit
def test_partition_offsets_and_times_parse_or_say_what_is_expected() -> None:
    assert parse_partition_offsets(["0:15", "2:7,1:0"]) == {0: 15, 2: 7, 1: 0}
    for bad in (["0"], ["a:1"], ["0:-1"], ["0:1", "0:2"]):
        with pytest.raises(ValueError, match=r"PARTITION:OFFSET|twice"):
            parse_partition_offsets(bad)
    assert parse_time_ms("2023-11-14T22:13:20Z") == T0
    assert parse_time_ms("2023-11-14T23:13:20+01:00") == T0
    assert parse_time_ms("2023-11-14T22:13:20") == T0  # naive = UTC
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_time_ms("yesterday")


@pytest.mark.integration
async def test_the_first_record_at_or_after_a_time_is_found_by_lookup_or_scan(
    bootstrap: str, broker_kind: str
) -> None:
    """Apache Kafka's ListOffsets by time is trusted; the embedded broker's (the first batch for
    any time) is found out, and the timestamps are scanned: the same offsets either way."""
    placed = await produce_stamped(bootstrap, 30)
    assert {p for p, _, _ in placed} == {0, 1, 2}  # every partition holds records
    bounds = await topic_bounds(bootstrap, TOPIC)
    for when in (T0 - 5_000, T0 + 12_500, T0 + 13_000, T0 + 29_000, T0 + 60_000):
        found, method = await offsets_at_time(bootstrap, TOPIC, when)
        assert method == ("lookup" if broker_kind == "kafka" else "scan")
        assert found == first_at_or_after(placed, when), when
    assert (await offsets_at_time(bootstrap, TOPIC, T0 - 1))[0] == {p: 0 for p in bounds}
    assert (await offsets_at_time(bootstrap, TOPIC, T0 + 10**9))[0] == {
        p: end for p, (_, end) in bounds.items()
    }


@pytest.mark.integration
async def test_offsets_show_reset_and_refuse_a_group_with_live_members(
    bootstrap: str, broker_kind: str
) -> None:
    placed = await produce_stamped(bootstrap, 24)
    shown = offsets_cli(bootstrap, "show", "--group", "ops", "--topic", TOPIC)
    assert shown.returncode == 0, shown.stderr
    assert set(committed_column(shown.stdout).values()) == {"-"}  # never committed

    when = T0 + 10_000
    reset = offsets_cli(
        bootstrap, "reset", "--group", "ops", "--topic", TOPIC, "--to-time", iso(when)
    )
    assert reset.returncode == 0, reset.stderr
    assert f"found by {'lookup' if broker_kind == 'kafka' else 'scan'}" in reset.stderr
    expected = first_at_or_after(placed, when)
    assert committed_column(reset.stdout) == {p: str(o) for p, o in expected.items()}
    assert await committed_offsets(bootstrap, "ops", TOPIC) == expected
    # several topics at once (a topic named twice is read once), as a drain's poll reads them
    standing = await group_positions(bootstrap, "ops", [TOPIC, TOPIC])
    assert list(standing) == [TOPIC]
    assert {p.partition: p.committed for p in standing[TOPIC]} == expected
    assert {p.partition: p.end for p in standing[TOPIC]} == {
        p: sum(1 for q, _, _ in placed if q == p) for p in expected
    }

    # a member of the group starts where the reset put it ...
    sizes = {p: sum(1 for q, _, _ in placed if q == p) for p in expected}
    unread = {p: o for p, o in expected.items() if o < sizes[p]}
    member = AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id="ops", enable_auto_commit=False
    )
    await member.start()
    try:
        first_seen: dict[int, int] = {}
        for _ in range(40):
            batch = await member.getmany(timeout_ms=500)
            for tp, records in batch.items():
                first_seen.setdefault(tp.partition, records[0].offset)
            if len(first_seen) == len(unread):
                break
        assert first_seen == unread

        # ... and while it is live, the group cannot be moved under it
        refused = await asyncio.to_thread(
            offsets_cli, bootstrap, "reset", "--group", "ops", "--topic", TOPIC, "--to-earliest"
        )
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert "refused" in refused.stderr and "live member" in refused.stderr
        assert await committed_offsets(bootstrap, "ops", TOPIC) == expected
    finally:
        await member.stop()

    partial = offsets_cli(
        bootstrap, "reset", "--group", "other", "--topic", TOPIC, "--to-offset", "1:2"
    )
    assert partial.returncode == 0, partial.stderr
    assert committed_column(partial.stdout) == {0: "-", 1: "2", 2: "-"}
    unknown = offsets_cli(
        bootstrap, "reset", "--group", "other", "--topic", TOPIC, "--to-offset", "7:0"
    )
    assert unknown.returncode == 2 and "no partition(s) [7]" in unknown.stderr
