"""Stage ``validate``: ``pr.patches`` -> ``tasks.validated``.

A task is only worth exporting if running its tests proves it. In one sandbox container from
the task's instance image (``streams.environments``; no network, CPU / memory / pids limits):

1. apply ``test_patch``, run the test files it touches once: the *before* results;
2. apply ``patch``, run them ``validation.runs`` times (default 3): the *after* results; a test
   whose result changes between runs is flaky and dropped;
3. FAIL_TO_PASS = failed (or errored) before and passed in every after-run;
   PASS_TO_PASS = passed before and in every after-run.

When the PR's own tests prove nothing (none, or no FAIL_TO_PASS), the test generator
(``agents.testgen``, when configured) writes tests; each of its submissions is proven the same
way in a fresh container, with the before-runs repeated too (``validation.runs`` times).

Per-test results come from pytest's ``-v`` / ``-rA`` lines, never from the exit code alone;
each run is killed at ``validation.test_timeout_seconds`` and the test it was in is reported
(``timed_out``). A patch that does not apply is tried as SWE-bench does: ``git apply``, then
with fuzz (``git apply -C1 --ignore-whitespace``), then ``patch --fuzz=5``.

Rejected with a reason: no tests, patch does not apply, no FAIL_TO_PASS, every run timed out,
unsupported language. Image builds that fail raise (DLQ and ledger).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from schemas import InstallConfig, PatchSet, ValidatedTask, ValidationReport
from schemas.tasks import TestStatus
from streams import metrics
from streams.environments import (
    BuiltImage,
    EnvironmentBuilder,
    InstallRecipe,
    TreeFiles,
    detect_recipe,
)
from streams.git import RepoCache
from streams.sandbox import Limits, Sandbox, remove_orphans
from streams.settings import DockerSettings, ValidateSettings
from streams.stage import Outcome, Stage
from streams.topics import PATCHES, VALIDATED

log = logging.getLogger("swe_stream.validate")

STAGE = "validate"

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

_STATUS: dict[str, TestStatus] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}
_VERBOSE = re.compile(
    r"^(?P<test>\S+::\S.*?)\s+(?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    r"(?:\s+\[\s*\d+%\])?\s*$",
    re.MULTILINE,
)
_SUMMARY = re.compile(
    r"^(?P<status>PASSED|FAILED|ERROR|XFAIL|XPASS)\s+(?P<test>\S+::\S+?)(?:\s+-\s.*)?$",
    re.MULTILINE,
)
_ANNOUNCED = re.compile(r"^(?P<test>\S+::\S+)(?P<rest>.*)$")
_STATUS_WORD = re.compile(r"\s(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def parse_pytest_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``pytest -v -rA`` output (the summary wins over the lines)."""
    results: dict[str, TestStatus] = {}
    for match in _VERBOSE.finditer(output):
        results[match["test"]] = _STATUS[match["status"]]
    for match in _SUMMARY.finditer(output):
        results[match["test"]] = _STATUS[match["status"]]
    return results


def running_when_killed(output: str) -> str | None:
    """The test pytest had announced (``-v``) but not finished when the run was killed.

    The line holds the test id and no status; the shell may append its "Killed" notice."""
    last: tuple[str, str] | None = None
    for line in output.splitlines():
        match = _ANNOUNCED.match(line)
        if match:
            last = (match["test"], match["rest"])
    if last is None or _STATUS_WORD.search(last[1]):
        return None
    return last[0]


@dataclass
class Run:
    statuses: dict[str, TestStatus]
    seconds: float
    timed_out: bool
    hung_test: str | None = None


@dataclass
class Verdict:
    before: dict[str, TestStatus]
    after: dict[str, TestStatus]
    flaky: list[str] = field(default_factory=list)

    @property
    def fail_to_pass(self) -> list[str]:
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) != "passed"
        )

    @property
    def pass_to_pass(self) -> list[str]:
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) == "passed"
        )


def judge(befores: list[Run], afters: list[Run]) -> Verdict:
    """Stable results only: a test whose status differs between the before-runs, or between
    the after-runs, is flaky and dropped."""
    flaky: set[str] = set()

    def stable(runs: list[Run]) -> dict[str, TestStatus]:
        statuses: dict[str, TestStatus] = {}
        for test in sorted({t for run in runs for t in run.statuses}):
            seen = {run.statuses.get(test, "error") for run in runs}
            if len(seen) == 1:
                statuses[test] = seen.pop()
            else:
                flaky.add(test)
        return statuses

    before, after = stable(befores), stable(afters)
    return Verdict(
        {t: s for t, s in before.items() if t not in flaky},
        {t: s for t, s in after.items() if t not in flaky},
        sorted(flaky),
    )


def test_command(base: str, files: list[str]) -> str:
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


class TestGeneration(Protocol):
    """Agentic test generation (``agents.testgen``), asked when a PR's tests prove nothing."""

    always: bool

    async def generate(
        self,
        patches: PatchSet,
        environment: Environment,
        prove: Callable[[str, list[str]], Proof],
    ) -> GeneratedTests: ...


@dataclass
class Evaluation:
    """A candidate patch graded against a task's tests."""

    patch_applied: bool
    statuses: dict[str, TestStatus]
    fail_to_pass: list[str]
    pass_to_pass: list[str]

    def failing(self, tests: list[str]) -> list[str]:
        return [t for t in tests if self.statuses.get(t) != "passed"]

    @property
    def resolved(self) -> bool:
        return self.patch_applied and not self.failing(self.fail_to_pass + self.pass_to_pass)


@dataclass
class GeneratedTests:
    test_patch: str
    proof: Proof
    turns: int
    tokens: int


class Validator:
    """The stage's handler: environments, sandbox runs, verdict."""

    def __init__(
        self,
        repos: RepoCache,
        docker_client: Callable[[], Any],
        docker: DockerSettings,
        settings: ValidateSettings,
        pipeline_version: int,
        testgen: TestGeneration | None = None,
    ):
        self.repos = repos
        self._docker_client = docker_client
        self._client: Any = None
        self.docker = docker
        self.settings = settings
        self.pipeline_version = pipeline_version
        self.testgen = testgen
        self._semaphore = asyncio.Semaphore(settings.concurrency)

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

    async def __call__(self, patches: PatchSet) -> Outcome:
        has_tests = bool(patches.test_patch.strip() and patches.test_files)
        if not has_tests and self.testgen is None:
            return Outcome.reject(NO_TESTS)
        async with self._semaphore:
            try:
                environment = await asyncio.to_thread(self.prepare, patches)
                try:
                    task = await self._validate(patches, environment, has_tests)
                finally:
                    await asyncio.to_thread(environment.release)
            except ValidationFailed as failed:
                return Outcome.reject(failed.reason)
        return Outcome.accept(task)

    async def _validate(
        self, patches: PatchSet, environment: Environment, has_tests: bool
    ) -> ValidatedTask:
        if has_tests and not (self.testgen and self.testgen.always):
            try:
                proof = await asyncio.to_thread(
                    self.prove, environment, patches.patch, patches.test_patch, patches.test_files
                )
                return self.task(patches, environment, proof, patches.test_patch)
            except ValidationFailed as failed:
                if self.testgen is None or failed.reason not in (NO_FAIL_TO_PASS, TIMED_OUT):
                    raise

        def prove_generated(test_patch: str, test_files: list[str]) -> Proof:
            # the model wrote these tests: "fails before" must hold as often as "passes after"
            runs = self.settings.runs
            return self.prove(environment, patches.patch, test_patch, test_files, runs)

        assert self.testgen is not None
        generated = await self.testgen.generate(patches, environment, prove_generated)
        return self.task(
            patches,
            environment,
            generated.proof,
            generated.test_patch,
            generated=(generated.turns, generated.tokens),
        )

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
            statuses = self._run(box, command).statuses
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
            befores = [self._run(box, command) for _ in range(before_runs)]
            if not self._apply(box, f"{PATCH_DIR}/fix.patch"):
                raise ValidationFailed(PATCH_FAILS)
            afters = [self._run(box, command) for _ in range(self.settings.runs)]
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

    def _run(self, box: Sandbox, command: str) -> Run:
        result = box.run(command, timeout=self.settings.test_timeout_seconds)
        metrics.VALIDATION_RUN_SECONDS.observe(result.inner_seconds)
        statuses = parse_pytest_output(result.output)
        hung = running_when_killed(result.output) if result.timed_out else None
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
    import docker as docker_sdk

    return docker_sdk.from_env(timeout=DOCKER_READ_TIMEOUT_SECONDS)


def validate_stage(validator: Validator) -> Stage[PatchSet]:
    """The stage around ``validator`` (shared with the harness: one Docker client, one clone
    cache, one image cache)."""
    return Stage(STAGE, PATCHES, VALIDATED, validator, concurrency=validator.settings.concurrency)
