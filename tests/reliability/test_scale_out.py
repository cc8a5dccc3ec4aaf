"""Scale-out: three ``swe-stream worker`` processes in one consumer group on the embedded broker.

The world: a real GH Archive hour (315 PullRequestEvents) plus the merges of four
repositories the test builds (the PRs that can become tasks offline), served by a GitHub
stand-in. The three workers join the group first, then ingest publishes the hour: the
group's partitions are shared, so each worker handles part of every stage. The first worker
seen validating a built PR is killed with SIGKILL in the middle of it; the other two take its
partitions over and redo what it had not committed. In the end every built PR is exported
exactly once (one dataset line, one task directory), every PullRequestEvent's PR has a final
ledger entry, and no PR has two different final states.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams.core.settings import KafkaSettings
from streams.kafka.broker import EmbeddedBroker
from streams.kafka.client import TopicAdmin
from streams.kafka.offsets import group_members
from streams.kafka.topics import ALL_TOPICS
from streams.offline.world import demo_pull_request, hour_with_events, make_demo_repository
from streams.pipeline.ledger import latest, read_ledger
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.github_server import serve_github, serve_hour
from tests.reliability.pipeline_runs import (
    GROUP,
    Worker,
    World,
    drained,
    final_states,
    scan,
    stalled,
)
from tests.workers import worker_env

pytestmark = pytest.mark.docker

HOUR = "2015-01-01-0"
BUILT = [f"swe-stream-scale/units{i}" for i in range(1, 5)]  # the PRs that can become tasks
WORKERS = 3


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


def counts(worker: Worker, metric: str, stage: str) -> float:
    """``metric{stage}`` as the worker's /metrics serves it (0 when it does not answer)."""
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{worker.metrics_port}/metrics", timeout=5
        ) as response:
            text = response.read().decode()
    except OSError:
        return 0.0
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == metric and s.labels.get("stage") == stage
    )


async def wait_for_members(bootstrap: str, count: int, workers: list[Worker]) -> None:
    deadline = time.monotonic() + 180
    while len(await group_members(bootstrap, GROUP)) < count:
        for worker in workers:
            worker.check_alive()
        assert time.monotonic() < deadline, [w.log.read_text()[-2000:] for w in workers]
        await asyncio.sleep(0.5)


@pytest.mark.timeout(1200)
def test_three_workers_share_the_partitions_and_one_killed_loses_and_duplicates_nothing(
    world: World, tmp_path: Path
) -> None:
    asyncio.run(scale_out(world, tmp_path))


async def scale_out(world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        bootstrap = broker.bootstrap
        async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
            await admin.create(ALL_TOPICS)
        workers = []
        for i in range(WORKERS):
            (tmp_path / f"worker{i}").mkdir()
            workers.append(Worker(bootstrap, world, tmp_path / f"worker{i}", out=out))
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

            # the first worker seen validating a built PR is killed in the middle of it
            deadline = time.monotonic() + 600
            victim = None
            while victim is None:
                assert time.monotonic() < deadline, [w.log.read_text()[-2000:] for w in workers]
                for worker in workers:
                    worker.check_alive()
                    if counts(worker, "swe_stream_stage_records_in_total", "validate") > 0:
                        victim = worker
                        break
                await asyncio.sleep(0.2)
            shared = {
                i: counts(w, "swe_stream_stage_records_in_total", "prefilter")
                for i, w in enumerate(workers)
            }
            victim.kill()
            survivors = [w for w in workers if w is not victim]

            # the survivors take its partitions over and drain every stage input
            settled = 0
            while settled < 2:
                if time.monotonic() > deadline:
                    pytest.fail(await stalled(bootstrap, workers, "not drained after the kill"))
                for worker in survivors:
                    worker.check_alive()
                settled = settled + 1 if await drained(bootstrap) else 0
                await asyncio.sleep(3.0 if settled else 0.5)
        finally:
            for worker in workers:
                worker.stop()
        ledger = await read_ledger(bootstrap)

    # the partitions were shared: every worker handled raw events before the kill
    assert all(n > 0 for n in shared.values()), shared
    # every PR of every event has a final state, and only one
    finals = final_states(ledger)
    last = {e.key: e for e in latest(ledger).values()}
    pr_keys = {e.key for e in world.events}
    assert pr_keys <= set(last)
    # ended: final, or ignored by prefilter (an event that is no merge; a later one may be)
    unfinished = {
        k: (e.stage, e.status)
        for k, e in last.items()
        if not e.is_final() and e.status != "ignored"
    }
    assert unfinished == {}, (Counter(unfinished.values()), shared)
    assert {k: v for k, v in finals.items() if len(v) != 1} == {}
    # each built PR exported exactly once: one dataset line, one task directory
    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    expected = sorted(f"{repo.replace('/', '__')}-1" for repo in BUILT)
    assert sorted(row["instance_id"] for row in rows) == expected
    task_dirs = sorted(d.name for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    assert len(task_dirs) == len(BUILT), task_dirs
    exported = [key for key, entry in last.items() if entry.status == "exported"]
    assert len(exported) == len(BUILT), exported
