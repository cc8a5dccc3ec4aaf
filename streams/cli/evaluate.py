"""Evaluation commands: ``harness`` (a coding agent on exported tasks, in Docker),
``validate`` (exported tasks re-validated: the gold patch resolves, an empty patch does not),
``images base`` (the offline base image), ``images instances`` (the env and instance
images of exported tasks, built ahead of the harness) and ``images push`` (those images in a
registry, named in the tasks' rows)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import TextIO

from agents.harness import ALL_NETWORK_WARNING
from schemas.harness import HarnessReport
from streams.cli.options import Commands, Parents, live
from streams.core import metrics
from streams.core.errors import ExitCode
from streams.core.settings import Settings
from streams.evaluation.egress import model_endpoints
from streams.evaluation.harness import (
    RUN_LABEL,
    HarnessEngine,
    HarnessOptions,
    evaluate_all,
    evaluate_predictions,
)
from streams.evaluation.images import (
    PYTHON_SUITES,
    build_base_images,
    list_images,
    resolve_targets,
)
from streams.evaluation.images import main_toolchains as images_main_toolchains
from streams.evaluation.prebuild import (
    KEPT_LEVEL,
    prepare_images,
    read_task_sources,
    summary_line,
)
from streams.evaluation.predictions import (
    Prediction,
    PredictionsError,
    default_run_id,
    load_predictions,
    summary_name,
)
from streams.evaluation.publish import publish_tasks
from streams.evaluation.publish import summary_line as push_summary
from streams.evaluation.recipes.languages import configured_images
from streams.evaluation.registry import RegistryError
from streams.evaluation.sandbox import Limits, remove_labelled
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace
from streams.evaluation.validator import docker_from_env, validate_task_dirs
from streams.runtime.live import LiveView
from streams.runtime.topology import make_validator

log = logging.getLogger("swe_stream.cli")


def add_parallel(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-j/--workers/--parallel N``, as SWE-bench's harness spells it."""
    parser.add_argument(
        "-j", "--workers", "--parallel", dest="parallel", type=int, default=1, help=help_text
    )


def register(commands: Commands, parents: Parents) -> None:
    common = parents.common
    _register_harness(commands, common)
    validate = commands.add_parser(
        "validate", parents=[common], help="re-validate exported tasks: gold resolves, empty not"
    )
    validate.add_argument("-i", "--input", type=Path, required=True, help="task directory or dirs")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.add_argument("--no-live", action="store_true", help="log lines, no live view")
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
        "--toolchains",
        "--node",
        dest="toolchains",
        action="store_true",
        help="build every language's toolchain images on their suites' base images (Node.js: "
        "swe-stream/node:<suite>: bookworm 18, trixie 20, forky 24), keeping existing tags",
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
    base.set_defaults(handler=cmd_images)
    listing = images_actions.add_parser(
        "list",
        parents=[common],
        help="the images validation picks from (per Python, per Node major, per go, ...), "
        "present or missing",
    )
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(handler=cmd_images_list)
    _register_instances(images_actions, common)
    _register_push(images_actions, common)


def _register_instances(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    instances = actions.add_parser(
        "instances",
        parents=[common],
        help="build the env and instance images of exported tasks ahead of the harness",
    )
    instances.add_argument(
        "-i",
        "--input",
        type=Path,
        required=True,
        help="a task directory, a directory of them, or a SWE-bench dataset file (JSONL)",
    )
    add_parallel(instances, "tasks built at once (1)")
    instances.add_argument(
        "--force",
        action="store_true",
        help="remove the tasks' instance images and the env images they stand on, and build "
        "them again",
    )
    instances.add_argument(
        "--docker-image", help="base image of the environments (docker.base_image)"
    )
    instances.add_argument("--json", action="store_true", help="print the report as JSON")
    instances.set_defaults(handler=cmd_images_instances)


def _register_push(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    push = actions.add_parser(
        "push",
        parents=[common],
        help="push exported tasks' instance images to a registry and name them in their rows",
        description="Builds (or reuses) each task's images as the harness would, pushes its "
        "instance image as REGISTRY/owner__repo:pr-N and writes that name into the task's "
        "workspace.yaml and its dataset.jsonl line (image_name, docker_image). Credentials "
        "are Docker's own (docker login).",
    )
    push.add_argument(
        "--registry", required=True, help="HOST[:PORT][/NAMESPACE], e.g. 127.0.0.1:5000/swe"
    )
    push.add_argument(
        "-i",
        "--input",
        type=Path,
        help="a task directory or a directory of them (default: export.output_dir)",
    )
    push.add_argument("--json", action="store_true", help="print the report as JSON")
    push.set_defaults(handler=cmd_images_push)


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
        help="the agent's directory, mounted read-only at /agent (required unless --predictions)",
    )
    harness.add_argument(
        "--agent-cmd", help=f"run in /testbed (default: {HarnessOptions.agent_command})"
    )
    harness.add_argument(
        "--agent-name",
        help="the agent's name in SWE-bench's reports (default: its directory's name)",
    )
    harness.add_argument(
        "--predictions",
        type=Path,
        metavar="PATH",
        help="grade SWE-bench predictions instead of running an agent: JSONL (instance_id, "
        "model_name_or_path, model_patch a line), or .json (a list, or a dict by instance_id)",
    )
    harness.add_argument(
        "--run-id",
        help="SWE-bench's run id: OUTPUT/logs/run_evaluation/RUN_ID/ and the summary "
        "OUTPUT/<model>.RUN_ID.json (default: a UTC timestamp)",
    )
    harness.add_argument(
        "--cache-level",
        choices=["none", "base", "env", "instance"],
        help="image layers kept after a task (docker.cache_level)",
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
    add_parallel(harness, "tasks evaluated at once (1)")
    harness.add_argument(
        "--keep-containers",
        action="store_true",
        help="stop the agents' containers instead of removing them",
    )
    harness.add_argument(
        "--agent-network",
        nargs="?",
        const="all",
        choices=("none", "model", "registries", "all"),
        help="what the agent's container reaches: none; model (only the model's API: "
        "--agent-model-host, else llm.base_url's host); registries (the package registries); "
        "all (the whole network; the bare flag: the agent can fetch the upstream fix). "
        "Default: harness.agent_network (none)",
    )
    harness.add_argument(
        "--agent-model-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a model API the agent reaches under --agent-network model (repeatable; port 443 "
        "unless given); default: harness.agent_model_hosts, else llm.base_url's host",
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
        help="report.json, model.patch and logs per task, SWE-bench's logs/run_evaluation/ "
        "and summary report",
    )
    harness.add_argument("--json", action="store_true", help="print the report as JSON")
    harness.add_argument("--no-live", action="store_true", help="log lines, no live view")
    harness.add_argument(
        "--metrics-port", type=int, default=0, help="serve /metrics on this port (0 = off)"
    )
    harness.set_defaults(handler=cmd_harness)


def cmd_harness(args: argparse.Namespace, settings: Settings) -> int:
    problem = _harness_arguments_problem(args)
    if problem:
        print(f"swe-stream harness: {problem}", file=sys.stderr)
        return 2
    predictions: list[Prediction] = []
    if args.predictions is not None:
        try:  # read (and refused) before anything runs
            predictions = load_predictions(args.predictions)
        except PredictionsError as exc:
            print(f"swe-stream harness: {exc}", file=sys.stderr)
            return 2
    try:
        tasks = find_task_dirs(args.input)
        by_id = _tasks_by_instance_id(tasks) if predictions else {}
    except (FileNotFoundError, ValueError) as exc:
        print(f"swe-stream harness: {exc}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"swe-stream harness: no task directories in {args.input}", file=sys.stderr)
        return 2
    network = args.agent_network or settings.harness.agent_network
    try:
        named = args.agent_model_host or settings.harness.agent_model_hosts
        endpoints = model_endpoints(named, settings.llm.base_url) if network == "model" else ()
    except ValueError as exc:
        print(f"swe-stream harness: --agent-model-host: {exc}", file=sys.stderr)
        return 2
    if network == "all" and not predictions:
        print(f"swe-stream {ALL_NETWORK_WARNING}", file=sys.stderr)
    options = HarnessOptions(
        agent_command=args.agent_cmd or HarnessOptions.agent_command,
        agent_dir=args.agent_dir,
        agent_timeout_seconds=args.agent_timeout,
        test_timeout_seconds=args.test_timeout,
        agent_network=network,
        model_endpoints=endpoints,
        registries=(
            None
            if settings.setup_agent.registries is None
            else tuple(settings.setup_agent.registries)
        ),
        agent_env={name: os.environ[name] for name in args.agent_env},
        keep_containers=args.keep_containers,
        output_dir=args.output,
        isolate_tests=args.isolate_tests,
        evaluation_run_id=args.run_id or default_run_id(),
        model_name=args.agent_name,
    )

    metrics.serve_metrics(args.metrics_port)
    engine = HarnessEngine(make_validator(settings), options, Limits.from_settings(settings.docker))
    # images being built, tasks done / total and the ETA: drawn on a terminal, else log lines
    view = LiveView(live(args) and not args.json, "swe-stream harness").start()
    if predictions:
        run = evaluate_predictions(engine, by_id, predictions, args.parallel)
    else:
        run = evaluate_all(engine, tasks, args.parallel)
    try:
        report = asyncio.run(run)
    except KeyboardInterrupt:
        removed = remove_labelled(docker_from_env(), RUN_LABEL, options.run_id)
        print(
            f"swe-stream harness: interrupted; removed {removed} agent container(s)",
            file=sys.stderr,
        )
        return 130
    finally:
        view.stop()
    _write_report(report, args.output, args.json)
    model = predictions[0].model_name_or_path if predictions else options.model
    summary = args.output / summary_name(model, options.evaluation_run_id)
    _print_summary(summary, to=sys.stderr if args.json else sys.stdout)
    return 0


RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def _harness_arguments_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``swe-stream harness``'s arguments (None: nothing)."""
    if args.predictions is not None:
        agent = [f for f in ("agent_dir", "agent_cmd", "agent_name") if getattr(args, f)]
        if agent:
            named = ", ".join("--" + f.replace("_", "-") for f in agent)
            return f"--predictions grades patches, no agent runs: drop {named}"
    elif args.agent_dir is None:
        return "--agent-dir (an agent to run) or --predictions (patches to grade) is required"
    if args.run_id is not None and not RUN_ID.match(args.run_id):
        return f"--run-id {args.run_id!r} is not a safe name ([A-Za-z0-9._-], 200 at most)"
    missing = [name for name in args.agent_env if name not in os.environ]
    if missing:
        return f"--agent-env names unset variables: {missing}"
    if args.agent_dir is not None and not args.agent_dir.is_dir():
        return f"--agent-dir {args.agent_dir} is not a directory"
    return None


def _tasks_by_instance_id(task_dirs: list[Path]) -> dict[str, Path]:
    """Each task directory by its workspace's instance id (an unreadable one is skipped with a
    warning: no prediction can name it); two of one id raise ValueError."""
    by_id: dict[str, Path] = {}
    for task_dir in task_dirs:
        try:
            instance_id = load_workspace(task_dir / WORKSPACE).instance_id
        except (OSError, ValueError) as exc:
            log.warning("harness: %s is unreadable, no prediction can name it: %s", task_dir, exc)
            continue
        if instance_id in by_id:
            raise ValueError(f"{task_dir}: instance_id {instance_id} is also {by_id[instance_id]}")
        by_id[instance_id] = task_dir
    return by_id


def _print_summary(path: Path, to: TextIO) -> None:
    """SWE-bench's summary report's counts, as its run_evaluation prints them."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"swe-stream harness: no summary report {path}: {exc}", file=sys.stderr)
        return
    for label, key in (
        ("Total instances", "total_instances"),
        ("Instances submitted", "submitted_instances"),
        ("Instances completed", "completed_instances"),
        ("Instances incomplete", None),
        ("Instances resolved", "resolved_instances"),
        ("Instances unresolved", "unresolved_instances"),
        ("Instances with empty patches", "empty_patch_instances"),
        ("Instances with errors", "error_instances"),
    ):
        value = len(summary["incomplete_ids"]) if key is None else summary[key]
        print(f"{label}: {value}", file=to)
    print(f"Report written to {path}", file=to)


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


def cmd_validate(args: argparse.Namespace, settings: Settings) -> int:
    # the images being built, on a terminal
    with LiveView(live(args) and not args.json, "swe-stream validate"):
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


def cmd_images_instances(args: argparse.Namespace, settings: Settings) -> int:
    if args.parallel < 1:
        print("swe-stream images instances: -j must be 1 or more", file=sys.stderr)
        return ExitCode.USAGE
    try:
        sources = read_task_sources(args.input)
    except (FileNotFoundError, ValueError) as exc:
        print(f"swe-stream images instances: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if not sources:
        print(f"swe-stream images instances: no tasks in {args.input}", file=sys.stderr)
        return ExitCode.USAGE
    if settings.docker.cache_level in ("base", "none"):
        log.warning(
            "images: a harness at cache level %s builds every task's own images: run it at "
            "--cache-level env or instance to use these",
            settings.docker.cache_level,
        )
    # every layer at its kept tag: the tags the harness looks for, which no task drops
    settings.docker.cache_level = KEPT_LEVEL
    show = None if args.json else (lambda result: print(result.line(), flush=True))
    try:
        results = prepare_images(
            make_validator(settings), sources, args.parallel, args.force, on_done=show
        )
    except KeyboardInterrupt:
        print("swe-stream images instances: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    if args.json:
        print(json.dumps([result.as_dict() for result in results], indent=2))
    print(summary_line(results), file=sys.stderr if args.json else sys.stdout)
    return ExitCode.OK if all(result.ready for result in results) else ExitCode.FAILURE


def cmd_images_push(args: argparse.Namespace, settings: Settings) -> int:
    path = args.input or settings.export_dir
    # every layer at its kept tag, as `images instances` builds them: a dropped layer's image
    # is its build's own and cannot be pushed
    settings.docker.cache_level = KEPT_LEVEL
    show = None if args.json else (lambda result: print(result.line(), flush=True))
    try:
        results = publish_tasks(make_validator(settings), path, args.registry, on_done=show)
    except (FileNotFoundError, RegistryError) as exc:
        print(f"swe-stream images push: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if not results:
        print(f"swe-stream images push: no tasks in {path}", file=sys.stderr)
        return ExitCode.USAGE
    if args.json:
        print(json.dumps([result.as_dict() for result in results], indent=2))
    print(push_summary(results), file=sys.stderr if args.json else sys.stdout)
    return ExitCode.OK if all(result.pushed for result in results) else ExitCode.FAILURE


def cmd_images_list(args: argparse.Namespace, settings: Settings) -> int:
    """``swe-stream images list``: every toolchain's images (its language's own, or the
    settings' ``docker.toolchain_images``), present or missing; exit 1 when one is missing."""
    import docker

    configured = configured_images(settings.docker.toolchain_images)
    try:
        client = docker.from_env(timeout=60)
        listed = list_images(client, configured)
    except docker.errors.DockerException as exc:
        print(f"swe-stream images list: no Docker engine answers: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    if args.json:
        print(json.dumps([dataclasses.asdict(image) for image in listed], indent=2))
    else:
        for image in listed:
            print(image.line())
    missing = [image.tag for image in listed if not image.present]
    if missing:
        print(
            f"{len(missing)} missing: swe-stream images base --all --toolchains builds them",
            file=sys.stderr,
        )
    return ExitCode.FAILURE if missing else ExitCode.OK


def cmd_images(args: argparse.Namespace, settings: Settings) -> int:
    if args.toolchains:
        return images_main_toolchains(args.force)
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
