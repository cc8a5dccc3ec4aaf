"""Crash and restart: the worker is killed with SIGKILL at three random points while it works
through a fixture hour, and restarted each time; the end state equals an uninterrupted
run's.

The world: a real GH Archive hour (315 PullRequestEvents) plus the merge of a repository
the test builds (one more event, the only PR that can become a task offline); a GitHub
stand-in on 127.0.0.1 serving every PR of the hours (their real PR and repository objects,
synthetic file lists) and the built repository's PR. Real PRs are enriched and classified,
then fail at extract (their git remotes do not exist here); the built one is validated in
Docker and exported. Each run has its own broker (the uninterrupted one, shared by both
brokers' tests, the embedded one); ingest publishes the hours, then
``swe-stream worker`` (every stage) processes them, and the run ends when the worker's group
has committed every record of every stage input.

The kill points are random (the seed is printed, ``SWE_STREAM_CRASH_SEED`` repeats a run):
three ledger sizes between 10% and 90% of the uninterrupted run's.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from schemas import ExportedTask, LedgerEntry
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import EXPORTED
from streams.offline.world import demo_pull_request, hour_with_events, make_demo_repository
from streams.pipeline.ledger import read_ledger
from tests.conftest import REPO_ROOT, SWE_STREAM, running_broker
from tests.fakes.github_server import serve_github, serve_hour
from tests.reliability.pipeline_runs import (
    Trail,
    Worker,
    World,
    counts,
    drained,
    final_states,
    left_by,
    read_trail,
    scan,
    stalled,
    states,
)
from tests.workers import worker_env

pytestmark = pytest.mark.docker

# one hour: each of the three runs (uninterrupted, crashed on each broker) processes all of it
HOURS = ("2015-01-01-0",)
KILLS = 3


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path, base_image: str
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("crash-world")
    demo = demo_pull_request(make_demo_repository(root / "git"))
    hours = root / "hours"
    hours.mkdir()
    first, *others = (fixtures_dir / "gharchive" / f"{hour}.json.gz" for hour in HOURS)
    (hours / first.name).write_bytes(hour_with_events(first, [demo.event()]))
    for other in others:
        shutil.copy(other, hours / other.name)
    events = [e for hour in HOURS for e in scan(hours / f"{hour}.json.gz")]
    with serve_github({}) as github:
        serve_hour(github, events)
        repo = demo.repo.repo
        github.add_json(f"/repos/{repo}", demo.repository())
        github.add_json(f"/repos/{repo}/pulls/{demo.number}", demo.pull_request())
        github.add_json(f"/repos/{repo}/pulls/{demo.number}/files?per_page=100", demo.files)
        yield World(hours, events, github, demo.repo.url_template)


@dataclass
class RunResult:
    ledger: list[LedgerEntry]
    exported: list[ExportedTask]
    dataset: list[dict[str, object]]
    task_dirs: dict[str, dict[str, bytes]]
    kills: list[int] = field(default_factory=list)  # ledger writes since the start, per kill
    idle_kills: int = 0  # kills that found the work already done
    orphans: list[str] = field(default_factory=list)  # what killed workers left in Docker
    restarts: int = 0
    trail: Trail | None = None  # where the records went, for a failure's message
    log: Path | None = None


async def run_pipeline(
    world: World, workdir: Path, kill_after: list[int], broker_kind: str, timeout: float = 900
) -> RunResult:
    """Ingest the hours on a fresh broker of ``broker_kind``, run the worker until drained,
    killing it with SIGKILL once it has written ``kill_after[i]`` ledger entries since its
    (re)start, and restarting it each time; collect what it produced."""
    workdir.mkdir(parents=True, exist_ok=True)
    with running_broker(broker_kind, workdir / "broker.log") as bootstrap:
        ingest = await asyncio.to_thread(
            subprocess.run,
            [SWE_STREAM, "ingest", "--bootstrap", bootstrap]
            + [arg for h in HOURS for arg in ("--source", str(world.hours_dir / f"{h}.json.gz"))],
            cwd=REPO_ROOT, env=worker_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert ingest.returncode == 0, ingest.stderr[-3000:]
        worker = Worker(bootstrap, world, workdir)
        result = RunResult([], [], [], {})
        pending_kills = list(kill_after)
        deadline = time.monotonic() + timeout
        worker.start()
        try:
            settled, looked = 0, 0.0
            while settled < 2:
                if time.monotonic() > deadline:
                    pytest.fail(await stalled(bootstrap, [worker], f"not drained in {timeout} s"))
                # each look costs the worker a /metrics exposition and the test its parse
                await asyncio.sleep(0.2)
                worker.check_alive()
                # what this worker wrote since its (re)start, read often: a run takes seconds
                written = int(counts(worker, "swe_stream_ledger_writes_total"))
                idle = False
                if time.monotonic() - looked > 1.0:
                    idle, looked = await drained(bootstrap), time.monotonic()
                if pending_kills and (written >= pending_kills[0] or idle):
                    # a kill point: this many ledger writes since the worker (re)started, or
                    # the work ran out first (then the kill lands on an idle worker)
                    pending_kills.pop(0)
                    worker.kill()
                    result.kills.append(written)
                    result.idle_kills += idle
                    worker.start()
                    result.restarts += 1
                    settled = 0
                    continue
                # drained twice, a few seconds apart, and no kill left to do
                settled = settled + 1 if not pending_kills and idle else 0
                if settled:
                    await asyncio.sleep(3.0)
        finally:
            worker.stop()
        result.trail, result.log = await read_trail(bootstrap), worker.log
        result.orphans = left_by(worker.killed)
        result.ledger = await read_ledger(bootstrap)
        result.exported = [
            ExportedTask.from_json(r.value)
            async for r in read_topic_to_end(bootstrap, EXPORTED.name)
        ]
    out = workdir / "out"
    dataset = out / "dataset.jsonl"
    if dataset.exists():
        result.dataset = [json.loads(line) for line in dataset.read_text().splitlines()]
    result.task_dirs = {
        d.name: {f.name: f.read_bytes() for f in sorted(d.iterdir())}
        for d in sorted(out.iterdir())
        if d.is_dir() and not d.name.startswith(".")
    } if out.exists() else {}  # fmt: skip
    return result


@pytest.fixture(scope="module")
def calm(world: World, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The uninterrupted run, once for both brokers (on the embedded one): where a PR ends
    does not depend on the broker, so each broker's crashed run is held to the same end."""
    workdir = tmp_path_factory.mktemp("uninterrupted")
    return asyncio.run(run_pipeline(world, workdir, [], "embedded"))


@pytest.mark.timeout(1500)  # a full run and three rejoins of the group
def test_sigkill_at_three_random_points_loses_and_duplicates_nothing(
    world: World, calm: RunResult, tmp_path: Path, broker_kind: str
) -> None:
    seed = int(os.environ.get("SWE_STREAM_CRASH_SEED") or time.time_ns() % 1_000_000)
    print(f"crash test seed: {seed} (SWE_STREAM_CRASH_SEED={seed} repeats it)")

    pr_keys = {e.key for e in world.events}
    assert len(world.events) == 315 + 1  # the hour + the built repository's merge
    expected = states(calm.ledger)
    assert set(expected) == pr_keys  # every PR of every event has a state
    assert len(calm.dataset) == 1 and len(calm.task_dirs) == 1  # the one possible task

    # three kill points: each after 5-20% of the run's ledger writes since the (re)start
    rng = random.Random(seed)
    total = len(calm.ledger)
    kill_after = [rng.randint(total // 20, total // 5) for _ in range(KILLS)]
    crashed = asyncio.run(run_pipeline(world, tmp_path / "crashed", kill_after, broker_kind))
    print(
        f"ledger writes: {total} uninterrupted, {len(crashed.ledger)} with kills after "
        f"{crashed.kills} writes since each (re)start ({crashed.idle_kills} on an idle worker)"
    )

    assert crashed.restarts == KILLS and len(crashed.kills) == KILLS
    assert crashed.idle_kills < KILLS  # at least one kill interrupted work
    # every PR ends where the uninterrupted run left it, with one final state at most
    ended = states(crashed.ledger)
    differing = {k for k in expected.keys() | ended.keys() if expected.get(k) != ended.get(k)}
    assert crashed.trail is not None and crashed.log is not None
    explained = crashed.trail.explain(differing, crashed.ledger, [crashed.log])
    assert ended == expected, explained
    finals = final_states(crashed.ledger)
    assert {k: v for k, v in finals.items() if len(v) != 1} == {}
    assert Counter(s for s, _, _ in expected.values()) == Counter(
        s for s, _, _ in states(crashed.ledger).values()
    )
    # no task exported twice: one dataset line, one directory, the same bytes
    ids = [row["instance_id"] for row in crashed.dataset]
    assert sorted(ids) == sorted(row["instance_id"] for row in calm.dataset)
    assert len(ids) == len(set(ids))
    assert crashed.task_dirs.keys() == calm.task_dirs.keys()
    # a worker killed while validating leaves no sandbox behind: the next one removes it
    assert crashed.orphans == []
    assert {t.instance_id for t in crashed.exported} == {t.instance_id for t in calm.exported}
