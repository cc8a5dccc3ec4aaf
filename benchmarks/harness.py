"""The harness's wall time per task against one run of the task's test files, on corpus tasks.

    python -m benchmarks.harness [--tasks DIR] [--repos marko,arrow,dateutil] [--workdir DIR]

Tasks are the task directories in ``--tasks`` (a ``tasks/`` folder that ``benchmarks.yield``
or ``swe-stream mine`` exported), or, without it, those that mining ``--repos`` of the corpus
exports (``benchmarks.yield``'s pipeline). For each task, one after another:

1. its images are built (or reused): not timed, a task's setup is measured apart;
2. **one run**: in a container of its instance image with its test patch applied, one run of
   its test command on its test files (the exec's wall time);
3. **the harness**: ``HarnessEngine.evaluate`` with an agent that applies the gold patch (the
   task's images kept, so setup is reuse): sanity run, agent, grading run; its wall time.

Printed: a row per task (tests the run reported, one run s, harness s, the harness's time
outside the test runs and the agent, ratio), then

    harness wall / test run: X (target <= 2.5): MET|NOT MET

where X is the median over the tasks of (harness wall time less the agent's own run) / one run:
the agent's time is the agent's, what is left is the harness's (a gold-patch agent takes a
tenth of a second). Needs Docker and the base
images; mining needs the corpus remotes (see ``benchmarks.yield``). While it runs, the images
being built (step, elapsed) and the tasks done with their ETA are shown: a live view on a
terminal, progress lines otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus_engine import DEFAULT_CORPUS, corpus_validator, show_progress
from streams.core.progress import PROGRESS
from streams.core.settings import DockerSettings, load_settings
from streams.evaluation.harness import HarnessEngine, HarnessOptions
from streams.evaluation.harness_status import task_checks
from streams.evaluation.sandbox import Limits
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace
from streams.evaluation.validator import (
    PATCH_DIR,
    RUN_VARIABLES,
    Validator,
    apply_patch,
    docker_from_env,
    task_environment,
    test_command,
)
from streams.offline.corpus import CorpusError, load_corpus
from streams.runtime.live import LiveView

DEFAULT_REPOS = "marko,arrow,dateutil"
TARGET = 2.5


def mined_tasks(corpus_dir: Path, repos: str, workdir: Path) -> Path:
    """Mine ``repos`` of the corpus (``benchmarks.yield``'s pipeline); its tasks folder."""
    yield_benchmark = importlib.import_module("benchmarks.yield")
    corpus = load_corpus(corpus_dir, repos.split(","))
    print(f"mining {len(corpus.pull_requests)} PRs of {repos} for tasks ...", flush=True)
    rows, seconds = yield_benchmark.mine_corpus(corpus, workdir / "mine")
    print(f"mined in {seconds / 60:.1f} min: {sum(r.validated for r in rows)} validated")
    return workdir / "mine" / "tasks"


def one_run_seconds(validator: Validator, environment: Any, task: Any) -> tuple[float, int]:
    """Wall seconds of one run of the task's test files in its container, and how many tests
    it reported."""
    checks = task_checks(task, environment)
    files = checks.files or sorted({t.split("::", 1)[0] for t in task.FAIL_TO_PASS})
    command = test_command(environment.recipe.test_command, files)
    with environment.sandbox(validator.limits, RUN_VARIABLES) as box:
        box.put_file(f"{PATCH_DIR}/test.patch", task.test_patch)
        if not apply_patch(box, f"{PATCH_DIR}/test.patch"):
            raise RuntimeError("the test patch does not apply")
        started = time.monotonic()
        run = validator.run_tests(box, command, environment.recipe.test_runner)
        return time.monotonic() - started, len(run.statuses)


def _repo_of(task_dir: Path) -> set[str]:
    """The names a task's repository goes by (``owner/name`` and ``name``, lower case)."""
    repo = load_workspace(task_dir / WORKSPACE).repo.lower()
    return {repo, repo.split("/")[-1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=Path, help="task directories (default: mine --repos)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument(
        "--repos", default=DEFAULT_REPOS, help=f"tasks of these repositories ({DEFAULT_REPOS})"
    )
    parser.add_argument("--limit", type=int, default=0, help="at most this many tasks (0: all)")
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new one)")
    args = parser.parse_args(argv)
    show_progress()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="swe-stream-harness-"))).absolute()
    try:
        tasks_dir = args.tasks or mined_tasks(args.corpus, args.repos, workdir)
        corpus = load_corpus(args.corpus)
    except CorpusError as exc:
        print(f"benchmarks.harness: {exc}", file=sys.stderr)
        return 2
    wanted = {name.strip().lower() for name in args.repos.split(",") if name.strip()}
    task_dirs = [
        directory
        for directory in find_task_dirs(tasks_dir)
        if not wanted or _repo_of(directory) & wanted
    ][: args.limit or None]
    if not task_dirs:
        print(f"benchmarks.harness: no task directories in {tasks_dir}", file=sys.stderr)
        return 2
    client = docker_from_env()
    settings = load_settings()
    docker = DockerSettings(**(settings.docker.model_dump() | {"cache_level": "instance"}))
    validator = corpus_validator(corpus, workdir, client, docker)
    agent = workdir / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    options = HarnessOptions(
        agent_command='git apply "/agent/$SWE_TASK_ID.patch"',
        agent_dir=agent,
        output_dir=workdir / "results",
    )
    engine = HarnessEngine(validator, options, Limits.from_settings(docker))
    print(f"{'task':44} {'tests':>6} {'run s':>7} {'harness s':>9} {'other s':>7} {'ratio':>6}")
    with LiveView(sys.stderr.isatty(), "benchmarks.harness"):
        ratios = measure(task_dirs, validator, engine, agent)
    if not ratios:
        print(f"harness wall / test run: not measured (target <= {TARGET}): NOT MET")
        return 0
    ratio = statistics.median(ratios)
    print(f"\ntasks: {len(ratios)}; ratios from {min(ratios):.2f} to {max(ratios):.2f}")
    verdict = "MET" if ratio <= TARGET else "NOT MET"
    print(f"harness wall / test run: {ratio:.2f} (target <= {TARGET}): {verdict}")
    return 0


def measure(
    task_dirs: list[Path], validator: Validator, engine: HarnessEngine, agent: Path
) -> list[float]:
    """Each task's ratio (harness wall less the agent / one run), a row printed per task."""
    ratios: list[float] = []
    PROGRESS.tasks_planned(len(task_dirs))
    for task_dir in task_dirs:
        task = load_workspace(task_dir / WORKSPACE)
        (agent / f"{task.id}.patch").write_text(task.patch, encoding="utf-8")
        environment = task_environment(validator, task)  # built here, reused below
        try:
            run_seconds, tests = one_run_seconds(validator, environment, task)
        finally:
            environment.release()
        started = time.monotonic()
        result = engine.evaluate(task_dir)
        wall = time.monotonic() - started
        PROGRESS.task_done(result.status, task.id)
        # containers, patches, the image lookups: all but the two test runs and the agent
        other = wall - sum(r.seconds for r in result.test_runs) - result.agent_duration_secs
        if result.status != "resolved":
            print(f"{task.id:44} {result.status}: {(result.error or '')[:80]}")
            continue
        # the agent's own run is the agent's time, not the harness's
        ratios.append((wall - result.agent_duration_secs) / run_seconds)
        print(
            f"{task.id[:44]:44} {tests:6} {run_seconds:7.2f} {wall:9.2f} {other:7.2f} "
            f"{ratios[-1]:6.2f}",
            flush=True,
        )
    return ratios


if __name__ == "__main__":
    raise SystemExit(main())
