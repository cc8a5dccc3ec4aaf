"""The Faust app: ``create_app`` wires the stages, the ledger table and the worker's
maintenance (metrics, lag, stalled commits, orphaned sandboxes). Nothing is built at import
time: ``streams.runtime.worker_app`` holds the worker's ``app``, which
``faust -A streams.runtime.worker_app worker`` and ``swe-stream worker`` both run.

Kafka behaviour comes from the settings (``streams.kafka.client.KafkaProfile``): on the embedded
broker ``swe-stream worker`` sets ``kafka.idempotence=off`` and short rebalance timeouts
itself; with ``faust -A`` against a Tansu broker, set ``SWE_STREAM_KAFKA_IDEMPOTENCE=off``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

import faust
from aiokafka import TopicPartition
from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers import aiokafka as faust_aiokafka

from streams.core import metrics
from streams.core.settings import Settings
from streams.evaluation.sandbox import remove_orphans_if_docker
from streams.kafka.client import KafkaProfile, LagProbe
from streams.kafka.commits import (
    CommitStallWatch,
    LostFetchWatch,
    hold_commits_at_unprocessed_records,
    keep_commit_record_true,
    partition_standings,
    repair_lost_fetches,
    repair_stalled_commits,
    seek_uncommitted_to_start,
)
from streams.kafka.fetching import KAFKA_FETCH_MAX_WAIT_MS, limit_fetch_wait
from streams.kafka.recovery import RecoveryStallWatch, repair_stuck_recovery
from streams.pipeline.ledger import Ledger, TableLedgerStore, ledger_table, raw_schema
from streams.pipeline.outages import OUTAGES, Backoff
from streams.pipeline.recipe_memory import RecipeBook
from streams.pipeline.sinks import FaustSink
from streams.pipeline.stage import Stage, register_stage
from streams.runtime.stalls import StallWatch
from streams.runtime.topology import StageResources, pipeline_stages, recipe_table

log = logging.getLogger("swe_stream.app")

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
IDEMPOTENT_SCHEME = "kafka-idempotent"


class IdempotentProducer(faust_aiokafka.Producer):
    """Faust's producer turns idempotence on only inside transactions; we want it always
    (on brokers that support it) so that retries never duplicate a record."""

    def _settings_extra(self) -> dict[str, Any]:
        return {**super()._settings_extra(), "acks": "all", "enable_idempotence": True}


class IdempotentTransport(faust_aiokafka.Transport):
    Producer = IdempotentProducer


TRANSPORTS[IDEMPOTENT_SCHEME] = f"{__name__}:IdempotentTransport"


StagesFactory = Callable[[Settings, StageResources], Iterable[Stage[Any]]]


def create_app(settings: Settings, stages: StagesFactory = pipeline_stages) -> faust.App:
    """A Faust app wired with the ``stages`` the factory builds (default: the pipeline's,
    filtered by ``worker.stages``), the ledger table and the metrics server."""
    bootstrap = settings.kafka.bootstrap or DEFAULT_BOOTSTRAP
    profile = KafkaProfile.resolve(settings.kafka, bootstrap, embedded=False)
    scheme = IDEMPOTENT_SCHEME if profile.idempotence else "kafka"
    datadir = settings.worker.data_dir / "faust" / settings.worker.app_id
    # Faust creates only the last path component of its datadir.
    datadir.parent.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {
        "broker": f"{scheme}://{bootstrap}",
        "autodiscover": False,
        "store": "memory://",
        "datadir": str(datadir),
        "web_host": settings.worker.web_host,
        "web_port": settings.worker.web_port or 6066,  # Faust refuses 0; unused when off
        "web_enabled": settings.worker.web_port != 0,
        "topic_partitions": settings.kafka.partitions,
        # Faust's own topics (changelogs) as the catalog's: the command resolved the factor
        # from the cluster (`faust -A` against a cluster: set SWE_STREAM_KAFKA_REPLICATION_FACTOR)
        "topic_replication_factor": profile.replication.factor,
        # No standby table copies: with one, Faust's sticky assignor lets each member keep up
        # to ceil(partitions / members), so a worker joining two that already hold two of the
        # four partitions each got none and idled (seen with the compose stack's three
        # workers). Without, members give back down to floor(...) and every one gets a share;
        # a taken-over partition's tables recover from the (compacted) changelogs instead.
        "table_standby_replicas": 0,
        "consumer_auto_offset_reset": "earliest",
        # The tables live in memory (nothing persisted): the check compares the offsets this
        # process read in an earlier assignment with a highwater a broker may report behind
        # them for a moment (seen on the embedded broker with three workers rebalancing),
        # and a mismatch crashed the worker (ConsistencyError) where recovery just goes on
        "recovery_consistency_check": False,
        "producer_acks": -1,
        # a stage may wait out a GitHub rate-limit reset (up to an hour) inside one record
        "broker_max_poll_interval": settings.github.max_rate_limit_wait_seconds + 300,
    }
    instance = group_instance_id(settings) if profile.idempotence else None
    if instance:  # a real Kafka (the embedded broker gives no producer ids)
        options["consumer_group_instance_id"] = instance
        # a static member rejoining gets its last assignment back, which names the member's
        # URL: Faust checks it is its own, so it must not change with the web port of a restart
        options["canonical_url"] = f"http://{instance}"
    if profile.rebalance_timeout_seconds:
        options["broker_rebalance_timeout"] = profile.rebalance_timeout_seconds
    if profile.session_timeout_seconds:
        options["broker_session_timeout"] = profile.session_timeout_seconds
        options["broker_heartbeat_interval"] = profile.session_timeout_seconds / 4
    app = faust.App(settings.worker.app_id, **options)
    OUTAGES.backoff = Backoff(
        settings.worker.outage_backoff_seconds, settings.worker.outage_max_backoff_seconds
    )
    partitions = settings.kafka.partitions
    ledger = Ledger(TableLedgerStore(ledger_table(app, partitions)), settings.pipeline_version)

    def table(name: str) -> Any:
        # key_type/value_type bytes as well as the raw schema: the schema serializes what is
        # written, but recovery from the changelog decodes by the table's types (JSON unless
        # bytes), and a key that is not JSON made a restarted worker's recovery hang
        return app.Table(
            name,
            default=None,
            schema=raw_schema(),
            key_type=bytes,
            value_type=bytes,
            partitions=partitions,
        )

    recipes = RecipeBook(recipe_table(settings), FaustSink(app))
    sources = set()
    for stage in stages(settings, StageResources(ledger, table, recipes)):
        register_stage(app, stage, ledger)
        sources.add(stage.source.name)
    # after a rebalance, a stage's partition with nothing committed is read from its start
    seek_uncommitted_to_start(app.consumer, sources)
    # and a commit that failed is not taken for made
    keep_commit_record_true(app.consumer)
    # and no commit passes a record of it that is not processed
    hold_commits_at_unprocessed_records(app.consumer, sources)
    fetch_wait = settings.kafka.fetch_max_wait_ms
    if fetch_wait is None and profile.idempotence:  # Apache Kafka, not the embedded broker
        fetch_wait = KAFKA_FETCH_MAX_WAIT_MS
    if fetch_wait is not None:
        limit_fetch_wait(app.consumer, fetch_wait)
    register_recipe_memory(app, recipes, bootstrap, settings.validation.recipe_refresh_seconds)

    register_maintenance(app, settings, bootstrap, sources)
    return app


def group_instance_id(settings: Settings) -> str | None:
    """The worker's static group membership id (``worker.group_instance_id``): by default its
    host and data directory, which a restart of the same worker keeps and another worker of
    the group (its own data directory, or another host) does not share."""
    chosen = settings.worker.group_instance_id
    if chosen == "none":
        return None
    if chosen:
        return chosen
    where = str(settings.worker.data_dir.resolve())
    digest = hashlib.sha256(where.encode()).hexdigest()[:12]
    host = "".join(c if c.isalnum() or c in ".-" else "-" for c in socket.gethostname())
    return f"{host}-{digest}"


def register_recipe_memory(
    app: faust.App, recipes: RecipeBook, bootstrap: str, refresh_seconds: float
) -> None:
    """Restore the recipe memory from ``recipes.memory`` when the worker starts (validations
    wait for it), then read what other workers remembered every ``refresh_seconds``."""

    @app.task
    async def restore_recipes() -> None:
        try:
            count = await recipes.restore(bootstrap)
            log.info("recipes: %d remembered recipe(s) restored", count)
        except Exception as exc:  # the local table still holds what this worker learned
            log.warning("recipes: memory not restored from the topic: %s", exc)

    @app.timer(interval=refresh_seconds)
    async def refresh_recipes() -> None:
        try:
            await recipes.restore(bootstrap)
        except Exception as exc:  # the cluster may be away: read next time
            log.debug("recipes: memory not refreshed: %s", exc)


def register_maintenance(
    app: faust.App, settings: Settings, bootstrap: str, streams: Iterable[str]
) -> None:
    """The worker's own tasks beside the stages: /metrics, the orphan reaper, the consumer lag
    gauge, the watch for offset commits stuck behind lost acks and the one for records of the
    ``streams`` (topic names) fetched but never delivered."""
    app.monitor = metrics.faust_monitor()
    metrics_port = settings.worker.metrics_port
    watch_group_leadership(app.assignor, settings.worker.app_id)

    @app.task
    async def serve_metrics() -> None:
        metrics.serve_metrics(metrics_port)

    @app.task
    async def remove_orphan_sandboxes() -> None:
        # a worker killed mid-validation (SIGKILL, OOM) left its sandbox running forever
        await asyncio.to_thread(remove_orphans_if_docker)

    lag = LagProbe(bootstrap, settings.worker.app_id)

    @app.timer(interval=settings.worker.lag_interval_seconds)
    async def measure_lag() -> None:
        try:
            assigned = [TopicPartition(tp.topic, tp.partition) for tp in app.consumer.assignment()]
            for tp, behind in (await lag.lag(assigned)).items():
                metrics.CONSUMER_LAG.labels(topic=tp.topic, partition=str(tp.partition)).set(behind)
        except Exception as exc:  # the cluster may be rebalancing or away: measure next time
            log.debug("consumer lag not measured: %s", exc)

    stall_watch = CommitStallWatch(checks=3)

    @app.timer(interval=settings.worker.commit_stall_check_seconds)
    async def repair_commit_stalls() -> None:
        try:
            await repair_stalled_commits(app.consumer, stall_watch)
        except Exception as exc:  # a rebalance may be under way: look again next time
            log.debug("commit stalls not checked: %s", exc)

    lost_fetch_watch = LostFetchWatch(checks=3)
    stream_topics = frozenset(streams)

    @app.timer(interval=settings.worker.lost_fetch_check_seconds)
    async def repair_lost_fetched_records() -> None:
        try:
            await repair_lost_fetches(app, lost_fetch_watch, stream_topics)
        except Exception as exc:  # a rebalance may be under way: look again next time
            log.debug("lost fetches not checked: %s", exc)

    progress_watch = StallWatch()

    @app.timer(interval=10.0)
    async def say_what_a_stalled_worker_waits_for() -> None:
        # once per stall, at WARNING: what the partitions behind stand at (a worker's own
        # record of a stall that the repairs above do not clear)
        try:
            standings = {
                tp: standing
                for tp, standing in partition_standings(app.consumer).items()
                if tp.topic in stream_topics
            }
            behind = sorted((str(tp), s) for tp, s in standings.items() if s.behind())
            progress_watch.observe(app, tuple(behind), len(behind))
        except Exception as exc:  # a rebalance may be under way: look again next time
            log.debug("worker progress not read: %s", exc)

    recovery_watch = RecoveryStallWatch(settings.worker.recovery_stall_seconds)

    @app.timer(interval=min(5.0, settings.worker.recovery_stall_seconds))
    async def repair_stuck_table_recovery() -> None:
        try:
            await repair_stuck_recovery(app, recovery_watch)
        except Exception as exc:  # a rebalance may be under way: look again next time
            log.debug("table recovery not checked: %s", exc)

    async def close_lag_probe(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        await lag.close()  # its clients, before the loop closes under them

    # weak=False: the signal would otherwise hold this local function by a weak reference
    app.on_before_shutdown.connect(close_lag_probe, weak=False)


def watch_group_leadership(assignor: Any, group: str) -> None:
    """``swe_stream_consumer_group_leader``: the group's leader is the member that computes
    every member's assignment (``assign``) before each takes its own (``on_assignment``);
    the others only take theirs."""
    assign, take = assignor.assign, assignor.on_assignment
    assigned: list[bool] = []

    def assign_as_leader(*args: Any, **kwargs: Any) -> Any:
        assigned.append(True)
        return assign(*args, **kwargs)

    def on_assignment(*args: Any, **kwargs: Any) -> Any:
        metrics.GROUP_LEADER.labels(group=group).set(1 if assigned else 0)
        assigned.clear()
        return take(*args, **kwargs)

    assignor.assign = assign_as_leader
    assignor.on_assignment = on_assignment


def app_settings(settings: Settings, profile: KafkaProfile) -> Settings:
    """The settings the in-process app runs with: this cluster, this profile."""
    kafka = settings.kafka.model_copy(
        update={
            "bootstrap": profile.bootstrap,
            "idempotence": "on" if profile.idempotence else "off",
            "rebalance_timeout_seconds": profile.rebalance_timeout_seconds,
            "session_timeout_seconds": profile.session_timeout_seconds,
            "replication_factor": profile.replication.factor,
            "min_insync_replicas": profile.replication.min_in_sync,
        }
    )
    # no Faust web server: /metrics is served by the command, and a fixed web port would
    # collide with a worker on the same machine
    worker = settings.worker.model_copy(update={"web_port": 0})
    return settings.model_copy(update={"kafka": kafka, "worker": worker})


def app_with_stages(
    settings: Settings, select: Callable[[list[Stage[Any]]], list[Stage[Any]]] = list
) -> tuple[faust.App, list[Stage[Any]]]:
    """An app of the pipeline's stages (``select`` picks among them), finalized, and the
    stages it runs: an in-process run counts their records."""
    stages: list[Stage[Any]] = []

    def capture(run_settings: Settings, resources: StageResources) -> list[Stage[Any]]:
        stages.extend(select(pipeline_stages(run_settings, resources)))
        return stages

    app = create_app(settings, stages=capture)
    app.finalize()
    return app, stages
