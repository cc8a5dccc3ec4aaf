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

import dataclasses
import logging
import re
import shlex
import time
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas import InstallConfig, PatchSet, ValidatedTask, ValidationReport
from schemas.tasks import TestStatus
from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.core import metrics
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.environments import BuiltImage, EnvironmentBuilder, ImageBuildError
from streams.evaluation.grading import Evaluation, Run, Verdict, judge, recipe_problem
from streams.evaluation.images import base_image_exists
from streams.evaluation.log_parsers import (
    RUNNER_COMMANDS,
    LogParser,
    check_command,
    file_of,
    log_parser,
    merge_statuses,
    parse_report,
    with_files,
)
from streams.evaluation.recipes.infer import (
    NO_NODE,
    NO_PYTHON,
    NO_RUNNER,
    Inputs,
    infer_recipes,
    language_of,
    runnable,
)
from streams.evaluation.recipes.languages.javascript.recipe import tests_of_helpers
from streams.evaluation.recipes.memory import (
    RecipeTable,
    as_override,
    dependency_fingerprint,
    layered,
    trusted,
)
from streams.evaluation.recipes.model import (
    JS_LANGUAGES,
    InstallRecipe,
    RecipeOrigin,
    TreeFiles,
    node_of_sources,
)
from streams.evaluation.recipes.overrides import (
    WRONG_INTERPRETER,
    Overrides,
    RepositoryOverride,
    interpreter_problem,
)
from streams.evaluation.sandbox import Limits, Sandbox, remove_orphans
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace

log = logging.getLogger("swe_stream.validator")

NO_TESTS = "no_tests"
TEST_PATCH_FAILS = "test_patch_does_not_apply"
PATCH_FAILS = "patch_does_not_apply"
NO_FAIL_TO_PASS = "no_fail_to_pass"
TIMED_OUT = "tests_timed_out"
UNSUPPORTED = "unsupported_language"
INSTALL_FAILED = "install_failed"  # an env or instance build step failed
TESTS_DID_NOT_RUN = "tests_did_not_run"  # no test result at all (usage/collection error)
TESTS_FAIL_AFTER_FIX = "tests_fail_after_fix"  # results, but none passed with the fix
TESTS_SKIPPED = "tests_skipped"  # every touched test skipped, with the fix too
SUBMODULE_MISSING = "submodule_missing"  # tests did not run, a submodule is not there
# NO_PYTHON (requires-python excludes every Python image), NO_NODE (engines.node every Node
# image), NO_RUNNER (the test script runs no runner a log parser reads): ``recipes.infer``
RECIPE_REJECTED = "recipe_rejected"  # a recipe verified from scratch did not run the tests
# reasons another Python may not have: the next plausible one is tried
ENVIRONMENT_REASONS = frozenset({TESTS_DID_NOT_RUN, TESTS_FAIL_AFTER_FIX})
TAIL_CHARS = 1500  # of a failing build step's or test run's output, in a reason's detail

PATCH_DIR = "/tmp/swe-stream"
APPLY_COMMANDS = (
    "git apply --verbose {path}",
    "git apply --verbose --ignore-whitespace -C1 {path}",  # fuzz: one line of context
    "patch --batch --forward --fuzz=5 -p1 -i {path}",
)


RUN_VARIABLES = {"PYTHONUNBUFFERED": "1"}
# One exec argument is at most 128 KiB (MAX_ARG_STRLEN): a longer test command (thousands of
# test files) runs from a script file, whose words the shell hands to the runner as argv
SCRIPT_AFTER_CHARS = 32_000
TEST_SCRIPT = f"{PATCH_DIR}/run-tests.sh"


@dataclass(frozen=True)
class ReportFile:
    """Where a runner writes its machine-readable report, and the arguments that ask for it."""

    path: str
    arguments: str


REPORTS = {
    # xunit1 keeps each test's file, so node ids can be rebuilt exactly
    "junit": ReportFile(
        f"{PATCH_DIR}/report.xml", f"--junitxml={PATCH_DIR}/report.xml -o junit_family=xunit1"
    ),
}


REJECTIONS = (NO_NODE, NO_PYTHON, NO_RUNNER)  # the language-specific reasons of ``recipes``


def report_file(runner: str, parser: LogParser) -> ReportFile | None:
    """Where ``runner`` writes its report and the arguments appended after the test files:
    pytest's from ``REPORTS``, a JavaScript runner's from ``RUNNER_COMMANDS`` (the recipe
    gave it its console options from the same table); None when it writes none, or only
    with arguments before its files (node: its console, swe-stream's reporter, is read)."""
    if parser.report is None:
        return None
    if parser.report in REPORTS:
        return REPORTS[parser.report]
    command = RUNNER_COMMANDS.get(runner)
    if command is None or command.report_arguments is None or command.report_before_files:
        return None
    path = f"{PATCH_DIR}/report.{parser.report}"
    return ReportFile(path, command.report_arguments.replace("{path}", shlex.quote(path)))


REPORT_MARKER = "__swe_stream_report_7c1e__"
RUN_OUTPUT_LIMIT = 64 << 20  # of a test run's stdout, its report included


def split_report(stdout: str) -> tuple[str, str]:
    """A run's stdout as (the runner's log, the report printed after ``REPORT_MARKER``); no
    marker (the run was killed first): all log, no report."""
    log_text, marker, report_text = stdout.rpartition(f"\n{REPORT_MARKER}\n")
    if not marker:
        return stdout, ""
    return log_text + "\n", report_text


def read_report(kind: str, text: str) -> dict[str, TestStatus] | None:
    """The statuses of a run's machine-readable report, or None (not written: the run died
    before, or the runner could not write it)."""
    if not text.strip():
        return None
    try:
        return parse_report(kind, text.encode())
    except ValueError as exc:
        log.info("unreadable %s report: %s", kind, exc)
        return None


def why_no_fail_to_pass(
    recipe: InstallRecipe, verdict: Verdict, befores: list[Run], afters: list[Run]
) -> ValidationFailed:
    """The rejection of a proof without FAIL_TO_PASS: what the runs showed, in a reason that
    says which of "it did not run", "nothing passes", "all skipped", "already passing" it
    was, with the counts and the last run's output tail."""
    runs = [*befores, *afters]
    last = afters[-1] if afters else befores[-1]
    shown = f"before the fix: {counts(verdict.before)}; after: {counts(verdict.after)}"
    ended = f"exit code {last.exit_code}" + (", timed out" if last.timed_out else "")
    output = tail(last.output)
    if all(run.timed_out for run in runs):
        return ValidationFailed(TIMED_OUT, f"{shown}; every run timed out\n{output}")
    after = set(verdict.after.values())
    if not verdict.after:
        reason = TESTS_DID_NOT_RUN
        if any("submodule" in note for note in recipe.notes):
            reason = SUBMODULE_MISSING
        notes = "; ".join(recipe.notes)
        return ValidationFailed(
            reason, f"no test result ({ended}){'; ' + notes if notes else ''}\n{output}"
        )
    if after == {"skipped"}:
        steps = f"; pre-test steps: {list(recipe.pre_test_commands)}"
        return ValidationFailed(TESTS_SKIPPED, f"{shown}{steps}\n{output}")
    if "passed" not in after:
        return ValidationFailed(TESTS_FAIL_AFTER_FIX, f"{shown} ({ended})\n{output}")
    return ValidationFailed(NO_FAIL_TO_PASS, shown, tests_ran=len(verdict.after))


def own_sources(recipe: InstallRecipe, user: RepositoryOverride | None) -> tuple[str, ...]:
    """``recipe``'s sources, "override" only when the user's override file took part (a
    remembered or submitted change is applied the way an override is, and says so itself)."""
    return tuple(s for s in recipe.sources if s != "override" or user is not None)


def runnable_test_files(environment: Environment, files: list[str]) -> list[str]:
    """The test files to run for a PR's ``files``: a JS/TS test-named file that defines no
    test replaced by the test files importing it (``js_recipe.tests_of_helpers``)."""
    if not environment.recipe.is_js:
        return files
    tree = environment.tree
    return tests_of_helpers(tree.names, tree.read, files)


def test_command(base: str, files: list[str]) -> str:
    """The recipe's test command run on ``files`` (shell-quoted)."""
    return " ".join([base, *(shlex.quote(f) for f in files)])


class ValidationFailed(Exception):
    """A rejection found deep inside the sandbox run, with its reason (a short code for
    metrics and filters) and its detail (for people: the step, the counts, a log tail)."""

    def __init__(self, reason: str, detail: str = "", tests_ran: int = 0):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        # tests with a status after the fix: the environment worked although the PR did not
        self.tests_ran = tests_ran


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, from a line start where possible."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    return "..." + (cut[cut.index("\n") :] if "\n" in cut[:200] else cut)


def counts(statuses: dict[str, TestStatus]) -> str:
    """``3 passed, 1 failed`` (statuses by number, most first)."""
    tally = Counter(statuses.values())
    return ", ".join(f"{n} {status}" for status, n in tally.most_common()) or "no results"


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
        overrides: Overrides | None = None,
        memory: RecipeTable | None = None,
    ):
        self.memory = memory  # the recipes that worked (None: nothing remembered)
        self.repos = repos
        self._docker_client = docker_client
        self._client: Any = None
        self.docker = docker
        self.settings = settings
        self.pipeline_version = pipeline_version
        self.overrides = overrides if overrides is not None else Overrides()

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

    def engine_answers(self, timeout: float = 5.0) -> bool:
        """Blocking: whether the Docker engine answers now (``/_ping`` within ``timeout``).
        Asked after a failure, to tell an outage (no verdict: wait for the engine) from a
        failure of the task itself."""
        try:
            api = self.client.api
            # the client's own reads wait a day (DOCKER_READ_TIMEOUT_SECONDS): a short one here
            return bool(api._result(api._get(api._url("/_ping"), timeout=timeout)) == "OK")
        except Exception as error:  # refused, reset, timed out, or no client could be made
            log.debug("the Docker engine does not answer: %s", error)
            return False

    @property
    def limits(self) -> Limits:
        return Limits.from_settings(self.docker)

    def tree(self, repo: str, base_commit: str) -> TreeFiles:
        """Blocking: ``repo``'s files at ``base_commit`` (cloned, or reused)."""
        self.repos.ensure(repo, base_commit)
        archive, problems = self.repos.archive_with_submodules(repo, base_commit)
        for problem in problems:
            log.info("%s: %s", repo, problem)
        return TreeFiles(archive)

    def recipes(
        self,
        repo: str,
        base_commit: str,
        created_at: datetime | None = None,
        changed_files: Sequence[str] = (),
    ) -> tuple[TreeFiles, list[InstallRecipe]]:
        """Blocking: clone (or reuse) ``repo`` and the recipes to try at ``base_commit``, best
        first: the remembered ones (``remembered_recipes``), then inference's (at most
        ``validation.max_python_attempts``), by the language of the tree (``LANGUAGES``;
        ``changed_files``: the PR's, which pick a JavaScript workspace's package)."""
        tree = self.tree(repo, base_commit)
        override = self.overrides.lookup(repo)
        # one look at the engine for every recipe made here
        images, nodes = self.python_images(), self.node_images()
        language = language_of(tree)
        recipes, facts = self.inferred(
            repo, base_commit, tree, created_at, override, images, changed_files, nodes
        )
        if facts is None or language is None:
            raise ValidationFailed(
                UNSUPPORTED,
                "no install recipe recognises the repository (no Python project files, no "
                "package.json)",
            )
        remembered = self.remembered_recipes(
            repo, base_commit, tree, created_at, override, images, changed_files, nodes
        )
        if not recipes and not remembered:
            inputs = Inputs(repo=repo, python_images=images, node_images=nodes)
            reason, detail = language.no_recipe(facts, inputs)
            raise ValidationFailed(reason, detail)
        if not remembered and not any(runnable(r) for r in recipes):
            notes = "; ".join(dict.fromkeys(n for r in recipes for n in r.notes))
            raise ValidationFailed(
                NO_RUNNER,
                f"{language.name}: no test runner swe-stream reads "
                f"({recipes[0].test_command!r}){'; ' + notes if notes else ''}",
            )
        inferred = [r for r in recipes[: self.settings.max_python_attempts] if r not in remembered]
        return tree, [*remembered, *inferred]

    def inferred(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        override: RepositoryOverride | None,
        images: dict[str, str] | None = None,
        changed_files: Sequence[str] = (),
        nodes: dict[str, str] | None = None,
    ) -> tuple[list[InstallRecipe], Any]:
        """Inference's recipes for ``tree`` with ``override`` applied (``infer_recipes``), on
        the Pythons of ``images`` (default: those on the engine) or the Node images on the
        engine, as the tree's language wants."""
        return infer_recipes(
            tree,
            repo=repo,
            python_images=self.python_images() if images is None else images,
            node_images=self.node_images() if nodes is None else nodes,
            created_at=created_at,
            release_tag=lambda: self.repos.release_tag(repo, base_commit),
            override=override,
            changed_files=changed_files,
        )

    def remembered_recipes(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        override: RepositoryOverride | None,
        images: dict[str, str],
        changed_files: Sequence[str] = (),
        nodes: dict[str, str] | None = None,
    ) -> list[InstallRecipe]:
        """The recipes the memory holds for this commit of ``repo`` (its own dependency
        files' entry, then the repository's latest other one), made again by inference at
        this commit with their changes over it; the user's override file still wins."""
        if self.memory is None:
            return []
        fingerprint = dependency_fingerprint(tree)
        entries = self.memory.candidates(repo, fingerprint)
        own = bool(entries) and entries[0].fingerprint == fingerprint
        result = "hit" if own else "repository" if entries else "miss"
        metrics.RECIPE_MEMORY_LOOKUPS.labels(result=result).inc()
        recipes: list[InstallRecipe] = []
        for entry in entries:
            if entry.python and images and entry.python not in images:
                log.info("%s: remembered recipe needs python %s, not built", repo, entry.python)
                continue
            change = as_override(entry)
            layers = layered(change, override)
            made, _ = self.inferred(
                repo, base_commit, tree, created_at, layers, images, changed_files, nodes
            )
            if not made:
                continue
            origin = RecipeOrigin(
                entry.source,
                change.model_dump(exclude_none=True, exclude={"python"}),
                remembered=True,
                trusted=trusted(entry, self.pipeline_version),
            )
            sources = (*own_sources(made[0], override), f"memory:{entry.source}")
            recipe = dataclasses.replace(made[0], sources=sources, origin=origin)
            if recipe not in recipes:
                recipes.append(recipe)
        return recipes

    def recipe_with(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        change: RepositoryOverride,
        source: str,
        changed_files: Sequence[str] = (),
    ) -> InstallRecipe:
        """Inference's recipe with ``change`` over it (a setup agent's submission), the
        user's override file still winning (``changed_files``: the PR's, which pick a
        JavaScript workspace's package); ValidationFailed when it names the other language's
        interpreter (``interpreter_problem``), a Python with no base image (no_python) or a
        Node major with no image (no_node_for_engines)."""
        language = language_of(tree)
        problem = interpreter_problem(language.name, change) if language else None
        if problem:
            raise ValidationFailed(WRONG_INTERPRETER, problem)
        images, nodes = self.python_images(), self.node_images()
        if change.python and images and change.python not in images:
            raise ValidationFailed(
                NO_PYTHON, f"no base image for python {change.python}; built: {sorted(images)}"
            )
        if change.node is not None and change.node not in nodes:
            built = ", ".join(sorted(nodes, key=int)) or "none"
            raise ValidationFailed(NO_NODE, f"no image for node {change.node}; built: {built}")
        user = self.overrides.lookup(repo)
        layers = layered(change, user)
        made, _ = self.inferred(
            repo, base_commit, tree, created_at, layers, images, changed_files, nodes
        )
        if not made:
            raise ValidationFailed(UNSUPPORTED, "no install recipe recognises the repository")
        interpreter = {"python", "node"}  # the recipe's own, not part of its change
        origin = RecipeOrigin(source, change.model_dump(exclude_none=True, exclude=interpreter))
        sources = (*own_sources(made[0], user), source)
        return dataclasses.replace(made[0], sources=sources, origin=origin)

    def python_images(self) -> dict[str, str]:
        """The Pythons whose base image is on the engine (``docker.python_images``); when
        none is, the default base image, as whatever Python it has."""
        present = {
            python: tag
            for python, tag in self.docker.python_images.items()
            if base_image_exists(self.client, tag)
        }
        if not present:
            log.warning(
                "none of the base images %s is built (swe-stream images base --all): "
                "validating on %s",
                sorted(self.docker.python_images.values()),
                self.docker.base_image,
            )
        return present

    def node_images(self) -> dict[str, str]:
        """The Node majors whose image is on the engine (``docker.node_images``; built by
        ``swe-stream images base --node``); none: the default base image, whatever Node the
        recipe finds there."""
        return {
            major: tag
            for major, tag in self.docker.node_images.items()
            if base_image_exists(self.client, tag)
        }

    def builder(self, fresh: bool = False) -> EnvironmentBuilder:
        return EnvironmentBuilder(
            self.client,
            self.docker.base_image,
            self.docker.cache_level,
            self.docker.package_cache,
            self.docker.build_step_timeout_seconds,
            fresh=fresh,
        )

    def build(
        self,
        repo: str,
        instance_id: str,
        tree: TreeFiles,
        recipe: InstallRecipe,
        fresh: bool = False,
    ) -> Environment:
        """Blocking: the env and instance images of ``recipe`` (built, or reused; ``fresh``:
        built again even where they exist)."""
        builder = self.builder(fresh)
        env = builder.env_image(repo, recipe)
        try:
            instance = builder.instance_image(instance_id, env, tree, recipe)
        except BaseException:
            builder.release(env, None)
            raise
        return Environment(tree, recipe, env, instance, builder)

    def exploration(
        self, repo: str, instance_id: str, tree: TreeFiles, recipe: InstallRecipe
    ) -> Environment:
        """Blocking: where a setup agent starts: the images of ``recipe`` when they build,
        else the repository at the base commit on the tools layer (a venv, pip, uv, git)
        with nothing installed."""
        try:
            return self.build(repo, instance_id, tree, recipe)
        except ImageBuildError as exc:
            if not exc.step:
                raise
        builder = self.builder()
        tools = builder.tools_image(recipe.base_image or self.docker.base_image)
        bare = dataclasses.replace(recipe, install_commands=(), pre_test_commands=())
        instance = builder.instance_image(f"{instance_id}-explore", tools, tree, bare)
        return Environment(tree, bare, tools, instance, builder)

    def verify(self, environment: Environment, test_patch: str, test_files: list[str]) -> int:
        """Blocking: whether ``environment`` runs the PR's touched test files at the base
        commit with per-test statuses (those the base commit has; all of them with the test
        patch applied when it has none); the number of tests with a status, or
        ValidationFailed(recipe_rejected) saying what the run showed."""
        existing = [f for f in test_files if environment.tree.has(f)]
        files = runnable_test_files(environment, existing or test_files)
        command = test_command(environment.recipe.test_command, files)
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            if not existing and test_patch.strip():
                box.put_file(f"{PATCH_DIR}/test.patch", test_patch)
                if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                    raise ValidationFailed(TEST_PATCH_FAILS)
            run = self.run_tests(box, command, environment.recipe.test_runner, files=files)
        problem = recipe_problem(run.statuses)
        if problem:
            ended = f"exit code {run.exit_code}" + (", timed out" if run.timed_out else "")
            raise ValidationFailed(
                RECIPE_REJECTED, f"{problem} ({ended}; `{command}`)\n{tail(run.output)}"
            )
        return len(run.statuses)

    def environments(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
        changed_files: Sequence[str] = (),
    ) -> Generator[Environment, None, None]:
        """Blocking: an environment per recipe that installs, best first (``built``)."""
        tree, recipes = self.recipes(repo, base_commit, created_at, changed_files)
        if prefer_python is not None:
            recipes.sort(key=lambda recipe: recipe.python != prefer_python)
        yield from self.built(repo, instance_id, tree, recipes)

    def built(
        self, repo: str, instance_id: str, tree: TreeFiles, recipes: list[InstallRecipe]
    ) -> Generator[Environment, None, None]:
        """Blocking: the environment of each of ``recipes`` that installs, in order; the
        consumer releases each. Raises ValidationFailed(install_failed) once none has
        installed (with every attempt's failed step and log tail)."""
        failures: list[str] = []
        built = 0
        for recipe in recipes:
            try:
                environment = self.build(repo, instance_id, tree, recipe)
            except ImageBuildError as exc:
                if not exc.step:  # the engine's trouble (a missing base image), not the recipe's
                    raise
                failures.append(
                    f"{recipe.interpreter} ({', '.join(recipe.sources)}): {exc.layer} step "
                    f"`{exc.step}` failed:\n"
                    + tail(exc.log_tail, TAIL_CHARS // max(1, len(recipes)))
                )
                log.info("%s: %s does not install: %s", repo, recipe.interpreter, exc.step)
                continue
            built += 1
            yield environment
        if not built:
            raise ValidationFailed(INSTALL_FAILED, "\n".join(failures))

    def environment(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
    ) -> Environment:
        """Blocking: clone (or reuse) ``repo``, and build (or reuse) the images of the first
        recipe that installs."""
        candidates = self.environments(repo, base_commit, instance_id, created_at, prefer_python)
        environment = next(candidates)
        candidates.close()
        return environment

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
        files = sorted({file_of(test) or test for test in tests})
        command = test_command(environment.recipe.test_command, files)
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            box.put_files(
                {f"{PATCH_DIR}/candidate.patch": candidate, f"{PATCH_DIR}/test.patch": test_patch}
            )
            if candidate.strip() and not self._apply(box, f"{PATCH_DIR}/candidate.patch"):
                return Evaluation(False, {}, fail_to_pass, pass_to_pass)
            rebuild_after(box, environment.recipe, candidate)
            if test_patch.strip() and not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            runner = environment.recipe.test_runner
            statuses = self.run_tests(box, command, runner, files=files).statuses
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
        test_files = runnable_test_files(environment, test_files)
        command = test_command(environment.recipe.test_command, test_files)
        started = time.monotonic()
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            box.put_files({f"{PATCH_DIR}/test.patch": test_patch, f"{PATCH_DIR}/fix.patch": fix})
            if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            runner = environment.recipe.test_runner
            befores = [
                self.run_tests(box, command, runner, files=test_files) for _ in range(before_runs)
            ]
            if not self._apply(box, f"{PATCH_DIR}/fix.patch"):
                raise ValidationFailed(PATCH_FAILS)
            rebuild_after(box, environment.recipe, fix)
            afters = [
                self.run_tests(box, command, runner, files=test_files)
                for _ in range(self.settings.runs)
            ]
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
            exit_codes=[r.exit_code for r in runs],
            contradictions=[
                f"run {n}: {r.contradiction}" for n, r in enumerate(runs, 1) if r.contradiction
            ],
        )
        fail_to_pass, pass_to_pass = report.fail_to_pass(), report.pass_to_pass()
        if not fail_to_pass:
            raise why_no_fail_to_pass(environment.recipe, verdict, befores, afters)
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
                base_image=recipe.base_image or self.docker.base_image,
                env_image=environment.env.tag,
                instance_image=environment.instance.tag,
                install_commands=list(recipe.install_commands),
                test_command=recipe.test_command,
                python=recipe.python,
                test_runner=recipe.test_runner,
                system_packages=list(recipe.system_packages),
                env_commands=list(recipe.env_commands),
                pre_test_commands=list(recipe.pre_test_commands),
                environment=recipe.variables,
                recipe=list(recipe.sources),
                remote=self.repos.public_url(patches.repo),
            ),
            checks=[check_command(recipe.test_command, recipe.test_runner, t) for t in tests],
        )

    def _apply(self, box: Sandbox, path: str) -> bool:
        return apply_patch(box, path)

    def run_tests(
        self,
        box: Sandbox,
        command: str,
        runner: str,
        timeout: float | None = None,
        files: Sequence[str] = (),
    ) -> Run:
        """One run of ``command`` in ``box`` (killed at ``timeout``, default
        ``validation.test_timeout_seconds``): per-test statuses from ``runner``'s report and
        log, the exit code, and whether the two contradict each other (logged, counted).
        ``files``: the test files it runs, put in the ids of a JS runner that names none."""
        parser = log_parser(runner)
        report = report_file(runner, parser)
        if report is not None:
            # the report is printed after the run, in the same exec, behind a marker line
            command = (
                f"rm -f {report.path}; {command} {report.arguments}; rc=$?; "
                f"echo; echo {REPORT_MARKER}; cat {report.path} 2>/dev/null; exit $rc"
            )
        if len(command) > SCRIPT_AFTER_CHARS:
            box.put_file(TEST_SCRIPT, command + "\n")
            command = f"sh {TEST_SCRIPT}"
        result = box.run(
            command,
            timeout=timeout or self.settings.test_timeout_seconds,
            output_limit=RUN_OUTPUT_LIMIT,
        )
        metrics.VALIDATION_RUN_SECONDS.observe(result.inner_seconds)
        log_text, report_text = split_report(result.stdout)
        output = log_text + result.stderr
        statuses = parser.parse(output)
        if report is not None and parser.report is not None:
            statuses = merge_statuses(read_report(parser.report, report_text), statuses)
        if runner in RUNNER_COMMANDS:  # ava, mocha's console: ids without their file
            statuses = with_files(statuses, list(files))
        hung = parser.running_when_killed(output) if result.timed_out else None
        if hung:
            statuses[hung] = "error"
        run = Run(
            statuses,
            result.inner_seconds,
            result.timed_out,
            hung,
            exit_code=result.exit_code,
            output=tail(output, 4 * TAIL_CHARS),
        )
        if run.contradiction:
            metrics.TEST_EXIT_CONTRADICTIONS.inc()
            log.warning("test run contradicts itself: %s (%s)", run.contradiction, command[:200])
        return run


_COMPILED_SOURCE = re.compile(
    r"^diff --git a/\S+\.(?:c|h|cc|cpp|cxx|hpp|pyx|pxd|pxi|f|f90|rs)\s", re.MULTILINE
)
# JavaScript / TypeScript the tests load from a build (dist/, lib/cjs/): the recipe's build
# steps run again after a patch that changes sources
_JS_SOURCE = re.compile(r"^diff --git a/\S+\.(?:[cm]?[jt]sx?|vue|svelte)\s", re.MULTILINE)
REBUILD_FAILED = "rebuild_failed"


def touches_compiled_sources(patch: str, language: str = "Python") -> bool:
    """Whether ``patch`` changes a source file of a compiled extension (or, for JavaScript /
    TypeScript, a source file of the build the tests load)."""
    if language in JS_LANGUAGES and _JS_SOURCE.search(patch):
        return True
    return bool(_COMPILED_SOURCE.search(patch))


def rebuild_after(box: Sandbox, recipe: InstallRecipe, patch: str, timeout: float = 900) -> None:
    """Rebuild the compiled extensions in place when ``patch`` changed their sources (the
    images hold what the base commit's sources built into); ValidationFailed when the
    rebuild fails."""
    if not recipe.rebuild_commands or not touches_compiled_sources(patch, recipe.language):
        return
    for command in recipe.rebuild_commands:
        result = box.run(command, timeout=timeout)
        if result.exit_code != 0:
            raise ValidationFailed(
                REBUILD_FAILED, f"`{command}` exited {result.exit_code}\n{tail(result.output)}"
            )


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


def task_recipe_change(config: dict[str, Any]) -> RepositoryOverride | None:
    """The recipe an exported task was validated with (its ``install_config``), as a change
    over inference: what the setup agent, the memory or an override added is in the task
    itself, so the task builds the same anywhere. None for a task without one."""
    if not config.get("test_command"):
        return None
    # a JS task's Node major is its recipe's ``node:N`` source
    node = node_of_sources(config.get("recipe") or [])
    try:
        return RepositoryOverride(
            python=config.get("python"),
            node=node,
            system_packages=config.get("system_packages"),
            env=config.get("env_commands"),
            install=config.get("install_commands"),
            pre_test=config.get("pre_test_commands"),
            test_command=config.get("test_command"),
            test_runner=config.get("test_runner"),
            environment=config.get("environment") or None,
        )
    except ValidationError as exc:
        log.info("install_config not usable as a recipe, inferring one: %s", exc)
        return None


def task_environment(validator: Validator, task: TaskWorkspace) -> Environment:
    """Blocking: the environment of an exported task: its own recipe (``task_recipe_change``)
    when it has one, else the first inferred that installs, on the Python it was validated on."""
    try:
        created_at: datetime | None = datetime.fromisoformat(task.created_at)
    except ValueError:
        created_at = None
    remote = task.install_config.get("remote")
    if isinstance(remote, str) and remote:
        validator.repos.use_remote(task.repo, remote)
    change = task_recipe_change(task.install_config)
    if change is not None:
        tree = validator.tree(task.repo, task.base_commit)
        try:
            recipe = validator.recipe_with(
                task.repo, task.base_commit, tree, created_at, change, "task"
            )
        except ValidationFailed as failed:  # its Python is not built here, say
            log.info("%s: the task's recipe cannot be used (%s); inferring one", task.id, failed)
        else:
            return validator.build(task.repo, task.instance_id, tree, recipe)
    python = task.install_config.get("python")
    return validator.environment(
        task.repo,
        task.base_commit,
        task.instance_id,
        created_at,
        python if isinstance(python, str) else None,
    )


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
            environment = task_environment(validator, task)
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
