"""Yield on a corpus of real repositories: how many real merged PRs become validated tasks, and
why the others do not.

    python -m benchmarks.yield [--corpus DIR] [--repos tenacity,pyjwt] [--json FILE]
                               [--concurrency 1,default] [--agent-script PATH]
                               [--stop-after MINUTES] [--resume FILE]

The corpus (default ``../shared/fixtures/corpus``; see its README: its ``repos/`` remotes are
made on this machine from fetched snapshots, with ``corpus-remotes --into DIR`` when the corpus
folder is read-only, then ``--corpus DIR/corpus``) is served offline as one GH Archive hour of
full-format PullRequestEvents and a GitHub API stand-in (``streams.offline.corpus``), its bare
repositories as ``file://`` remotes. The real pipeline runs on it: ``swe-stream mine --once``
on an embedded broker, heuristic classify and score, ``prefilter.org_only`` off (some corpus
repositories belong to users), the size filters opened (``enrich.min_added_lines``,
``enrich.min_stars``, ``score.min_quality`` at 0): the benchmark measures the engine, not the
filters.

The environment-setup agent runs where the recipes tried leave a PR's tests not running: its
model is ``--agent-script``'s scripted answers (``benchmarks/agent_scripts/corpus.yaml``), or,
without one, the endpoint and key of ``SWE_STREAM_LLM_BASE_URL`` / ``OPENROUTER_API_KEY`` when
set (the same command; off without a key). Each repository's line says how many of its PRs
were validated with the agent's recipe and with it remembered.

Printed: a row per PR (repo#N, its Python or Node, recipe, the stage it reached, its reason or
its FAIL_TO_PASS / PASS_TO_PASS counts, seconds in validate), a line per repository (did its
tests run at a base commit), and last

    environments: A of R repositories ran their tests
    validated: X of N PRs (Y%)

With several ``--concurrency`` values (default ``1,default``: one validation at a time, then
this machine's default), the same PRs are mined once per value, each run starting without the
env and instance images and the package cache of the run before (the tools layers are built
first), and each prints its validated PRs per hour: over the validation window (first PR
extracted to last PR validated; the pipeline's start and end are the same at any concurrency)
and over the whole run; last, the ratio of the last value's rate to the first's.

While it mines, the run shows what ``mine`` has in flight (the funnel, the images being built
with their step and elapsed time): on a terminal, ``mine``'s live view; otherwise its progress
lines (funnel, hours, image builds), echoed as they come; ``<workdir>/mine.log`` keeps its
whole output.

A run can be taken in parts: ``--stop-after MINUTES`` stops ``mine`` (SIGTERM, as a user would)
that long after it started, and the PRs it had not decided are rows of status ``undecided``;
``--resume FILE`` (an earlier run's JSON) keeps that run's decided rows, mines the other PRs
alone, and reports on them all, saying which commit of swe-stream each part ran (the JSON's
``head``; a part of another commit is said so).

The rows are also written as JSON (``--json``, default ``<workdir>/yield.json``). A benchmark,
not a test: the whole corpus takes about 7 minutes at the default concurrency on two cores.
Always exits 0 unless the run itself broke (no Docker, no corpus).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from pathlib import Path

from benchmarks.corpus_engine import DEFAULT_CORPUS
from schemas import LedgerEntry, ValidatedTask
from streams.core.settings import DockerSettings, validations_for_machine
from streams.evaluation.environments import LABEL as LAYER_LABEL
from streams.evaluation.environments import EnvironmentBuilder
from streams.evaluation.failures import cause_of
from streams.evaluation.images import base_image_exists
from streams.evaluation.recipes.languages import configured_images
from streams.evaluation.recipes.memory import interpreter_fields
from streams.evaluation.recipes.model import InstallRecipe
from streams.evaluation.validator import docker_from_env
from streams.kafka.broker import EmbeddedBroker
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import VALIDATED
from streams.offline.corpus import Corpus, CorpusError, load_corpus, serve_corpus
from streams.offline.scripted_agent import AgentScript, serve_agent_script
from streams.pipeline.ledger import read_ledger

SWE_STREAM = str(Path(sys.executable).with_name("swe-stream"))

# validate's reasons that say the tests ran at the base commit (and what they showed)
TESTS_RAN = {"no_fail_to_pass", "fail_to_pass_flaky", "tests_timed_out"}
STAGES = ("prefilter", "enrich", "classify", "extract", "validate", "score", "export")
UNDECIDED = "undecided"  # a row's status when its run stopped before its PR was decided
STOP_GRACE_SECONDS = 120.0  # mine's time to stop after SIGTERM (its containers removed)
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    """One PR's outcome."""

    pr: str
    repo: str
    stage: str  # the last stage that decided about it
    status: str
    validated: bool
    reason: str | None = None
    detail: str | None = None
    cause: str | None = None  # the first line of a rejection's detail (``failures``)
    python: str | None = None
    node: str | None = None  # the Node major (JavaScript / TypeScript), "default" or None
    language: str | None = None
    test_runner: str | None = None
    recipe: str | None = None
    fail_to_pass: int | None = None
    pass_to_pass: int | None = None
    seconds: float | None = None
    extracted_at: float | None = None  # Unix time of its extract ledger entry
    decided_at: float | None = None  # ... of its validate ledger entry

    @property
    def tests_ran(self) -> bool:
        return self.validated or self.reason in TESTS_RAN

    @property
    def decided(self) -> bool:
        """Whether its run decided the PR: validated, or rejected or failed at a stage."""
        return self.validated or self.status in ("rejected", "failed")

    @property
    def by_agent(self) -> bool:
        """Validated with a recipe the setup agent submitted for this PR."""
        return "agent" in (self.recipe or "").split(",")

    @property
    def remembered(self) -> bool:
        """Validated with a recipe the setup agent submitted for an earlier PR."""
        return "memory:agent" in (self.recipe or "").split(",")


def pipeline_environment(
    world_env: dict[str, str], data_dir: Path, concurrency: int
) -> dict[str, str]:
    """The pipeline's environment: the world's URLs, the filters opened, and the user's LLM
    endpoint and key (``OPENROUTER_API_KEY``, ``SWE_STREAM_LLM_*``), which only the setup
    agent uses (classify and score are heuristic, test generation is off)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (not k.startswith("SWE_STREAM_") or k.startswith("SWE_STREAM_LLM_"))
        and k != "GITHUB_TOKEN"
    }
    return (
        env
        | world_env
        | {
            "SWE_STREAM_PREFILTER_ORG_ONLY": "false",
            "SWE_STREAM_ENRICH_MIN_STARS": "0",
            "SWE_STREAM_ENRICH_MIN_ADDED_LINES": "0",
            "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
            "SWE_STREAM_SCORE_BACKEND": "heuristic",
            "SWE_STREAM_SCORE_MIN_QUALITY": "0",
            "SWE_STREAM_TESTGEN_MODE": "off",
            "SWE_STREAM_VALIDATION_CONCURRENCY": str(concurrency),
            "SWE_STREAM_WORKER_DATA_DIR": str(data_dir),
            "SWE_STREAM_WORKER_LOG_LEVEL": "info",
        }
    )


async def collect(bootstrap: str, corpus: Corpus) -> list[Row]:
    """A row per corpus PR, from swe.ledger and tasks.validated."""
    history: dict[str, list[LedgerEntry]] = defaultdict(list)
    for entry in await read_ledger(bootstrap):
        history[f"{entry.repo}#{entry.number}"].append(entry)
    validated: dict[str, ValidatedTask] = {}
    async for record in read_topic_to_end(bootstrap, VALIDATED.name):
        task = ValidatedTask.from_json(record.value)
        validated[f"{task.repo}#{task.number}"] = task
    rows = []
    for pr in corpus.pull_requests:
        key = f"{pr['repo']}#{pr['number']}"
        rows.append(_row(key, pr["repo"], history.get(key, []), validated.get(key)))
    return rows


# "[python 3.11; recipe ...] ", "[node 20; ...]", "[rustc 1.85; ...]"
DETAIL_PREFIX = re.compile(r"\[(\w+) ([\w.]+); recipe ([^\]]*)\] ")


def _row(key: str, repo: str, entries: list[LedgerEntry], task: ValidatedTask | None) -> Row:
    if not entries:
        return Row(key, repo, "-", "never seen", False, "not_in_ledger")
    entries = sorted(entries, key=lambda e: e.updated_at)
    last = entries[-1]
    validate = [e for e in entries if e.stage == "validate"]
    before = [e for e in entries if e.stage == "extract"]
    row = Row(
        key,
        repo,
        last.stage,
        last.status,
        task is not None,
        last.reason if task is None else None,
        last.detail if task is None else None,
        extracted_at=before[-1].updated_at.timestamp() if before else None,
        decided_at=validate[-1].updated_at.timestamp() if validate else None,
    )
    if task is not None:
        config = task.install_config
        if config is not None:
            row.python, row.recipe = config.version("python"), ",".join(config.recipe)
            row.language, row.test_runner = config.language, config.test_runner
            ran_on = InstallRecipe(config.language, sources=tuple(config.recipe))
            row.node = config.version("node") or interpreter_fields(ran_on).get("node")
        row.fail_to_pass, row.pass_to_pass = len(task.FAIL_TO_PASS), len(task.PASS_TO_PASS)
        row.seconds = round(task.validation.duration_seconds, 1)
    elif validate:
        # a rejection's detail: "cause: ...\n" (failures.with_cause) where the log shows one,
        # then "[python X; recipe A, B] " ("[node 20; ...]") from validate
        row.cause = cause_of(last.detail)
        detail = last.detail or ""
        if row.cause is not None:
            detail = detail.split("\n", 1)[1] if "\n" in detail else ""
            row.detail = detail
        shown = DETAIL_PREFIX.match(detail)
        if shown:
            row.recipe = shown[3].replace(" ", "")
            if shown[1] == "python":
                row.python = shown[2]
            elif shown[1] == "node":
                row.node = shown[2]
            row.detail = detail[shown.end() :]
        if before:
            row.seconds = round(
                (validate[-1].updated_at - before[-1].updated_at).total_seconds(), 1
            )
    return row


def print_report(rows: list[Row], corpus: Corpus, seconds: float) -> None:
    print(f"{'PR':40} {'runs on':9} {'recipe':22} {'stage':9} {'result':44} {'s':>6}")
    for row in rows:
        if row.validated:
            result = f"validated F2P={row.fail_to_pass} P2P={row.pass_to_pass}"
        else:
            result = f"{row.status}: {row.reason}"
        seconds_text = f"{row.seconds:6.0f}" if row.seconds is not None else "     -"
        runs_on = f"node {row.node}" if row.node else row.python or "-"
        print(
            f"{row.pr:40} {runs_on:9} {(row.recipe or '-')[:22]:22} {row.stage:9} "
            f"{result[:44]:44} {seconds_text}"
        )
        if row.cause:
            print(f"{'':40}   cause: {row.cause}")
        if row.detail:
            print(f"{'':40}   {row.detail[:300]}")
    print()
    ran_repos = 0
    agent_repos: list[str] = []
    for repository in corpus.repositories:
        mine = [r for r in rows if r.repo == repository.repo]
        ran = [r for r in mine if r.tests_ran]
        ran_repos += bool(ran)
        verdict = "tests ran" if ran else "tests never ran"
        validated = sum(r.validated for r in mine)
        by_agent = sum(r.validated and r.by_agent for r in mine)
        remembered = sum(r.validated and r.remembered for r in mine)
        shown = (
            f" (setup agent {by_agent}, remembered {remembered})" if by_agent or remembered else ""
        )
        if by_agent or remembered:
            agent_repos.append(repository.repo)
        print(f"{repository.repo:40} {verdict:16} validated {validated} of {len(mine)}{shown}")
    reasons: dict[str, int] = defaultdict(int)
    for row in rows:
        if not row.validated:
            cause = f": {row.cause}" if row.cause else ""
            reasons[f"{row.stage}/{row.reason}{cause}"] += 1
    print()
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        print(f"  {count:3} {reason}")
    validated = sum(r.validated for r in rows)
    share = 100 * validated / len(rows) if rows else 0.0
    print(f"\nmined in {seconds / 60:.1f} min")
    print(f"environments: {ran_repos} of {len(corpus.repositories)} repositories ran their tests")
    print(f"validated: {validated} of {len(rows)} PRs ({share:.0f}%)")
    undecided = sum(r.status == UNDECIDED for r in rows)
    if undecided:
        print(f"undecided: {undecided} PRs (the run stopped first; --resume its JSON for them)")
    through = sum(r.validated and (r.by_agent or r.remembered) for r in rows)
    print(
        f"setup agent: {through} PRs of {len(agent_repos)} repositories validated with its "
        f"recipes ({', '.join(agent_repos) or 'none'})"
    )


def mine_corpus(
    corpus: Corpus,
    workdir: Path,
    concurrency: int = 2,
    package_cache: str | None = None,
    agent_script: AgentScript | None = None,
    stop_after: float | None = None,
) -> tuple[list[Row], float]:
    """Serve ``corpus``, run ``swe-stream mine --once`` on it (an embedded broker of its own),
    and read back a row per PR; the seconds it took. ``agent_script``: the setup agent's
    model is that script, served on 127.0.0.1. ``stop_after``: seconds after which mine is
    stopped, the PRs it had not decided then marked ``undecided``."""
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (
        EmbeddedBroker(log_path=workdir / "broker.log") as broker,
        serve_corpus(corpus, workdir / "world") as world,
        serve_agent_script(agent_script or AgentScript()) as scripted,
    ):
        env = pipeline_environment(world.environment(), workdir / "data", concurrency)
        if agent_script is not None:
            env |= {
                "SWE_STREAM_LLM_BASE_URL": f"{scripted.base_url}/v1",
                "SWE_STREAM_LLM_MODEL": "scripted-agent",
                "OPENROUTER_API_KEY": "scripted-agent-no-secret",
            }
        if package_cache is not None:
            env["SWE_STREAM_DOCKER_PACKAGE_CACHE"] = package_cache
        command = [
            SWE_STREAM, "mine", "--once", "--bootstrap", broker.bootstrap,
            "--source", str(world.hour_file), "-o", str(workdir / "tasks"),
            "--metrics-port", "0",
        ]  # fmt: skip
        code, stopped = run_mine(command, env, workdir / "mine.log", stop_after)
        if code != 0 and not stopped:
            print(f"mine exited {code}; see {workdir / 'mine.log'}", file=sys.stderr)
        rows = asyncio.run(collect(broker.bootstrap, corpus))
        if stopped:
            print(f"stopped: {mark_undecided(rows)} PRs undecided", flush=True)
        if agent_script is not None:
            print(f"scripted agent: answered {scripted.requests} requests", flush=True)
    return rows, time.monotonic() - started


# mine's lines worth seeing while it runs: the funnel, the hours, the image builds, the tasks
PROGRESS_LINE = re.compile(rb" swe_stream\.(progress|supervise|ingest): ")


def run_mine(
    command: list[str], env: dict[str, str], log_path: Path, stop_after: float | None = None
) -> tuple[int, bool]:
    """Run ``swe-stream mine``, its output in ``log_path``; its exit code, and whether it was
    stopped at ``stop_after`` seconds (SIGTERM, then SIGKILL after ``STOP_GRACE_SECONDS``). On
    a terminal it draws its live view there (and logs only to it); otherwise its progress
    lines are echoed here as they come."""
    live = sys.stderr.isatty()
    with open(log_path, "wb") as log:
        mine = subprocess.Popen(
            command if live else [*command, "--no-live"],
            env=env,
            stdout=log if live else subprocess.PIPE,
            stderr=None if live else subprocess.STDOUT,
        )
        stopped = threading.Event()
        timer = threading.Timer(stop_after or 0.0, _stop, (mine, stopped))
        if stop_after is not None:
            timer.start()
        try:
            if mine.stdout is not None:
                for line in mine.stdout:
                    log.write(line)
                    if PROGRESS_LINE.search(line):
                        sys.stdout.write(line.decode("utf-8", errors="replace"))
                        sys.stdout.flush()
            code = mine.wait()
        finally:
            timer.cancel()
            if mine.poll() is None:
                mine.kill()
                mine.wait()
    return code, stopped.is_set()


def _stop(mine: subprocess.Popen[bytes], stopped: threading.Event) -> None:
    """Stop ``mine`` as a user would (SIGTERM), and kill it if it has not ended in time."""
    if mine.poll() is not None:
        return
    stopped.set()
    print(f"benchmarks.yield: --stop-after reached, stopping mine (pid {mine.pid})", flush=True)
    mine.send_signal(signal.SIGTERM)
    try:
        mine.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        mine.kill()


def mark_undecided(rows: list[Row]) -> int:
    """Mark the rows a stopped run had not decided (``undecided``); how many."""
    undecided = [row for row in rows if not row.decided]
    for row in undecided:
        row.stage, row.status, row.reason = "-", UNDECIDED, "run_stopped"
        row.detail = row.cause = None
    return len(undecided)


def in_corpus_order(rows: list[Row], corpus: Corpus) -> list[Row]:
    """``rows`` in the order of ``corpus``'s PRs."""
    at = {f"{p['repo']}#{p['number']}": i for i, p in enumerate(corpus.pull_requests)}
    return sorted(rows, key=lambda row: at.get(row.pr, len(at)))


def commit_of_checkout() -> str:
    """The swe-stream commit this run is of (``+changes``: with uncommitted changes)."""
    git = ["git", "-C", str(REPO_ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return head.stdout.strip() + ("+changes" if changed else "")


def resumed_rows(path: Path, corpus: Corpus) -> tuple[list[Row], str]:
    """The decided rows of an earlier run's JSON that are PRs of ``corpus``, and the commit
    that run was of (CorpusError: no such run)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        listed = data["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorpusError(f"--resume {path}: not a yield run's JSON: {exc}") from None
    names = {f.name for f in fields(Row)}
    keys = {f"{pr['repo']}#{pr['number']}" for pr in corpus.pull_requests}
    rows = [Row(**{k: v for k, v in row.items() if k in names}) for row in listed]
    return [r for r in rows if r.pr in keys and r.decided], str(data.get("head") or "unknown")


def validation_window(rows: list[Row]) -> float | None:
    """Seconds from the first PR ready for validation (extracted) to the last decided: the
    time the validate stage worked, without the run's start and end."""
    starts = [r.extracted_at for r in rows if r.extracted_at is not None]
    ends = [r.decided_at for r in rows if r.decided_at is not None]
    return max(ends) - min(starts) if starts and ends and max(ends) > min(starts) else None


def concurrencies(text: str) -> list[int]:
    """``--concurrency``'s values: numbers, and ``default`` for this machine's default."""
    values = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if item == "default":
            values.append(validations_for_machine())
        elif item.isdigit() and int(item) >= 1:
            values.append(int(item))
        else:
            raise argparse.ArgumentTypeError(f"not a concurrency: {item!r} (a number or default)")
    if not values:
        raise argparse.ArgumentTypeError("no concurrency given")
    return values


def forget_environments(since: float) -> int:
    """Remove the env and instance images built since ``since`` (a Unix time), so that the
    next run at another concurrency builds what this one built (the tools layers, made before
    the first run, stay)."""
    client = docker_from_env()
    removed = 0
    for layer in ("instance", "env"):
        for image in client.api.images(filters={"label": f"{LAYER_LABEL}={layer}"}):
            if image.get("Created", 0) >= since - 1:
                with contextlib.suppress(Exception):  # removed meanwhile
                    client.api.remove_image(image["Id"], force=True)
                    removed += 1
    return removed


def prepare_tools_layers() -> None:
    """The tools layer of every Python's and every Node's base image (a JavaScript / TypeScript
    environment stands on one too), built before any timed run."""
    client = docker_from_env()
    docker = DockerSettings()
    builder = EnvironmentBuilder(client, docker.base_image, package_cache=docker.package_cache)
    images = configured_images(docker.toolchain_images)
    for tag in dict.fromkeys(tag for versions in images.values() for tag in versions.values()):
        if base_image_exists(client, tag):
            builder.tools_image(tag)


def run(args: argparse.Namespace) -> int:
    try:
        corpus = load_corpus(args.corpus, [r for r in (args.repos or "").split(",") if r])
    except CorpusError as exc:
        print(f"benchmarks.yield: {exc}", file=sys.stderr)
        return 2
    try:
        script = AgentScript.load(args.agent_script) if args.agent_script else None
    except (OSError, ValueError) as exc:
        print(f"benchmarks.yield: {exc}", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="swe-stream-yield-")).absolute()
    head = commit_of_checkout()
    print(
        f"corpus {corpus.root}: {len(corpus.repositories)} repositories, "
        f"{len(corpus.pull_requests)} PRs; work in {workdir}; swe-stream {head}",
        flush=True,
    )
    kept: list[Row] = []
    if args.resume:
        if len(args.concurrency) > 1:
            print("benchmarks.yield: --resume takes one --concurrency", file=sys.stderr)
            return 2
        try:
            kept, kept_head = resumed_rows(args.resume, corpus)
        except CorpusError as exc:
            print(f"benchmarks.yield: {exc}", file=sys.stderr)
            return 2
        other = "" if kept_head == head else f" (another commit than this run's {head})"
        print(f"resumed: {len(kept)} decided PRs of {args.resume}, swe-stream {kept_head}{other}")
        head = head if kept_head == head else f"{kept_head} then {head}"
    done = {row.pr for row in kept}
    whole = corpus
    corpus = replace(
        corpus,
        pull_requests=[p for p in corpus.pull_requests if f"{p['repo']}#{p['number']}" not in done],
    )
    prepare_tools_layers()
    rates: list[tuple[int, int, float]] = []
    started_at = time.time()
    for concurrency in args.concurrency:
        if rates:  # the same work again: the images the last run built are gone
            forget_environments(started_at)
        started_at = time.time()
        print(f"\n== validation concurrency {concurrency} ==", flush=True)
        workdir_n = workdir / f"concurrency-{concurrency}" if len(args.concurrency) > 1 else workdir
        # each run starts with an empty package cache of its own
        cache = f"swe-stream-yield-packages-{os.getpid()}-{concurrency}"
        stop_after = args.stop_after * 60 if args.stop_after else None
        try:
            rows, seconds = (
                mine_corpus(corpus, workdir_n, concurrency, cache, script, stop_after)
                if corpus.pull_requests
                else ([], 0.0)
            )
        finally:
            with contextlib.suppress(Exception):
                docker_from_env().volumes.get(cache).remove(force=True)
        rows = in_corpus_order([*kept, *rows], whole)
        print_report(rows, whole, seconds)
        validated = sum(r.validated for r in rows)
        rates.append((concurrency, validated, seconds))
        new = sum(r.validated for r in rows if r.pr not in done)
        rate = new * 3600 / seconds if seconds else 0.0
        print(f"validated PRs per hour at concurrency {concurrency}: {rate:.1f}")
    if len(rates) > 1:
        print()
        for concurrency, validated, seconds in rates:
            print(
                f"concurrency {concurrency}: {validated} validated in {seconds / 60:.1f} min, "
                f"{validated * 3600 / seconds:.1f} per hour"
            )
        first, last = rates[0], rates[-1]
        speedup = (last[1] / last[2]) / (first[1] / first[2]) if first[1] else 0.0
        print(
            f"concurrency {last[0]} / concurrency {first[0]}: {speedup:.2f}x validated PRs per hour"
        )
    out = Path(args.json or workdir / "yield.json")
    out.write_text(
        json.dumps(
            {
                "corpus": str(whole.root),
                "head": head,
                "finished_at": datetime.now().astimezone().isoformat(),
                "seconds": round(seconds, 1),
                "rows": [asdict(r) | {"tests_ran": r.tests_ran} for r in rows],
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    print(f"(rows written to {out})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus folder")
    parser.add_argument(
        "--repos", help="only these repositories (owner/name or name, comma-separated)"
    )
    parser.add_argument(
        "--json", type=Path, help="write the rows here (default: WORKDIR/yield.json)"
    )
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new temp folder)")
    parser.add_argument(
        "--concurrency",
        type=concurrencies,
        default=concurrencies("1,default"),
        help="validations at once: one run per value, same work, images of the run before "
        "removed (numbers or default, this machine's; default: 1,default)",
    )
    parser.add_argument(
        "--stop-after",
        type=float,
        metavar="MINUTES",
        help="stop mine this long after it starts; the PRs it has not decided are 'undecided'",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="FILE",
        help="an earlier run's JSON: its decided PRs are kept, the others mined",
    )
    parser.add_argument(
        "--agent-script",
        type=Path,
        help="the setup agent's answers, scripted (YAML, streams.offline.scripted_agent); "
        "without it the agent uses OPENROUTER_API_KEY / SWE_STREAM_LLM_* when set, else it is off",
    )
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
