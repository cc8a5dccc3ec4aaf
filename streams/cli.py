"""``swe-stream``: the command line.

Every command that needs Kafka takes ``--bootstrap`` (or ``SWE_STREAM_KAFKA_BOOTSTRAP``);
without one it starts the embedded broker for as long as the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from streams.broker import BrokerError, EmbeddedBroker, kafka_bootstrap
from streams.kafka import (
    IdempotenceUnsupported,
    KafkaProfile,
    TopicAdmin,
    detect_profile,
    format_configs,
)
from streams.settings import ConfigFileError, Settings, load_settings
from streams.topics import ALL_TOPICS

log = logging.getLogger("swe_stream.cli")


def build_parser() -> argparse.ArgumentParser:
    # SUPPRESS: global flags may stand before or after the command; a subparser's default
    # must not overwrite a value given before it.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--config", type=Path, help="YAML settings file (or SWE_STREAM_CONFIG)")
    common.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    kafka = argparse.ArgumentParser(add_help=False)
    kafka.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="Kafka cluster (or SWE_STREAM_KAFKA_BOOTSTRAP); default: start the embedded broker",
    )

    parser = argparse.ArgumentParser(
        prog="swe-stream",
        description="Mine GitHub pull requests into SWE-bench-style tasks, as Kafka streams.",
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    broker = commands.add_parser(
        "broker", parents=[common], help="run the embedded Kafka broker (Tansu) until Ctrl-C"
    )
    broker.add_argument("--port", type=int, default=None, help="listen port (default: free port)")

    topics = commands.add_parser("topics", parents=[common], help="create / list / describe topics")
    topic_actions = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("create", "create every catalog topic that is missing (idempotent)"),
        ("list", "list the catalog's topics and whether the cluster has them"),
        ("describe", "partitions, key, value model and configs of each topic"),
    ):
        action = topic_actions.add_parser(name, parents=[common, kafka], help=text)
        action.add_argument("--partitions", type=int, help="PR-level partition count")
        action.add_argument("names", nargs="*", help="only these topics (default: all)")

    ingest = commands.add_parser(
        "ingest",
        parents=[common, kafka],
        help="publish GH Archive PullRequestEvents to gharchive.pull-request-events",
    )
    ingest.add_argument("--from", dest="first", metavar="HOUR", help="first hour: 2025-01-01T00")
    ingest.add_argument("--to", dest="last", metavar="HOUR", help="last hour, inclusive")
    ingest.add_argument("--hours", type=int, metavar="N", help="the last N published hours")
    ingest.add_argument(
        "--follow", action="store_true", help="wait for hours not yet published; go on forever"
    )
    ingest.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="SPEC",
        help="local file, glob, directory, file:// or http(s):// URL (repeatable)",
    )
    ingest.add_argument("--force", action="store_true", help="re-ingest hours already done")
    ingest.add_argument("--concurrency", type=int, help="hours fetched at once (default 8)")
    ingest.add_argument("--poll-seconds", type=float, help="--follow: wait between checks")
    ingest.add_argument("--base-url", help="GH Archive base URL (gharchive.base_url)")

    config = commands.add_parser("config", parents=[common], help="show the effective settings")
    config.add_subparsers(dest="action", required=True, metavar="ACTION").add_parser(
        "show", parents=[common], help="print the effective settings, secrets masked"
    )

    worker = commands.add_parser(
        "worker", parents=[common, kafka], help="run the Faust worker with every stage agent"
    )
    worker.add_argument("--app", default="streams.app:app", help="MODULE:ATTRIBUTE of the app")
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

    schemas = commands.add_parser("schemas", parents=[common], help="JSON Schema files of records")
    schemas_actions = schemas.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = schemas_actions.add_parser(
        "generate", parents=[common], help="write schemas/json/*.json from the models"
    )
    generate.add_argument("--check", action="store_true", help="only report stale files")

    images = commands.add_parser("images", parents=[common], help="Docker images for validation")
    images_actions = images.add_subparsers(dest="action", required=True, metavar="ACTION")
    base = images_actions.add_parser(
        "base", parents=[common], help="build the base image offline (debootstrap + import)"
    )
    base.add_argument("--tag", help="image tag (default: docker.base_image setting)")
    base.add_argument("--suite", default="bookworm", help="Debian suite")
    base.add_argument("--ca-bundle", type=Path, help="extra CA bundle to trust (TLS proxies)")
    base.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    base.add_argument(
        "--debootstrap",
        action="store_true",
        help="build from Debian packages, offline (the only builder; where a registry is "
        "reachable, docker.base_image=python:3.12-slim needs no build at all)",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        "kafka": {
            "bootstrap": getattr(args, "bootstrap", None),
            "partitions": getattr(args, "partitions", None),
        },
        "gharchive": {
            "base_url": getattr(args, "base_url", None),
            "concurrency": getattr(args, "concurrency", None),
            "poll_seconds": getattr(args, "poll_seconds", None),
        },
        "worker": {
            "log_level": getattr(args, "log_level", None),
            "app_id": getattr(args, "app_id", None),
            "web_port": getattr(args, "web_port", None),
            "metrics_port": getattr(args, "metrics_port", None),
            "stages": getattr(args, "stages", None),
        },
        "classify": {"difficulties": getattr(args, "difficulty", None)},
        "docker": {"cache_level": getattr(args, "cache_level", None)},
    }
    return load_settings(getattr(args, "config", None), overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except (ConfigFileError, ValidationError) as exc:
        print(f"swe-stream: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.worker.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handler = COMMANDS[args.command]
    try:
        return handler(args, settings)
    except BrokerError as exc:
        print(f"swe-stream: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def cmd_broker(args: argparse.Namespace, settings: Settings) -> int:
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    broker = EmbeddedBroker(port=args.port or settings.kafka.embedded_port)
    try:
        broker.start()
        print(f"bootstrap: {broker.bootstrap}", flush=True)
        print(f"broker pid: {broker.pid}", flush=True)
        print("embedded broker (Tansu): memory only, Ctrl-C to stop", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            if broker.process is None or broker.process.poll() is not None:
                print("swe-stream: embedded broker exited unexpectedly", file=sys.stderr)
                return 1
        return 0
    finally:
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_topics(args: argparse.Namespace, settings: Settings) -> int:
    specs = [t for t in ALL_TOPICS if not args.names or t.name in args.names]
    unknown = set(args.names) - {t.name for t in specs}
    if unknown:
        print(f"swe-stream: unknown topics: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    with kafka_bootstrap(settings.kafka.bootstrap, settings.kafka.embedded_port) as (
        bootstrap,
        embedded,
    ):
        if embedded:
            print(f"# embedded broker on {bootstrap} (memory only: gone when this command exits)")
        return asyncio.run(_topics(args.action, bootstrap, settings, specs))


async def _topics(action: str, bootstrap: str, settings: Settings, specs: list[Any]) -> int:
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        states = await (admin.create(specs) if action == "create" else admin.describe(specs))
    problems = 0
    for state in states:
        spec = state.spec
        have = state.partitions if state.exists else "-"
        if action == "describe":
            print(f"{spec.name}")
            print(f"  {spec.description}")
            print(f"  key:        {spec.key}")
            print(f"  value:      schemas.{spec.value_model.__name__}")
            print(f"  partitions: {state.wanted_partitions} (cluster: {have})")
            print(
                f"  configs:    {format_configs(spec.configs)} (cluster: "
                f"{format_configs(state.configs) if state.exists else '-'})"
            )
            if spec.has_dlq:
                print(f"  dlq:        {spec.dlq_name}")
        else:
            status = state.action or ("present" if state.exists else "missing")
            print(
                f"{status:9} {spec.name:40} partitions={have} "
                f"configs={format_configs(state.configs)}"
            )
        for problem in state.problems:
            problems += 1
            print(f"  ! {spec.name}: {problem}", file=sys.stderr)
    return 1 if problems else 0


def ingest_arguments_problem(args: argparse.Namespace) -> str | None:
    """Which hours to ingest must be said exactly one way."""
    ways = [bool(args.source), args.first is not None, args.hours is not None]
    if sum(ways) != 1:
        return "say which hours: --source SPEC, --from HOUR [--to HOUR], or --hours N"
    if args.last is not None and args.first is None:
        return "--to needs --from"
    if args.source and args.follow:
        return "--follow works with --from or --hours, not --source"
    if args.hours is not None and args.hours < 1:
        return "--hours must be at least 1"
    return None


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    problem = ingest_arguments_problem(args)
    if problem:
        print(f"swe-stream ingest: {problem}", file=sys.stderr)
        return 2
    # SIGTERM ends a --follow run like Ctrl-C: in-flight hours stay un-"done" and are redone.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    with kafka_bootstrap(settings.kafka.bootstrap, settings.kafka.embedded_port) as (
        bootstrap,
        embedded,
    ):
        if embedded:
            log.warning(
                "embedded broker on %s: what is published is gone when ingest exits", bootstrap
            )
        try:
            return asyncio.run(_ingest(args, settings, bootstrap, embedded))
        except (ValueError, FileNotFoundError) as exc:
            print(f"swe-stream ingest: {exc}", file=sys.stderr)
            return 2


def _raise_keyboard_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


async def _ingest(
    args: argparse.Namespace, settings: Settings, bootstrap: str, embedded: bool
) -> int:
    from aiokafka import AIOKafkaProducer

    from agents.ingest import Ingestor, Progress, following_hours, read_hour_ledger
    from streams.gharchive import (
        GHArchiveClient,
        hours_between,
        parse_hour,
        resolve_sources,
        sources_for_hours,
    )

    archive = settings.gharchive
    profile = await detect_profile(settings.kafka, bootstrap, embedded)
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        await admin.create(ALL_TOPICS)
    ledger = await read_hour_ledger(bootstrap)
    producer = AIOKafkaProducer(
        **profile.producer_config(),
        linger_ms=5,
        max_batch_size=1 << 20,
        max_request_size=8 << 20,
    )
    await producer.start()
    try:
        async with GHArchiveClient(
            archive.base_url,
            timeout=archive.timeout_seconds,
            max_attempts=archive.max_attempts,
        ) as client:
            sources: Any
            total: int | None
            if args.source:
                sources = resolve_sources(args.source, archive.base_url)
                total = len(sources)
            elif args.hours is not None:
                names = await client.latest_hours(args.hours)
                sources, total = sources_for_hours(names, archive.base_url), len(names)
                if args.follow:
                    sources = _chain(
                        sources,
                        following_hours(
                            parse_hour(names[-1]) + timedelta(hours=1), None, archive.base_url
                        ),
                    )
                    total = None
            else:
                first = parse_hour(args.first)
                last = parse_hour(args.last) if args.last else None
                if args.follow:
                    sources = following_hours(first, last, archive.base_url)
                    total = len(hours_between(first, last)) if last else None
                else:
                    names = hours_between(first, last or first)
                    sources, total = sources_for_hours(names, archive.base_url), len(names)
            progress = Progress(total, interactive=sys.stderr.isatty())
            ingestor = Ingestor(
                producer=producer,
                client=client,
                settings=archive,
                pipeline_version=settings.pipeline_version,
                ledger=ledger,
                force=args.force,
                follow=args.follow,
                progress=progress,
            )
            try:
                reports = await ingestor.run(sources)
            finally:
                progress.close()
    finally:
        await producer.stop()
    counts = {
        s: sum(1 for r in reports if r.status == s)
        for s in ("done", "partial", "failed", "skipped")
    }
    print(
        f"ingested {len(reports)} hours: "
        + " ".join(f"{status}={n}" for status, n in counts.items())
        + f"; events={sum(r.events for r in reports if r.status != 'skipped')}"
        + f" published={sum(r.published for r in reports if r.status != 'skipped')}"
    )
    return 1 if counts["failed"] else 0


async def _chain(first: Any, then: Any) -> Any:
    for item in first:
        yield item
    async for item in then:
        yield item


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    print(yaml.safe_dump(settings.masked(), sort_keys=False), end="")
    return 0


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

        worker = Worker(app, loglevel=effective.worker.log_level, quiet=True)
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
        "SWE_STREAM_WORKER_APP_ID": settings.worker.app_id,
        "SWE_STREAM_WORKER_WEB_PORT": str(settings.worker.web_port),
        "SWE_STREAM_WORKER_METRICS_PORT": str(settings.worker.metrics_port),
        "SWE_STREAM_WORKER_LOG_LEVEL": settings.worker.log_level,
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


def cmd_schemas(args: argparse.Namespace, settings: Settings) -> int:
    from schemas.generate import DEFAULT_DIR, stale_json_schemas, write_json_schemas

    if args.check:
        stale = stale_json_schemas(DEFAULT_DIR)
        for name in stale:
            print(f"stale: {name}")
        if stale:
            print("run `swe-stream schemas generate` to refresh them", file=sys.stderr)
        return 1 if stale else 0
    for path in write_json_schemas(DEFAULT_DIR):
        print(path)
    return 0


def cmd_images(args: argparse.Namespace, settings: Settings) -> int:
    from streams.images import build_debootstrap_base_image

    tag = build_debootstrap_base_image(
        args.tag or settings.docker.base_image,
        suite=args.suite,
        ca_bundle=args.ca_bundle,
        force=args.force,
    )
    print(tag)
    return 0


COMMANDS = {
    "broker": cmd_broker,
    "topics": cmd_topics,
    "ingest": cmd_ingest,
    "config": cmd_config,
    "worker": cmd_worker,
    "schemas": cmd_schemas,
    "images": cmd_images,
}

if __name__ == "__main__":
    sys.exit(main())
