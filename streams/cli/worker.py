"""``swe-stream worker``: the Faust worker with every stage agent (or ``--stages``), on a
named cluster or the embedded broker."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import sys
from typing import Any

from streams.cli.options import Commands, Parents
from streams.core.logs import logging_config
from streams.core.settings import Settings, load_settings
from streams.kafka.broker import kafka_bootstrap
from streams.kafka.client import IdempotenceUnsupported, KafkaProfile, TopicAdmin, detect_profile
from streams.kafka.topics import ALL_TOPICS

log = logging.getLogger("swe_stream.cli")

DEFAULT_APP = "streams.runtime.worker_app:app"


def register(commands: Commands, parents: Parents) -> None:
    worker = commands.add_parser(
        "worker",
        parents=[parents.common, parents.kafka],
        help="run the Faust worker with every stage agent",
    )
    worker.add_argument("--app", default=DEFAULT_APP, help="MODULE:ATTRIBUTE of the app")
    worker.add_argument("--app-id", help="Faust app id = consumer group (per pipeline version)")
    worker.add_argument("--web-port", type=int, help="Faust web port (0 = off)")
    worker.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (0 = off)")
    worker.add_argument(
        "--stages", help="comma-separated stages to run (default: all), e.g. prefilter,enrich"
    )
    worker.add_argument(
        "-d", "--difficulty", help="keep only these difficulties (easy,medium,hard)"
    )
    worker.add_argument(
        "--cache-level",
        choices=["none", "base", "env", "instance"],
        help="image layers kept after a task (docker.cache_level)",
    )
    worker.set_defaults(handler=cmd_worker)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    with kafka_bootstrap(settings.kafka.bootstrap, settings.kafka.embedded_port) as (
        bootstrap,
        embedded,
    ):
        try:
            profile = asyncio.run(detect_profile(settings.kafka, bootstrap, embedded))
        except IdempotenceUnsupported as exc:
            print(f"swe-stream: {exc}", file=sys.stderr)
            return 1
        _export_for_app(args, settings, profile)
        effective = load_settings(getattr(args, "config", None))
        states = asyncio.run(_create_topics(bootstrap, effective))
        log.info("topics ready: %d created, %d existed", *_count_created(states))
        app = _import_app(args.app)
        from faust.worker import Worker

        worker = Worker(
            app,
            loglevel=effective.worker.log_level,
            quiet=True,
            logging_config=logging_config(effective.worker.log_level, effective.worker.log_format),
        )
        try:
            worker.execute_from_commandline()
        except SystemExit as exc:
            return int(exc.code or 0)
    return 0


def _export_for_app(args: argparse.Namespace, settings: Settings, profile: KafkaProfile) -> None:
    """The app module builds its settings from the environment, like ``faust -A`` does:
    pass it what this command resolved (CLI flags, embedded broker, Kafka profile)."""
    exported = {
        "SWE_STREAM_KAFKA_BOOTSTRAP": profile.bootstrap,
        "SWE_STREAM_KAFKA_PARTITIONS": str(settings.kafka.partitions),
        "SWE_STREAM_KAFKA_IDEMPOTENCE": "on" if profile.idempotence else "off",
        "SWE_STREAM_KAFKA_REPLICATION_FACTOR": str(profile.replication.factor),
        "SWE_STREAM_KAFKA_MIN_INSYNC_REPLICAS": str(profile.replication.min_in_sync),
        "SWE_STREAM_WORKER_APP_ID": settings.worker.app_id,
        "SWE_STREAM_WORKER_WEB_PORT": str(settings.worker.web_port),
        "SWE_STREAM_WORKER_METRICS_PORT": str(settings.worker.metrics_port),
        "SWE_STREAM_WORKER_LOG_LEVEL": settings.worker.log_level,
        "SWE_STREAM_WORKER_LOG_FORMAT": settings.worker.log_format,
        "SWE_STREAM_WORKER_STAGES": json.dumps(settings.worker.stages),
        "SWE_STREAM_CLASSIFY_DIFFICULTIES": json.dumps(settings.classify.difficulties),
        "SWE_STREAM_DOCKER_CACHE_LEVEL": settings.docker.cache_level,
    }
    if profile.rebalance_timeout_seconds:
        exported["SWE_STREAM_KAFKA_REBALANCE_TIMEOUT_SECONDS"] = str(
            profile.rebalance_timeout_seconds
        )
    if profile.session_timeout_seconds:
        exported["SWE_STREAM_KAFKA_SESSION_TIMEOUT_SECONDS"] = str(profile.session_timeout_seconds)
    if getattr(args, "config", None):
        exported["SWE_STREAM_CONFIG"] = str(args.config)
    os.environ.update(exported)


async def _create_topics(bootstrap: str, settings: Settings) -> list[Any]:
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        return await admin.create(ALL_TOPICS)


def _count_created(states: list[Any]) -> tuple[int, int]:
    created = sum(1 for s in states if s.action == "created")
    return created, len(states) - created


def _import_app(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute or "app")
