"""``swe-stream demo``: the whole pipeline offline on this machine, end to end.

A real GH Archive hour plus the merge of a pull request of a repository made locally are
served by the offline world (``streams.offline``); the pipeline runs on the embedded broker
until the hour is drained, then the harness runs a gold-patch agent and a do-nothing agent on
the exported task: that is its re-validation too (valid: the gold patch resolves it, an empty
patch does not), so each patch is evaluated once (``swe-stream validate`` does the same check
on any task directory).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.ingest import HourSelection
from schemas.harness import HarnessReport
from streams.cli.options import Commands, Parents, interactive
from streams.core.settings import Settings
from streams.evaluation.environments import INSTANCE_REPOSITORY, kept_tags
from streams.evaluation.harness import HarnessEngine, HarnessOptions, evaluate_all
from streams.evaluation.images import ensure_base_image, ensure_toolchain_image
from streams.evaluation.recipes.languages import configured_images, language_named
from streams.evaluation.sandbox import Limits
from streams.evaluation.taskdir import WORKSPACE, load_workspace
from streams.kafka.broker import kafka_bootstrap
from streams.offline.world import DEMO_PROJECTS, offline_world
from streams.runtime.live import LiveView
from streams.runtime.runner import RunPlan, run_pipeline
from streams.runtime.topology import make_validator

log = logging.getLogger("swe_stream.demo")


def register(commands: Commands, parents: Parents) -> None:
    demo = commands.add_parser(
        "demo",
        parents=[parents.common],
        help="the whole pipeline offline on this machine, in minutes",
    )
    demo.add_argument(
        "-o", "--output", type=Path, help="where the task goes (default: WORKDIR/tasks)"
    )
    demo.add_argument("--workdir", type=Path, help="scratch directory (default: ./demo-run)")
    demo.add_argument("--hour-file", type=Path, help="GH Archive hour to serve (default: shipped)")
    demo.add_argument("--no-live", action="store_true", help="log lines, no live table")
    demo.add_argument(
        "--language",
        choices=sorted(DEMO_PROJECTS),
        default="python",
        help="the language of the demo repository (default: python); javascript, go, rust, "
        "java, cpp and c run in their toolchain's image (built if none is there)",
    )
    demo.set_defaults(handler=run_demo)


def with_sections(settings: Settings, **sections: dict[str, Any]) -> Settings:
    """``settings`` with some fields of some sections replaced."""
    return settings.model_copy(
        update={
            name: getattr(settings, name).model_copy(update=values)
            for name, values in sections.items()
        }
    )


def run_demo(args: argparse.Namespace, settings: Settings) -> int:
    workdir = (args.workdir or Path("demo-run")).absolute()
    output = (args.output or workdir / "tasks").absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    problem = ensure_base_image(settings.docker.base_image)
    language = language_named(DEMO_PROJECTS[args.language].language)
    toolchain = language.toolchain if language is not None else None
    if not problem and toolchain and language is not None and language.toolchain_images:
        problem = ensure_toolchain_image(
            toolchain,
            configured_images(settings.docker.toolchain_images).get(toolchain, {}),
            settings.docker.base_image,
        )
    if problem:
        print(f"swe-stream demo: {problem}", file=sys.stderr)
        return 1
    live = interactive() and not args.no_live
    if live:  # offline on purpose: no token, no LLM key, nothing to warn about on one screen
        logging.getLogger("swe_stream.topology").setLevel(logging.ERROR)
    # one view for the whole demo (the pipeline, then the harness), one screen
    view = LiveView(live)
    # every demo makes its world afresh, so an earlier run's ledger speaks of a world that is
    # gone: replayed, it would call this run's PR exported already and leave the earlier task,
    # whose clone is gone with that world, to be re-validated (a second demo would fail)
    ledger_log = workdir / "ledger.jsonl"
    ledger_log.unlink(missing_ok=True)
    world_root = Path(tempfile.mkdtemp(prefix="world-", dir=workdir))
    harness: dict[str, HarnessReport] = {}
    try:
        with offline_world(world_root, args.hour_file, language=args.language) as world:
            demo = with_sections(
                settings,
                gharchive={"base_url": world.gharchive_url},
                github={
                    "api_url": world.github_url,
                    "git_url_template": world.git_url_template,
                    "max_attempts": 1,
                    "token": None,
                    "tokens": [],
                },
                # the task's instance image kept while the demo runs: validation builds it once,
                # and the harness's two agents stand on that build (dropped at the demo's end)
                docker={"cache_level": "instance"},
                llm={"api_key": None},  # offline: heuristic classify and score, no testgen
                classify={"backend": "heuristic"},
                score={"backend": "heuristic"},
                export={"output_dir": output},
                extract={"repos_dir": world_root / "clones"},
                worker={
                    "data_dir": workdir / "data",
                    "app_id": f"swe-stream-demo-{time.time_ns()}",
                    "web_port": 0,
                },
            )
            print(
                f"demo: hour {world.hour} + {world.pull_request.repo.repo}"
                f"#{world.pull_request.number}, served offline",
                flush=True,
            )
            plan = RunPlan(
                selection=HourSelection(first=world.hour),
                once=True,
                ledger_log=ledger_log,
                live=live,
            )
            view.start()
            # DEBUG: the stand-ins' addresses matter when debugging them, not to follow the demo
            log.debug(
                "demo: GH Archive at %s, GitHub API at %s", world.gharchive_url, world.github_url
            )
            with kafka_bootstrap(None, settings.kafka.embedded_port) as (bootstrap, embedded):
                summary = asyncio.run(run_pipeline(demo, bootstrap, embedded, plan))
            lines = summary.brief_lines(output) if live else summary.lines(output)
            print("\n".join(lines), flush=True)
            demo_task = (
                output
                / f"{world.pull_request.owner}-{world.pull_request.repo.repo.split('/')[1]}-1"
            )
            # this run's task only: an earlier demo's (another language's) points at a local
            # world that is gone
            if demo_task.is_dir():
                print("demo: re-validating the exported task in the harness (a gold-patch "
                      "agent, then a do-nothing one)", flush=True)  # fmt: skip
                try:
                    harness = run_demo_harness(demo, demo_task, workdir)
                finally:
                    drop_instance_images(load_workspace(demo_task / WORKSPACE).instance_id)
    finally:
        view.stop()
        shutil.rmtree(world_root, ignore_errors=True)
    statuses = {agent: report.results[0].status for agent, report in harness.items()}
    if statuses:
        print(f"  {demo_task.name}: {task_verdict(statuses)}")
    print(
        f"demo: harness: gold-patch agent {statuses.get('gold')}, do-nothing agent "
        f"{statuses.get('nothing')}"
    )
    ok = statuses == {"gold": "resolved", "nothing": "unresolved"}
    print(f"demo: {'done' if ok else 'FAILED'}: task {demo_task.name} in {output}")
    return 0 if ok else 1


def task_verdict(statuses: Mapping[str, object]) -> str:
    """The task's validity from the harness's two agents: valid when the gold patch resolves
    it and an empty patch does not."""
    gold, empty = statuses.get("gold") == "resolved", statuses.get("nothing") == "resolved"
    if not gold:
        verdict = f"INVALID (the gold-patch agent's run is {statuses.get('gold')})"
    elif empty:
        verdict = "INVALID (an empty patch resolves it)"
    else:
        verdict = "valid"
    return f"{verdict}; gold patch resolves: {gold}, empty patch resolves: {empty}"


def drop_instance_images(instance_id: str) -> None:
    """Remove the instance images the demo kept of its task (its env image stays: the
    repository's next demo reuses it)."""
    import docker

    try:
        client = docker.from_env()
        for tag in kept_tags(client, instance_id):
            if tag.startswith(f"{INSTANCE_REPOSITORY}:"):
                client.images.remove(tag, force=True)
    except docker.errors.DockerException as exc:  # the engine went away: nothing to keep clean
        log.warning("demo: could not remove the instance images of %s: %s", instance_id, exc)


def run_demo_harness(settings: Settings, task_dir: Path, workdir: Path) -> dict[str, HarnessReport]:
    """The harness on the demo task: an agent that applies the gold patch, one that does
    nothing; a line of each one's counts printed (its JSON report is in its summary.json)."""

    gold = workdir / "agents" / "gold"
    gold.mkdir(parents=True, exist_ok=True)
    (gold / "gold.patch").write_text(load_workspace(task_dir / WORKSPACE).patch, encoding="utf-8")
    (gold / "run.sh").write_text("git apply /agent/gold.patch\n", encoding="utf-8")
    agents = {"gold": ("bash /agent/run.sh", gold), "nothing": ("true", None)}
    reports = {}
    for name, (command, directory) in agents.items():
        options = HarnessOptions(
            agent_command=command,
            agent_dir=directory,
            agent_timeout_seconds=120,
            output_dir=workdir / "harness" / name,
        )
        engine = HarnessEngine(
            make_validator(settings), options, Limits.from_settings(settings.docker)
        )
        report = asyncio.run(evaluate_all(engine, [task_dir]))
        summary = workdir / "harness" / name / "summary.json"
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        print(
            f"demo: {name} agent: resolved {report.resolved} of {report.total}; report in "
            f"{summary.parent.relative_to(workdir)}/",
            flush=True,
        )
        reports[name] = report
    return reports
