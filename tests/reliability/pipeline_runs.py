"""What the multi-process reliability tests share: a world of real GH Archive hours served by a
GitHub stand-in, ``swe-stream worker`` as a killable subprocess, and readings of the broker
(ledger size, whether the group drained its inputs) and of Docker (what killed workers left)."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agents.ingest_scan import HourScanner
from schemas import LedgerEntry, RawPullRequestEvent
from streams.evaluation.sandbox import OWNER_LABEL, listed_containers
from streams.kafka.broker import free_port
from streams.kafka.client import read_topic_to_end
from streams.kafka.offsets import group_members, group_positions, topic_bounds
from streams.kafka.topics import (
    CANDIDATES,
    CLASSIFIED,
    ENRICHED,
    HARNESS_REQUESTS,
    LEDGER,
    PATCHES,
    PULL_REQUEST_EVENTS,
    SCORED,
    VALIDATED,
)
from streams.pipeline.ledger import latest, reason_kind
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.github_server import FakeGitHub
from tests.workers import worker_env

GROUP = "swe-stream-v1"
# what the worker's stages consume (tasks.exported only with harness.agent_command set)
STAGE_INPUTS = (
    PULL_REQUEST_EVENTS, CANDIDATES, ENRICHED, CLASSIFIED, PATCHES, VALIDATED, SCORED,
    HARNESS_REQUESTS,
)  # fmt: skip


@dataclass
class World:
    hours_dir: Path
    events: list[RawPullRequestEvent]
    github: FakeGitHub
    git_url_template: str


def scan(path: Path) -> list[RawPullRequestEvent]:
    scanner = HourScanner(path.name.split(".", 1)[0], pipeline_version=1)
    outputs = scanner.feed(path.read_bytes()) + scanner.close()
    return [RawPullRequestEvent.from_json(o[1]) for o in outputs if isinstance(o, tuple)]


class Worker:
    """``swe-stream worker`` (every stage) on one broker, restartable, logging to a file."""

    def __init__(self, bootstrap: str, world: World, workdir: Path, out: Path | None = None):
        self.bootstrap = bootstrap
        self.log = workdir / "worker.log"
        self.metrics_port = free_port()
        self.env = worker_env() | {
            "SWE_STREAM_GITHUB_API_URL": world.github.base_url,
            "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": world.git_url_template,
            "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
            "SWE_STREAM_WORKER_DATA_DIR": str(workdir / "data"),
            "SWE_STREAM_EXPORT_OUTPUT_DIR": str(out or workdir / "out"),
            "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
            "SWE_STREAM_SCORE_BACKEND": "heuristic",
            "SWE_STREAM_VALIDATION_RUNS": "1",
        }
        self.env.pop("OPENROUTER_API_KEY", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.killed: list[int] = []  # pids of the workers killed

    def start(self) -> None:
        command = [
            SWE_STREAM, "worker", "--bootstrap", self.bootstrap,
            "--web-port", str(free_port()), "--metrics-port", str(self.metrics_port),
        ]  # fmt: skip
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                command, cwd=REPO_ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    def kill(self) -> None:
        assert self.process is not None
        self.killed.append(self.process.pid)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            pytest.fail(f"worker exited by itself:\n{self.log.read_text()[-4000:]}")


def scrape(worker: Worker) -> str:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{worker.metrics_port}/metrics", timeout=5
        ) as response:
            return str(response.read().decode())
    except OSError:
        return ""


def counts(worker: Worker, metric: str, **labels: str) -> float:
    """``metric{labels}`` as the worker's /metrics serves it (0 when it does not answer)."""
    return sum(
        s.value
        for family in text_string_to_metric_families(scrape(worker))
        for s in family.samples
        if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())
    )


async def ledger_size(bootstrap: str) -> int:
    return sum(end - start for start, end in (await topic_bounds(bootstrap, LEDGER.name)).values())


async def undrained(bootstrap: str) -> list[str]:
    """The stage-input partitions whose records the workers' group has not all committed, as
    ``topic[partition] committed/end``."""
    standing = await group_positions(bootstrap, GROUP, [topic.name for topic in STAGE_INPUTS])
    return [
        f"{topic}[{p.partition}] {p.committed}/{p.end}"
        for topic, partitions in standing.items()
        for p in partitions
        if p.end > p.start and (p.committed or 0) < p.end
    ]


async def drained(bootstrap: str) -> bool:
    """Every record of every stage input committed by the worker's group."""
    return not await undrained(bootstrap)


def worth_seeing(line: str) -> bool:
    """A warning or error of the worker's own (not one of Faust's services' ``[^...]`` lines,
    nor aiokafka's heartbeats during a rebalance)."""
    return (
        ("WARNING" in line or "ERROR" in line)
        and "[^" not in line
        and "Heartbeat failed" not in line
    )


async def stalled(bootstrap: str, workers: list[Worker], what: str) -> str:
    """Why a run did not drain: what is left uncommitted, the group's members, and the last
    lines each live worker logged (labelled, so no worker's tail hides another's)."""
    lines = [f"{what}; uncommitted: {await undrained(bootstrap)}"]
    lines.append(f"group members: {await group_members(bootstrap, GROUP)}")
    for number, worker in enumerate(workers):
        state = "killed" if worker.process is None or worker.process.poll() is not None else "live"
        logged = worker.log.read_text(errors="replace").splitlines()
        # the worker's own warnings (a stall's report, a repair), then its last lines; Faust's
        # subscription tables (a minute apart, seven lines each) left out
        warnings = [line for line in logged if worth_seeing(line)][-15:]
        tail = [line for line in logged if not line.startswith(("|", "+"))][-30:]
        lines += [f"---- worker {number} ({state}): its warnings ----", *warnings]
        lines += [f"---- worker {number} ({state}): last lines ----", *tail]
    return "\n".join(lines)


def left_by(pids: list[int]) -> list[str]:
    """Sandbox containers (any state) and images whose owner is one of ``pids`` on this
    host."""
    import docker

    client = docker.from_env()
    owned = []
    containers = listed_containers(client, OWNER_LABEL)
    images = client.api.images(filters={"label": OWNER_LABEL})
    for kind, found in (("container", containers), ("image", images)):
        for item in found:
            owner = (item.get("Labels") or {}).get(OWNER_LABEL, "").split(":")
            host, pid = [*owner, "", ""][:2]
            if host == socket.gethostname() and pid.isdigit() and int(pid) in pids:
                owned.append(f"{kind} {item['Id'][:19]}")
    return owned


def states(entries: list[LedgerEntry]) -> dict[str, tuple[str, str, str]]:
    """Each PR's latest (stage, status, reason kind)."""
    return {e.key: (e.stage, e.status, reason_kind(e)) for e in latest(entries).values()}


def final_states(entries: list[LedgerEntry]) -> dict[str, set[tuple[str, str]]]:
    """Every distinct final (stage, status) each PR was written with."""
    finals: dict[str, set[tuple[str, str]]] = {}
    for entry in entries:
        if entry.is_final():
            finals.setdefault(entry.key, set()).add((entry.stage, entry.status))
    return finals


@dataclass(frozen=True)
class Trail:
    """Where a run's PRs went: each stage input's records of a PR (topic, partition, offset)
    and the group's committed offsets, read before the broker goes; what a test failing on
    a PR's end state prints, with the ledger's history and the worker's lines on those
    partitions, to tell a record never processed from one processed and then overwritten."""

    records: dict[str, list[tuple[str, int, int]]]
    committed: dict[tuple[str, int], int | None]

    def explain(self, keys: Iterable[str], ledger: list[LedgerEntry], logs: list[Path]) -> str:
        lines: list[str] = []
        for key in sorted(keys):
            history = [f"{e.stage}/{e.status}" for e in ledger if e.key == key]
            lines.append(f"{key}: ledger {' > '.join(history)}")
            for topic, partition, offset in self.records.get(key, []):
                committed = self.committed.get((topic, partition))
                lines.append(f"  {topic}[{partition}]@{offset} (committed {committed})")
            needles = [key] + [f"{t}[{p}]" for t, p, _ in self.records.get(key, [])]
            for log in logs:
                text = log.read_text(errors="replace") if log.exists() else ""
                shown = [line for line in text.splitlines() if any(n in line for n in needles)]
                lines += [f"    {log.parent.name}: {line[:300]}" for line in shown[-20:]]
        return "\n".join(lines)


async def read_trail(bootstrap: str) -> Trail:
    """The stage inputs' records by PR key, and the group's committed offsets."""
    records: dict[str, list[tuple[str, int, int]]] = {}
    for topic in STAGE_INPUTS:
        async for record in read_topic_to_end(bootstrap, topic.name):
            key = record.key.decode(errors="replace") if record.key else "?"
            records.setdefault(key, []).append((topic.name, record.partition, record.offset))
    standing = await group_positions(bootstrap, GROUP, [topic.name for topic in STAGE_INPUTS])
    committed = {
        (topic, p.partition): p.committed for topic, parts in standing.items() for p in parts
    }
    return Trail(records, committed)
