"""Evaluation commands: ``harness`` (a coding agent on exported tasks, in Docker),
``validate`` (exported tasks re-validated: the gold patch resolves, an empty patch does not)
and ``images base`` (the offline base image)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from schemas.harness import HarnessReport, TaskEvaluation
from streams.cli.options import Commands, Parents
from streams.core import metrics
from streams.core.settings import Settings
from streams.evaluation.harness import RUN_LABEL, HarnessEngine, HarnessOptions, evaluate_all
from streams.evaluation.images import PYTHON_SUITES, build_base_images, resolve_targets
from streams.evaluation.sandbox import Limits, remove_labelled
from streams.evaluation.taskdir import find_task_dirs
from streams.evaluation.validator import docker_from_env, validate_task_dirs
from streams.runtime.topology import make_validator

log = logging.getLogger("swe_stream.cli")


def register(commands: Commands, parents: Parents) -> None:
    common = parents.common
    _register_harness(commands, common)
    validate = commands.add_parser(
        "validate", parents=[common], help="re-validate exported tasks: gold resolves, empty not"
    )
    validate.add_argument("-i", "--input", type=Path, required=True, help="task directory or dirs")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.set_defaults(handler=cmd_validate)

    images = commands.add_parser("images", parents=[common], help="Docker images for validation")
    images_actions = images.add_subparsers(dest="action", required=True, metavar="ACTION")
    base = images_actions.add_parser(
        "base", parents=[common], help="build the base image offline (debootstrap + import)"
    )
    base.add_argument(
        "--tag", help="image tag (default: docker.base_image; with --python, its default tag)"
    )
    base.add_argument("--suite", help="Debian suite (default bookworm)")
    base.add_argument(
        "--python",
        choices=list(PYTHON_SUITES),
        help="build the suite of this Python (3.9 bullseye, 3.11 bookworm, 3.13 trixie, "
        "3.14 forky) as swe-stream/base:<suite>",
    )
    base.add_argument(
        "--all",
        dest="all_pythons",
        action="store_true",
        help="build every Python's image (swe-stream/base:<suite>), keeping existing tags",
    )
    base.add_argument(
        "--keyring", type=Path, help="keyring for Release signatures (default: the host's)"
    )
    base.add_argument("--ca-bundle", type=Path, help="extra CA bundle to trust (TLS proxies)")
    base.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    base.add_argument(
        "--debootstrap",
        action="store_true",
        help="build from Debian packages, offline (the only builder; where a registry is "
        "reachable, docker.base_image=python:3.12-slim needs no build at all)",
    )
    images.set_defaults(handler=cmd_images)


def _register_harness(commands: Commands, common: argparse.ArgumentParser) -> None:
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
        "--test-timeout",
        type=float,
        default=120.0,
        help="seconds per check (120); a run of a task's test files gets this per check it grades",
    )
    harness.add_argument(
        "--isolate-tests",
        action="store_true",
        help="run every check command alone (one test process per test id, slow) instead of "
        "grading them all from one run of the task's test files",
    )
    harness.add_argument(
        "--docker-image", help="base image of the environments (docker.base_image)"
    )
    harness.add_argument(
        "-j",
        "--workers",
        "--parallel",
        dest="parallel",
        type=int,
        default=1,
        help="tasks evaluated at once (1)",
    )
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
    harness.set_defaults(handler=cmd_harness)


def cmd_harness(args: argparse.Namespace, settings: Settings) -> int:
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
        isolate_tests=args.isolate_tests,
    )

    metrics.serve_metrics(args.metrics_port)
    engine = HarnessEngine(make_validator(settings), options, Limits.from_settings(settings.docker))
    progress = HarnessProgress(len(tasks), enabled=sys.stderr.isatty() and not args.json)
    try:
        report = asyncio.run(evaluate_all(engine, tasks, args.parallel, progress.advance))
    except KeyboardInterrupt:
        removed = remove_labelled(docker_from_env(), RUN_LABEL, options.run_id)
        print(
            f"swe-stream harness: interrupted; removed {removed} agent container(s)",
            file=sys.stderr,
        )
        return 130
    finally:
        progress.close()
    _write_report(report, args.output, args.json)
    return 0


def _write_report(report: HarnessReport, output: Path, as_json: bool) -> None:
    """summary.json in ``output``, and the report printed (JSON, or a line per task)."""
    output.mkdir(parents=True, exist_ok=True)
    (output / "summary.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    if as_json:
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
            f"{report.avg_agent_time_secs} s; details in {output}"
        )


class HarnessProgress:
    """A rich bar of evaluations done, with the statuses so far."""

    def __init__(self, total: int, enabled: bool):
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

    def advance(self, result: TaskEvaluation) -> None:
        self.statuses[result.status] += 1
        if self._bar is not None:
            text = " ".join(f"{s}={n}" for s, n in sorted(self.statuses.items()))
            self._bar.update(self._task, advance=1, description=text)
        else:
            log.info("harness: %s %s", result.task_id, result.status)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def cmd_validate(args: argparse.Namespace, settings: Settings) -> int:
    reports = validate_task_dirs(args.input, make_validator(settings))
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


def cmd_images(args: argparse.Namespace, settings: Settings) -> int:
    try:
        targets = resolve_targets(
            tag=args.tag,
            suite=args.suite,
            python=args.python,
            all_pythons=args.all_pythons,
            default_tag=settings.docker.base_image,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for result in build_base_images(
        targets, ca_bundle=args.ca_bundle, keyring=args.keyring, force=args.force
    ):
        print(result, flush=True)
    return 0
