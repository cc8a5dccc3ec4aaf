"""The streaming skeleton's own cost, measured side by side in one run on each broker.

    python -m benchmarks.stream [--records N] [--rounds R] [--brokers embedded,kafka]

Both paths copy the same pre-loaded records (the PullRequestEvent lines of the two real
GH Archive fixture hours, repeated) from ``bench.in`` to their own output topic, each in its
own process, as a fresh consumer group:

* plain: an aiokafka consume-and-produce loop (commit after every fetched batch);
* faust: a pass-through Faust agent in ``swe-stream worker`` (benchmarks/passthrough_app.py).

Throughput is taken from the output records' timestamps, (n - 1) / (last - first), the same
way for both, so process start-up and consumer-group joins are not counted; a first pass of the
plain loop, not counted, warms the broker up. Rounds alternate
the two paths; the ratio printed is faust / plain per round and its median, per broker: the
embedded broker (target >= 0.5) and Apache Kafka (one node; target >= 0.9), each with the
client settings the project uses on it (on Kafka the idempotent producer, acks=all, for both
paths).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from benchmarks.brokers import BROKERS, NAMES, parse_brokers, started
from benchmarks.brokers import profile as broker_profile
from streams.kafka.broker import free_port

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_HOURS = [
    ROOT.parent / "shared" / "fixtures" / "gharchive" / f"2015-01-01-{h}.json.gz" for h in (0, 1)
]
SOURCE = "bench.in"
TARGETS = {"embedded": 0.5, "kafka": 0.9}  # faust / plain
PARTITIONS = 4


def pull_request_events() -> list[tuple[bytes, bytes]]:
    """(key, value) of every PullRequestEvent line of the fixture hours, as published."""
    records = []
    for path in FIXTURE_HOURS:
        with gzip.open(path, "rb") as lines:
            for line in lines:
                if b'"PullRequestEvent"' not in line:
                    continue
                event = orjson.loads(line)
                key = f"{event['repo']['name']}#{event['payload']['number']}".encode()
                records.append((key, line.rstrip(b"\n")))
    return records


async def create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names])
    finally:
        await admin.close()


async def preload(bootstrap: str, records: list[tuple[bytes, bytes]], count: int) -> int:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    size = 0
    try:
        pending = []
        for i in range(count):
            key, value = records[i % len(records)]
            size += len(value)
            pending.append(await producer.send(SOURCE, key=key, value=value))
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return size


async def output_rate(
    bootstrap: str, topic: str, count: int, timeout: float, worker: subprocess.Popen[bytes]
) -> float:
    """Records/s from the output's timestamps, once all ``count`` records have arrived."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    stamps: list[int] = []
    try:
        async with asyncio.timeout(timeout):
            while len(stamps) < count:
                if worker.poll() not in (None, 0):
                    raise RuntimeError(f"worker exited ({worker.returncode}) after {len(stamps)}")
                batch = await consumer.getmany(timeout_ms=500, max_records=5000)
                stamps += [m.timestamp for msgs in batch.values() for m in msgs]
    finally:
        await consumer.stop()
    if len(stamps) != count:
        raise RuntimeError(f"{topic}: {len(stamps)} records, expected {count}")
    seconds = (max(stamps) - min(stamps)) / 1000
    return (count - 1) / seconds


async def plain_loop(bootstrap: str, target: str, group: str, count: int, kind: str) -> None:
    """The baseline: consume, produce the same bytes, commit per fetched batch."""
    # The same client settings the project's own producers and consumers use on this broker.
    profile = broker_profile(kind, bootstrap)
    consumer = AIOKafkaConsumer(SOURCE, **profile.consumer_config(group))
    producer = AIOKafkaProducer(**profile.producer_config())
    await consumer.start()
    await producer.start()
    done = 0
    try:
        while done < count:
            batch = await consumer.getmany(timeout_ms=500)
            for messages in batch.values():
                for message in messages:
                    await producer.send(target, key=message.key, value=message.value)
                    done += 1
            await producer.flush()
            if batch:
                await consumer.commit()
    finally:
        await producer.stop()
        await consumer.stop()


def run_path(path: str, bootstrap: str, count: int, round_no: int, kind: str) -> float:
    target = f"bench.out.{path}.{round_no}"
    group = f"bench-{path}-{round_no}-{time.monotonic_ns()}"
    asyncio.run(create_topics(bootstrap, [target]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_STREAM_")}
    env.update(PYTHONPATH=str(ROOT), BENCH_SOURCE_TOPIC=SOURCE, BENCH_TARGET_TOPIC=target)
    if path == "plain":
        command = [
            sys.executable,
            "-m",
            "benchmarks.stream",
            "--plain-worker",
            bootstrap,
            "--target",
            target,
            "--group",
            group,
            "--records",
            str(count),
            "--brokers",
            kind,
        ]
    else:
        env.update(
            SWE_STREAM_WORKER_LOG_LEVEL="warning",
            SWE_STREAM_WORKER_DATA_DIR=str(
                Path(os.environ.get("TMPDIR", "/tmp")) / "swe-stream-bench"
            ),
        )
        command = [
            str(Path(sys.executable).with_name("swe-stream")),
            "worker",
            "--app",
            "benchmarks.passthrough_app:app",
            "--bootstrap",
            bootstrap,
            "--app-id",
            group,
            "--web-port",
            str(free_port()),
            "--metrics-port",
            "0",
        ]
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"{group}.log", "w+b")  # noqa: SIM115
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        rate = asyncio.run(output_rate(bootstrap, target, count, 600, process))
    except BaseException:
        process.kill()
        process.wait()
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-4000:])
        raise
    finally:
        log.close()
    process.terminate()
    process.wait(60)
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--brokers", default=",".join(BROKERS), help="embedded,kafka (both)")
    parser.add_argument("--plain-worker", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_worker:
        kind = parse_brokers(args.brokers)[0]
        asyncio.run(plain_loop(args.plain_worker, args.target, args.group, args.records, kind))
        return 0

    records = pull_request_events()
    medians = {}
    for kind in parse_brokers(args.brokers):
        with started(kind) as bootstrap:
            asyncio.run(create_topics(bootstrap, [SOURCE]))
            size = asyncio.run(preload(bootstrap, records, args.records))
            print(
                f"records: {args.records} PullRequestEvent lines from {len(records)} distinct "
                f"(mean {size / args.records / 1024:.1f} KiB, {size / 2**20:.0f} MiB), "
                f"{PARTITIONS} partitions, {NAMES[kind]}"
            )
            # a pass not counted: the broker's JIT warms up on it, not on the first round's
            # plain loop (which would flatter Faust's ratio)
            run_path("plain", bootstrap, args.records, 0, kind)
            ratios = []
            for round_no in range(1, args.rounds + 1):
                plain = run_path("plain", bootstrap, args.records, round_no, kind)
                faust = run_path("faust", bootstrap, args.records, round_no, kind)
                ratios.append(faust / plain)
                print(
                    f"round {round_no}: plain aiokafka {plain:9.0f} rec/s   "
                    f"faust agent {faust:9.0f} rec/s   ratio {faust / plain:.2f}",
                    flush=True,
                )
        medians[kind] = statistics.median(ratios)
    met = True
    for kind, median in medians.items():
        verdict = "meets" if median >= TARGETS[kind] else "MISSES"
        met &= median >= TARGETS[kind]
        print(
            f"median ratio faust/plain, {NAMES[kind]}: {median:.2f} "
            f"({verdict} the >= {TARGETS[kind]} target)"
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
