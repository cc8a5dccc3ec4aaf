"""infra/: the metrics every dashboard and alert uses exist; a real Prometheus scraping the
stack's processes (embedded broker, ingest, worker) as the production config's jobs answers
every dashboard query of the stages they ran; promtool accepts the config, the rules and the
scrapes; the compose file is valid (``test_compose_stack`` builds and runs it)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from schemas import LedgerEntry
from streams.kafka.broker import free_port
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import PULL_REQUEST_EVENTS
from streams.offline.world import OfflineWorld, offline_world
from streams.pipeline.ledger import read_ledger
from tests.conftest import REPO_ROOT, SWE_STREAM, unavailable
from tests.workers import TASK, env_for, start_broker_command, stop_all

INFRA = REPO_ROOT / "infra"
DASHBOARDS = sorted((INFRA / "grafana" / "dashboards").glob("*.json"))
PROMETHEUS_CONFIG = INFRA / "prometheus" / "prometheus.yml"
RULES = INFRA / "prometheus" / "rules.yml"
LEDGER_WRITES = "swe_stream_ledger_writes_total"
METRIC = re.compile(r"\b((?:swe_stream|faust)_[a-z0-9_]+)\b")
# what the offline run cannot exercise: no LLM key (heuristic backends, no test generation)
# no LLM in the stack's run, and offsets are read again only after a fault
NOT_EXERCISED = re.compile(
    r"swe_stream_(llm|testgen|setup_agent|commit_stalls|lost_fetches|recovery_partitions)_"
)
COUNTS = re.compile(r"_(total|bucket)$")  # counters and histograms, not gauges
GRAFANA_RANGES = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "15s"}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (Debian package prometheus / docker-compose)")
    assert path is not None
    return path


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every panel of every dashboard."""
    queries = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                queries.append((panel["title"], target["expr"]))
    return queries


def rule_queries() -> list[tuple[str, str]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [(rule["alert"], rule["expr"]) for group in groups for rule in group["rules"]]


def exposed_names(scrape: str) -> set[str]:
    """Every series name a query may use: samples, and the names of declared families that
    have no sample yet (a labelled counter before its first increment)."""
    names: set[str] = set()
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
    for family in text_string_to_metric_families(scrape):
        names.add(family.name)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, []))
        names.update(sample.name for sample in family.samples)
    return names


@pytest.mark.unit
def test_promtool_accepts_the_config_and_the_rules() -> None:
    promtool = tool("promtool")
    config = subprocess.run(
        [promtool, "check", "config", str(INFRA / "prometheus" / "prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert config.returncode == 0, config.stdout + config.stderr
    rules = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert (
        rules.returncode == 0 and f"SUCCESS: {len(rule_queries())} rules found" in rules.stdout
    ), rules.stderr
    assert len(DASHBOARDS) >= 1 and len(dashboard_queries()) >= 20


@pytest.mark.unit
def test_the_compose_file_is_valid() -> None:
    compose = tool("docker-compose")
    done = subprocess.run(
        [compose, "-f", str(INFRA / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    assert {"kafka", "worker", "ingest", "harness", "prometheus"} <= set(services)
    assert "/var/run/docker.sock" in json.dumps(services["harness"]["volumes"])
    assert "container_name" not in services["worker"]  # --scale worker=N needs that
    # every image `up` starts is built here, on the project's images: no registry is needed;
    # Grafana, the image users pull, only with its profile
    assert services["grafana"]["profiles"] == ["dashboards"]
    for name, service in services.items():
        if "profiles" not in service:
            assert service["build"]["args"]["BASE_IMAGE"] == "swe-stream/base:bookworm", name
    assert services["kafka"]["build"]["dockerfile"] == "infra/kafka/Dockerfile"


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text: str = response.read().decode()
        return text


def sample(scrape_text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(scrape_text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


def scrape_config(targets: dict[str, str]) -> dict[str, Any]:
    """The production Prometheus config (``infra/prometheus/prometheus.yml``: its jobs, so
    their ``job`` labels, and their rule files) with each named job scraping the given
    ``host:port`` instead of discovering the compose services, every second; the jobs not
    named are left out."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(targets) <= set(jobs), f"not jobs of {PROMETHEUS_CONFIG}: {set(targets) - set(jobs)}"
    scrape_configs = []
    for name, target in targets.items():
        job = {
            key: value
            for key, value in jobs[name].items()
            if not key.endswith(("_sd_configs", "static_configs"))
            and key not in ("scrape_interval", "scrape_timeout")
        }
        labels = {
            k: v
            for static in jobs[name].get("static_configs", [])
            for k, v in static.get("labels", {}).items()
        }
        job["static_configs"] = [{"targets": [target]} | ({"labels": labels} if labels else {})]
        scrape_configs.append(job)
    rule_files = [str(PROMETHEUS_CONFIG.parent / f) for f in config.get("rule_files", [])]
    return config | {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": rule_files,
        "scrape_configs": scrape_configs,
    }


def prometheus_query(port: int, expr: str) -> list[Any]:
    """The result of ``expr`` from the query API of the Prometheus server on ``port``."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    result: list[Any] = body["data"]["result"]
    return result


class Prometheus:
    """A real Prometheus server on 127.0.0.1, scraping its targets (job name: host:port,
    jobs of the production config) every second."""

    def __init__(self, root: Path, targets: dict[str, str]):
        self.port = free_port()
        config = root / "prometheus.yml"
        config.write_text(yaml.safe_dump(scrape_config(targets)))
        self.log = root / "prometheus.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [tool("prometheus"), f"--config.file={config}",
                 f"--storage.tsdb.path={root / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def query(self, expr: str) -> list[Any]:
        return prometheus_query(self.port, expr)

    def wait_for_samples(self, series: str, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.query(f"count_over_time({series}[5m]) >= {count}"):
                    return
            except OSError:
                pass
            assert self.process.poll() is None, self.log.read_text()[-2000:]
            time.sleep(0.5)
        pytest.fail(f"{series}: fewer than {count} samples\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def world(tmp_path: Path, fixtures_dir: Path, base_image: str) -> Any:
    with offline_world(
        tmp_path / "world", fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    ) as w:
        yield w


class Stack:
    """The compose stack's swe-stream processes on this machine: ``swe-stream broker`` (the
    embedded broker in place of Kafka), ``ingest --follow`` and ``worker`` (every stage, and
    the harness on exported tasks), each logging to a file of ``root``; ``targets`` are the
    production Prometheus jobs that scrape them."""

    def __init__(self, world: OfflineWorld, root: Path):
        self.world = world
        self.root = root
        self.out = root / "out"
        self.ingest_port, self.worker_port = free_port(), free_port()
        self.targets = {
            "swe-stream-ingest": f"127.0.0.1:{self.ingest_port}",
            "swe-stream-worker": f"127.0.0.1:{self.worker_port}",
        }
        self.env = env_for(world, root / "data") | {
            "SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1",
            "SWE_STREAM_WORKER_LAG_INTERVAL_SECONDS": "1",
            "SWE_STREAM_WORKER_METRICS_PORT": str(self.worker_port),  # as the compose file
            "SWE_STREAM_EXPORT_OUTPUT_DIR": str(self.out),
            "SWE_STREAM_HARNESS_AGENT_COMMAND": "true",  # every exported task is evaluated too
            "SWE_STREAM_HARNESS_OUTPUT_DIR": str(root / "harness"),
        }
        self.bootstrap = ""
        self.processes: dict[str, subprocess.Popen[Any]] = {}

    def start(self) -> None:
        broker, self.bootstrap, _ = start_broker_command(self.root / "broker.log", port=free_port())
        self.processes["broker"] = broker
        self.run("worker", "--web-port", str(free_port()))
        self.run(
            "ingest", "--from", self.world.hour, "--follow",
            "--metrics-port", str(self.ingest_port),
        )  # fmt: skip

    def run(self, command: str, *args: str) -> None:
        with open(self.root / f"{command}.log", "wb") as log:
            self.processes[command] = subprocess.Popen(
                [SWE_STREAM, command, "--bootstrap", self.bootstrap, *args],
                cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def logs(self) -> str:
        logs = [self.root / f"{name}.log" for name in ("broker", "worker", "ingest")]
        return "\n".join(
            f"--- {log.name}\n{log.read_text()[-3000:]}" for log in logs if log.exists()
        )

    def check_alive(self) -> None:
        exited = {n: p.returncode for n, p in self.processes.items() if p.poll() is not None}
        assert not exited, f"exited: {exited}\n{self.logs()}"

    def stop(self) -> dict[str, int]:
        """SIGTERM to ingest and the worker, then to the broker: the exit codes of those
        started."""
        order = [n for n in ("ingest", "worker", "broker") if n in self.processes]
        return stop_all({name: self.processes[name] for name in order})


def scrape_until(port: int, stack: Stack, done: Any, timeout: float = 300) -> str:
    """Scrape ``port`` until ``done(text)``, the stack alive meanwhile."""
    deadline = time.monotonic() + timeout
    text = ""
    while not done(text):
        stack.check_alive()
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(1)
        try:
            text = scrape(port)
        except OSError:
            text = ""
    return text


@pytest.mark.docker
def test_prometheus_answers_every_dashboard_query_of_the_running_stack(
    world: OfflineWorld, tmp_path: Path
) -> None:
    """The compose stack's processes (embedded broker, ingest, worker) run on the offline
    world, as separate processes; a real Prometheus, up before them, scrapes ingest and the
    worker as the production config's jobs do."""
    stack = Stack(world, tmp_path)
    prometheus = Prometheus(tmp_path, stack.targets)
    try:
        stack.start()
        worker_text = scrape_until(
            stack.worker_port,
            stack,
            lambda text: sample(text, "swe_stream_harness_evaluations_total") >= 1,
        )
        ingest_text = scrape_until(
            stack.ingest_port,
            stack,
            lambda text: sample(text, "swe_stream_ingest_hour_files_total", status="done") >= 1,
        )
        assert (stack.out / TASK / "workspace.yaml").is_file()
        # a rate or an increase needs two samples of the newest series
        prometheus.wait_for_samples("up", 5)
        prometheus.wait_for_samples("swe_stream_harness_evaluations_total", 3)
        prometheus.wait_for_samples("swe_stream_consumer_lag", 3)
        for job in stack.targets:
            assert prometheus.query(f'up{{job="{job}"}} == 1'), job

        # every name a dashboard or an alert uses is exposed, by one process or the other;
        # both expositions pass promtool
        names = exposed_names(ingest_text) | exposed_names(worker_text)
        used = {m for _, q in dashboard_queries() + rule_queries() for m in METRIC.findall(q)}
        assert used and used <= names, sorted(used - names)
        for text in (ingest_text, worker_text):
            lint = subprocess.run(
                [tool("promtool"), "check", "metrics"], input=text, capture_output=True, text=True
            )
            assert lint.returncode == 0, lint.stdout + lint.stderr

        # the real server answers each panel's query; those of exercised stages with data
        empty = []
        for title, expr in dashboard_queries():
            for variable, value in GRAFANA_RANGES.items():
                expr = expr.replace(variable, value)
            if not prometheus.query(expr) and not NOT_EXERCISED.search(expr):
                empty.append(title)
        assert empty == [], empty
        # and counted something: an idle process serves an unlabelled counter or histogram as 0
        # (the worker its ingest counters, ingest the stages'), so data alone proves nothing
        uncounted = sorted(
            name
            for _, expr in dashboard_queries()
            for name in METRIC.findall(expr)
            if COUNTS.search(name)
            and not NOT_EXERCISED.search(name)
            and not prometheus.query(f"max({name}) > 0")
        )
        assert uncounted == [], uncounted
        for _, expr in rule_queries():
            prometheus.query(expr)  # evaluates (an alert that does not fire is empty)

        # what ingest published (its own count, scraped from the ingest job) is what the
        # worker's prefilter read
        published = sum(
            float(r["value"][1])
            for r in prometheus.query(
                'swe_stream_ingest_pull_request_events_total{job="swe-stream-ingest"}'
            )
        )
        events = asyncio.run(count_records(stack.bootstrap, PULL_REQUEST_EVENTS.name))
        assert published == events > 0
        scrape_until(
            stack.worker_port,
            stack,
            lambda text: (
                sample(text, "swe_stream_stage_records_in_total", stage="prefilter") == events
            ),
            timeout=60,
        )

        # the stage counters agree with the ledger the worker wrote to swe.ledger
        entries: list[LedgerEntry] = []
        deadline = time.monotonic() + 60
        while len(entries) != sample(final := scrape(stack.worker_port), LEDGER_WRITES):
            assert time.monotonic() < deadline, (len(entries), stack.logs())
            time.sleep(1)
            entries = asyncio.run(read_ledger(stack.bootstrap))
    finally:
        try:
            prometheus.stop()
        finally:
            codes = stack.stop()
        assert codes == dict.fromkeys(codes, 0), (codes, stack.logs())

    transitions = Counter((e.stage, e.status) for e in entries)
    for (stage, status), count in transitions.items():
        written = sample(final, LEDGER_WRITES, stage=stage, status=status)
        assert written == count, (stage, status)
    for stage in {stage for stage, _ in transitions}:
        dropped = transitions[(stage, "rejected")] + transitions[(stage, "ignored")]
        assert sample(final, "swe_stream_stage_records_rejected_total", stage=stage) == dropped
        assert (
            sample(final, "swe_stream_stage_records_failed_total", stage=stage)
            == (transitions[(stage, "failed")])
        )
    assert transitions[("export", "exported")] == 1
    assert sample(final, "swe_stream_stage_records_out_total", stage="export") == 1
    assert sample(final, "swe_stream_harness_evaluations_total", status="unresolved") == 1


async def count_records(bootstrap: str, topic: str) -> int:
    return len([record async for record in read_topic_to_end(bootstrap, topic)])
