"""Every Prometheus metric of swe-stream, declared once.

Conventions: ``swe_stream_`` prefix, base units, ``_total`` counters, ``_seconds``
histograms; labels are low-cardinality (stage, topic, reason, status), never a PR or repo.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

log = logging.getLogger("swe_stream.metrics")

STAGE_RECORDS_IN = Counter(
    "swe_stream_stage_records_in_total", "Records a stage read from its input topic", ["stage"]
)
STAGE_RECORDS_OUT = Counter(
    "swe_stream_stage_records_out_total", "Records a stage wrote to its output topic", ["stage"]
)
STAGE_RECORDS_REJECTED = Counter(
    "swe_stream_stage_records_rejected_total",
    "Records a stage dropped on purpose, by reason",
    ["stage", "reason"],
)
STAGE_RECORDS_FAILED = Counter(
    "swe_stream_stage_records_failed_total",
    "Records a stage could not handle (schema or logic error)",
    ["stage", "error"],
)
SERVICE_UP = Gauge(
    "swe_stream_service_up",
    "1 while a service the stages run on answers, 0 during an outage (docker, llm, github); "
    "absent until a stage first needed it to be down",
    ["service"],
)
SERVICE_OUTAGES = Counter(
    "swe_stream_service_outages_total",
    "Outages of a service the stages run on: it stopped answering and the stages paused",
    ["service"],
)
STAGE_OUTAGE_RETRIES = Counter(
    "swe_stream_stage_outage_retries_total",
    "Records a stage tried again because a service it needs did not answer (not a verdict)",
    ["stage", "service"],
)
STAGE_PAUSED_SECONDS = Counter(
    "swe_stream_stage_paused_seconds_total",
    "Seconds a stage's records waited for a service that did not answer",
    ["stage", "service"],
)
STAGE_RECORDS_SKIPPED = Counter(
    "swe_stream_stage_records_skipped_total",
    "Records a stage did no work on (e.g. the PR is final in the ledger), by reason",
    ["stage", "reason"],
)
DLQ_RECORDS = Counter(
    "swe_stream_dlq_records_total", "Dead letters written, by source topic", ["topic"]
)
LEDGER_WRITES = Counter(
    "swe_stream_ledger_writes_total", "Ledger transitions written", ["stage", "status"]
)
STAGE_PROCESSING_SECONDS = Histogram(
    "swe_stream_stage_processing_seconds",
    "Time a stage spent on one record",
    ["stage"],
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600),
)

INGEST_HOURS = Counter(
    "swe_stream_ingest_hour_files_total", "GH Archive hours ingested, by final status", ["status"]
)
INGEST_BYTES = Counter(
    "swe_stream_ingest_bytes_total", "Compressed GH Archive bytes read (files and downloads)"
)
INGEST_EVENTS = Counter("swe_stream_ingest_events_total", "GH Archive events seen (lines)")
INGEST_PULL_REQUEST_EVENTS = Counter(
    "swe_stream_ingest_pull_request_events_total", "PullRequestEvents published"
)
INGEST_ERRORS = Counter(
    "swe_stream_ingest_errors_total", "GH Archive input ingest could not use, by reason", ["reason"]
)
INGEST_HOUR_SECONDS = Histogram(
    "swe_stream_ingest_hour_seconds",
    "Time to ingest one GH Archive hour (download, decompress, publish)",
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
)
GHARCHIVE_DOWNLOAD_RETRIES = Counter(
    "swe_stream_gharchive_download_retries_total", "GH Archive download attempts retried or resumed"
)


GITHUB_REQUESTS = Counter(
    "swe_stream_github_requests_total",
    "GitHub API requests, by endpoint and HTTP status (timeout / error when none)",
    ["endpoint", "status"],
)
GITHUB_CONDITIONAL_HITS = Counter(
    "swe_stream_github_conditional_hits_total",
    "GitHub answers 304 Not Modified to If-None-Match (no quota spent)",
    ["endpoint"],
)
GITHUB_RETRIES = Counter(
    "swe_stream_github_retries_total",
    "GitHub requests retried, by reason (http_5xx, timeout, rate_limit, ...)",
    ["endpoint", "reason"],
)
GITHUB_RATE_LIMIT_REMAINING = Gauge(
    "swe_stream_github_rate_limit_remaining",
    "Requests left in the current rate-limit window, per token (labelled by pool index)",
    ["token"],
)
GITHUB_RATE_LIMIT_WAIT_SECONDS = Counter(
    "swe_stream_github_rate_limit_wait_seconds_total",
    "Seconds spent waiting for GitHub rate limits to reset",
)
ENRICH_REPO_CACHE = Counter(
    "swe_stream_enrich_repo_cache_total",
    "Repository lookups in enrich: hit (fresh), revalidated (304), miss (fetched), event",
    ["result"],
)


LLM_REQUESTS = Counter(
    "swe_stream_llm_requests_total",
    "LLM chat-completion requests, by model, purpose and HTTP status",
    ["model", "purpose", "status"],
)
LLM_RETRIES = Counter(
    "swe_stream_llm_retries_total",
    "LLM requests retried, by model, purpose and reason (http_<status> for 429 and 5xx, "
    "timeout, connection, malformed_json, error_in_reply)",
    ["model", "purpose", "reason"],
)
LLM_TOKENS = Counter(
    "swe_stream_llm_tokens_total",
    "LLM tokens used (from the reply's usage), by model, purpose and kind (prompt/completion)",
    ["model", "purpose", "kind"],
)
LLM_COST = Counter(
    "swe_stream_llm_cost_usd_total",
    "LLM cost reported by the endpoint (usage.cost), by model and purpose",
    ["model", "purpose"],
)
LLM_INVALID_OUTPUTS = Counter(
    "swe_stream_llm_invalid_outputs_total",
    "LLM replies re-asked: no tool call, malformed JSON or invalid arguments",
    ["purpose", "reason"],
)


IMAGES = Counter(
    "swe_stream_images_total",
    "Environment images by layer (env / instance) and result (built / reused / pulled)",
    ["layer", "result"],
)
IMAGE_BUILD_SECONDS = Histogram(
    "swe_stream_image_build_seconds",
    "Time to build an environment image, by layer",
    ["layer"],
    buckets=(1, 5, 10, 30, 60, 120, 300, 600, 1200, 3600),
)
VALIDATION_RUN_SECONDS = Histogram(
    "swe_stream_validation_test_run_seconds",
    "Time of one run of a task's test command in its sandbox",
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900),
)
EGRESS_REFUSED = Counter(
    "swe_stream_egress_refused_total",
    "Requests the registry egress door refused, by reason (host_not_allowed, port_not_allowed, "
    "address_not_public, method_not_allowed, request_body, host_header_mismatch, sni_missing, "
    "sni_mismatch, not_tls, malformed_request)",
    ["reason"],
)
TEST_EXIT_CONTRADICTIONS = Counter(
    "swe_stream_test_exit_contradictions_total",
    "Test runs whose exit code contradicts their per-test statuses (validation and harness)",
)


TESTGEN_TURNS = Histogram(
    "swe_stream_testgen_turns",
    "Turns an agentic test generation took, by outcome (accepted / exhausted)",
    ["outcome"],
    buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500),
)
TESTGEN_ACCEPTED_TOKENS = Histogram(
    "swe_stream_testgen_accepted_tokens",
    "LLM tokens spent on a task whose generated tests were accepted",
    buckets=(1e3, 5e3, 1e4, 5e4, 1e5, 5e5, 1e6, 5e6),
)
TESTGEN_SUBMISSIONS = Counter(
    "swe_stream_testgen_submissions_total",
    "Generated tests submitted by the model, by result of the independent re-run",
    ["result"],
)


SETUP_AGENT_RUNS = Counter(
    "swe_stream_setup_agent_runs_total",
    "Environment-setup agent runs, by outcome (accepted, turn_limit, token_limit, time_limit, "
    'error); their tokens and cost: swe_stream_llm_*{purpose="setup"}',
    ["outcome"],
)
SETUP_AGENT_TURNS = Histogram(
    "swe_stream_setup_agent_turns",
    "Turns an environment-setup agent run took, by outcome",
    ["outcome"],
    buckets=(1, 2, 5, 10, 20, 50, 100, 200),
)
SETUP_AGENT_SUBMISSIONS = Counter(
    "swe_stream_setup_agent_submissions_total",
    "Recipes the setup agent submitted, by result of their verification (accepted, "
    "build_failed, tests_did_not_run, refused)",
    ["result"],
)
RECIPES_REMEMBERED = Counter(
    "swe_stream_recipes_remembered_total",
    "Recipes written to the recipe memory, by source (heuristic, override, agent, edited)",
    ["source"],
)
RECIPE_MEMORY_LOOKUPS = Counter(
    "swe_stream_recipe_memory_lookups_total",
    "Validations that looked in the recipe memory, by result (hit = an entry of the same "
    "dependency files, repository = another of the repository's, miss; of another pipeline "
    "version: reverified = it ran the tests again, stale = it did not and was passed over)",
    ["result"],
)


HARNESS_EVALUATIONS = Counter(
    "swe_stream_harness_evaluations_total",
    "Agent evaluations finished, by status (resolved, unresolved, agent_error, ...)",
    ["status"],
)
IMAGE_PUSHES = Counter(
    "swe_stream_image_pushes_total",
    "Instance images the export stage pushed to export.registry, by result (pushed / failed)",
    ["result"],
)
IMAGE_PUSH_BYTES = Counter(
    "swe_stream_image_push_bytes_total",
    "Bytes of layers the export stage sent to export.registry (layers there already: none)",
)
HARNESS_TASK_MONTHS = Counter(
    "swe_stream_harness_task_month_evaluations_total",
    "Agent evaluations finished, by agent (model), the task's month (2026_01; unknown) and "
    "whether it resolved: the resolve rate by task month, across a model's training cut-off",
    ["model", "month", "resolved"],
)
HARNESS_PHASE_SECONDS = Histogram(
    "swe_stream_harness_phase_seconds",
    "Time of one harness phase of one evaluation (setup, agent, test)",
    ["phase"],
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 3600),
)


CONSUMER_LAG = Gauge(
    "swe_stream_consumer_lag",
    "Records not yet consumed by this worker's group: end offset minus committed offset",
    ["topic", "partition"],
)
GROUP_LEADER = Gauge(
    "swe_stream_consumer_group_leader",
    "1 on the worker that assigned its consumer group's partitions in the latest rebalance "
    "(the group's leader), 0 on the others; none before the worker's first assignment",
    ["group"],
)
COMMIT_STALLS_REPAIRED = Counter(
    "swe_stream_commit_stalls_repaired_total",
    "Partitions whose offset commit stalled behind records never acked, read again from the "
    "committed offset (streams.kafka.commits)",
    ["topic"],
)

LOST_FETCHES_REREAD = Counter(
    "swe_stream_lost_fetches_reread_total",
    "Stream partitions whose fetched records reached no stream (dropped by Faust in a "
    "rebalance), read again from the committed offset (streams.kafka.commits)",
    ["topic"],
)
RECOVERY_PARTITIONS_REREAD = Counter(
    "swe_stream_recovery_partitions_reread_total",
    "Changelog partitions a table recovery stopped getting records of, sought again "
    "(streams.kafka.recovery)",
    ["topic"],
)

_faust_metrics: Any = None


def faust_monitor() -> Any:
    """A Faust monitor exporting Faust's own sensors (``faust_*``: events, commits,
    rebalances, ...) to the same registry; the metrics are created once per process."""
    from faust.sensors.prometheus import FaustMetrics, PrometheusMonitor

    global _faust_metrics
    if _faust_metrics is None:
        faust_registry = CollectorRegistry(auto_describe=True)
        _faust_metrics = FaustMetrics.create(faust_registry, "faust")
        REGISTRY.register(_FaustCollector(faust_registry))
    return PrometheusMonitor(metrics=_faust_metrics)


class _FaustCollector:
    """Faust's sensors as they are, but for the one in milliseconds (``faust_events_runtime_ms``,
    against Prometheus' base units; ``swe_stream_stage_processing_seconds`` measures it)."""

    def __init__(self, registry: CollectorRegistry):
        self.registry = registry

    def collect(self) -> Any:
        for metric in self.registry.collect():
            if not metric.name.endswith("_ms"):
                yield metric


def serve_metrics(port: int, host: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve ``/metrics`` on ``port`` from a daemon thread (0 = disabled); once per port and
    process, so that a command and the app it runs may both ask for it."""
    if port and port not in _serving:
        start_http_server(port, addr=host, registry=registry)
        _serving.add(port)
        log.info("Prometheus metrics on http://%s:%d/metrics", host, port)


_serving: set[int] = set()
