"""GH Archive parsing speed, measured side by side in one run on the same file.

    python -m benchmarks.ingest [--repeat N] [--rounds R] [--brokers embedded,kafka]

The input is built in a temporary directory: the two real fixture hours (2015-01-01-0 and -1)
concatenated N times each (default 10: 20 gzip members, ~51 MB gz, ~352 MB of JSON, ~151k
events, the figures of the design notes). Every path reads the whole file; rounds interleave
the paths and the best time of each is kept:

* ``gzip -dc``: ``gzip -dc FILE > /dev/null`` (decompression only, no parsing at all);
* ``naive python``: ``gzip.open`` + ``json.loads`` of every line;
* ``swe-stream``: ``agents.ingest_scan.scan_file``, every output consumed: ISA-L inflate (in a
  worker thread, ahead of the scan), the byte-level prefilter, orjson, normalised and validated
  ``RawPullRequestEvent`` records;
* ``swe-stream + publish (BROKER)``: the whole ingest stage (``agents.ingest.Ingestor``, as
  ``swe-stream ingest --source FILE --force`` runs it, with the producer it builds:
  ``agents.ingest.ingest_producer``) publishing every record to the broker and waiting for
  every acknowledgement and the hour-ledger entry: the embedded broker, and Apache Kafka (one
  node; the idempotent producer, acks=all), side by side.

Printed per path: wall seconds, events/s (lines) and compressed MB/s; then the ratios
gzip_dc / swe_stream and naive / swe_stream. Targets: swe-stream >= 2.3x faster than gzip -dc,
and >= 1.7x with publishing included.
Always exits 0; the verdict is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agents.ingest_scan import HourScanner, scan_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_HOURS = [
    ROOT.parent / "shared" / "fixtures" / "gharchive" / f"2015-01-01-{h}.json.gz" for h in (0, 1)
]
HOUR = "2015-01-01-0"  # the label the records carry; the file is many hours
PIPELINE_VERSION = 1
TARGET = 2.3  # swe-stream must be at least this many times faster than gzip -dc
PUBLISH_TARGET = 1.7  # ... and this many times with publishing to the broker included
PUBLISH = "swe-stream + publish"  # + " (embedded)" / " (kafka)"


@dataclass
class BenchPath:
    """One way of reading the whole input; ``run`` returns how many records it produced."""

    label: str
    run: Callable[[], int]


def build_input(directory: Path, repeat: int) -> Path:
    """The fixture hours, each ``repeat`` times, concatenated as gzip members."""
    members = [path.read_bytes() for path in FIXTURE_HOURS]
    target = directory / f"{HOUR}.json.gz"  # named as an hour, so the ingest stage accepts it
    with target.open("wb") as out:
        for _ in range(repeat):
            for member in members:
                out.write(member)
    return target


def time_it(label: str, fn: Callable[[], object]) -> float:
    """Wall seconds of one call of ``fn`` (``label`` names it in errors)."""
    start = time.perf_counter()
    try:
        fn()
    except Exception as exc:
        raise RuntimeError(f"benchmark path {label!r} failed: {exc}") from exc
    return time.perf_counter() - start


def gzip_dc(file: Path) -> int:
    subprocess.run(["gzip", "-dc", str(file)], stdout=subprocess.DEVNULL, check=True)
    return 0


def naive_python(file: Path) -> int:
    found = 0
    with gzip.open(file, "rb") as lines:
        for line in lines:
            if json.loads(line)["type"] == "PullRequestEvent":
                found += 1
    return found


def swe_stream(file: Path) -> int:
    produced = 0
    for _ in scan_file(file, HOUR, PIPELINE_VERSION):
        produced += 1
    return produced


def bench_paths(file: Path, bootstraps: dict[str, str] | None = None) -> list[BenchPath]:
    """Every path timed, in the order printed. The first must be gzip -dc, and one must be
    labelled "swe-stream" (the ratios are taken against it); one publishing path per broker
    (``bootstraps``: broker kind -> bootstrap)."""
    paths = [
        BenchPath("gzip -dc", lambda: gzip_dc(file)),
        BenchPath("naive python", lambda: naive_python(file)),
        BenchPath("swe-stream", lambda: swe_stream(file)),
    ]
    for kind, bootstrap in (bootstraps or {}).items():
        paths.append(
            BenchPath(
                f"{PUBLISH} ({kind})",
                lambda kind=kind, bootstrap=bootstrap: asyncio.run(
                    publish_all(file, bootstrap, kind)
                ),
            )
        )
    return paths


async def publish_all(file: Path, bootstrap: str, kind: str = "embedded") -> int:
    """The ingest stage over ``file``: returns how many records were acknowledged."""
    from agents.ingest import Ingestor, ingest_producer
    from benchmarks.brokers import profile
    from streams.clients.gharchive import GHArchiveClient, resolve_sources
    from streams.core.settings import GHArchiveSettings

    producer = ingest_producer(profile(kind, bootstrap).producer_config())
    await producer.start()
    try:
        async with GHArchiveClient("http://unused") as client:
            ingestor = Ingestor(
                producer=producer,
                client=client,
                settings=GHArchiveSettings(),
                pipeline_version=PIPELINE_VERSION,
                ledger={},
                force=True,
            )
            [report] = await ingestor.run(resolve_sources([str(file)], "http://unused"))
    finally:
        await producer.stop()
    if report.status != "done":
        raise RuntimeError(f"ingest ended {report.status}: {report.error}")
    return report.published


def input_stats(file: Path) -> tuple[int, int, int]:
    """(events, pull request events, decompressed bytes) of the input, from one scan."""
    scanner = HourScanner(HOUR, PIPELINE_VERSION)
    with file.open("rb") as f:
        while chunk := f.read(1 << 20):
            scanner.feed(chunk)
    scanner.close()
    stats = scanner.stats
    if stats.truncated or stats.problems:
        raise RuntimeError(f"benchmark input does not scan cleanly: {dict(stats.problems)}")
    return stats.lines, stats.pull_request_events, stats.decompressed_bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="copies of each fixture hour")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per path (best kept)")
    parser.add_argument("--brokers", default="embedded,kafka", help="publish to these brokers")
    args = parser.parse_args()

    from benchmarks.brokers import parse_brokers, started
    from streams.core.settings import KafkaSettings
    from streams.kafka.client import TopicAdmin
    from streams.kafka.topics import ALL_TOPICS

    async def create_topics(bootstrap: str) -> None:
        async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
            await admin.create(ALL_TOPICS)

    with contextlib.ExitStack() as brokers, tempfile.TemporaryDirectory(prefix="swe-bench-") as tmp:
        bootstraps = {}
        for kind in parse_brokers(args.brokers):
            bootstraps[kind] = brokers.enter_context(started(kind))
            asyncio.run(create_topics(bootstraps[kind]))
        file = build_input(Path(tmp), args.repeat)
        size = file.stat().st_size
        events, pr_events, raw = input_stats(file)
        print(
            f"input: {2 * args.repeat} gzip members, {size / 1e6:.1f} MB gz, {raw / 1e6:.0f} MB "
            f"JSON, {events:,} events, {pr_events:,} PullRequestEvents"
        )
        paths = bench_paths(file, bootstraps)
        best = {path.label: float("inf") for path in paths}
        for round_no in range(1, args.rounds + 1):
            for path in paths:
                seconds = time_it(path.label, path.run)
                best[path.label] = min(best[path.label], seconds)
                print(f"  round {round_no} {path.label:<34} {seconds:7.3f} s", flush=True)

    print(f"\nbest of {args.rounds} (interleaved):")
    print(f"  {'path':<34} {'seconds':>8} {'events/s':>12} {'MB/s (gz)':>10}")
    for path in paths:
        seconds = best[path.label]
        print(
            f"  {path.label:<34} {seconds:8.3f} {events / seconds:12,.0f} "
            f"{size / 1e6 / seconds:10.1f}"
        )
    ours = best["swe-stream"]
    speedup = best["gzip -dc"] / ours
    print(f"\ngzip_dc / swe_stream: {speedup:.2f}x")
    print(f"naive / swe_stream:   {best['naive python'] / ours:.2f}x")
    for path in paths:
        if path.label not in {"gzip -dc", "naive python", "swe-stream"}:
            print(f"gzip_dc / {path.label}: {best['gzip -dc'] / best[path.label]:.2f}x")
    verdict = "MET" if speedup >= TARGET else "NOT MET"
    print(f"target >= {TARGET:.1f}x faster than gzip -dc: {verdict} ({speedup:.2f}x)")
    for label in (label for label in best if label.startswith(PUBLISH)):
        with_publish = best["gzip -dc"] / best[label]
        verdict = "MET" if with_publish >= PUBLISH_TARGET else "NOT MET"
        print(
            f"target >= {PUBLISH_TARGET:.1f}x faster than gzip -dc with publishing to the "
            f"{label[len(PUBLISH) + 2 : -1]} broker: {verdict} ({with_publish:.2f}x)"
        )
    return 0


def run() -> int:
    """main(), but always exit 0: a failure is printed as the verdict."""
    try:
        return main()
    except Exception as exc:
        print(
            f"benchmark failed: {exc}\ntarget >= {TARGET:.1f}x faster than gzip -dc: NOT MEASURED"
        )
        return 0


if __name__ == "__main__":
    sys.exit(run())
