"""Stage ``validate``: ``pr.patches`` -> ``tasks.validated``.

A task is only worth exporting if running its tests proves it: the validator
(``streams.evaluation.validator``) builds the task's images, runs the PR's tests before and
after the fix in a sandbox, and keeps FAIL_TO_PASS and PASS_TO_PASS from stable results.

The environment is the first of the recipe chain that runs the tests: the remembered recipes
of the repository (``streams.evaluation.recipes.memory``; one of another pipeline version is
verified first), inference's, then the environment-setup agent (``agents.setup_agent``, when
configured) for PRs whose tests none of them made run, or whose test script runs no runner
inference reads (``no_test_runner``: a JavaScript ``make test``). The recipe that ran them is
remembered (``streams.pipeline.recipe_memory``).

When the PR's own tests prove nothing (none, or no FAIL_TO_PASS), the test generator
(``agents.testgen``, when configured) writes tests; each of its submissions is proven the same
way in a fresh container, with the before-runs repeated too (``validation.runs`` times).

Rejected with a reason: no tests, patch does not apply, no FAIL_TO_PASS, every run timed out,
unsupported language. Image builds that fail raise (DLQ and ledger).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from agents.setup_agent import SETUP_REASONS, SetupAgent, SetupFailure
from schemas import PatchSet, ValidatedTask
from streams.core import metrics
from streams.core.errors import DOCKER, ServiceUnavailable
from streams.evaluation.failures import with_cause
from streams.evaluation.recipes.languages import interpreter_of
from streams.evaluation.recipes.memory import remembered_entry
from streams.evaluation.validator import (
    ENVIRONMENT_REASONS,
    NO_FAIL_TO_PASS,
    NO_RUNNER,
    NO_TESTS,
    RECIPE_REJECTED,
    TESTS_DID_NOT_RUN,
    TIMED_OUT,
    Environment,
    GeneratedTests,
    Proof,
    ValidationFailed,
    Validator,
)
from streams.kafka.topics import PATCHES, VALIDATED
from streams.pipeline.recipe_memory import RecipeBook
from streams.pipeline.stage import Outcome, Stage

log = logging.getLogger("swe_stream.validate")

STAGE = "validate"


class TestGeneration(Protocol):
    """Agentic test generation (``agents.testgen``), asked when a PR's tests prove nothing."""

    always: bool

    async def generate(
        self,
        patches: PatchSet,
        environment: Environment,
        prove: Callable[[str, list[str]], Proof],
    ) -> GeneratedTests: ...


class ValidateStage:
    """The stage's handler: a PR's patches proven by ``validator`` in the first environment
    that runs its tests (the chain: remembered recipes, inference's, then the setup agent),
    or by generated tests; the recipe that worked is remembered in ``recipes``."""

    def __init__(
        self,
        validator: Validator,
        testgen: TestGeneration | None = None,
        setup_agent: SetupAgent | None = None,
        recipes: RecipeBook | None = None,
        no_agent: str = "",
    ):
        self.validator = validator
        self.testgen = testgen
        self.setup_agent = setup_agent
        self.recipes = recipes
        self.no_agent = no_agent  # why there is no setup agent, said in the reasons it leaves
        self._semaphore = asyncio.Semaphore(validator.settings.concurrency)

    async def __call__(self, patches: PatchSet) -> Outcome:
        has_tests = bool(patches.test_patch.strip() and patches.test_files)
        if not has_tests and self.testgen is None:
            return Outcome.reject(NO_TESTS)
        if self.recipes is not None:
            await self.recipes.restored()
        async with self._semaphore:
            try:
                task = await self._validate_somewhere(patches, has_tests)
            except ValidationFailed as failed:  # the stage framework logs the one line
                await self._engine_answers(failed)
                return Outcome.reject(failed.reason, with_cause(failed.reason, failed.detail))
            except Exception as error:
                await self._engine_answers(error)
                raise
        return Outcome.accept(task)

    async def _engine_answers(self, error: BaseException) -> None:
        """Raise ``ServiceUnavailable`` when the Docker engine does not answer after
        ``error``: what failed was the engine, not the task (a build cut off, a container
        gone), and the stage waits for it instead of deciding."""
        if not await asyncio.to_thread(self.validator.engine_answers):
            raise ServiceUnavailable(
                f"the Docker engine does not answer ({type(error).__name__}: {error})",
                service=DOCKER,
            ) from error

    async def _validate_somewhere(self, patches: PatchSet, has_tests: bool) -> ValidatedTask:
        """The task proven in the first environment where the tests run: the next recipe is
        tried when they did not run or nothing passed in one; the setup agent when none
        made them run."""
        validator = self.validator
        changed = [*patches.test_files, *patches.source_files]
        diffs = (patches.test_patch, patches.patch)
        try:
            tree, recipes = await asyncio.to_thread(
                validator.recipes,
                patches.repo,
                patches.base_commit,
                patches.created_at,
                changed,
                diffs,
            )
        except ValidationFailed as failed:
            if failed.reason != NO_RUNNER or not has_tests:
                raise
            if self.setup_agent is None:
                failed.detail += f"\n{self.no_agent}" if self.no_agent else ""
                raise
            return await self._without_runner(patches, failed, changed)
        candidates = validator.built(patches.repo, patches.instance_id, tree, recipes)
        last: ValidationFailed | None = None
        try:
            while True:
                try:
                    environment = await asyncio.to_thread(next, candidates, None)
                except ValidationFailed as not_installed:
                    # no recipe left installs: an earlier one's test failure says more
                    last = last or not_installed
                    break
                if environment is None:
                    break
                try:
                    return await self._validate_in(patches, environment, has_tests)
                except ValidationFailed as failed:
                    if failed.reason not in ENVIRONMENT_REASONS | SETUP_REASONS | {RECIPE_REJECTED}:
                        raise
                    if last is not None:  # what the recipe tried before showed, kept
                        failed.detail += f"\nearlier: {last.reason}: {last.detail[:600]}"
                    last = failed
                    log.info("validate: %s#%d on %s: %s", patches.repo, patches.number,
                             interpreter_of(environment.recipe), failed.reason)  # fmt: skip
                finally:
                    await asyncio.to_thread(environment.release)
        finally:
            candidates.close()
        assert last is not None  # built() raises when none was built
        if last.reason == RECIPE_REJECTED:  # only a stale remembered recipe was tried
            last.reason = TESTS_DID_NOT_RUN
        if last.reason not in SETUP_REASONS or not has_tests:
            raise last
        if self.setup_agent is None:
            last.detail += f"\n{self.no_agent}" if self.no_agent else ""
            raise last
        first = next((r for r in recipes if not r.origin.remembered), recipes[0])
        return await self._set_up(patches, SetupFailure(patches, tree, first, last.reason,
                                                         last.detail), has_tests)  # fmt: skip

    async def _without_runner(
        self, patches: PatchSet, failed: ValidationFailed, changed: list[str]
    ) -> ValidatedTask:
        """The setup agent for a tree whose test script runs no runner inference reads
        (``no_test_runner``): it starts from inference's first recipe, whose images install
        the dependencies, and names the runner."""
        validator = self.validator
        tree = await asyncio.to_thread(validator.tree, patches.repo, patches.base_commit)
        override = validator.overrides.lookup(patches.repo)
        recipes, _ = await asyncio.to_thread(
            validator.inferred, patches.repo, patches.base_commit, tree, patches.created_at,
            override, None, changed,
        )  # fmt: skip
        if not recipes:
            raise failed
        failure = SetupFailure(patches, tree, recipes[0], failed.reason, failed.detail)
        return await self._set_up(patches, failure, True)

    async def _set_up(
        self, patches: PatchSet, failure: SetupFailure, has_tests: bool
    ) -> ValidatedTask:
        """The setup agent's verified environment, and the task proven in it."""
        assert self.setup_agent is not None
        try:
            result = await self.setup_agent.repair(failure)
        except ValidationFailed as stopped:
            stopped.detail += f"\nbefore the agent: {failure.reason}: {failure.detail[:800]}"
            raise
        try:
            return await self._validate_in(patches, result.environment, has_tests, verified=True)
        finally:
            await asyncio.to_thread(result.environment.release)

    async def _validate_in(
        self, patches: PatchSet, environment: Environment, has_tests: bool, verified: bool = False
    ) -> ValidatedTask:
        """The task proven in ``environment`` (a remembered recipe of another pipeline
        version verified first); its recipe remembered when the tests ran."""
        recipe = environment.recipe
        try:
            if not verified and not recipe.origin.trusted and has_tests:
                await asyncio.to_thread(
                    self.validator.verify, environment, patches.test_patch, patches.test_files
                )
                metrics.RECIPE_MEMORY_LOOKUPS.labels(result="reverified").inc()
            task = await self._validate(patches, environment, has_tests)
        except ValidationFailed as failed:
            if failed.reason == RECIPE_REJECTED:
                metrics.RECIPE_MEMORY_LOOKUPS.labels(result="stale").inc()
            if failed.tests_ran:
                await self._remember(patches, environment, failed.tests_ran)
            failed.detail = f"[{interpreter_of(recipe)}; recipe {', '.join(recipe.sources)}] " + (
                failed.detail
            )
            raise
        await self._remember(patches, environment, len(task.validation.before))
        return task

    async def _remember(self, patches: PatchSet, environment: Environment, tests: int) -> None:
        if self.recipes is None:  # the memory is off (validation.recipe_memory)
            return
        entry = remembered_entry(
            environment.recipe,
            environment.tree,
            repo=patches.repo,
            instance_id=patches.instance_id,
            base_commit=patches.base_commit,
            tests=tests,
            pipeline_version=self.validator.pipeline_version,
            notes=[n for n in environment.recipe.notes if n.startswith("setup agent:")],
        )
        try:
            await self.recipes.remember(entry)
        except Exception as exc:  # the task stands; the memory is an optimisation
            log.warning("recipes: %s not remembered: %s", patches.repo, exc)

    async def _validate(
        self, patches: PatchSet, environment: Environment, has_tests: bool
    ) -> ValidatedTask:
        validator = self.validator
        if has_tests and not (self.testgen and self.testgen.always):
            try:
                proof = await asyncio.to_thread(
                    validator.prove,
                    environment,
                    patches.patch,
                    patches.test_patch,
                    patches.test_files,
                )
                return validator.task(patches, environment, proof, patches.test_patch)
            except ValidationFailed as failed:
                if self.testgen is None or failed.reason not in (NO_FAIL_TO_PASS, TIMED_OUT):
                    raise

        def prove_generated(test_patch: str, test_files: list[str]) -> Proof:
            # the model wrote these tests: "fails before" must hold as often as "passes after"
            runs = validator.settings.runs
            return validator.prove(environment, patches.patch, test_patch, test_files, runs)

        assert self.testgen is not None
        generated = await self.testgen.generate(patches, environment, prove_generated)
        return validator.task(
            patches,
            environment,
            generated.proof,
            generated.test_patch,
            generated=(generated.turns, generated.tokens),
        )


def validate_stage(
    validator: Validator,
    testgen: TestGeneration | None = None,
    setup_agent: SetupAgent | None = None,
    recipes: RecipeBook | None = None,
    no_agent: str = "",
) -> Stage[PatchSet]:
    """The stage around ``validator`` (shared with the harness: one Docker client, one clone
    cache, one image cache)."""
    handler = ValidateStage(validator, testgen, setup_agent, recipes, no_agent)
    concurrency = validator.settings.concurrency
    return Stage(
        STAGE, PATCHES, VALIDATED, handler, concurrency=concurrency, accepted_because=proven_by
    )


def proven_by(outcome: Outcome) -> str:
    """Why validate accepted a PR, for its one INFO line (a rejection's says its reason): the
    tests that prove the task, how many runs and on what."""
    task = outcome.outputs[0] if outcome.outputs else None
    if not isinstance(task, ValidatedTask):  # a log line never fails a record
        return "no task emitted"
    config, generated = task.install_config, " generated" if task.tests_generated else ""
    on = ""
    if config is not None:
        version = "".join(f" {v}" for v in config.toolchain_versions.values())
        on = f", {config.test_runner} on {config.language}{version}"
    return (
        f"{len(task.FAIL_TO_PASS)} FAIL_TO_PASS and {len(task.PASS_TO_PASS)} PASS_TO_PASS"
        f"{generated} test(s) over {task.validation.runs} run(s){on}"
    )
