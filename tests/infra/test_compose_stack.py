"""The production stack for real: ``docker-compose`` builds Apache Kafka (from Maven Central's
jars), Prometheus (Debian's) and swe-stream on the project's own images, brings up Kafka, the
topics, ingest, three workers and Prometheus, and mines the shipped GH Archive hour (plus the
merge of a repository the test makes) through them. The one task is exported once, the three
workers shared the hour, and Prometheus, with the shipped config, scraped each of them."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.kafka.broker import free_port
from streams.offline.world import OfflineWorld, offline_world
from tests.conftest import REPO_ROOT
from tests.infra.test_observability import prometheus_query, tool
from tests.reliability.pipeline_runs import scan
from tests.workers import TASK

pytestmark = [pytest.mark.docker, pytest.mark.kafka]

COMPOSE_FILE = REPO_ROOT / "infra" / "docker-compose.yml"
WORKERS = 3
HOST = "host.docker.internal"  # the host, from a container (extra_hosts: host-gateway)


def container_url(url: str) -> str:
    """A URL of a server on this host's every address, as a container reaches it."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=f"{HOST}:{parts.port}").geturl()


def override(world: OfflineWorld, world_root: Path, out: Path) -> dict[str, Any]:
    """What the test changes in the stack: where GH Archive, GitHub and the git remotes are
    (the offline world on this host), the heuristic classify and score (no LLM key), the hour
    ingest follows, one test run with the fix, and where the tasks are written (a directory of
    the test)."""
    reach = {"extra_hosts": [f"{HOST}:host-gateway"]}
    environment = {
        "SWE_STREAM_GHARCHIVE_BASE_URL": container_url(world.gharchive_url),
        "SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1",
        "SWE_STREAM_GITHUB_API_URL": container_url(world.github_url),
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": world.git_url_template,
        "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
        "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
        "SWE_STREAM_SCORE_BACKEND": "heuristic",
        "SWE_STREAM_WORKER_LAG_INTERVAL_SECONDS": "2",
        "SWE_STREAM_VALIDATION_RUNS": "1",  # three test runs, as the pipeline tests'
    }
    worker = reach | {
        "environment": environment,
        # the demo repository's remote, at the path the git URL names
        "volumes": [f"{world_root}:{world_root}:ro", f"{out}:/var/lib/swe-stream/tasks"],
    }
    ingest = reach | {
        "environment": environment,
        "command": ["ingest", "--from", world.hour, "--follow", "--metrics-port", "9108"],
    }
    return {"version": "3.9", "services": {"worker": worker, "ingest": ingest}}


class Compose:
    """``docker-compose`` on the shipped file and the test's override, as one project."""

    def __init__(self, root: Path, override_file: Path, base_image: str):
        self.project = f"swestream{os.getpid()}"
        self.prometheus_port = free_port()
        self.command = [
            tool("docker-compose"), "-p", self.project,
            "-f", str(COMPOSE_FILE), "-f", str(override_file),
        ]  # fmt: skip
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_STREAM_")}
        self.env |= {
            "SWE_STREAM_BASE_IMAGE": base_image,
            "SWE_STREAM_PROMETHEUS_PORT": str(self.prometheus_port),
        }
        self.root = root

    def __call__(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.command, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def logs(self) -> str:
        done = self("logs", "--no-color", "--tail", "40", timeout=120)
        return done.stdout[-12000:]

    def query(self, expr: str) -> list[Any]:
        return prometheus_query(self.prometheus_port, expr)

    def value(self, expr: str) -> float:
        try:
            answer = self.query(expr)
        except OSError:
            return -1.0
        return float(answer[0]["value"][1]) if answer else -1.0


@pytest.mark.timeout(1800)
def test_the_compose_stack_mines_the_shipped_hour_with_three_workers(
    tmp_path: Path, fixtures_dir: Path, base_image: str, java_images: dict[str, str]
) -> None:
    out = tmp_path / "tasks"
    out.mkdir()
    world_root = tmp_path / "world"
    hour = fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    with offline_world(world_root, hour, host="0.0.0.0") as world:
        override_file = tmp_path / "override.yml"
        override_file.write_text(yaml.safe_dump(override(world, world_root, out)))
        compose = Compose(tmp_path, override_file, base_image)
        built = compose("build", timeout=1200)
        assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
        try:
            # the workers first, then ingest: each of the three gets some of the hour
            up = compose(
                "up", "-d", "--scale", f"worker={WORKERS}",
                "kafka", "topics", "worker", "prometheus",
            )  # fmt: skip
            assert up.returncode == 0, up.stderr[-4000:] + compose.logs()
            grouped(compose)
            up = compose("up", "-d", "--scale", f"worker={WORKERS}")  # the rest: `up` as it is
            assert up.returncode == 0, up.stderr[-4000:] + compose.logs()
            mined(compose, len(scan(hour)) + 1)  # the hour's events and the made merge
        finally:
            down = compose("down", "-v", "--remove-orphans", timeout=300)
            assert down.returncode == 0, down.stderr[-3000:]

    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    pr = world.pull_request
    # exported once, by one of the workers
    assert [row["instance_id"] for row in rows] == [
        f"{pr.repo.repo.replace('/', '__')}-{pr.number}"
    ]
    task = yaml.safe_load((out / TASK / "workspace.yaml").read_text())
    assert task["FAIL_TO_PASS"] and task["base_commit"]


def grouped(compose: Compose) -> None:
    """Wait until Prometheus shows every worker assigned its share of the group's partitions:
    each has had an assignment, and one of them, the leader, made the latest."""
    deadline = time.monotonic() + 600
    while not (
        compose.value("count(swe_stream_consumer_group_leader)") == WORKERS
        and compose.value("sum(swe_stream_consumer_group_leader)") == 1
    ):
        assert time.monotonic() < deadline, compose.logs()
        time.sleep(3)


def mined(compose: Compose, events: int) -> None:
    """Wait until Prometheus, scraping the stack as its shipped config says, shows the hour
    mined: every worker up, the hour's ``events`` PullRequestEvents published by ingest and
    read by prefilter across the three workers (each some), and the one task exported."""
    deadline = time.monotonic() + 900
    while True:
        assert time.monotonic() < deadline, compose.logs()
        time.sleep(5)
        workers_up = compose.value('count(up{job="swe-stream-worker"} == 1)')
        ingested = compose.value(
            'sum(swe_stream_ingest_hour_files_total{job="swe-stream-ingest",status="done"})'
        )
        published = compose.value(
            'sum(swe_stream_ingest_pull_request_events_total{job="swe-stream-ingest"})'
        )
        read = compose.value('sum(swe_stream_stage_records_in_total{stage="prefilter"})')
        exported = compose.value('sum(swe_stream_stage_records_out_total{stage="export"})')
        if (
            workers_up == WORKERS
            and ingested >= 1
            and published == read == events
            and exported >= 1
        ):
            break
    shares = compose.query('swe_stream_stage_records_in_total{stage="prefilter"}')
    assert len(shares) == WORKERS and all(float(s["value"][1]) > 0 for s in shares), shares
    assert compose.value('sum(swe_stream_stage_records_out_total{stage="export"})') == 1
    assert compose.value('count(up{job="swe-stream-ingest"} == 1)') == 1
    assert compose.value('count(up{job="swe-stream-harness"} == 1)') == 1
