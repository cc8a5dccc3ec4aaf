"""Pipeline runs in this process: ``mine`` (one-shot mining), ``run`` (always-on mining) and
``replay`` (re-derive the stages after a topic under a pipeline version)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from agents.ingest import HourSelection
from streams.cli.options import Commands, Parents, cluster, hour_selection, live
from streams.core import metrics
from streams.core.errors import ExitCode
from streams.core.settings import Settings
from streams.kafka.client import IdempotenceUnsupported
from streams.kafka.local import kafka_for_command
from streams.kafka.offsets import parse_partition_offsets, parse_time_ms
from streams.runtime.replay import ReplayError, ReplayPlan, replay_pipeline
from streams.runtime.runner import RunPlan, run_pipeline

log = logging.getLogger("swe_stream.cli")


def register(commands: Commands, parents: Parents) -> None:
    common, kafka, hours = parents.common, parents.kafka, parents.hours
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
    mine.set_defaults(handler=cmd_mine)

    run = commands.add_parser(
        "run",
        parents=[common, kafka, hours],
        help="always-on mining: ingest --follow and every stage, until SIGTERM",
    )
    run.add_argument("-o", "--output", type=Path, help="task directories (export.output_dir)")
    run.set_defaults(handler=cmd_run)
    _register_replay(commands, parents)


def _register_replay(commands: Commands, parents: Parents) -> None:
    replay = commands.add_parser(
        "replay",
        parents=[parents.common, parents.named_kafka],
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
    replay.set_defaults(handler=cmd_replay)


def cmd_mine(args: argparse.Namespace, settings: Settings) -> int:
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
        live=live(args),
    )
    return _run_plan(settings, plan, output, "mine")


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    first, hours = getattr(args, "first", None), getattr(args, "hours", None)
    selection = HourSelection(
        first=first, last=args.last, hours=hours or (None if first else 1), follow=True
    )
    problem = selection.problem()
    if problem:
        print(f"swe-stream run: {problem}", file=sys.stderr)
        return 2
    plan = RunPlan(selection=selection, live=live(args))
    return _run_plan(settings, plan, settings.export_dir, "run")


def _run_plan(settings: Settings, plan: RunPlan, output: Path, command: str) -> int:
    metrics.serve_metrics(settings.worker.metrics_port)
    durable = command == "run"  # always-on: a local broker keeps its topics (streams.kafka.local)
    with kafka_for_command(settings.kafka, settings.worker.data_dir, durable) as (
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
    if summary.stopped_because.startswith(failed):
        return ExitCode.FAILURE
    partial = [h.hour for h in summary.hours if h.status == "partial"]
    if partial:  # what was read is mined; the rest of those hours is not
        print(
            f"swe-stream {command}: hours only partly read: {', '.join(partial)} — see "
            "gharchive.dlq (`swe-stream ingest --force` reads them again)",
            file=sys.stderr,
        )
        return ExitCode.PARTIAL
    return ExitCode.OK


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    bootstrap = cluster("replay", settings)
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
            live=live(args),
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
