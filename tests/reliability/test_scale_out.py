"""Scale-out: three ``swe-stream worker`` processes in one consumer group, and faults.

The world: a real GH Archive hour (315 PullRequestEvents) plus the merges of four
repositories the test builds (the PRs that can become tasks offline), served by a GitHub
stand-in. The three workers join the group first, then ingest publishes the hour: the
group's partitions are shared, so each worker handles part of every stage. Then one fault:

- ``embedded-validating_worker``: on the embedded broker, the first worker seen validating a
  built PR is killed with SIGKILL in the middle of it;
- ``kafka-group_leader``: on three Apache Kafka brokers (topics with 3 copies, 2 in sync), the
  group leader's worker is killed with SIGKILL once validations began (the others notice after
  the group's session timeout, here 20 s rather than Faust's 60 s: the wait is the broker's,
  the same at any length, and the test holds a share of a CI machine meanwhile; then they
  take its partitions over);
- ``kafka-broker``: on three Apache Kafka brokers, one broker (the one leading partition 0 of
  the ledger) is killed with SIGKILL once validations began, and started again 20 s later.

In the end every built PR is exported exactly once (one dataset line, one task directory, one
record in tasks.exported), every PullRequestEvent's PR has one final ledger entry, no PR was
validated twice (one validate entry per PR in the ledger), and no acknowledged ledger entry is
lost (with no worker killed: every entry the workers counted as written is in the topic). The
stall is measured and printed: the longest time without a ledger write after the fault, and for
a broker's death the longest wait of a probe producer (acks=all) for an acknowledgement.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from streams.core.settings import KafkaSettings
from streams.kafka.apache import KafkaCluster
from streams.kafka.broker import EmbeddedBroker
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.offsets import group_members
from streams.kafka.topics import ALL_TOPICS, EXPORTED, LEDGER, VALIDATED
from streams.offline.world import demo_pull_request, hour_with_events, make_demo_repository
from streams.pipeline.ledger import latest, read_ledger
from tests.conftest import REPO_ROOT, SWE_STREAM, start_kafka
from tests.fakes.github_server import serve_github, serve_hour
from tests.reliability.pipeline_runs import (
    GROUP,
    Trail,
    Worker,
    World,
    counts,
    drained,
    final_states,
    ledger_size,
    read_trail,
    scan,
    scrape,
    stalled,
)
from tests.workers import worker_env

pytestmark = pytest.mark.docker

HOUR = "2015-01-01-0"
BUILT = [f"swe-stream-scale/units{i}" for i in range(1, 5)]  # the PRs that can become tasks
WORKERS = 3
BROKER_DOWN_SECONDS = 20.0
KAFKA_SESSION_SECONDS = "20"  # the workers' on Apache Kafka (the embedded broker's: 10 s)
SCENARIOS = [
    pytest.param(("embedded", "validating_worker"), id="embedded-validating_worker"),
    pytest.param(("kafka", "group_leader"), id="kafka-group_leader", marks=pytest.mark.kafka),
    pytest.param(("kafka", "broker"), id="kafka-broker", marks=pytest.mark.kafka),
]


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path, base_image: str
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("scale-world")
    remotes = root / "remote"
    demos = []
    for i, repo in enumerate(BUILT):
        made = make_demo_repository(root / f"made{i}", repo=repo)
        # one url template for all: every remote under one root
        shutil.copytree(made.remote, remotes / repo.split("/")[0] / f"{repo.split('/')[1]}.git")
        demos.append(demo_pull_request(made))
    hours = root / "hours"
    hours.mkdir()
    source = fixtures_dir / "gharchive" / f"{HOUR}.json.gz"
    (hours / source.name).write_bytes(hour_with_events(source, [d.event() for d in demos]))
    events = scan(hours / source.name)
    with serve_github({}) as github:
        serve_hour(github, events)
        for demo in demos:
            repo = demo.repo.repo
            github.add_json(f"/repos/{repo}", demo.repository())
            github.add_json(f"/repos/{repo}/pulls/{demo.number}", demo.pull_request())
            github.add_json(f"/repos/{repo}/pulls/{demo.number}/files?per_page=100", demo.files)
        yield World(hours, events, github, f"file://{remotes}/{{owner}}/{{repo}}.git")


async def wait_for_members(bootstrap: str, count: int, workers: list[Worker]) -> None:
    """Until ``count`` workers are members of a group that is not rebalancing: each has its
    partitions (a CI run's third worker got its own 29 s after it was listed, and the two others
    had handled every raw event by then: the partitions were not shared)."""
    deadline = time.monotonic() + 180
    while len(await group_members(bootstrap, GROUP, settled=True)) < count:
        for worker in workers:
            worker.check_alive()
        assert time.monotonic() < deadline, [w.log.read_text()[-2000:] for w in workers]
        await asyncio.sleep(0.5)


@dataclass
class Watch:
    """What the test saw while the run went on: ledger sizes over time, and the probe's
    acknowledgement waits."""

    sizes: list[tuple[float, int]] = field(default_factory=list)
    probe_waits: list[float] = field(default_factory=list)

    def longest_quiet(self, since: float) -> float:
        """The longest time without a new ledger entry from ``since`` on."""
        longest, last_change, last_size = 0.0, since, None
        for at, size in self.sizes:
            if at < since:
                last_size = size
                continue
            if size != last_size:
                longest = max(longest, at - last_change)
                last_change, last_size = at, size
        return longest


async def probe(bootstrap: str, watch: Watch, stop: asyncio.Event) -> None:
    """Send a record every 0.2 s to a replicated topic (acks=all): how long each waited."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, acks="all",
        request_timeout_ms=60_000,
    )  # fmt: skip
    await producer.start()
    try:
        while not stop.is_set():
            sent = time.monotonic()
            await producer.send_and_wait(LEDGER.name + ".probe", b"probe", b"probe")
            watch.probe_waits.append(time.monotonic() - sent)
            await asyncio.sleep(0.2)
    finally:
        await producer.stop()


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_three_workers_share_the_partitions_and_a_fault_loses_and_duplicates_nothing(
    world: World, tmp_path: Path, scenario: tuple[str, str]
) -> None:
    kind, fault = scenario
    if kind == "embedded":
        with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
            result = asyncio.run(scale_out(world, tmp_path, broker.bootstrap, fault, None))
    else:
        cluster = start_kafka(nodes=3)
        try:
            result = asyncio.run(scale_out(world, tmp_path, cluster.bootstrap, fault, cluster))
        finally:
            cluster.stop()
    check(world, tmp_path / "out", result)


@dataclass
class Result:
    ledger: list[object]
    exported: Counter[str]
    validated: Counter[str]
    shared: dict[int, float]
    written: float  # ledger entries the workers that ran to the end counted as written
    killed_worker: bool
    ledger_records: int
    trail: Trail | None = None  # where the records went, for a failure's message
    logs: tuple[Path, ...] = ()


async def scale_out(
    world: World, tmp_path: Path, bootstrap: str, fault: str, cluster: KafkaCluster | None
) -> Result:
    out = tmp_path / "out"
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        states = await admin.create(ALL_TOPICS)
    if cluster is not None:  # the catalog on three brokers: three copies, two in sync
        assert states[0].wanted_configs.get("min.insync.replicas") == "2"
    workers = []
    for i in range(WORKERS):
        (tmp_path / f"worker{i}").mkdir()
        workers.append(Worker(bootstrap, world, tmp_path / f"worker{i}", out=out))
        if cluster is not None:
            workers[-1].env["SWE_STREAM_KAFKA_SESSION_TIMEOUT_SECONDS"] = KAFKA_SESSION_SECONDS
    watch, stop_probe = Watch(), asyncio.Event()
    probing = asyncio.create_task(probe(bootstrap, watch, stop_probe)) if cluster else None
    victim: Worker | None = None
    try:
        for worker in workers:
            worker.start()
        await wait_for_members(bootstrap, WORKERS, workers)
        ingest = await asyncio.to_thread(
            subprocess.run,
            [SWE_STREAM, "ingest", "--bootstrap", bootstrap,
             "--source", str(world.hours_dir / f"{HOUR}.json.gz")],
            cwd=REPO_ROOT, env=worker_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert ingest.returncode == 0, ingest.stderr[-3000:]

        # the fault, once a worker validates a built PR (a worker's fault: once one starts to)
        deadline = time.monotonic() + 600
        read_before = [0.0] * len(workers)
        while True:
            looks = [validate_counts(w) for w in workers]
            reads = [look["swe_stream_stage_records_in_total"] for look in looks]
            starting = [
                w
                for w, look, read, before in zip(workers, looks, reads, read_before, strict=True)
                if read > before and read > came_out(look)
            ]
            if starting if fault == "validating_worker" else any(map(validating, workers)):
                break
            read_before = reads
            assert time.monotonic() < deadline, [w.log.read_text()[-2000:] for w in workers]
            for worker in workers:
                worker.check_alive()
            await asyncio.sleep(0.5)  # a validation takes seconds
        if fault == "validating_worker":
            # at once: a validation seen under way at an earlier look may be ending by the time
            # a signal arrives on a loaded machine (its output acknowledged, its ledger entry
            # not yet written: the at-least-once window the next owner validates again in)
            starting[0].kill()
        shared = {
            i: counts(w, "swe_stream_stage_records_in_total", stage="prefilter")
            for i, w in enumerate(workers)
            if not w.killed
        }
        shared |= {i: look["prefilter_in"] for i, look in enumerate(looks) if workers[i].killed}
        faulted = time.monotonic()
        restart_broker = await inject(fault, workers, bootstrap, cluster)
        victim = next((w for w in workers if w.killed), None)
        survivors = [w for w in workers if w is not victim]
        if victim is not None and cluster is not None:  # Tansu lists members that left
            rebalanced = await members_after(bootstrap, WORKERS - 1, survivors, deadline)
            print(f"{fault}: the group is the survivors after {rebalanced - faulted:.1f} s")

        # the survivors (or all, the broker back) drain every stage input
        settled = 0
        while settled < 2:
            if time.monotonic() > deadline:
                pytest.fail(await stalled(bootstrap, workers, "not drained after the fault"))
            if restart_broker is not None and time.monotonic() > faulted + BROKER_DOWN_SECONDS:
                await asyncio.to_thread(restart_broker)
                restart_broker = None
            for worker in survivors:
                worker.check_alive()
            try:
                watch.sizes.append((time.monotonic(), await ledger_size(bootstrap)))
                idle = restart_broker is None and await drained(bootstrap)
            except Exception:  # a broker gone: its partitions' answers wait for a new leader
                idle = False
            settled = settled + 1 if idle else 0
            await asyncio.sleep(3.0 if settled else 0.5)
        written = sum(counts(w, "swe_stream_ledger_writes_total") for w in survivors)
    finally:
        stop_probe.set()
        if probing is not None:
            await asyncio.gather(probing, return_exceptions=True)
        for worker in workers:
            worker.stop()
    quiet = watch.longest_quiet(faulted)
    waits = max(watch.probe_waits, default=0.0)
    print(f"{fault}: longest time without a ledger write after the fault {quiet:.1f} s; "
          f"longest acknowledgement wait of the probe {waits:.1f} s")  # fmt: skip
    exported = Counter([r.key.decode() async for r in read_topic_to_end(bootstrap, EXPORTED.name)])
    validated = Counter(
        [r.key.decode() async for r in read_topic_to_end(bootstrap, VALIDATED.name)]
    )
    return Result(
        await read_ledger(bootstrap),
        exported,
        validated,
        shared,
        written,
        victim is not None,
        await ledger_size(bootstrap),
        await read_trail(bootstrap),
        tuple(w.log for w in workers),
    )


async def inject(
    fault: str, workers: list[Worker], bootstrap: str, cluster: KafkaCluster | None
) -> object:
    """Do the scenario's fault; for a broker's death, what starts it again."""
    if fault == "validating_worker":
        return None  # killed as its validation started
    if fault == "group_leader":
        leaders = [w for w in workers if counts(w, "swe_stream_consumer_group_leader") == 1]
        assert len(leaders) == 1, [counts(w, "swe_stream_consumer_group_leader") for w in workers]
        leaders[0].kill()
        return None
    assert cluster is not None
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        described = await admin._admin.describe_topics([LEDGER.name])
    leader = next(p["leader"] for p in described[0]["partitions"] if p["partition"] == 0)
    index = next(i for i, m in enumerate(cluster.members) if m.ports.node_id == leader)
    pid = cluster.kill(index)
    print(f"broker: killed node {leader} (pid {pid}), the leader of {LEDGER.name}[0]")
    return lambda: cluster.restart(index)


def validating(worker: Worker) -> bool:
    """A validation under way: a record validate read has not come out yet (written, rejected,
    failed or skipped). Not merely "validate read a record": a kill after its output was
    acknowledged but before its ledger entry was flushed is the at-least-once window (the
    partition's next owner validates the PR again), not the middle of a validation."""
    look = validate_counts(worker)
    return look["swe_stream_stage_records_in_total"] > came_out(look)


IN_TOTAL = "swe_stream_stage_records_in_total"


def validate_counts(worker: Worker) -> Counter[str]:
    """One look at a worker: its validate stage's counters, summed over their other labels,
    and the records its prefilter read (``prefilter_in``)."""
    seen: Counter[str] = Counter()
    for family in text_string_to_metric_families(scrape(worker)):
        for sample in family.samples:  # summed over the reasons of rejections and the like
            if sample.labels.get("stage") == "validate":
                seen[sample.name] += sample.value
            elif sample.labels.get("stage") == "prefilter" and sample.name == IN_TOTAL:
                seen["prefilter_in"] += sample.value
    return seen


def came_out(look: Counter[str]) -> float:
    """The records that came out of validate: written, rejected, failed or skipped."""
    return sum(
        look[f"swe_stream_stage_records_{end}_total"]
        for end in ("out", "rejected", "failed", "skipped")
    )


async def members_after(
    bootstrap: str, count: int, workers: list[Worker], deadline: float
) -> float:
    """When the group's members are ``count`` (the dead one dropped after its session)."""
    while len(await group_members(bootstrap, GROUP)) != count:
        assert time.monotonic() < deadline, [w.log.read_text()[-2000:] for w in workers]
        for worker in workers:
            worker.check_alive()
        await asyncio.sleep(0.5)
    return time.monotonic()


def check(world: World, out: Path, result: Result) -> None:
    ledger = result.ledger
    # the partitions were shared: every worker handled raw events before the fault
    assert all(n > 0 for n in result.shared.values()), result.shared
    # every PR of every event has a final state, and only one
    finals = final_states(ledger)  # type: ignore[arg-type]
    last = {e.key: e for e in latest(ledger).values()}  # type: ignore[arg-type]
    pr_keys = {e.key for e in world.events}
    assert pr_keys <= set(last)
    # ended: final, or ignored by prefilter (an event that is no merge; a later one may be)
    unfinished = {
        k: (e.stage, e.status)
        for k, e in last.items()
        if not e.is_final() and e.status != "ignored"
    }
    explained = result.trail.explain(unfinished, ledger, list(result.logs)) if result.trail else ""
    assert unfinished == {}, (Counter(unfinished.values()), result.shared, explained)
    assert {k: v for k, v in finals.items() if len(v) != 1} == {}
    # each built PR exported exactly once: one dataset line, one task directory, one record
    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    expected = sorted(f"{repo.replace('/', '__')}-1" for repo in BUILT)
    assert sorted(row["instance_id"] for row in rows) == expected
    task_dirs = sorted(d.name for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    assert len(task_dirs) == len(BUILT), task_dirs
    exported = [key for key, entry in last.items() if entry.status == "exported"]
    assert len(exported) == len(BUILT), exported
    assert sorted(result.exported.values()) == [1] * len(BUILT), result.exported
    # no PR validated twice: one validation's record per PR (and no second ledger entry)
    assert sorted(result.validated.values()) == [1] * len(BUILT), result.validated
    validations = Counter(e.key for e in ledger if e.stage == "validate")  # type: ignore[attr-defined]
    assert set(validations.values()) <= {1}, validations
    # no acknowledged ledger entry lost (nor doubled): with every worker alive to the end,
    # each entry a worker counted as written is in the topic, once
    if not result.killed_worker:
        assert result.ledger_records == result.written, (result.ledger_records, result.written)
    print(f"exported once: {len(exported)} of {len(BUILT)} PRs; ledger records "
          f"{result.ledger_records}, counted as written {result.written:.0f}")  # fmt: skip
