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
import time
from collections.abc import Sequence
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
    common.add_argument(
        "--pipeline-version",
        type=int,
        metavar="N",
        help="pipeline version (stamped on records; consumer group swe-stream-vN); "
        "ledger commands: only this version's entries",
    )
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

    ledger = commands.add_parser("ledger", parents=[common], help="the processed-PR ledger")
    ledger_actions = ledger.add_subparsers(dest="action", required=True, metavar="ACTION")
    ledger_source = argparse.ArgumentParser(add_help=False)
    ledger_source.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="read swe.ledger from this Kafka cluster"
    )
    ledger_source.add_argument(
        "--file",
        type=Path,
        help="read a ledger file instead (a run's OUTPUT/.swe-stream/ledger.jsonl, a pr-file)",
    )
    show = ledger_actions.add_parser(
        "show", parents=[common, ledger_source], help="the latest state of one PR (owner/repo#N)"
    )
    show.add_argument("pr", help="owner/repo#number")
    ledger_actions.add_parser(
        "stats", parents=[common, ledger_source], help="the funnel: counts by stage, status, reason"
    )
    ledger_export = ledger_actions.add_parser(
        "export", parents=[common, ledger_source], help="write a --pr-file (swe-forge JSONL)"
    )
    ledger_export.add_argument("--pr-file", type=Path, required=True, help="file to write")
    ledger_export.add_argument(
        "--all", action="store_true", help="every PR's latest entry, not only final ones"
    )
    ledger_import = ledger_actions.add_parser(
        "import", parents=[common], help="load a --pr-file (swe-forge's or ours) into the ledger"
    )
    ledger_import.add_argument("--pr-file", type=Path, required=True, help="file to read")
    ledger_import.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="Kafka cluster to write swe.ledger to"
    )
    ledger_import.add_argument(
        "--file", type=Path, help="or append the entries to this ledger file"
    )

    dlq = commands.add_parser("dlq", parents=[common], help="dead letters: show, replay")
    dlq_actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("show", "list the dead letters of a DLQ topic"),
        ("replay", "send each dead record back to its source topic (its latest attempt)"),
    ):
        action = dlq_actions.add_parser(name, parents=[common, kafka], help=text)
        action.add_argument("--topic", required=True, help="the DLQ topic, e.g. pr.enriched.dlq")

    replay = commands.add_parser(
        "replay",
        parents=[common, kafka],
        help="re-derive the stages after a topic under a pipeline version (a fresh group)",
    )
    replay.add_argument(
        "--from-topic", required=True, metavar="TOPIC", help="start here, e.g. pr.enriched"
    )
    start = replay.add_mutually_exclusive_group()
    start.add_argument(
        "--from-beginning", action="store_true", help="every record of the topic (default)"
    )
    start.add_argument(
        "--from-offset",
        action="append",
        metavar="P:O",
        help="start partition P at offset O (repeatable); partitions not named are skipped",
    )
    start.add_argument(
        "--from-time", metavar="ISO", help="the first record stamped at or after this time"
    )
    replay.add_argument(
        "--until-time", metavar="ISO", help="skip start-topic records stamped at or after this"
    )
    replay.add_argument(
        "--stages", help="only these of the downstream stages, comma-separated (default: all)"
    )
    replay.add_argument("--group", help="consumer group (default: swe-stream-vN-replay-<time>)")
    replay.add_argument(
        "-o", "--output", type=Path, help="export.output_dir (version N writes to <it>-vN)"
    )
    replay.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (0 = off)")
    replay.add_argument("--no-live", action="store_true", help="log lines, no live table")

    offsets = commands.add_parser(
        "offsets", parents=[common], help="a consumer group's offsets: show, reset"
    )
    offsets_actions = offsets.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("show", "start, end, committed offset and lag per partition"),
        ("reset", "move the group (refused while it has live members)"),
    ):
        action = offsets_actions.add_parser(name, parents=[common, kafka], help=text)
        action.add_argument("--group", required=True, help="consumer group, e.g. swe-stream-v1")
        action.add_argument("--topic", required=True, help="topic, e.g. pr.enriched")
        if name == "reset":
            target = action.add_mutually_exclusive_group(required=True)
            target.add_argument("--to-earliest", action="store_true", help="each partition's start")
            target.add_argument("--to-latest", action="store_true", help="each partition's end")
            target.add_argument(
                "--to-time", metavar="ISO", help="first record stamped at or after this time"
            )
            target.add_argument(
                "--to-offset", action="append", metavar="P:O", help="partition P to offset O"
            )

    hours = argparse.ArgumentParser(add_help=False)
    hours.add_argument("--from", dest="first", metavar="HOUR", help="first hour: 2025-01-01T00")
    hours.add_argument("--to", dest="last", metavar="HOUR", help="last hour, inclusive")
    hours.add_argument("--hours", type=int, metavar="N", help="the last N published hours")
    hours.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="SPEC",
        help="local file, glob, directory or URL of an hour (repeatable)",
    )
    hours.add_argument("--base-url", help="GH Archive base URL (gharchive.base_url)")
    hours.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (0 = off)")
    hours.add_argument("--no-live", action="store_true", help="log lines, no live table")

    mine = commands.add_parser(
        "mine",
        parents=[common, kafka, hours],
        help="one-shot mining: ingest and every stage in this process (embedded broker)",
    )
    mine.add_argument("-o", "--output", type=Path, help="task directories (export.output_dir)")
    mine.add_argument("-m", "--model", help="LLM model (llm.model)")
    mine.add_argument("-n", "--max-tasks", type=int, help="stop after this many exports")
    mine.add_argument("-d", "--difficulty", help="keep only these (easy,medium,hard)")
    mine.add_argument("--min-stars", type=int, help="enrich.min_stars")
    mine.add_argument("--languages", help="repository languages kept, comma-separated")
    mine.add_argument("--pr-file", type=Path, help="processed PRs (swe-forge JSONL): read, updated")
    mine.add_argument("--once", action="store_true", help="stop when the hours are drained")
    mine.add_argument("--api-key", help="LLM API key (or OPENROUTER_API_KEY)")
    mine.add_argument("--force", action="store_true", help="re-ingest hours already done")

    run = commands.add_parser(
        "run",
        parents=[common, kafka, hours],
        help="always-on mining: ingest --follow and every stage, until SIGTERM",
    )
    run.add_argument("-o", "--output", type=Path, help="task directories (export.output_dir)")

    demo = commands.add_parser(
        "demo", parents=[common], help="the whole pipeline offline on this machine, in minutes"
    )
    demo.add_argument(
        "-o", "--output", type=Path, help="where the task goes (default: WORKDIR/tasks)"
    )
    demo.add_argument("--workdir", type=Path, help="scratch directory (default: ./demo-run)")
    demo.add_argument("--hour-file", type=Path, help="GH Archive hour to serve (default: shipped)")
    demo.add_argument("--no-live", action="store_true", help="log lines, no live table")

    validate = commands.add_parser(
        "validate", parents=[common], help="re-validate exported tasks: gold resolves, empty not"
    )
    validate.add_argument("-i", "--input", type=Path, required=True, help="task directory or dirs")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")

    harness = commands.add_parser(
        "harness", parents=[common], help="evaluate a coding agent on exported tasks in Docker"
    )
    harness.add_argument(
        "-i",
        "--input",
        type=Path,
        default=Path("generated-swe"),
        help="a task directory or a directory of them (default ./generated-swe)",
    )
    harness.add_argument(
        "--agent-dir",
        type=Path,
        required=True,
        help="the agent's directory, mounted read-only at /agent",
    )
    harness.add_argument(
        "--agent-cmd",
        default="python -m baseagent",
        help="run in /testbed (default: python -m baseagent)",
    )
    harness.add_argument("--agent-timeout", type=float, default=600.0, help="seconds (600)")
    harness.add_argument(
        "--test-timeout", type=float, default=120.0, help="seconds per check command (120)"
    )
    harness.add_argument(
        "--docker-image", help="base image of the environments (docker.base_image)"
    )
    harness.add_argument("--parallel", type=int, default=1, help="evaluations at once")
    harness.add_argument(
        "--keep-containers",
        action="store_true",
        help="stop the agents' containers instead of removing them",
    )
    harness.add_argument(
        "--agent-network", action="store_true", help="give the agent a network (default: none)"
    )
    harness.add_argument(
        "--agent-env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this host variable to the agent (repeatable); nothing else is",
    )
    harness.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("harness-results"),
        help="report.json, model.patch and logs per task",
    )
    harness.add_argument("--json", action="store_true", help="print the report as JSON")
    harness.add_argument(
        "--metrics-port", type=int, default=0, help="serve /metrics on this port (0 = off)"
    )

    export = commands.add_parser(
        "export", parents=[common], help="task directories <-> SWE-bench JSONL"
    )
    export.add_argument(
        "-i", "--input", type=Path, required=True, help="task dirs, or a .jsonl / .json dataset"
    )
    export.add_argument(
        "-o", "--output", type=Path, required=True, help="dataset file, or task directory"
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        "pipeline_version": getattr(args, "pipeline_version", None),
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
        "docker": {
            "cache_level": getattr(args, "cache_level", None),
            "base_image": getattr(args, "docker_image", None),
        },
        "enrich": {
            "min_stars": getattr(args, "min_stars", None),
            "languages": getattr(args, "languages", None),
        },
        "llm": {"model": getattr(args, "model", None), "api_key": getattr(args, "api_key", None)},
        "export": {"output_dir": getattr(args, "output", None)},
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


class StopSignals:
    """SIGINT and SIGTERM as a flag that a loop polls, for as long as the ``with`` lasts.

    The handler only assigns. Python runs it between two bytecodes of the main thread, which
    may hold any lock at that moment; ``threading.Event.set`` takes the lock that an
    interrupted ``Event.wait`` of the same thread can be holding, and would wait for it forever.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: object) -> None:
        self.received = signum

    def wait(self, timeout: float) -> bool:
        """True once a stop signal arrived; waits at most ``timeout`` seconds for one."""
        deadline = time.monotonic() + timeout
        while self.received is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(remaining, 0.05))
        return True


def cmd_broker(args: argparse.Namespace, settings: Settings) -> int:
    broker = EmbeddedBroker(port=args.port or settings.kafka.embedded_port)
    with StopSignals() as stop:
        try:
            broker.start()
            print(f"bootstrap: {broker.bootstrap}", flush=True)
            print(f"broker pid: {broker.pid}", flush=True)
            print(
                f"embedded broker (Tansu): memory only, Ctrl-C to stop; log: {broker.log_path}",
                file=sys.stderr,
                flush=True,
            )
            while not stop.wait(0.5):
                if broker.process is None or broker.process.poll() is not None:
                    print("swe-stream: embedded broker exited unexpectedly", file=sys.stderr)
                    return 1
            log.info("signal %s: stopping the embedded broker", stop.received)
            return 0
        finally:
            broker.stop()


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


def hour_selection(args: argparse.Namespace) -> Any:
    from agents.ingest import HourSelection

    return HourSelection(
        sources=tuple(getattr(args, "source", None) or ()),
        first=getattr(args, "first", None),
        last=getattr(args, "last", None),
        hours=getattr(args, "hours", None),
        follow=bool(getattr(args, "follow", False)),
    )


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    selection = hour_selection(args)
    problem = selection.problem()
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
            return asyncio.run(_ingest(selection, args.force, settings, bootstrap, embedded))
        except (ValueError, FileNotFoundError) as exc:
            print(f"swe-stream ingest: {exc}", file=sys.stderr)
            return 2


def _raise_keyboard_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


async def _ingest(
    selection: Any, force: bool, settings: Settings, bootstrap: str, embedded: bool
) -> int:
    from agents.ingest import ingest_hours

    profile = await detect_profile(settings.kafka, bootstrap, embedded)
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        await admin.create(ALL_TOPICS)
    reports = await ingest_hours(
        selection,
        settings.gharchive,
        profile.producer_config(),
        bootstrap,
        pipeline_version=settings.pipeline_version,
        force=force,
        interactive=sys.stderr.isatty(),
    )
    print(ingest_summary(reports))
    return 1 if any(r.status == "failed" for r in reports) else 0


def ingest_summary(reports: list[Any]) -> str:
    counts = {
        s: sum(1 for r in reports if r.status == s)
        for s in ("done", "partial", "failed", "skipped")
    }
    return (
        f"ingested {len(reports)} hours: "
        + " ".join(f"{status}={n}" for status, n in counts.items())
        + f"; events={sum(r.events for r in reports if r.status != 'skipped')}"
        + f" published={sum(r.published for r in reports if r.status != 'skipped')}"
    )


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


# the ledger --------------------------------------------------------------------------------


def _ledger_entries(args: argparse.Namespace, settings: Settings) -> list[Any]:
    from streams.ledger import read_ledger, read_pr_file

    if args.file is not None:
        return read_pr_file(args.file, settings.pipeline_version)
    bootstrap = args.bootstrap or settings.kafka.bootstrap
    if not bootstrap:
        raise LedgerSourceMissing(
            "say where the ledger is: --bootstrap HOST:PORT (a Kafka cluster) or --file PATH "
            "(a run's OUTPUT/.swe-stream/ledger.jsonl, or a pr-file); the embedded broker keeps "
            "nothing once its command exits"
        )
    return asyncio.run(read_ledger(bootstrap))


class LedgerSourceMissing(ValueError):
    pass


def cmd_ledger(args: argparse.Namespace, settings: Settings) -> int:
    from schemas import ledger_key, parse_pr_key
    from streams.ledger import Funnel, PrFileError, latest, of_version, pr_file_line, write_pr_file

    try:
        if args.action == "import":
            return _ledger_import(args, settings)
        entries = _ledger_entries(args, settings)
    except (LedgerSourceMissing, PrFileError, FileNotFoundError) as exc:
        print(f"swe-stream ledger: {exc}", file=sys.stderr)
        return 2
    entries = of_version(entries, getattr(args, "pipeline_version", None))
    current = latest(entries)
    if args.action == "show":
        try:
            repo, number = parse_pr_key(args.pr)
        except ValueError as exc:
            print(f"swe-stream ledger: {exc}", file=sys.stderr)
            return 2
        history = [e for e in entries if (e.repo, e.number) == (repo, number)]
        if not history:
            print(f"{args.pr}: not in the ledger", file=sys.stderr)
            return 1
        for version in sorted({e.pipeline_version for e in history}):
            print(pr_file_line(current[ledger_key(repo, number, version)]))
            for entry in history:
                if entry.pipeline_version == version:
                    print(
                        f"  {entry.updated_at.isoformat()} v{version} {entry.stage}: "
                        f"{entry.status}" + (f" ({entry.reason})" if entry.reason else "")
                    )
        return 0
    if args.action == "stats":
        from streams.runner import STAGE_ORDER

        print("\n".join(Funnel.of(entries).lines(STAGE_ORDER)))
        return 0
    chosen = [e for e in current.values() if args.all or e.is_final()]
    written = write_pr_file(args.pr_file, chosen)
    print(f"wrote {written} PRs to {args.pr_file}")
    return 0


def _ledger_import(args: argparse.Namespace, settings: Settings) -> int:
    from streams.ledger import read_pr_file, write_pr_file

    entries = read_pr_file(args.pr_file, settings.pipeline_version)
    if args.file is not None:
        existing = read_pr_file(args.file, settings.pipeline_version) if args.file.exists() else []
        write_pr_file(args.file, existing + entries)
        print(f"imported {len(entries)} PRs into {args.file}")
        return 0
    bootstrap = args.bootstrap or settings.kafka.bootstrap
    if not bootstrap:
        print(
            "swe-stream ledger import: say where: --bootstrap HOST:PORT or --file PATH",
            file=sys.stderr,
        )
        return 2
    from streams.runner import restore_ledger

    profile = asyncio.run(detect_profile(settings.kafka, bootstrap, False))
    written = asyncio.run(restore_ledger(bootstrap, profile, entries))
    print(f"imported {written} PRs into swe.ledger on {bootstrap}")
    return 0


# mine, run, demo ---------------------------------------------------------------------------


def cmd_mine(args: argparse.Namespace, settings: Settings) -> int:
    from agents.ingest import HourSelection
    from streams.runner import RunPlan

    selection = hour_selection(args)
    if not (selection.sources or selection.first or selection.hours):
        selection = HourSelection(hours=1, follow=not args.once)
    elif not args.once:
        selection = HourSelection(
            selection.sources,
            selection.first,
            selection.last,
            selection.hours,
            follow=not selection.sources,
        )
    problem = selection.problem()
    if problem:
        print(f"swe-stream mine: {problem}", file=sys.stderr)
        return 2
    output = settings.export_dir
    plan = RunPlan(
        selection=selection,
        once=args.once,
        max_tasks=args.max_tasks,
        pr_file=args.pr_file,
        force_ingest=args.force,
        live=_live(args),
    )
    return _run_plan(settings, plan, output)


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from agents.ingest import HourSelection
    from streams.runner import RunPlan

    first, hours = getattr(args, "first", None), getattr(args, "hours", None)
    selection = HourSelection(
        first=first, last=args.last, hours=hours or (None if first else 1), follow=True
    )
    problem = selection.problem()
    if problem:
        print(f"swe-stream run: {problem}", file=sys.stderr)
        return 2
    if not settings.kafka.bootstrap:
        log.warning(
            "run on the embedded broker: nothing survives the process; production "
            "runs name a cluster with --bootstrap"
        )
    plan = RunPlan(selection=selection, live=_live(args))
    return _run_plan(settings, plan, settings.export_dir)


def _live(args: argparse.Namespace) -> bool:
    from streams.runner import interactive

    return interactive() and not getattr(args, "no_live", False)


def _run_plan(settings: Settings, plan: Any, output: Path) -> int:
    from streams import metrics
    from streams.runner import run_pipeline

    metrics.serve_metrics(settings.worker.metrics_port)
    with kafka_bootstrap(settings.kafka.bootstrap, settings.kafka.embedded_port) as (
        bootstrap,
        embedded,
    ):
        if embedded:
            # the embedded broker forgets everything: the ledger lives beside the output
            plan.ledger_log = output / ".swe-stream" / "ledger.jsonl"
            log.info("embedded broker on %s; the ledger is kept in %s", bootstrap, plan.ledger_log)
        try:
            summary = asyncio.run(run_pipeline(settings, bootstrap, embedded, plan))
        except IdempotenceUnsupported as exc:
            print(f"swe-stream: {exc}", file=sys.stderr)
            return 1
    print("\n".join(summary.lines(output)))
    failed = ("ingest failed", "the stream processor crashed")
    return 1 if summary.stopped_because.startswith(failed) else 0


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from streams.demo_run import run_demo

    return run_demo(args, settings)


# validate, export ----------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace, settings: Settings) -> int:
    from streams.demo_run import validate_task_dirs

    reports = validate_task_dirs(args.input, settings)
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        for report in reports:
            verdict = "valid" if report["valid"] else "INVALID"
            print(
                f"{report['task']}: {verdict}"
                + (f" ({report['reason']})" if report["reason"] else "")
            )
    valid = sum(1 for r in reports if r["valid"])
    print(f"{valid} valid, {len(reports) - valid} invalid", file=sys.stderr)
    return 0 if reports and valid == len(reports) else 1


def cmd_harness(args: argparse.Namespace, settings: Settings) -> int:
    from agents.export import find_task_dirs
    from agents.harness import HarnessEngine, HarnessOptions, evaluate_all
    from streams.demo_run import task_validator
    from streams.sandbox import Limits

    missing = [name for name in args.agent_env if name not in os.environ]
    if missing:
        print(f"swe-stream harness: --agent-env names unset variables: {missing}", file=sys.stderr)
        return 2
    if args.agent_dir is not None and not args.agent_dir.is_dir():
        print(
            f"swe-stream harness: --agent-dir {args.agent_dir} is not a directory", file=sys.stderr
        )
        return 2
    try:
        tasks = find_task_dirs(args.input)
    except FileNotFoundError as exc:
        print(f"swe-stream harness: {exc}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"swe-stream harness: no task directories in {args.input}", file=sys.stderr)
        return 2
    options = HarnessOptions(
        agent_command=args.agent_cmd,
        agent_dir=args.agent_dir,
        agent_timeout_seconds=args.agent_timeout,
        test_timeout_seconds=args.test_timeout,
        agent_network=args.agent_network,
        agent_env={name: os.environ[name] for name in args.agent_env},
        keep_containers=args.keep_containers,
        output_dir=args.output,
    )
    from streams import metrics

    metrics.serve_metrics(args.metrics_port)
    engine = HarnessEngine(task_validator(settings), options, Limits.from_settings(settings.docker))
    progress = HarnessProgress(len(tasks), enabled=sys.stderr.isatty() and not args.json)
    try:
        report = asyncio.run(evaluate_all(engine, tasks, args.parallel, progress.advance))
    except KeyboardInterrupt:
        from agents.harness import RUN_LABEL
        from agents.validate import docker_from_env
        from streams.sandbox import remove_labelled

        removed = remove_labelled(docker_from_env(), RUN_LABEL, options.run_id)
        print(
            f"swe-stream harness: interrupted; removed {removed} agent container(s)",
            file=sys.stderr,
        )
        return 130
    finally:
        progress.close()
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "summary.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        for result in report.results:
            print(
                f"{result.task_id}: {result.status}"
                + (f" ({result.error})" if result.error else "")
            )
        print(
            f"{report.total} tasks: resolved {report.resolved}, unresolved {report.unresolved}, "
            f"agent_error {report.agent_error}, test_error {report.test_error}, setup_error "
            f"{report.setup_error}, sanity_fail {report.sanity_fail}; average agent time "
            f"{report.avg_agent_time_secs} s; details in {args.output}"
        )
    return 0


class HarnessProgress:
    """A rich bar of evaluations done, with the statuses so far."""

    def __init__(self, total: int, enabled: bool):
        from collections import Counter

        self.statuses: Counter[str] = Counter()
        self._bar: Any = None
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._bar = Progress(
                TextColumn("harness"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
            )
            self._task = self._bar.add_task("", total=total)
            self._bar.start()

    def advance(self, result: Any) -> None:
        self.statuses[result.status] += 1
        if self._bar is not None:
            text = " ".join(f"{s}={n}" for s, n in sorted(self.statuses.items()))
            self._bar.update(self._task, advance=1, description=text)
        else:
            log.info("harness: %s %s", result.task_id, result.status)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def cmd_dlq(args: argparse.Namespace, settings: Settings) -> int:
    from streams.dlq import current_letters, read_dead_letters, replay_dead_letters

    bootstrap = settings.kafka.bootstrap
    if not bootstrap:
        print(
            "swe-stream dlq: name the cluster with --bootstrap HOST:PORT (the embedded broker "
            "keeps nothing once its command exits)",
            file=sys.stderr,
        )
        return 2
    letters = asyncio.run(read_dead_letters(bootstrap, args.topic))
    readable = [letter for _, _, letter in letters if not isinstance(letter, Exception)]
    if args.action == "show":
        for partition, offset, letter in letters:
            if isinstance(letter, Exception):
                print(f"{partition}:{offset} unreadable dead letter: {letter}")
                continue
            first_line = (letter.error.splitlines() or [""])[0][:160]
            print(
                f"{partition}:{offset} {letter.key} from {letter.source_topic}"
                f"@{letter.source_partition}:{letter.source_offset} stage {letter.stage} "
                f"attempt {letter.attempts} at {letter.failed_at.isoformat()}: "
                f"{letter.error_type}: {first_line}"
            )
        print(
            f"{len(letters)} dead letters, {len(current_letters(readable))} records",
            file=sys.stderr,
        )
        return 0
    profile = asyncio.run(detect_profile(settings.kafka, bootstrap, False))
    sent = asyncio.run(replay_dead_letters(profile.producer_config(), current_letters(readable)))
    print(f"replayed {sent} records from {args.topic} to their source topics")
    return 0


# replay, offsets ---------------------------------------------------------------------------


def _cluster(command: str, settings: Settings) -> str | None:
    if settings.kafka.bootstrap:
        return settings.kafka.bootstrap
    print(
        f"swe-stream {command}: name the cluster with --bootstrap HOST:PORT (or "
        "SWE_STREAM_KAFKA_BOOTSTRAP): the embedded broker keeps nothing once its command exits",
        file=sys.stderr,
    )
    return None


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    from streams import metrics
    from streams.offsets import parse_partition_offsets, parse_time_ms
    from streams.replay import ReplayError, ReplayPlan, replay_pipeline

    bootstrap = _cluster("replay", settings)
    if bootstrap is None:
        return 2
    if "pipeline_version" not in settings.model_fields_set:
        print(
            "swe-stream replay: say which pipeline version the replay writes: "
            "--pipeline-version N (a new one leaves the older versions' results as they are)",
            file=sys.stderr,
        )
        return 2
    try:
        plan = ReplayPlan(
            from_topic=args.from_topic,
            from_offsets=parse_partition_offsets(args.from_offset) if args.from_offset else None,
            from_time_ms=parse_time_ms(args.from_time) if args.from_time else None,
            until_time_ms=parse_time_ms(args.until_time) if args.until_time else None,
            stages=[s.strip() for s in (args.stages or "").split(",") if s.strip()],
            group=args.group,
            live=_live(args),
        )
        metrics.serve_metrics(settings.worker.metrics_port)
        summary = asyncio.run(replay_pipeline(settings, bootstrap, plan))
    except (ReplayError, ValueError) as exc:
        print(f"swe-stream replay: {exc}", file=sys.stderr)
        return 2
    except IdempotenceUnsupported as exc:
        print(f"swe-stream replay: {exc}", file=sys.stderr)
        return 1
    print("\n".join(summary.lines(plan, settings.pipeline_version, settings.export_dir)))
    return 0 if summary.stopped_because == "the replayed range is done" else 1


def cmd_offsets(args: argparse.Namespace, settings: Settings) -> int:
    from streams.offsets import (
        GroupActive,
        OffsetsError,
        offsets_at_time,
        parse_partition_offsets,
        parse_time_ms,
        positions,
        reset_offsets,
        topic_bounds,
    )

    bootstrap = _cluster("offsets", settings)
    if bootstrap is None:
        return 2

    async def act() -> list[Any]:
        if args.action == "show":
            return await positions(bootstrap, args.group, args.topic)
        bounds = await topic_bounds(bootstrap, args.topic)
        if args.to_earliest:
            target = {p: low for p, (low, _) in bounds.items()}
        elif args.to_latest:
            target = {p: high for p, (_, high) in bounds.items()}
        elif args.to_time:
            target, method = await offsets_at_time(
                bootstrap, args.topic, parse_time_ms(args.to_time)
            )
            print(f"offsets for {args.to_time} found by {method}", file=sys.stderr)
        else:
            target = parse_partition_offsets(args.to_offset)
        return await reset_offsets(bootstrap, args.group, args.topic, target)

    try:
        shown = asyncio.run(act())
    except GroupActive as exc:
        print(f"swe-stream offsets: refused: {exc}", file=sys.stderr)
        return 3
    except (OffsetsError, ValueError) as exc:
        print(f"swe-stream offsets: {exc}", file=sys.stderr)
        return 2
    print(f"group {args.group} on {args.topic}:")
    print("  partition     start       end committed       lag")
    for row in shown:
        committed = "-" if row.committed is None else str(row.committed)
        lag = "-" if row.lag is None else str(row.lag)
        print(f"  {row.partition:9} {row.start:9} {row.end:9} {committed:>9} {lag:>9}")
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from agents.export import dataset_to_task_dirs, read_dataset, task_dirs_to_dataset

    try:
        if args.input.is_dir():
            count = task_dirs_to_dataset(args.input, args.output)
            print(f"wrote {count} tasks to {args.output}")
        else:
            written = dataset_to_task_dirs(read_dataset(args.input), args.output)
            print(f"wrote {len(written)} task directories to {args.output}")
    except (ValueError, FileNotFoundError) as exc:
        print(f"swe-stream export: {exc}", file=sys.stderr)
        return 2
    return 0


COMMANDS = {
    "broker": cmd_broker,
    "topics": cmd_topics,
    "ingest": cmd_ingest,
    "config": cmd_config,
    "worker": cmd_worker,
    "schemas": cmd_schemas,
    "images": cmd_images,
    "ledger": cmd_ledger,
    "mine": cmd_mine,
    "run": cmd_run,
    "demo": cmd_demo,
    "validate": cmd_validate,
    "harness": cmd_harness,
    "dlq": cmd_dlq,
    "replay": cmd_replay,
    "offsets": cmd_offsets,
    "export": cmd_export,
}

if __name__ == "__main__":
    sys.exit(main())
