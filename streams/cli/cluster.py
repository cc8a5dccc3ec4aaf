"""Cluster commands: ``broker`` (the embedded broker until Ctrl-C), ``topics`` (create, list,
describe the catalog's topics), ``offsets`` (a consumer group's offsets: show, reset) and
``config show``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import yaml

from streams.cli.options import Commands, Parents, StopSignals, cluster
from streams.core.errors import UsageError
from streams.core.settings import Settings
from streams.kafka.apache import KafkaCluster
from streams.kafka.broker import EmbeddedBroker, kafka_bootstrap
from streams.kafka.client import TopicAdmin, format_configs
from streams.kafka.offsets import (
    GroupActive,
    OffsetsError,
    offsets_at_time,
    parse_partition_offsets,
    parse_time_ms,
    positions,
    reset_offsets,
    topic_bounds,
)
from streams.kafka.topics import ALL_TOPICS

log = logging.getLogger("swe_stream.cli")


def register(commands: Commands, parents: Parents) -> None:
    common, kafka = parents.common, parents.kafka
    broker = commands.add_parser(
        "broker",
        parents=[common],
        help="run a local broker until Ctrl-C: the embedded one (Tansu), or Apache Kafka",
    )
    broker.add_argument(
        "--port", type=int, default=None, help="listen port of the embedded broker (default: free)"
    )
    broker.add_argument(
        "--apache", action="store_true", help="Apache Kafka (KRaft) instead of the embedded broker"
    )
    broker.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="Apache Kafka nodes")
    broker.add_argument(
        "--data-dir", type=Path, help="Apache Kafka's storage, kept across restarts (default: a "
        "temporary directory removed at exit)",
    )  # fmt: skip
    broker.add_argument("--kafka-version", help="Apache Kafka's version (kafka.apache_version)")
    broker.set_defaults(handler=cmd_broker)

    topics = commands.add_parser("topics", parents=[common], help="create / list / describe topics")
    topic_actions = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("create", "create every catalog topic that is missing (idempotent)"),
        ("list", "list the catalog's topics and whether the cluster (--bootstrap) has them"),
        ("describe", "partitions, key, value model and configs of each topic on the cluster"),
    ):
        to_cluster = kafka if name == "create" else parents.named_kafka
        action = topic_actions.add_parser(name, parents=[common, to_cluster], help=text)
        action.add_argument("--partitions", type=int, help="PR-level partition count")
        action.add_argument("names", nargs="*", help="only these topics (default: all)")
    topics.set_defaults(handler=cmd_topics)

    offsets = commands.add_parser(
        "offsets", parents=[common], help="a consumer group's offsets: show, reset"
    )
    offsets_actions = offsets.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("show", "start, end, committed offset and lag per partition"),
        ("reset", "move the group (refused while it has live members)"),
    ):
        action = offsets_actions.add_parser(name, parents=[common, parents.named_kafka], help=text)
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
    offsets.set_defaults(handler=cmd_offsets)

    config = commands.add_parser("config", parents=[common], help="show the effective settings")
    config.add_subparsers(dest="action", required=True, metavar="ACTION").add_parser(
        "show", parents=[common], help="print the effective settings, secrets masked"
    )
    config.set_defaults(handler=cmd_config)


def cmd_broker(args: argparse.Namespace, settings: Settings) -> int:
    if args.apache:
        return _serve_apache(args, settings)
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


def _serve_apache(args: argparse.Namespace, settings: Settings) -> int:
    cluster = KafkaCluster(
        nodes=args.nodes,
        version=args.kafka_version or settings.kafka.apache_version,
        data_dir=args.data_dir,
        quick=False,
    )
    with StopSignals() as stop:
        try:
            cluster.start()
            print(f"bootstrap: {cluster.bootstrap}", flush=True)
            print(f"broker pids: {' '.join(str(p) for p in cluster.pids)}", flush=True)
            kept = f"storage in {cluster.data_dir}" + (
                "" if args.data_dir else " (removed at exit)"
            )
            print(f"Apache Kafka {cluster.version}: {kept}, Ctrl-C to stop", file=sys.stderr)
            while not stop.wait(0.5):
                if not all(member.running for member in cluster.members):
                    print("swe-stream: a Kafka node exited unexpectedly", file=sys.stderr)
                    return 1
            log.info("signal %s: stopping Apache Kafka", stop.received)
            return 0
        finally:
            cluster.stop()


def cmd_topics(args: argparse.Namespace, settings: Settings) -> int:
    specs = [t for t in ALL_TOPICS if not args.names or t.name in args.names]
    unknown = set(args.names) - {t.name for t in specs}
    if unknown:
        raise UsageError(
            f"unknown topics: {', '.join(sorted(unknown))}",
            'give names of the topic catalog (README, "Topics"), or none for all',
        )
    if args.action != "create" and not settings.kafka.bootstrap:
        raise UsageError(
            f"{args.action} looks at a Kafka cluster, and none is named",
            "name it with --bootstrap HOST:PORT (or SWE_STREAM_KAFKA_BOOTSTRAP): a fresh "
            "embedded broker would report every topic missing",
        )
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
            for model in spec.also_holds:
                print(f"  also holds: schemas.{model.__name__}")
            print(f"  partitions: {state.wanted_partitions} (cluster: {have})")
            print(
                f"  configs:    {format_configs(state.wanted_configs)} (cluster: "
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


def cmd_offsets(args: argparse.Namespace, settings: Settings) -> int:
    bootstrap = cluster("offsets", settings)

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


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    print(yaml.safe_dump(settings.masked(), sort_keys=False), end="")
    return 0
