"""Ingest end to end: the real fixture hours served over HTTP on 127.0.0.1 (real httpx, real
gzip), published to the embedded broker, read back with aiokafka."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from agents.ingest import Ingestor, read_hour_ledger
from schemas import HourLedgerEntry, IngestDeadLetter, RawPullRequestEvent
from streams.clients.gharchive import GHArchiveClient, resolve_sources, sources_for_hours
from streams.core import metrics
from streams.core.settings import GHArchiveSettings, KafkaSettings
from streams.kafka.broker import free_port
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.topics import ALL_TOPICS, GHARCHIVE_DLQ, PULL_REQUEST_EVENTS
from tests.conftest import SWE_STREAM
from tests.fakes.gharchive_server import FakeGHArchive

pytestmark = pytest.mark.integration

HOUR0, HOUR1 = "2015-01-01-0", "2015-01-01-1"


async def read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    return [(r.key, r.value) async for r in read_topic_to_end(bootstrap, topic)]


def events(bootstrap: str) -> list[RawPullRequestEvent]:
    return [
        RawPullRequestEvent.from_json(v)
        for _, v in asyncio.run(read_all(bootstrap, PULL_REQUEST_EVENTS.name))
    ]


def hours(bootstrap: str) -> dict[str, HourLedgerEntry]:
    return asyncio.run(read_hour_ledger(bootstrap))


def ingest_cli(bootstrap: str, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWE_STREAM, "ingest", "--bootstrap", bootstrap, "--base-url", base_url, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_ingests_each_hour_once_and_force_republishes(
    bootstrap: str, gharchive_server: FakeGHArchive
) -> None:
    first = ingest_cli(
        bootstrap, gharchive_server.base_url, "--from", "2015-01-01T00", "--to", "2015-01-01T01"
    )
    assert first.returncode == 0, first.stderr
    assert "ingested 2 hours: done=2 partial=0 failed=0 skipped=0" in first.stdout

    published = events(bootstrap)
    per_hour = Counter(e.gharchive_hour for e in published)
    assert per_hour == {HOUR0: 315, HOUR1: 293}
    assert all(e.payload_format == "full" and e.pull_request is not None for e in published)
    merged = {
        h: {e.key for e in published if e.gharchive_hour == h and e.merged} for h in (HOUR0, HOUR1)
    }
    assert (len(merged[HOUR0]), len(merged[HOUR1])) == (126, 89)
    keys = asyncio.run(read_all(bootstrap, PULL_REQUEST_EVENTS.name))
    assert all(k == f"{RawPullRequestEvent.from_json(v).key}".encode() for k, v in keys)

    ledger = hours(bootstrap)
    for hour, count, lines in ((HOUR0, 315, 7702), (HOUR1, 293, 7427)):
        entry = ledger[hour]
        data = gharchive_server.data(hour)
        assert (entry.status, entry.events_total, entry.pull_request_events) == (
            "done",
            lines,
            count,
        )
        assert entry.bytes == len(data) and entry.sha256 == hashlib.sha256(data).hexdigest()

    again = ingest_cli(
        bootstrap, gharchive_server.base_url, "--from", "2015-01-01T00", "--to", "2015-01-01T01"
    )
    assert again.returncode == 0, again.stderr
    assert "skipped=2" in again.stdout
    assert len(events(bootstrap)) == 608, "a done hour is not published twice"

    forced = ingest_cli(bootstrap, gharchive_server.base_url, "--from", "2015-01-01T00", "--force")
    assert forced.returncode == 0, forced.stderr
    assert Counter(e.gharchive_hour for e in events(bootstrap)) == {HOUR0: 630, HOUR1: 293}
    assert hours(bootstrap)[HOUR0].attempts == 2


def test_slim_hour_from_a_local_file(bootstrap: str, fixtures_dir: Path) -> None:
    slim = fixtures_dir / "gharchive" / "2015-01-01-0.slim.json.gz"
    result = subprocess.run(
        [SWE_STREAM, "ingest", "--bootstrap", bootstrap, "--source", str(slim)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    published = events(bootstrap)
    assert len(published) == 315
    assert all(
        e.payload_format == "slim" and e.merged is None and e.pull_request is None
        for e in published
    )
    assert {e.action for e in published} >= {"opened", "closed"}


def test_missing_hour_fails_without_follow(bootstrap: str, gharchive_server: FakeGHArchive) -> None:
    result = ingest_cli(bootstrap, gharchive_server.base_url, "--from", "2015-01-01T05")
    assert result.returncode == 1
    assert "failed=1" in result.stdout
    assert hours(bootstrap)["2015-01-01-5"].status == "failed"


@asynccontextmanager
async def ingestor(bootstrap: str, base_url: str, **options: Any) -> AsyncIterator[Ingestor]:
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        await admin.create(ALL_TOPICS)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_request_size=8 << 20)
    await producer.start()
    settings = GHArchiveSettings(base_url=base_url, poll_seconds=0.2, concurrency=2)
    try:
        async with GHArchiveClient(base_url, max_attempts=4, backoff_seconds=0.01) as client:
            yield Ingestor(
                producer=producer,
                client=client,
                settings=settings,
                pipeline_version=1,
                ledger=await read_hour_ledger(bootstrap),
                **options,
            )
    finally:
        await producer.stop()


def counter(metric: Any, **labels: str) -> float:
    return float((metric.labels(**labels) if labels else metric)._value.get())


def test_truncated_hour_is_partial_and_keeps_what_came_before_the_cut(
    bootstrap: str, fixtures_dir: Path, tmp_path: Path
) -> None:
    whole = (fixtures_dir / "gharchive" / f"{HOUR0}.json.gz").read_bytes()
    cut = tmp_path / f"{HOUR0}.json.gz"
    cut.write_bytes(whole[: len(whole) * 6 // 10])
    before = counter(metrics.INGEST_ERRORS, reason="truncated-gzip")

    async def run() -> list[Any]:
        async with ingestor(bootstrap, "http://unused") as ingest:
            return await ingest.run(resolve_sources([str(cut)], "http://unused"))

    [report] = asyncio.run(run())
    assert report.status == "partial" and "truncated" in (report.error or "")
    published = events(bootstrap)
    assert 0 < len(published) < 315
    assert hours(bootstrap)[HOUR0].status == "partial"
    assert counter(metrics.INGEST_ERRORS, reason="truncated-gzip") == before + 1
    letters = [
        IngestDeadLetter.from_json(v)
        for _, v in asyncio.run(read_all(bootstrap, GHARCHIVE_DLQ.name))
    ]
    assert [letter.reason for letter in letters] == ["truncated-gzip"]


def test_garbage_lines_are_counted_and_sampled_and_good_lines_all_published(
    bootstrap: str, fixtures_dir: Path, tmp_path: Path
) -> None:
    lines = gzip.decompress(
        (fixtures_dir / "gharchive" / f"{HOUR0}.json.gz").read_bytes()
    ).splitlines()
    bad = {
        3: b'{"type":"PullRequestEvent", this is not json',
        10: b'["type","PullRequestEvent"]',
        20: b"\xff\xfe\x00 binary noise",
    }
    mixed = []
    for number, line in enumerate(lines, start=1):
        mixed.append(line)
        if number in bad:
            mixed.append(bad[number])
    path = tmp_path / f"{HOUR0}.json.gz"
    path.write_bytes(gzip.compress(b"\n".join(mixed) + b"\n"))
    before = counter(metrics.INGEST_ERRORS, reason="malformed-json")

    async def run() -> list[Any]:
        async with ingestor(bootstrap, "http://unused") as ingest:
            return await ingest.run(resolve_sources([str(path)], "http://unused"))

    [report] = asyncio.run(run())
    assert report.status == "done"
    assert len(events(bootstrap)) == 315
    letters = [
        IngestDeadLetter.from_json(v)
        for _, v in asyncio.run(read_all(bootstrap, GHARCHIVE_DLQ.name))
    ]
    # a bad line inserted after original line n sits at line n + (bad lines before it) + 1
    expected_lines = {n + i + 1 for i, n in enumerate(sorted(bad)) if b"PullRequestEvent" in bad[n]}
    assert {letter.line_number for letter in letters} == expected_lines
    assert {letter.sample() for letter in letters} == {
        v for v in bad.values() if b"PullRequestEvent" in v
    }
    assert counter(metrics.INGEST_ERRORS, reason="malformed-json") == before + 1


def test_follow_waits_for_an_unpublished_hour(
    bootstrap: str, gharchive_server: FakeGHArchive
) -> None:
    gharchive_server.unpublish(HOUR0)

    async def run() -> list[Any]:
        async with ingestor(bootstrap, gharchive_server.base_url, follow=True) as ingest:
            task = asyncio.create_task(
                ingest.run(sources_for_hours([HOUR0], gharchive_server.base_url))
            )
            await asyncio.sleep(1.0)
            assert not task.done(), "follow mode must wait, not fail"
            gharchive_server.publish(HOUR0)
            return await asyncio.wait_for(task, 60)

    [report] = asyncio.run(run())
    assert report.status == "done" and report.published == 315
    assert len(gharchive_server.requests_for(HOUR0, "GET")) >= 3  # polled while unpublished
    assert len(events(bootstrap)) == 315


def test_hours_publish_in_order_although_a_later_one_downloads_first(
    bootstrap: str, gharchive_server: FakeGHArchive
) -> None:
    gharchive_server.unpublish(HOUR0)  # hour 1 downloads while hour 0 is still awaited

    async def run() -> list[Any]:
        async with ingestor(bootstrap, gharchive_server.base_url, follow=True) as ingest:
            task = asyncio.create_task(
                ingest.run(sources_for_hours([HOUR0, HOUR1], gharchive_server.base_url))
            )
            for _ in range(100):  # until hour 1 has been downloaded whole
                await asyncio.sleep(0.1)
                if gharchive_server.requests_for(HOUR1, "GET"):
                    break
            await asyncio.sleep(1.0)
            published = await read_all(bootstrap, PULL_REQUEST_EVENTS.name)
            assert published == [], "hour 1 published before hour 0"
            gharchive_server.publish(HOUR0)
            return await asyncio.wait_for(task, 60)

    reports = asyncio.run(run())
    assert [(r.hour, r.status, r.published) for r in reports] == [
        (HOUR0, "done", 315),
        (HOUR1, "done", 293),
    ]
    # in each partition (a PR's events share one), hours never go backwards
    by_partition: dict[int, list[str]] = {}
    for record in asyncio.run(_records(bootstrap)):
        by_partition.setdefault(record[0], []).append(record[1])
    assert all(hours == sorted(hours) for hours in by_partition.values())


async def _records(bootstrap: str) -> list[tuple[int, str]]:
    return [
        (r.partition, RawPullRequestEvent.from_json(r.value).gharchive_hour)
        async for r in read_topic_to_end(bootstrap, PULL_REQUEST_EVENTS.name)
    ]


def test_dropped_connection_is_resumed_and_the_hour_is_complete(
    bootstrap: str, gharchive_server: FakeGHArchive
) -> None:
    gharchive_server.drop(HOUR1, after=1 << 20, times=1)
    retries_before = counter(metrics.GHARCHIVE_DOWNLOAD_RETRIES)

    async def run() -> list[Any]:
        async with ingestor(bootstrap, gharchive_server.base_url) as ingest:
            return await ingest.run(sources_for_hours([HOUR1], gharchive_server.base_url))

    [report] = asyncio.run(run())
    assert (report.status, report.events, report.published) == ("done", 7427, 293)
    assert any(r.range for r in gharchive_server.requests_for(HOUR1, "GET")), "resumed with Range"
    assert counter(metrics.GHARCHIVE_DOWNLOAD_RETRIES) >= retries_before + 1
    assert len(events(bootstrap)) == 293
    assert (
        hours(bootstrap)[HOUR1].sha256 == hashlib.sha256(gharchive_server.data(HOUR1)).hexdigest()
    )


@pytest.mark.unit
def test_ingest_arguments_are_checked() -> None:
    for argv, message in (
        ([], "say which hours"),
        (["--to", "2015-01-01T01", "--source", "x"], "--to needs --from"),
        (["--hours", "0"], "at least 1"),
        (["--source", "x.json.gz", "--follow"], "--follow works with"),
    ):
        result = subprocess.run(
            [SWE_STREAM, "ingest", *argv], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 2, argv
        assert message in result.stderr, (argv, result.stderr)


@pytest.mark.integration
def test_ingest_serves_its_metrics_while_it_follows(
    bootstrap: str, gharchive_server: FakeGHArchive
) -> None:
    """What the dashboard's ingest panels read: hours and events, scraped from the command
    itself while it waits for the next hour."""
    port = free_port()
    command = [
        SWE_STREAM, "ingest", "--bootstrap", bootstrap, "--from", "2015-01-01T00", "--follow",
        "--base-url", gharchive_server.base_url, "--poll-seconds", "0.5",
        "--metrics-port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline, text = time.monotonic() + 120, ""
        while "swe_stream_ingest_hour_files_total{" not in text or 'status="done"' not in text:
            assert process.poll() is None and time.monotonic() < deadline, text[-2000:]
            time.sleep(0.5)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                text = ""
        done = [
            line for line in text.splitlines()
            if line.startswith("swe_stream_ingest_hour_files_total{") and 'status="done"' in line
        ]  # fmt: skip
        assert done and float(done[0].rsplit(" ", 1)[1]) >= 1
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
