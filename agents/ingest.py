"""Stage ``ingest``: GH Archive hours -> ``gharchive.pull-request-events``.

Ingest is the source of the graph, a producer rather than a Faust agent (it reads GH Archive,
not Kafka). For every hour: stream the compressed bytes (``streams.clients.gharchive``), decompress,
prefilter and normalise them (``agents.ingest_scan``), publish each PullRequestEvent keyed
``owner/repo#number``, then record the hour in the compacted ``gharchive.hours`` ledger, only
after every record was acknowledged. A ``done`` hour is skipped on the next run unless forced;
an interrupted one has no ``done`` entry and is ingested again (downstream dedups the repeats).

Bad input never stops ingestion: every problem is counted by reason, a sample goes to
``gharchive.dlq`` with file, line number and error, and a file cut short ends ``partial``.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.ingest_scan import HourScanner, Inflated, ScanOutput, ScanProblem, quick_gil_handoff
from schemas import HourLedgerEntry, IngestDeadLetter
from streams.clients.gharchive import DownloadError, GHArchiveClient, HourNotPublished, HourSource
from streams.core import metrics
from streams.core.progress import PROGRESS
from streams.core.settings import GHArchiveSettings
from streams.kafka.client import read_topic_to_end
from streams.kafka.publisher import BatchPublisher
from streams.kafka.topics import GHARCHIVE_DLQ, GHARCHIVE_HOURS, PULL_REQUEST_EVENTS

log = logging.getLogger("swe_stream.ingest")

# The ingest producer, in one place (``ingest_producer``): the command and the benchmark use it.
# Records go in 1 MiB batches compressed with zstd, ~15x smaller: the broker stores and copies
# that instead of the JSON. (The benchmark's 93 MB of records: broker CPU 0.30 s -> 0.05 s, for
# ~0.1 s of zstd here, and the whole stage 0.84 s -> 0.62 s on two cores; snappy is as fast
# but ~6.5x; aiokafka's lz4 runs at level 9, several times slower.)
INGEST_PRODUCER_OPTIONS: dict[str, Any] = {
    "linger_ms": 5,
    "max_batch_size": 1 << 20,
    "max_request_size": 8 << 20,
    "compression_type": "zstd",
}
# Compressed chunks an hour has inflating in the worker thread ahead of the one it scans.
INFLATE_AHEAD = 2


def ingest_producer(producer_config: dict[str, Any]) -> Any:
    """The ingest stage's ``AIOKafkaProducer`` (not started) for the cluster of
    ``producer_config`` (``KafkaProfile.producer_config()``)."""
    from aiokafka import AIOKafkaProducer

    return AIOKafkaProducer(**producer_config, **INGEST_PRODUCER_OPTIONS)


_HOUR_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2}-(?:1?[0-9]|2[0-3]))(?:\.|$)")


def hour_of(source: HourSource) -> str:
    """The GH Archive hour a source holds, from its name (``2015-01-01-0.json.gz``,
    ``2015-01-01-0.slim.json.gz``); a clear error for a file named otherwise."""
    if source.hour:
        return source.hour
    match = _HOUR_PREFIX.match(source.name)
    if match is None:
        raise ValueError(
            f"cannot tell which GH Archive hour {source.url} holds: name files YYYY-MM-DD-H.json.gz"
        )
    return match.group(1)


@dataclass
class HourReport:
    """What happened to one hour in this run."""

    hour: str
    source_url: str
    status: str  # done / partial / failed / skipped
    events: int = 0
    published: int = 0
    bytes: int = 0
    seconds: float = 0.0
    problems: dict[str, int] = field(default_factory=dict)
    error: str | None = None


async def read_hour_ledger(bootstrap: str) -> dict[str, HourLedgerEntry]:
    """The latest entry of every hour in ``gharchive.hours``."""
    entries: dict[str, HourLedgerEntry] = {}
    async for record in read_topic_to_end(bootstrap, GHARCHIVE_HOURS.name):
        try:
            entry = HourLedgerEntry.from_json(record.value)
        except ValueError:
            log.warning("unreadable gharchive.hours entry at offset %d", record.offset)
            continue
        entries[entry.hour] = entry
    return entries


class Progress:
    """Progress of a run: a rich bar on a terminal, a log line per hour otherwise."""

    def __init__(self, total_hours: int | None, interactive: bool):
        self.started = time.monotonic()
        self.bytes = 0
        self.events = 0
        self._bar: Any = None
        if interactive:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("ingest"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("hours  {task.fields[mb]:.1f} MB  {task.fields[rate]:,.0f} events/s"),
                TimeElapsedColumn(),
            )
            self._task = self._bar.add_task("ingest", total=total_hours, mb=0.0, rate=0.0)
            self._bar.start()

    def advance(self, compressed_bytes: int, events: int) -> None:
        self.bytes += compressed_bytes
        self.events += events
        if self._bar is not None:
            rate = self.events / max(time.monotonic() - self.started, 1e-6)
            self._bar.update(self._task, mb=self.bytes / 2**20, rate=rate)

    def hour_finished(self, report: HourReport) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)
        if report.status == "skipped":
            log.info("hour %s skipped: already done (use --force to re-ingest)", report.hour)
            return
        log.log(
            logging.INFO if report.status == "done" else logging.WARNING,
            "hour %s %s: %d events, %d PullRequestEvents published, %.1f MB, %.2f s%s%s",
            report.hour,
            report.status,
            report.events,
            report.published,
            report.bytes / 2**20,
            report.seconds,
            f", problems {report.problems}" if report.problems else "",
            f", error: {report.error}" if report.error else "",
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


class PublishOrder:
    """Hours publish in the order they were listed. Several hours download and scan at once,
    but an hour sends nothing before every earlier hour has finished: a PR's events from
    consecutive hours reach the topic, and so the stages, in time order (a PR opened in one
    hour and merged in the next must not be seen merged, then opened)."""

    def __init__(self) -> None:
        self._finished: list[asyncio.Event] = []

    def ticket(self) -> int:
        """The next hour's place in the order."""
        self._finished.append(asyncio.Event())
        return len(self._finished) - 1

    def is_turn(self, ticket: int) -> bool:
        return ticket == 0 or self._finished[ticket - 1].is_set()

    async def wait_turn(self, ticket: int) -> None:
        if ticket > 0:
            await self._finished[ticket - 1].wait()

    def finish(self, ticket: int) -> None:
        """The hour is done publishing (or skipped, or failed): the next one may go."""
        self._finished[ticket].set()


class Ingestor:
    """Ingests hours with at most ``settings.concurrency`` in flight, publishing them in the
    order of their sources (``PublishOrder``).

    Each hour's compressed chunks inflate in one worker thread (shared by the hours of a
    ``run``) while the event loop scans the chunks before them and publishes their records
    in batches (``BatchPublisher``)."""

    def __init__(
        self,
        *,
        producer: Any,
        client: GHArchiveClient,
        settings: GHArchiveSettings,
        pipeline_version: int,
        ledger: dict[str, HourLedgerEntry],
        force: bool = False,
        follow: bool = False,
        progress: Progress | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self.producer = producer
        self.client = client
        self.settings = settings
        self.pipeline_version = pipeline_version
        self.ledger = ledger
        self.force = force
        self.follow = follow
        self.progress = progress or Progress(None, interactive=False)
        self.clock = clock
        self._inflater: ThreadPoolExecutor | None = None  # set while run() runs

    async def run(
        self, sources: Iterable[HourSource] | AsyncIterator[HourSource]
    ) -> list[HourReport]:
        """Ingest every source; bounded concurrency and a bounded queue keep memory flat even
        for an endless ``--follow`` stream of hours."""
        queue: asyncio.Queue[tuple[int, HourSource] | None] = asyncio.Queue(
            self.settings.concurrency
        )
        reports: list[HourReport] = []
        order = PublishOrder()

        async def feed() -> None:
            if isinstance(sources, AsyncIterator):
                async for source in sources:
                    await queue.put((order.ticket(), source))
            else:
                for source in sources:
                    await queue.put((order.ticket(), source))
            for _ in range(self.settings.concurrency):
                await queue.put(None)

        async def work() -> None:
            while (item := await queue.get()) is not None:
                ticket, source = item
                PROGRESS.hour_started(source.name)  # the live view's hours in flight
                try:
                    report = await self.ingest_hour(source, order, ticket)
                finally:
                    order.finish(ticket)
                    PROGRESS.hour_finished(source.name)
                reports.append(report)
                self.progress.hour_finished(report)

        inflater = ThreadPoolExecutor(1, thread_name_prefix="swe-stream-inflate")
        self._inflater = inflater
        try:
            with quick_gil_handoff():
                await asyncio.gather(feed(), *(work() for _ in range(self.settings.concurrency)))
        finally:
            self._inflater = None
            inflater.shutdown(wait=False, cancel_futures=True)
        return sorted(reports, key=lambda r: r.hour)

    async def ingest_hour(
        self, source: HourSource, order: PublishOrder | None = None, ticket: int = 0
    ) -> HourReport:
        """One hour; with ``order``, its records are sent only once it is ``ticket``'s turn."""
        if order is None:  # an hour on its own: its turn at once
            order = PublishOrder()
            ticket = order.ticket()
        hour = hour_of(source)
        previous = self.ledger.get(hour)
        if previous is not None and previous.status == "done" and not self.force:
            return HourReport(
                hour,
                source.url,
                "skipped",
                previous.events_total,
                previous.pull_request_events,
                previous.bytes,
            )
        while True:
            try:
                return await self._ingest(hour, source, previous, order, ticket)
            except HourNotPublished:
                if not self.follow:
                    return await self._finish_failed(hour, source, previous, "not published (404)")
                log.info(
                    "hour %s not published yet; checking again in %.0f s",
                    hour,
                    self.settings.poll_seconds,
                )
                await asyncio.sleep(self.settings.poll_seconds)

    async def _ingest(
        self,
        hour: str,
        source: HourSource,
        previous: HourLedgerEntry | None,
        order: PublishOrder,
        ticket: int,
    ) -> HourReport:
        started_at, started = self.clock(), time.perf_counter()
        scanner = HourScanner(hour, self.pipeline_version)
        publisher = BatchPublisher(self.producer, PULL_REQUEST_EVENTS.name)
        held: list[tuple[bytes, bytes]] = []  # records waiting for this hour's turn
        held_bytes = 0
        limit = self.settings.order_buffer_mb << 20
        samples = 0

        async def handle(items: list[ScanOutput]) -> None:
            nonlocal samples, held, held_bytes
            records = []
            for item in items:
                if isinstance(item, ScanProblem):
                    metrics.INGEST_ERRORS.labels(reason=item.reason).inc()
                    if samples < self.settings.dlq_samples_per_hour:
                        samples += 1
                        await self._dead_letter(hour, source, item)
                else:
                    records.append(item)
            if held or not order.is_turn(ticket):
                held += records
                held_bytes += sum(len(k) + len(v) for k, v in records)
                if held_bytes < limit and not order.is_turn(ticket):
                    return  # go on downloading while an earlier hour publishes
                await order.wait_turn(ticket)  # the buffer is full: wait (backpressure)
                records, held, held_bytes = held, [], 0
            await publisher.add(records)

        retries_before = self.client.stats.retries
        error = await self._scan(source, scanner, handle)
        await handle(scanner.close())
        await order.wait_turn(ticket)
        await publisher.add(held)
        metrics.GHARCHIVE_DOWNLOAD_RETRIES.inc(self.client.stats.retries - retries_before)
        stats = scanner.stats
        metrics.INGEST_EVENTS.inc(stats.lines)

        # "done" only once every record is acknowledged; a lost send leaves the hour partial.
        outcome = await publisher.outcome()
        published = outcome.published
        metrics.INGEST_PULL_REQUEST_EVENTS.inc(published)
        if outcome.failed:
            metrics.INGEST_ERRORS.labels(reason="publish-failed").inc(outcome.failed)
            error = error or f"{outcome.failed} records not published: {outcome.error!r}"
        if error is not None and (stats.lines == 0 and not stats.truncated):
            status = "failed"
        elif error is not None or stats.truncated:
            status = "partial"
            if error is None:
                error = "; ".join(
                    f"{reason} x{n}"
                    for reason, n in sorted(stats.problems.items())
                    if reason in {"truncated-gzip", "corrupt-gzip"}
                )
        else:
            status = "done"
        seconds = time.perf_counter() - started
        await self._record_hour(
            hour,
            source,
            previous,
            status,
            error,
            stats.lines,
            published,
            stats.compressed_bytes,
            stats.sha256 or None,
            started_at,
        )
        metrics.INGEST_HOUR_SECONDS.observe(seconds)
        return HourReport(
            hour,
            source.url,
            status,
            stats.lines,
            published,
            stats.compressed_bytes,
            seconds,
            dict(stats.problems),
            error,
        )

    async def _scan(
        self,
        source: HourSource,
        scanner: HourScanner,
        handle: Callable[[list[ScanOutput]], Awaitable[None]],
    ) -> str | None:
        """Download ``source`` through ``scanner``, each chunk's output to ``handle`` in order;
        returns the download's error, if any. Chunks inflate in the worker thread up to
        ``INFLATE_AHEAD`` ahead of the one being scanned and handled here."""
        loop = asyncio.get_running_loop()
        own = None if self._inflater is not None else ThreadPoolExecutor(1)
        inflater = self._inflater or own
        ahead: collections.deque[asyncio.Future[Inflated]] = collections.deque()

        async def scan_until(left: int) -> None:
            while len(ahead) > left:
                inflated = await ahead.popleft()
                lines_before = scanner.stats.lines
                await handle(scanner.scan(inflated))
                metrics.INGEST_BYTES.inc(inflated.compressed)
                self.progress.advance(inflated.compressed, scanner.stats.lines - lines_before)

        error = None
        try:
            try:
                async for chunk in self.client.stream(source):
                    ahead.append(loop.run_in_executor(inflater, scanner.inflate, chunk))
                    await scan_until(INFLATE_AHEAD)
            except DownloadError as exc:
                error = str(exc)
            await scan_until(0)
        finally:
            for future in ahead:  # only when something raised: the hour is abandoned
                future.cancel()
            if own is not None:
                own.shutdown(wait=False, cancel_futures=True)
        return error

    async def _finish_failed(
        self, hour: str, source: HourSource, previous: HourLedgerEntry | None, error: str
    ) -> HourReport:
        now = self.clock()
        await self._record_hour(hour, source, previous, "failed", error, 0, 0, 0, None, now)
        return HourReport(hour, source.url, "failed", error=error)

    async def _record_hour(
        self,
        hour: str,
        source: HourSource,
        previous: HourLedgerEntry | None,
        status: str,
        error: str | None,
        events: int,
        published: int,
        size: int,
        sha256: str | None,
        started_at: datetime,
    ) -> None:
        entry = HourLedgerEntry.model_validate(
            {
                "pipeline_version": self.pipeline_version,
                "hour": hour,
                "status": status,
                "events_total": events,
                "pull_request_events": min(published, events),
                "bytes": size,
                "source_url": source.url,
                "sha256": sha256,
                "error": (error or None) if status != "done" else None,
                "started_at": started_at,
                "finished_at": max(self.clock(), started_at),
                "attempts": previous.attempts + 1 if previous else 1,
            }
        )
        await self.producer.send_and_wait(GHARCHIVE_HOURS.name, entry.to_json(), hour.encode())
        self.ledger[hour] = entry
        metrics.INGEST_HOURS.labels(status=status).inc()

    async def _dead_letter(self, hour: str, source: HourSource, problem: ScanProblem) -> None:
        letter = IngestDeadLetter(
            pipeline_version=self.pipeline_version,
            hour=hour,
            source_url=source.url,
            line_number=problem.line_number,
            reason=problem.reason,
            error=problem.error[:4000],
            sample_b64=base64.b64encode(problem.sample[:2048]).decode("ascii"),
            failed_at=self.clock(),
        )
        await self.producer.send(GHARCHIVE_DLQ.name, letter.to_json(), hour.encode())


async def following_hours(
    first: datetime, last: datetime | None, base_url: str
) -> AsyncIterator[HourSource]:
    """Hours from ``first`` on (to ``last`` if given, else forever): each hour is handed over
    as soon as the one before it was, and ``Ingestor`` waits for it to be published."""
    from streams.clients.gharchive import hour_name, sources_for_hours

    moment = first
    while last is None or moment <= last:
        for source in sources_for_hours([hour_name(moment)], base_url):
            yield source
        moment += timedelta(hours=1)


# which hours: the ingest command's and mine's selection ------------------------------------


@dataclass(frozen=True)
class HourSelection:
    """Which hours to ingest, said exactly one way: sources, a range, or the latest N."""

    sources: tuple[str, ...] = ()
    first: str | None = None
    last: str | None = None
    hours: int | None = None
    follow: bool = False

    def problem(self) -> str | None:
        ways = [bool(self.sources), self.first is not None, self.hours is not None]
        if sum(ways) != 1:
            return "say which hours: --source SPEC, --from HOUR [--to HOUR], or --hours N"
        if self.last is not None and self.first is None:
            return "--to needs --from"
        if self.sources and self.follow:
            return "--follow works with --from or --hours, not --source"
        if self.hours is not None and self.hours < 1:
            return "--hours must be at least 1"
        return None


async def plan_sources(
    selection: HourSelection, client: GHArchiveClient, base_url: str
) -> tuple[Iterable[HourSource] | AsyncIterator[HourSource], int | None]:
    """The hour sources of ``selection`` and how many there are (None: endless)."""
    from streams.clients.gharchive import (
        hours_between,
        parse_hour,
        resolve_sources,
        sources_for_hours,
    )

    if selection.sources:
        sources = resolve_sources(list(selection.sources), base_url)
        for source in sources:  # before any hour is published, not when a worker reaches it
            hour_of(source)
        return sources, len(sources)
    if selection.hours is not None:
        names = await client.latest_hours(selection.hours)
        listed = sources_for_hours(names, base_url)
        if not selection.follow:
            return listed, len(names)
        after = parse_hour(names[-1]) + timedelta(hours=1)
        return _chain(listed, following_hours(after, None, base_url)), None
    assert selection.first is not None
    first = parse_hour(selection.first)
    last = parse_hour(selection.last) if selection.last else None
    if selection.follow:
        return following_hours(first, last, base_url), (
            len(hours_between(first, last)) if last else None
        )
    names = hours_between(first, last or first)
    return sources_for_hours(names, base_url), len(names)


async def _chain(
    first: Iterable[HourSource], then: AsyncIterator[HourSource]
) -> AsyncIterator[HourSource]:
    for item in first:
        yield item
    async for item in then:
        yield item


async def ingest_hours(
    selection: HourSelection,
    settings: GHArchiveSettings,
    producer_config: dict[str, Any],
    bootstrap: str,
    *,
    pipeline_version: int,
    force: bool = False,
    interactive: bool = False,
) -> list[HourReport]:
    """Ingest the selected hours into the cluster at ``bootstrap`` (topics must exist)."""
    ledger = await read_hour_ledger(bootstrap)
    producer = ingest_producer(producer_config)
    await producer.start()
    try:
        async with GHArchiveClient(
            settings.base_url, timeout=settings.timeout_seconds, max_attempts=settings.max_attempts
        ) as client:
            sources, total = await plan_sources(selection, client, settings.base_url)
            progress = Progress(total, interactive=interactive)
            ingestor = Ingestor(
                producer=producer,
                client=client,
                settings=settings,
                pipeline_version=pipeline_version,
                ledger=ledger,
                force=force,
                follow=selection.follow,
                progress=progress,
            )
            try:
                return await ingestor.run(sources)
            finally:
                progress.close()
    finally:
        await producer.stop()
