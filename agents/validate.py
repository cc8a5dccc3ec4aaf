"""Stage ``validate``: ``pr.patches`` -> ``tasks.validated``.

A task is only worth exporting if running its tests proves it. In one sandbox container from
the task's instance image (``streams.environments``; no network, CPU / memory / pids limits):

1. apply ``test_patch``, run the test files it touches once: the *before* results;
2. apply ``patch``, run them ``validation.runs`` times (default 3): the *after* results; a test
   whose result changes between runs is flaky and dropped;
3. FAIL_TO_PASS = failed (or errored) before and passed in every after-run;
   PASS_TO_PASS = passed before and in every after-run.

Per-test results come from pytest's ``-v`` / ``-rA`` lines, never from the exit code alone;
each run is killed at ``validation.test_timeout_seconds`` and the test it was in is reported
(``timed_out``). A patch that does not apply is tried as SWE-bench does: ``git apply``, then
with fuzz (``git apply -C1 --ignore-whitespace``), then ``patch --fuzz=5``.

Rejected with a reason: no tests, patch does not apply, no FAIL_TO_PASS, every run timed out,
unsupported language. Image builds that fail raise (DLQ and ledger).
"""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schemas import InstallConfig, PatchSet, ValidatedTask, ValidationReport
from schemas.tasks import TestStatus
from streams import metrics
from streams.environments import EnvironmentBuilder, TreeFiles, detect_recipe
from streams.git import RepoCache
from streams.sandbox import Limits, Sandbox
from streams.settings import DockerSettings, ValidateSettings
from streams.stage import Outcome, Stage
from streams.topics import PATCHES, VALIDATED

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


def judge(before: Run, afters: list[Run]) -> Verdict:
    """Stable after-results only: a test whose status differs between runs is flaky."""
    tests = sorted({t for run in afters for t in run.statuses})
    after: dict[str, TestStatus] = {}
    flaky = []
    for test in tests:
        seen = {run.statuses.get(test, "error") for run in afters}
        if len(seen) == 1:
            after[test] = seen.pop()
        else:
            flaky.append(test)
    before_statuses = {t: s for t, s in before.statuses.items() if t not in flaky}
    return Verdict(before_statuses, after, flaky)


def test_command(base: str, files: list[str]) -> str:
    return " ".join([base, *(shlex.quote(f) for f in files)])


class ValidationFailed(Exception):
    """A rejection found deep inside the sandbox run, with its reason."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class Validator:
    """The stage's handler: environments, sandbox runs, verdict."""

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
        self._semaphore = asyncio.Semaphore(settings.concurrency)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._docker_client()
        return self._client

    async def __call__(self, patches: PatchSet) -> Outcome:
        if not patches.test_patch.strip() or not patches.test_files:
            return Outcome.reject(NO_TESTS)  # agentic test generation (when enabled) goes here
        async with self._semaphore:
            try:
                task = await asyncio.to_thread(self.validate, patches)
            except ValidationFailed as failed:
                return Outcome.reject(failed.reason)
        return Outcome.accept(task)

    def validate(self, patches: PatchSet) -> ValidatedTask:
        """Blocking: build or reuse the images, run the tests, judge them."""
        self.repos.ensure(patches.repo, patches.base_commit)
        tree = TreeFiles(self.repos.archive(patches.repo, patches.base_commit))
        recipe = detect_recipe(tree)
        if recipe is None:
            raise ValidationFailed(UNSUPPORTED, "no install recipe recognises the repository")
        builder = EnvironmentBuilder(self.client, self.docker.base_image, self.docker.cache_level)
        env = builder.env_image(patches.repo, recipe)
        instance = builder.instance_image(patches.instance_id, env, tree, recipe)
        limits = Limits(self.docker.memory_mb, self.docker.cpus, self.docker.pids_limit)
        command = test_command(recipe.test_command, patches.test_files)
        started = time.monotonic()
        try:
            with Sandbox(
                self.client, instance.tag, limits, environment={"PYTHONUNBUFFERED": "1"}
            ) as box:
                box.put_file(f"{PATCH_DIR}/test.patch", patches.test_patch)
                box.put_file(f"{PATCH_DIR}/fix.patch", patches.patch)
                if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                    raise ValidationFailed(TEST_PATCH_FAILS)
                before = self._run(box, command)
                if not self._apply(box, f"{PATCH_DIR}/fix.patch"):
                    raise ValidationFailed(PATCH_FAILS)
                afters = [self._run(box, command) for _ in range(self.settings.runs)]
        finally:
            builder.release(env, instance)
        runs = [before, *afters]
        verdict = judge(before, afters)
        report = ValidationReport(
            image=instance.tag,
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
            raise ValidationFailed(TIMED_OUT if everything_timed_out else NO_FAIL_TO_PASS)
        checks = [test_command(recipe.test_command, [test]) for test in fail_to_pass + pass_to_pass]
        return ValidatedTask(
            pipeline_version=self.pipeline_version,
            number=patches.number,
            repo=patches.repo,
            instance_id=patches.instance_id,
            base_commit=patches.base_commit,
            patch=patches.patch,
            test_patch=patches.test_patch,
            problem_statement=patches.problem_statement,
            hints_text=patches.hints_text,
            created_at=patches.created_at,
            version=patches.version,
            FAIL_TO_PASS=fail_to_pass,
            PASS_TO_PASS=pass_to_pass,
            environment_setup_commit=patches.environment_setup_commit,
            validation=report,
            classification=patches.classification,
            difficulty_score=patches.score,
            install_config=InstallConfig(
                language=recipe.language,
                base_image=self.docker.base_image,
                env_image=env.tag,
                instance_image=instance.tag,
                install_commands=list(recipe.install_commands),
                test_command=recipe.test_command,
            ),
            checks=checks,
        )

    def _apply(self, box: Sandbox, path: str) -> bool:
        for template in APPLY_COMMANDS:
            result = box.run(template.format(path=path), timeout=120)
            if result.exit_code == 0:
                return True
        return False

    def _run(self, box: Sandbox, command: str) -> Run:
        result = box.run(command, timeout=self.settings.test_timeout_seconds)
        metrics.VALIDATION_RUN_SECONDS.observe(result.inner_seconds)
        statuses = parse_pytest_output(result.output)
        hung = running_when_killed(result.output) if result.timed_out else None
        if hung:
            statuses[hung] = "error"
        return Run(statuses, result.inner_seconds, result.timed_out, hung)


def validate_stage(
    settings: ValidateSettings,
    docker: DockerSettings,
    repos: RepoCache,
    pipeline_version: int,
    docker_client: Callable[[], Any] | None = None,
) -> Stage[PatchSet]:
    def from_env() -> Any:
        import docker as docker_sdk

        return docker_sdk.from_env(timeout=600)

    validator = Validator(repos, docker_client or from_env, docker, settings, pipeline_version)
    return Stage(STAGE, PATCHES, VALIDATED, validator, concurrency=settings.concurrency)
