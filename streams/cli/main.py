"""``swe-stream``: the command line. This module only builds the parser from the command
modules (each declares its options beside its handlers) and runs the chosen handler.

    cluster   broker, topics, offsets, config      ingest    ingest
    worker    worker                               pipeline  mine, run, replay
    records   ledger, dlq, export, schemas         evaluate  harness, validate, images
    recipes   recipes (the recipe memory)
    demo      demo

Every command that needs Kafka takes ``--bootstrap`` (or ``SWE_STREAM_KAFKA_BOOTSTRAP``);
without one, the commands that can (ingest, worker, mine, run, topics create) start the embedded
broker for as long as they run, and those that look at what a cluster holds refuse.

Exit codes: ``streams.core.errors.ExitCode`` (README "Exit codes").
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from pydantic import ValidationError

from streams.cli import cluster, demo, evaluate, ingest, pipeline, recipes, records, worker
from streams.cli.options import explain, make_parents, preflight, settings_from_args
from streams.core.errors import ExitCode
from streams.core.logs import configure_logging, error_line
from streams.core.settings import ConfigFileError

# in the order `swe-stream --help` lists them
COMMAND_MODULES = (cluster, ingest, worker, pipeline, records, recipes, evaluate, demo)
LOG_FORMAT_ENV = "SWE_STREAM_WORKER_LOG_FORMAT"  # read here only when the settings are invalid


def build_parser() -> argparse.ArgumentParser:
    parents = make_parents()
    parser = argparse.ArgumentParser(
        prog="swe-stream",
        description="Mine GitHub pull requests into SWE-bench-style tasks, as Kafka streams.",
        parents=[parents.common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(commands, parents)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command. A problem the user can fix ends as one line on stderr, ``swe-stream
    COMMAND: what is wrong — what to do``, and its ``ExitCode``; the traceback only with
    ``--verbose``. Problems knowable up front are found before any service starts."""
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except (ConfigFileError, ValidationError) as exc:
        log_format = getattr(args, "log_format", None) or os.environ.get(LOG_FORMAT_ENV, "")
        line = f"swe-stream: invalid settings: {exc}"  # JSON escapes its newlines
        print(error_line(line, log_format, ExitCode.USAGE), file=sys.stderr)
        return ExitCode.USAGE
    log_format = settings.worker.log_format
    configure_logging(settings.worker.log_level, log_format)
    try:
        preflight(args, settings)
        return int(args.handler(args, settings))
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except Exception as exc:
        error = explain(exc, args, settings)
        if error is None and log_format == "json":  # a bug: its traceback, as a JSON record
            logging.getLogger("swe_stream.cli").critical(
                "swe-stream %s failed", args.command, exc_info=True
            )
            return ExitCode.FAILURE
        if error is None:
            raise
        trace = traceback.format_exc() if getattr(args, "verbose", False) else None
        if trace and log_format != "json":
            print(trace, end="", file=sys.stderr)
        line = f"swe-stream {args.command}: {error}"
        print(error_line(line, log_format, error.code, trace), file=sys.stderr)
        return int(error.code)


if __name__ == "__main__":
    sys.exit(main())
