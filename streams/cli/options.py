"""What the command modules share: the parent parsers (global flags, ``--bootstrap``, the
hour selection), settings from flags, the stop-signal flag, and small helpers.

A command module declares its subparsers in ``register(commands, parents)`` beside its
handlers and binds each to its handler with ``set_defaults(handler=...)``; ``main`` only
collects the modules.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.ingest import HourSelection
from streams.core.errors import (
    ClusterUnreachable,
    DependencyError,
    ExitCode,
    PortInUse,
    UsageError,
    UserError,
)
from streams.core.settings import Settings, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]
Commands = Any  # argparse's _SubParsersAction, which it does not export


@dataclass(frozen=True)
class Parents:
    """Parent parsers whose options several commands take."""

    common: argparse.ArgumentParser  # --config, --log-level, --log-format, --verbose, --quiet, ...
    kafka: argparse.ArgumentParser  # --bootstrap (default: the embedded broker)
    hours: argparse.ArgumentParser  # mine and run: which GH Archive hours
    # --bootstrap, required: commands that look at what a cluster already holds
    named_kafka: argparse.ArgumentParser


def make_parents() -> Parents:
    return Parents(_common(), _kafka(), _hours(), _named_kafka())


def _common() -> argparse.ArgumentParser:
    # SUPPRESS: global flags may stand before or after the command; a subparser's default
    # must not overwrite a value given before it.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--config", type=Path, help="YAML settings file (or SWE_STREAM_CONFIG)")
    common.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    common.add_argument(
        "--verbose",
        action="store_true",
        help="log level debug, and a traceback with any error (else one line)",
    )
    common.add_argument("--quiet", action="store_true", help="log level warning")
    common.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="log records on stderr as text lines (default) or one JSON object per line "
        "(worker.log_format)",
    )
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


def _named_kafka() -> argparse.ArgumentParser:
    kafka = argparse.ArgumentParser(add_help=False)
    kafka.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="Kafka cluster (or SWE_STREAM_KAFKA_BOOTSTRAP); required: an embedded broker "
        "started for this command would hold nothing",
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
            "log_level": _log_level(args),
            "log_format": getattr(args, "log_format", None),
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


def _log_level(args: argparse.Namespace) -> str | None:
    if getattr(args, "verbose", False):
        return "debug"
    if getattr(args, "quiet", False):
        return "warning"
    return getattr(args, "log_level", None)


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


def cluster(command: str, settings: Settings) -> str:
    """The named Kafka cluster; a ``UsageError`` (exit code 2) when there is none."""
    if settings.kafka.bootstrap:
        return settings.kafka.bootstrap
    raise UsageError(
        f"{command} needs a Kafka cluster, and none is named",
        "name it with --bootstrap HOST:PORT (or SWE_STREAM_KAFKA_BOOTSTRAP): an embedded broker "
        "started for this command would hold nothing",
    )


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


# ---- before a command starts: the problems knowable up front, as one line each ----

# commands that start the embedded broker when no cluster is named (`topics`: create only;
# list and describe of a fresh broker would say nothing of any cluster)
EMBEDDED_COMMANDS = frozenset({"topics", "ingest", "worker", "mine", "run"})
# commands that serve /metrics on worker.metrics_port
METRICS_COMMANDS = frozenset({"mine", "run", "worker", "replay"})
CLUSTER_FIX = "check --bootstrap / SWE_STREAM_KAFKA_BOOTSTRAP"
CONNECT_SECONDS = 3.0


def preflight(args: argparse.Namespace, settings: Settings) -> None:
    """Raise a ``UserError`` for a problem the command would hit later, before it starts any
    service: a malformed hour or --source (2), a taken /metrics port (4), a named Kafka
    cluster that nothing answers at (3)."""
    _check_hours(args, settings)
    if args.command in METRICS_COMMANDS:
        check_port_free(settings.worker.metrics_port)
    elif args.command in {"harness", "ingest"}:  # they serve /metrics only when asked
        check_port_free(getattr(args, "metrics_port", None) or 0)
    ledger_file = args.command == "ledger" and getattr(args, "file", None)  # no Kafka then
    if hasattr(args, "bootstrap") and settings.kafka.bootstrap and not ledger_file:
        check_cluster(settings.kafka.bootstrap, embedded_possible(args))


def embedded_possible(args: argparse.Namespace) -> bool:
    """Whether the command runs on the embedded broker when no cluster is named."""
    if args.command == "topics":
        return getattr(args, "action", None) == "create"
    return args.command in EMBEDDED_COMMANDS


def _check_hours(args: argparse.Namespace, settings: Settings) -> None:
    from agents.ingest import hour_of
    from streams.clients.gharchive import parse_hour, resolve_sources

    for attribute, flag in (("first", "--from"), ("last", "--to")):
        value = getattr(args, attribute, None)
        if value is None:
            continue
        try:
            parse_hour(value)
        except ValueError as exc:
            raise UsageError(f"{flag}: {exc}", f"give an hour like {flag} 2025-01-01T05") from exc
    sources = getattr(args, "source", None)
    # the command reports a selection that makes no sense itself (--to without --from, ...)
    if sources and args.command in ("ingest", "mine") and not hour_selection(args).problem():
        try:
            for source in resolve_sources(list(sources), settings.gharchive.base_url):
                hour_of(source)
        except (ValueError, FileNotFoundError) as exc:
            raise UsageError(
                f"--source: {exc}", "name an existing GH Archive hour file, glob or URL"
            ) from exc


def check_port_free(port: int, host: str = "0.0.0.0") -> None:
    """``PortInUse`` when ``port`` (0 = off) cannot be bound as the /metrics server binds it."""
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortInUse(
                f"the metrics port {port} is already in use ({exc.strerror or exc})",
                "stop what holds it, or choose another with --metrics-port P "
                "(SWE_STREAM_WORKER_METRICS_PORT; 0 = no /metrics)",
            ) from exc


def check_cluster(bootstrap: str, embedded_possible: bool) -> None:
    """``ClusterUnreachable`` unless one address of ``bootstrap`` accepts a TCP connection
    within a few seconds (a plain connect: it says nothing of Kafka's protocol versions)."""
    reason: str = "no address given"
    error: OSError | None = None
    for address in (a.strip() for a in bootstrap.split(",") if a.strip()):
        host, port = _host_port(address)
        try:
            with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
                return
        except TimeoutError as exc:
            reason, error = f"no answer in {CONNECT_SECONDS:.0f} s", exc
        except OSError as exc:
            reason, error = str(exc.strerror or exc).lower(), exc
    raise ClusterUnreachable(
        f"cannot reach the Kafka cluster at {bootstrap}: {reason}", cluster_fix(embedded_possible)
    ) from error


def cluster_fix(embedded_possible: bool) -> str:
    if embedded_possible:
        return CLUSTER_FIX + ", or leave it out to start the embedded broker"
    return CLUSTER_FIX


def _host_port(address: str) -> tuple[str, int]:
    address = address.split("://", 1)[-1]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():  # no port (or an IPv6 address alone): Kafka's default
        return address.strip("[]"), 9092
    return host.strip("[]"), int(port)


def explain(exc: BaseException, args: argparse.Namespace, settings: Settings) -> UserError | None:
    """The one line (and exit code) for an exception a command ended with, or None for one
    that is a bug (its traceback is the report)."""
    from aiokafka.errors import KafkaConnectionError, NoBrokersAvailable

    from streams.kafka.apache_install import KafkaInstallError
    from streams.kafka.broker import BrokerError
    from streams.kafka.local import LocalBrokerUnavailable

    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, DependencyError):
        return UserError(one_line(str(exc)), _dependency_fix(exc), ExitCode.DEPENDENCY_FAILED)
    if isinstance(exc, KafkaConnectionError | NoBrokersAvailable):
        where = settings.kafka.bootstrap or "the embedded broker"
        return ClusterUnreachable(
            f"cannot reach the Kafka cluster at {where}: {one_line(str(exc))}",
            cluster_fix(embedded_possible(args)),
        )
    if isinstance(exc, BrokerError):  # a broker it started did not start: keep its log tail
        return UserError(str(exc), code=ExitCode.FAILURE)
    if isinstance(exc, KafkaInstallError | LocalBrokerUnavailable):
        return UserError(
            str(exc), "or run on the embedded broker: kafka.local_broker=embedded", ExitCode.FAILURE
        )
    return None


def _dependency_fix(exc: DependencyError) -> str:
    from streams.clients.git import GitError
    from streams.clients.github import GitHubError
    from streams.clients.llm import LLMError

    if isinstance(exc, GitError):
        return (
            "check that the repository exists and can be cloned from here "
            "(github.git_url_template / SWE_STREAM_GITHUB_GIT_URL_TEMPLATE, network access)"
        )
    if isinstance(exc, GitHubError):
        return "check GITHUB_TOKEN (github.token), the rate limit and network access"
    if isinstance(exc, LLMError):
        return "check OPENROUTER_API_KEY (llm.api_key), llm.model and network access"
    return "check the service it names and try again"


def one_line(text: str, limit: int = 600) -> str:
    """``text`` with its lines joined, at most ``limit`` characters."""
    joined = " ".join(line.strip() for line in text.splitlines() if line.strip())
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."
