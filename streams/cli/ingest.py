"""``swe-stream ingest``: publish GH Archive hours' PullRequestEvents to
``gharchive.pull-request-events`` (once, or ``--follow`` forever)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from agents.ingest import HourReport, HourSelection, ingest_hours
from streams.cli.options import Commands, Parents, add_hour_range, hour_selection
from streams.core import metrics
from streams.core.errors import ExitCode
from streams.core.settings import Settings
from streams.kafka.broker import kafka_bootstrap
from streams.kafka.client import TopicAdmin, detect_profile
from streams.kafka.topics import ALL_TOPICS

log = logging.getLogger("swe_stream.cli")


def register(commands: Commands, parents: Parents) -> None:
    ingest = commands.add_parser(
        "ingest",
        parents=[parents.common, parents.kafka],
        help="publish GH Archive PullRequestEvents to gharchive.pull-request-events",
    )
    add_hour_range(ingest)
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
    ingest.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus /metrics on this port (off unless given: a worker on the same "
        "host serves worker.metrics_port)",
    )
    ingest.set_defaults(handler=cmd_ingest)


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    selection = hour_selection(args)
    problem = selection.problem()
    if problem:
        print(f"swe-stream ingest: {problem}", file=sys.stderr)
        return 2
    if getattr(args, "metrics_port", None):  # the hours, events and errors, for Prometheus
        metrics.serve_metrics(args.metrics_port)
    # SIGTERM (docker stop, a service manager) stops a --follow run where it is, as Ctrl-C
    # does, but as the way such a run ends: exit 0. In-flight hours stay un-"done" and are
    # ingested again by the next run.
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with kafka_bootstrap(settings.kafka.bootstrap, settings.kafka.embedded_port) as (
            bootstrap,
            embedded,
        ):
            if embedded:
                log.warning(
                    "embedded broker on %s: what is published is gone when ingest exits",
                    bootstrap,
                )
            try:
                return asyncio.run(_ingest(selection, args.force, settings, bootstrap, embedded))
            except (ValueError, FileNotFoundError) as exc:
                print(f"swe-stream ingest: {exc}", file=sys.stderr)
                return 2
    except Terminated:
        log.info("SIGTERM: stopped; hours not done yet are ingested again next time")
        return ExitCode.OK


class Terminated(KeyboardInterrupt):
    """SIGTERM: unwinds like Ctrl-C (asyncio cancels the tasks, the producer and an embedded
    broker are stopped), then ends the command with exit code 0 instead of 130."""


def _raise_terminated(*_: object) -> None:
    raise Terminated


async def _ingest(
    selection: HourSelection, force: bool, settings: Settings, bootstrap: str, embedded: bool
) -> int:
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
    if any(r.status == "failed" for r in reports):
        return ExitCode.FAILURE
    partial = [r for r in reports if r.status == "partial"]
    if partial:
        hours = ", ".join(f"{r.hour} ({r.error})" if r.error else r.hour for r in partial)
        print(
            f"swe-stream ingest: {len(partial)} hour(s) ended partial, read only in part: {hours}"
            " — the file is cut short or corrupt: fetch it again and re-run the ingest "
            "(an hour not done is ingested again)",
            file=sys.stderr,
        )
        return ExitCode.PARTIAL
    return ExitCode.OK


def ingest_summary(reports: list[HourReport]) -> str:
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
