"""The validator: a task proven by running its tests in Docker, and a patch graded against them.

In one sandbox container from the task's instance image (``streams.evaluation.environments``;
no network, CPU / memory / pids limits):

1. apply ``test_patch``, run the test files it touches once: the *before* results;
2. apply ``patch``, run them ``validation.runs`` times (default 3): the *after* results; a test
   whose result changes between runs is flaky and dropped;
3. FAIL_TO_PASS = failed (or errored) before and passed in every after-run;
   PASS_TO_PASS = passed before and in every after-run (``streams.evaluation.grading``).

Per-test results come from the test runner's log parser (``streams.evaluation.log_parsers``),
never from the exit code alone; each run is killed at ``validation.test_timeout_seconds`` and
the test it was in is reported (``timed_out``). A patch that does not apply is tried as
SWE-bench does: ``git apply``, then with fuzz (``git apply -C1 --ignore-whitespace``), then
``patch --fuzz=5``. ``evaluate`` grades any candidate patch the same way (the harness, and
``swe-stream validate``'s gold and empty patches).

Failures that reject a task raise ``ValidationFailed`` with its reason: patch does not apply,
no FAIL_TO_PASS, every run timed out, unsupported language. Image builds that fail raise.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas import InstallConfig, PatchSet, ValidatedTask, ValidationReport
from streams.clients.git import RepoCache
from streams.core import metrics
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.environments import (
    BuiltImage,
    EnvironmentBuilder,
    InstallRecipe,
    TreeFiles,
    detect_recipe,
)
from streams.evaluation.grading import Evaluation, Run, judge
from streams.evaluation.log_parsers import log_parser
from streams.evaluation.sandbox import Limits, Sandbox, remove_orphans
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace

log = logging.getLogger("swe_stream.validator")

NO_TESTS = "no_tests"
TEST_PATCH_FAILS = "test_patch_does_not_apply"
PATCH_FAILS = "patch_does_not_apply"
NO_FAIL_TO_PASS = "no_fail_to_pass"
TIMED_OUT = "tests_timed_out"
UNSUPPORTED = "unsupported_language"

PATCH_DIR = "/tmp/swe-stream"
APPLY_COMMANDS = (
    "git apply --verbose {path}",
    "git apply --verbose --ignore-whitespace -C1 {path}",  # fuzz: one line of context
    "patch --batch --forward --fuzz=5 -p1 -i {path}",
)


def test_command(base: str, files: list[str]) -> str:
    """The recipe's test command run on ``files`` (shell-quoted)."""
    return " ".join([base, *(shlex.quote(f) for f in files)])


class ValidationFailed(Exception):
    """A rejection found deep inside the sandbox run, with its reason."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass
class Environment:
    """A task's images, ready: what the tests and the test generator run in."""

    tree: TreeFiles
    recipe: InstallRecipe
    env: BuiltImage
    instance: BuiltImage
    builder: EnvironmentBuilder

    def sandbox(
        self, limits: Limits, variables: dict[str, str] | None = None, **options: Any
    ) -> Sandbox:
        """A fresh container of the instance image: the repository at the base commit
        (``options``: Sandbox's ``mounts``, ``name``, ``keep``)."""
        return Sandbox(
            self.builder.client, self.instance.tag, limits, environment=variables, **options
        )

    def release(self) -> None:
        self.builder.release(self.env, self.instance)


@dataclass
class Proof:
    """What running a test patch before and after the fix showed."""

    report: ValidationReport
    fail_to_pass: list[str]
    pass_to_pass: list[str]


@dataclass
class GeneratedTests:
    """Tests the test generator wrote, proven like a PR's own."""

    test_patch: str
    proof: Proof
    turns: int
    tokens: int


class Validator:
    """Environments, sandbox runs and verdicts for tasks; blocking (callers use threads).
    Shared by validate, test generation and the harness: one Docker client, one clone cache,
    one image cache."""

    def __init__(
        self,
        repos: RepoCache,
        docker_client: Callable[[], Any],
        docker: DockerSettings,
        settings: ValidateSettings,
        pipeline_version: int,
    ):
        self.repos = repos
        self._docker_client = docker_client
        self._client: Any = None
        self.docker = docker
        self.settings = settings
        self.pipeline_version = pipeline_version

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._docker_client()
            # containers of a worker killed mid-validation would run forever otherwise, and
            # its images would stay; a cleanup that fails is tried again by the next worker,
            # it fails no task
            try:
                remove_orphans(self._client)
            except Exception as error:
                log.warning("could not look for orphaned sandboxes and images: %s", error)
        return self._client

    @property
    def limits(self) -> Limits:
        return Limits.from_settings(self.docker)

    def prepare(self, patches: PatchSet) -> Environment:
        """Blocking: the recipe of the tree at the base commit, and its images."""
        return self.environment(patches.repo, patches.base_commit, patches.instance_id)

    def environment(self, repo: str, base_commit: str, instance_id: str) -> Environment:
        """Blocking: clone (or reuse) ``repo``, and build (or reuse) the task's images."""
        self.repos.ensure(repo, base_commit)
        tree = TreeFiles(self.repos.archive(repo, base_commit))
        recipe = detect_recipe(tree)
        if recipe is None:
            raise ValidationFailed(UNSUPPORTED, "no install recipe recognises the repository")
        builder = EnvironmentBuilder(self.client, self.docker.base_image, self.docker.cache_level)
        env = builder.env_image(repo, recipe)
        instance = builder.instance_image(instance_id, env, tree, recipe)
        return Environment(tree, recipe, env, instance, builder)

    def evaluate(
        self,
        environment: Environment,
        candidate: str,
        test_patch: str,
        fail_to_pass: list[str],
        pass_to_pass: list[str],
    ) -> Evaluation:
        """Blocking: grade ``candidate`` (a patch; empty = the repository as it is) as
        SWE-bench does: hidden tests applied after it, then every FAIL_TO_PASS and
        PASS_TO_PASS test must pass."""
        tests = fail_to_pass + pass_to_pass
        files = sorted({test.split("::", 1)[0] for test in tests})
        command = test_command(environment.recipe.test_command, files)
        with environment.sandbox(self.limits, {"PYTHONUNBUFFERED": "1"}) as box:
            applied = True
            if candidate.strip():
                box.put_file(f"{PATCH_DIR}/candidate.patch", candidate)
                applied = self._apply(box, f"{PATCH_DIR}/candidate.patch")
            if not applied:
                return Evaluation(False, {}, fail_to_pass, pass_to_pass)
            box.put_file(f"{PATCH_DIR}/test.patch", test_patch)
            if test_patch.strip() and not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            statuses = self._run(box, command, environment.recipe.test_runner).statuses
        return Evaluation(
            True, {t: statuses.get(t, "error") for t in tests}, fail_to_pass, pass_to_pass
        )

    def prove(
        self,
        environment: Environment,
        fix: str,
        test_patch: str,
        test_files: list[str],
        before_runs: int = 1,
    ) -> Proof:
        """Blocking: in a fresh sandbox, the tests ``before_runs`` times before the fix, then
        ``validation.runs`` times after it."""
        command = test_command(environment.recipe.test_command, test_files)
        started = time.monotonic()
        with environment.sandbox(self.limits, {"PYTHONUNBUFFERED": "1"}) as box:
            box.put_file(f"{PATCH_DIR}/test.patch", test_patch)
            box.put_file(f"{PATCH_DIR}/fix.patch", fix)
            if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            runner = environment.recipe.test_runner
            befores = [self._run(box, command, runner) for _ in range(before_runs)]
            if not self._apply(box, f"{PATCH_DIR}/fix.patch"):
                raise ValidationFailed(PATCH_FAILS)
            afters = [self._run(box, command, runner) for _ in range(self.settings.runs)]
        runs = [*befores, *afters]
        verdict = judge(befores, afters)
        report = ValidationReport(
            image=environment.instance.tag,
            runs=len(runs),
            duration_seconds=round(time.monotonic() - started, 3),
            before=verdict.before,
            after=verdict.after,
            flaky=verdict.flaky,
            timed_out=sorted({r.hung_test for r in runs if r.hung_test}),
            test_seconds=round(sum(r.seconds for r in runs), 3),
        )
        fail_to_pass, pass_to_pass = report.fail_to_pass(), report.pass_to_pass()
        if not fail_to_pass:
            everything_timed_out = all(r.timed_out for r in runs)
            raise ValidationFailed(
                TIMED_OUT if everything_timed_out else NO_FAIL_TO_PASS,
                f"before {verdict.before}, after {verdict.after}",
            )
        return Proof(report, fail_to_pass, pass_to_pass)

    def task(
        self,
        patches: PatchSet,
        environment: Environment,
        proof: Proof,
        test_patch: str,
        generated: tuple[int, int] | None = None,
    ) -> ValidatedTask:
        recipe = environment.recipe
        tests = proof.fail_to_pass + proof.pass_to_pass
        return ValidatedTask(
            pipeline_version=self.pipeline_version,
            number=patches.number,
            repo=patches.repo,
            instance_id=patches.instance_id,
            base_commit=patches.base_commit,
            patch=patches.patch,
            test_patch=test_patch,
            problem_statement=patches.problem_statement,
            hints_text=patches.hints_text,
            created_at=patches.created_at,
            version=patches.version,
            FAIL_TO_PASS=proof.fail_to_pass,
            PASS_TO_PASS=proof.pass_to_pass,
            environment_setup_commit=patches.environment_setup_commit,
            validation=proof.report,
            tests_generated=generated is not None,
            testgen_turns=generated[0] if generated else None,
            testgen_tokens=generated[1] if generated else None,
            classification=patches.classification,
            difficulty_score=patches.score,
            install_config=InstallConfig(
                language=recipe.language,
                base_image=self.docker.base_image,
                env_image=environment.env.tag,
                instance_image=environment.instance.tag,
                install_commands=list(recipe.install_commands),
                test_command=recipe.test_command,
            ),
            checks=[test_command(recipe.test_command, [test]) for test in tests],
        )

    def _apply(self, box: Sandbox, path: str) -> bool:
        return apply_patch(box, path)

    def _run(self, box: Sandbox, command: str, runner: str) -> Run:
        result = box.run(command, timeout=self.settings.test_timeout_seconds)
        metrics.VALIDATION_RUN_SECONDS.observe(result.inner_seconds)
        parser = log_parser(runner)
        statuses = parser.parse(result.output)
        hung = parser.running_when_killed(result.output) if result.timed_out else None
        if hung:
            statuses[hung] = "error"
        return Run(statuses, result.inner_seconds, result.timed_out, hung)


def apply_patch(box: Sandbox, path: str) -> bool:
    """Apply the patch at ``path`` (inside the box) as SWE-bench does: plain, then with fuzz."""
    for template in APPLY_COMMANDS:
        result = box.run(template.format(path=path), timeout=120)
        if result.exit_code == 0:
            return True
    return False


# The client's read timeout must outlast the longest command: an exec answers only when its
# command ends, and every command is already bounded inside the container (`timeout -s KILL`
# at its own limit, which may be set past any fixed value: agents, tests, testgen).
DOCKER_READ_TIMEOUT_SECONDS = 24 * 3600


def docker_from_env() -> Any:
    """A client of the host's Docker engine whose reads wait as long as any command may run."""
    import docker as docker_sdk

    return docker_sdk.from_env(timeout=DOCKER_READ_TIMEOUT_SECONDS)


def validate_task_dirs(path: Path, validator: Validator) -> list[dict[str, Any]]:
    """Re-validate every task directory under ``path`` in Docker: its gold patch must resolve
    it and an empty patch must not; a report per task (``valid`` and the ``reason`` if not)."""
    reports = []
    for directory in find_task_dirs(path):
        report: dict[str, Any] = {"task": directory.name, "valid": False, "reason": ""}
        reports.append(report)
        try:
            task = load_workspace(directory / WORKSPACE)
        except ValueError as exc:
            report["reason"] = str(exc)[:500]
            continue
        started = time.monotonic()
        try:
            environment = validator.environment(task.repo, task.base_commit, task.instance_id)
            try:
                f2p, p2p = list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS)
                gold = validator.evaluate(environment, task.patch, task.test_patch, f2p, p2p)
                empty = validator.evaluate(environment, "", task.test_patch, f2p, p2p)
            finally:
                environment.release()
        except (ValidationFailed, RuntimeError, OSError) as exc:
            report["reason"] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        report |= {
            "gold_resolved": gold.resolved,
            "empty_resolved": empty.resolved,
            "gold_failing": gold.failing(f2p + p2p),
            "empty_fail_to_pass_passing": [t for t in f2p if t not in empty.failing(f2p)],
            "seconds": round(time.monotonic() - started, 1),
        }
        if not gold.resolved:
            report["reason"] = "the gold patch does not resolve it: " + (
                ", ".join(gold.failing(f2p + p2p)) or "the patch does not apply"
            )
        elif empty.resolved:
            report["reason"] = "an empty patch resolves it"
        report["valid"] = not report["reason"]
    return reports
