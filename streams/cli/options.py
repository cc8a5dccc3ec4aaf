"""What the command modules share: the parent parsers (global flags, ``--bootstrap``, the
hour selection), settings from flags, the stop-signal flag, and small helpers.

A command module declares its subparsers in ``register(commands, parents)`` beside its
handlers and binds each to its handler with ``set_defaults(handler=...)``; ``main`` only
collects the modules.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.ingest import HourSelection
from streams.core.settings import Settings, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]
Commands = Any  # argparse's _SubParsersAction, which it does not export


@dataclass(frozen=True)
class Parents:
    """Parent parsers whose options several commands take."""

    common: argparse.ArgumentParser  # --config, --log-level, --pipeline-version
    kafka: argparse.ArgumentParser  # --bootstrap
    hours: argparse.ArgumentParser  # mine and run: which GH Archive hours


def make_parents() -> Parents:
    return Parents(_common(), _kafka(), _hours())


def _common() -> argparse.ArgumentParser:
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
    return common


def _kafka() -> argparse.ArgumentParser:
    kafka = argparse.ArgumentParser(add_help=False)
    kafka.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="Kafka cluster (or SWE_STREAM_KAFKA_BOOTSTRAP); default: start the embedded broker",
    )
    return kafka


def _hours() -> argparse.ArgumentParser:
    hours = argparse.ArgumentParser(add_help=False)
    add_hour_range(hours)
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
    return hours


def add_hour_range(parser: argparse.ArgumentParser) -> None:
    """--from / --to / --hours: the GH Archive hours a command reads."""
    parser.add_argument("--from", dest="first", metavar="HOUR", help="first hour: 2025-01-01T00")
    parser.add_argument("--to", dest="last", metavar="HOUR", help="last hour, inclusive")
    parser.add_argument("--hours", type=int, metavar="N", help="the last N published hours")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings file (``--config``) and environment, overridden by the flags given."""
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


def hour_selection(args: argparse.Namespace) -> HourSelection:
    return HourSelection(
        sources=tuple(getattr(args, "source", None) or ()),
        first=getattr(args, "first", None),
        last=getattr(args, "last", None),
        hours=getattr(args, "hours", None),
        follow=bool(getattr(args, "follow", False)),
    )


def interactive() -> bool:
    return sys.stderr.isatty()


def live(args: argparse.Namespace) -> bool:
    """Whether a run draws its live table: on a terminal, unless --no-live."""
    return interactive() and not getattr(args, "no_live", False)


def cluster(command: str, settings: Settings) -> str | None:
    """The named Kafka cluster, or None after saying why a command needs one."""
    if settings.kafka.bootstrap:
        return settings.kafka.bootstrap
    print(
        f"swe-stream {command}: name the cluster with --bootstrap HOST:PORT (or "
        "SWE_STREAM_KAFKA_BOOTSTRAP): the embedded broker keeps nothing once its command exits",
        file=sys.stderr,
    )
    return None


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
