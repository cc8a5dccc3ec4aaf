"""The validator: a task proven by running its tests in Docker, and a patch graded against them.

``Validator`` is the one object the stages, the harness and the commands hold: a façade over
three parts, each usable alone, that share its Docker client (made on first use) and clones:

- the **recipe chooser** (``streams.evaluation.recipe_chooser``): the tree at a commit and
  the install recipes to try there, best first (remembered, inferred with the overrides, a
  given change over inference), on the interpreter images the engine has;
- the **image provisioner** (``streams.evaluation.provisioner``): a recipe's images, built or
  reused, as an ``Environment`` whose sandboxes the tests run in;
- the **prover** (``streams.evaluation.prover``): the tests run before and after the fix and
  judged (FAIL_TO_PASS / PASS_TO_PASS), a candidate patch graded, a recipe verified.

Failures that reject a task raise ``ValidationFailed`` with its reason
(``streams.evaluation.reasons``): patch does not apply, no FAIL_TO_PASS, every run timed out,
unsupported language. Image builds that fail raise. What the parts define is importable from
here too (``__all__``), where callers have always found it. Here besides: an exported task's
environment (``task_environment``) and their re-validation (``validate_task_dirs``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from pydantic import ValidationError

from schemas import PatchSet, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.core import metrics
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.environments import BuiltImage, EnvironmentBuilder
from streams.evaluation.grading import Evaluation, Run
from streams.evaluation.prover import (
    APPLY_COMMANDS,
    PATCH_DIR,
    REPORT_MARKER,
    RUN_OUTPUT_LIMIT,
    RUN_VARIABLES,
    SCRIPT_AFTER_CHARS,
    TEST_SCRIPT,
    GeneratedTests,
    Proof,
    Prover,
    ReportFile,
    apply_patch,
    counts,
    read_report,
    rebuild_after,
    report_file,
    runnable_test_files,
    split_report,
    test_command,
    touches_compiled_sources,
    why_no_fail_to_pass,
)
from streams.evaluation.provisioner import Environment, ImageProvisioner
from streams.evaluation.reasons import (
    ENVIRONMENT_REASONS,
    INSTALL_FAILED,
    NO_FAIL_TO_PASS,
    NO_TESTS,
    PATCH_FAILS,
    REBUILD_FAILED,
    RECIPE_REJECTED,
    SUBMODULE_MISSING,
    TAIL_CHARS,
    TEST_PATCH_FAILS,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
    TESTS_SKIPPED,
    TIMED_OUT,
    UNSUPPORTED,
    ValidationFailed,
    tail,
)
from streams.evaluation.recipe_chooser import RecipeChooser, own_sources
from streams.evaluation.recipes.infer import NO_RUNNER
from streams.evaluation.recipes.languages import languages, toolchains
from streams.evaluation.recipes.memory import RecipeTable, interpreter_fields
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import Overrides, RepositoryOverride
from streams.evaluation.registry import local_or_pulled
from streams.evaluation.sandbox import Limits, Sandbox, remove_orphans
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace

# what callers import from here, wherever it is defined now
__all__ = [
    "APPLY_COMMANDS",
    "DOCKER_READ_TIMEOUT_SECONDS",
    "ENVIRONMENT_REASONS",
    "INSTALL_FAILED",
    "NO_FAIL_TO_PASS",
    "NO_RUNNER",
    "NO_TESTS",
    "PATCH_DIR",
    "PATCH_FAILS",
    "REBUILD_FAILED",
    "RECIPE_REJECTED",
    "REPORT_MARKER",
    "RUN_OUTPUT_LIMIT",
    "RUN_VARIABLES",
    "SCRIPT_AFTER_CHARS",
    "SUBMODULE_MISSING",
    "TAIL_CHARS",
    "TESTS_DID_NOT_RUN",
    "TESTS_FAIL_AFTER_FIX",
    "TESTS_SKIPPED",
    "TEST_PATCH_FAILS",
    "TEST_SCRIPT",
    "TIMED_OUT",
    "UNSUPPORTED",
    "Environment",
    "GeneratedTests",
    "Proof",
    "ReportFile",
    "ValidationFailed",
    "Validator",
    "apply_patch",
    "counts",
    "docker_from_env",
    "own_sources",
    "read_report",
    "rebuild_after",
    "report_file",
    "runnable_test_files",
    "split_report",
    "tail",
    "task_environment",
    "task_recipe_change",
    "test_command",
    "touches_compiled_sources",
    "validate_task_dirs",
    "why_no_fail_to_pass",
]

log = logging.getLogger("swe_stream.validator")

T = TypeVar("T")


class Delegated(Generic[T]):
    """An attribute of the façade that lives on its parts: read from the first of
    ``holders``, set on every one of them. What is set through the façade thus reaches the
    code that uses it, as when it was one object: a replay's ``pipeline_version``, or the
    offline tests' ``tree`` and images, which the chooser's ``recipes`` calls."""

    def __init__(self, *holders: str) -> None:
        self.holders = holders
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Delegated[T]: ...

    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> T: ...

    def __get__(self, obj: object | None, objtype: type | None = None) -> T | Delegated[T]:
        if obj is None:
            return self
        value: T = getattr(getattr(obj, self.holders[0]), self.name)
        return value

    def __set__(self, obj: object, value: T) -> None:
        for holder in self.holders:
            setattr(getattr(obj, holder), self.name, value)


class Validator:
    """Environments, sandbox runs and verdicts for tasks; blocking (callers use threads).
    Shared by validate, test generation and the harness: one Docker client, one clone cache,
    one image cache. Delegates to ``chooser`` (which recipes), ``provisioner`` (their images)
    and ``prover`` (the tests run and judged)."""

    repos = Delegated[RepoCache]("chooser", "prover")
    docker = Delegated[DockerSettings]("chooser", "provisioner", "prover")
    settings = Delegated[ValidateSettings]("chooser", "prover")
    pipeline_version = Delegated[int]("chooser", "prover")
    overrides = Delegated[Overrides]("chooser")
    memory = Delegated[RecipeTable | None]("chooser")  # the recipes that worked (None: none)
    # the chooser's look-ups at the clone and the engine: replaced here, they are replaced
    # where ``recipes`` calls them
    tree = Delegated[Callable[[str, str], TreeFiles]]("chooser")
    images = Delegated[Callable[[], dict[str, dict[str, str]]]]("chooser")
    toolchain_images = Delegated[Callable[[str], dict[str, str]]]("chooser")

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
        self._docker_client = docker_client
        # the languages are found (their modules imported, plugins' entry points loaded) when
        # the engine is made, not by the first validation on a worker thread mid-rebalance
        languages()
        self._client: Any = None
        # the parts ask for the client when they first need it: made once, here
        self.chooser = RecipeChooser(
            repos, self._engine, docker, settings, pipeline_version, overrides, memory
        )
        self.provisioner = ImageProvisioner(self._engine, docker, self.chooser)
        self.prover = Prover(repos, docker, settings, pipeline_version)

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

    def _engine(self) -> Any:
        return self.client

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
        return self.prover.limits

    # -- which recipes: ``RecipeChooser`` ----------------------------------------------------

    def recipes(
        self,
        repo: str,
        base_commit: str,
        created_at: datetime | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> tuple[TreeFiles, list[InstallRecipe]]:
        """``RecipeChooser.recipes``: the tree and the recipes to try, best first."""
        return self.chooser.recipes(repo, base_commit, created_at, changed_files, diffs)

    def inferred(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        override: RepositoryOverride | None,
        images: dict[str, dict[str, str]] | None = None,
        changed_files: Sequence[str] = (),
    ) -> tuple[list[InstallRecipe], Any]:
        """``RecipeChooser.inferred``: inference's recipes with ``override`` applied."""
        return self.chooser.inferred(
            repo, base_commit, tree, created_at, override, images, changed_files
        )

    def recipe_with(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        change: RepositoryOverride,
        source: str,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> InstallRecipe:
        """``RecipeChooser.recipe_with``: inference's recipe with ``change`` over it."""
        return self.chooser.recipe_with(
            repo, base_commit, tree, created_at, change, source, changed_files, diffs
        )

    # -- their images: ``ImageProvisioner`` --------------------------------------------------

    def builder(self, fresh: bool = False) -> EnvironmentBuilder:
        return self.provisioner.builder(fresh)

    def build(
        self,
        repo: str,
        instance_id: str,
        tree: TreeFiles,
        recipe: InstallRecipe,
        fresh: bool = False,
    ) -> Environment:
        """``ImageProvisioner.build``: the env and instance images of ``recipe``."""
        return self.provisioner.build(repo, instance_id, tree, recipe, fresh)

    def exploration(
        self, repo: str, instance_id: str, tree: TreeFiles, recipe: InstallRecipe
    ) -> Environment:
        """``ImageProvisioner.exploration``: where a setup agent starts."""
        return self.provisioner.exploration(repo, instance_id, tree, recipe)

    def environments(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> Generator[Environment, None, None]:
        """``ImageProvisioner.environments``: one per recipe that installs, best first."""
        return self.provisioner.environments(
            repo, base_commit, instance_id, created_at, prefer_python, changed_files, diffs
        )

    def built(
        self, repo: str, instance_id: str, tree: TreeFiles, recipes: list[InstallRecipe]
    ) -> Generator[Environment, None, None]:
        """``ImageProvisioner.built``: the environment of each of ``recipes`` that installs."""
        return self.provisioner.built(repo, instance_id, tree, recipes)

    def environment(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> Environment:
        """``ImageProvisioner.environment``: the first recipe's that installs."""
        return self.provisioner.environment(
            repo, base_commit, instance_id, created_at, prefer_python, changed_files, diffs
        )

    # -- the tests run and judged: ``Prover`` ------------------------------------------------

    def verify(self, environment: Environment, test_patch: str, test_files: list[str]) -> int:
        """``Prover.verify``: whether ``environment`` runs the PR's test files at all."""
        return self.prover.verify(environment, test_patch, test_files)

    def evaluate(
        self,
        environment: Environment,
        candidate: str,
        test_patch: str,
        fail_to_pass: list[str],
        pass_to_pass: list[str],
    ) -> Evaluation:
        """``Prover.evaluate``: ``candidate`` graded as SWE-bench grades it."""
        return self.prover.evaluate(environment, candidate, test_patch, fail_to_pass, pass_to_pass)

    def prove(
        self,
        environment: Environment,
        fix: str,
        test_patch: str,
        test_files: list[str],
        before_runs: int = 1,
    ) -> Proof:
        """``Prover.prove``: the tests before and after the fix, judged."""
        return self.prover.prove(environment, fix, test_patch, test_files, before_runs)

    def task(
        self,
        patches: PatchSet,
        environment: Environment,
        proof: Proof,
        test_patch: str,
        generated: tuple[int, int] | None = None,
    ) -> ValidatedTask:
        """``Prover.task``: the validated task ``proof`` makes of ``patches``."""
        return self.prover.task(patches, environment, proof, test_patch, generated)

    def _apply(self, box: Sandbox, path: str) -> bool:
        return self.prover._apply(box, path)

    def run_tests(
        self,
        box: Sandbox,
        command: str,
        runner: str,
        timeout: float | None = None,
        files: Sequence[str] = (),
    ) -> Run:
        """``Prover.run_tests``: one run of ``command`` in ``box``, its statuses read."""
        return self.prover.run_tests(box, command, runner, timeout, files)


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
    # the toolchain version it ran on: under its toolchain's name, or (a task of an older
    # version) as its language reads it off the recipe's sources (``node:20``)
    versions = {t: config[t] for t in toolchains() if config.get(t)}
    if not versions:
        ran_on = InstallRecipe(
            language=config.get("language") or "", sources=tuple(config.get("recipe") or ())
        )
        versions = {**interpreter_fields(ran_on)}
    try:
        return RepositoryOverride(
            **versions,
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
    # the files the task changes pick what a recipe installs (a module of a workspace)
    changed = patch_paths(task.patch) + patch_paths(task.test_patch)
    # what they change in dependency files (a crate the fix adds) is fetched as validation did
    diffs = (task.test_patch, task.patch)
    if change is not None:
        tree = validator.tree(task.repo, task.base_commit)
        try:
            recipe = validator.recipe_with(
                task.repo, task.base_commit, tree, created_at, change, "task", changed, diffs
            )
        except ValidationFailed as failed:  # its Python is not built here, say
            log.info("%s: the task's recipe cannot be used (%s); inferring one", task.id, failed)
        else:
            pulled = registry_environment(validator, tree, recipe, task.image_name)
            return pulled or validator.build(task.repo, task.instance_id, tree, recipe)
    python = task.install_config.get("python")
    return validator.environment(
        task.repo,
        task.base_commit,
        task.instance_id,
        created_at,
        python if isinstance(python, str) else None,
        changed,
        diffs,
    )


def registry_environment(
    validator: Validator, tree: TreeFiles, recipe: InstallRecipe, reference: str | None
) -> Environment | None:
    """Blocking: the environment of a pushed task (``image_name``): its instance image from
    the engine, pulled from the registry when it is not there; None when there is no image to
    use (the caller builds it). The image is nobody's to drop: ``built`` is False."""
    if not reference:
        return None
    image = local_or_pulled(validator.client, reference)
    if image is None:
        return None
    metrics.IMAGES.labels(layer="instance", result="pulled").inc()
    instance = BuiltImage(reference, image.id, built=False, seconds=0.0)
    return Environment(tree, recipe, instance, instance, validator.builder())


def patch_paths(patch: str) -> list[str]:
    """The paths a patch changes, as its ``diff --git a/OLD b/NEW`` lines name them (both,
    for a rename)."""
    paths: dict[str, None] = {}
    for line in patch.splitlines():
        if line.startswith("diff --git a/") and " b/" in line:
            old, new = line[len("diff --git a/") :].split(" b/", 1)
            paths[old] = paths[new] = None
    return list(paths)


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
