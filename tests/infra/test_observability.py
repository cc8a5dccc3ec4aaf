"""infra/: the metrics every dashboard and alert uses exist; a real Prometheus scraping a
running pipeline answers every dashboard query of the stages it ran; promtool accepts the
config, the rules and a scrape; the compose file and the worker image are valid."""

from __future__ import annotations

import json
import re
import shutil
import signal
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
from streams.offline.world import OfflineWorld, offline_world
from tests.conftest import REPO_ROOT, SWE_STREAM, unavailable
from tests.workers import TASK, env_for

INFRA = REPO_ROOT / "infra"
DASHBOARDS = sorted((INFRA / "grafana" / "dashboards").glob("*.json"))
RULES = INFRA / "prometheus" / "rules.yml"
METRIC = re.compile(r"\b((?:swe_stream|faust)_[a-z0-9_]+)\b")
# what the offline run cannot exercise: no LLM key (heuristic backends, no test generation)
NOT_EXERCISED = re.compile(r"swe_stream_(llm|testgen|setup_agent)_")
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
    assert rules.returncode == 0 and "SUCCESS: 4 rules found" in rules.stdout, rules.stderr
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
    assert {"kafka", "worker", "ingest", "harness", "prometheus", "grafana"} <= set(services)
    assert "/var/run/docker.sock" in json.dumps(services["harness"]["volumes"])
    assert "container_name" not in services["worker"]  # --scale worker=N needs that
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"


@pytest.mark.docker
def test_the_worker_image_builds_from_the_local_base(docker_client: Any, base_image: str) -> None:
    tag = "swe-stream/worker:test"
    docker_client.images.build(
        path=str(REPO_ROOT),
        dockerfile="infra/Dockerfile",
        buildargs={"BASE_IMAGE": base_image},
        tag=tag,
        rm=True,
        forcerm=True,
    )
    try:
        output = docker_client.containers.run(tag, ["--help"], remove=True, network_mode="none")
        assert b"mine" in output and b"harness" in output and b"worker" in output
    finally:
        docker_client.images.remove(tag, force=True)


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


class Prometheus:
    """A real Prometheus server on 127.0.0.1, scraping one target every second."""

    def __init__(self, root: Path, target: str):
        self.port = free_port()
        config = root / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(RULES)],
                    "scrape_configs": [
                        {"job_name": "swe-stream", "static_configs": [{"targets": [target]}]}
                    ],
                }
            )
        )
        self.log = root / "prometheus.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [tool("prometheus"), f"--config.file={config}",
                 f"--storage.tsdb.path={root / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def query(self, expr: str) -> list[Any]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr}
        )
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        result: list[Any] = body["data"]["result"]
        return result

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


@pytest.mark.docker
def test_prometheus_answers_every_dashboard_query_of_a_running_pipeline(
    world: OfflineWorld, tmp_path: Path
) -> None:
    metrics_port = free_port()
    out = tmp_path / "out"
    env = env_for(world, tmp_path / "data") | {
        "SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1",
        "SWE_STREAM_WORKER_LAG_INTERVAL_SECONDS": "1",
        "SWE_STREAM_HARNESS_AGENT_COMMAND": "true",  # every exported task is evaluated too
        "SWE_STREAM_HARNESS_OUTPUT_DIR": str(tmp_path / "harness"),
    }
    log = tmp_path / "run.log"
    with open(log, "wb") as sink:
        run = subprocess.Popen(
            [SWE_STREAM, "run", "--from", world.hour, "-o", str(out),
             "--metrics-port", str(metrics_port), "--no-live"],
            cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{metrics_port}")
    try:
        deadline = time.monotonic() + 300
        text = ""
        while sample(text, "swe_stream_harness_evaluations_total") < 1:
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
            try:
                text = scrape(metrics_port)
            except OSError:
                text = ""
        assert (out / TASK / "workspace.yaml").is_file()
        # a rate or an increase needs two samples of the newest series
        prometheus.wait_for_samples("up", 5)
        prometheus.wait_for_samples("swe_stream_harness_evaluations_total", 3)
        prometheus.wait_for_samples("swe_stream_consumer_lag", 3)

        # every name a dashboard or an alert uses is exposed
        names = exposed_names(text)
        used = {m for _, q in dashboard_queries() + rule_queries() for m in METRIC.findall(q)}
        assert used and used <= names, sorted(used - names)
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
        for _, expr in rule_queries():
            prometheus.query(expr)  # evaluates (an alert that does not fire is empty)
        final = scrape(metrics_port)
    finally:
        prometheus.stop()
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 0, log.read_text()[-3000:]

    # the stage counters agree with the ledger the run wrote
    entries = [
        LedgerEntry.model_validate(
            {k: v for k, v in json.loads(line).items() if k != "pr"}
            | {"number": json.loads(line)["pr"]}
        )
        for line in (out / ".swe-stream" / "ledger.jsonl").read_text().splitlines()
    ]
    transitions = Counter((e.stage, e.status) for e in entries)
    for (stage, status), count in transitions.items():
        written = sample(final, "swe_stream_ledger_writes_total", stage=stage, status=status)
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
