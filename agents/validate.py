"""Stage ``validate``: ``pr.patches`` -> ``tasks.validated``.

A task is only worth exporting if running its tests proves it: the validator
(``streams.evaluation.validator``) builds the task's images, runs the PR's tests before and
after the fix in a sandbox, and keeps FAIL_TO_PASS and PASS_TO_PASS from stable results.

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

from schemas import PatchSet, ValidatedTask
from streams.evaluation.validator import (
    ENVIRONMENT_REASONS,
    NO_FAIL_TO_PASS,
    NO_TESTS,
    TIMED_OUT,
    Environment,
    GeneratedTests,
    Proof,
    ValidationFailed,
    Validator,
)
from streams.kafka.topics import PATCHES, VALIDATED
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
    """The stage's handler: a PR's patches proven by ``validator``, or by generated tests."""

    def __init__(self, validator: Validator, testgen: TestGeneration | None = None):
        self.validator = validator
        self.testgen = testgen
        self._semaphore = asyncio.Semaphore(validator.settings.concurrency)

    async def __call__(self, patches: PatchSet) -> Outcome:
        has_tests = bool(patches.test_patch.strip() and patches.test_files)
        if not has_tests and self.testgen is None:
            return Outcome.reject(NO_TESTS)
        async with self._semaphore:
            try:
                task = await self._validate_somewhere(patches, has_tests)
            except ValidationFailed as failed:
                # once per PR, at INFO: why it is not a task (the ledger keeps the detail too)
                log.info(
                    "validate: %s#%d rejected: %s%s",
                    patches.repo,
                    patches.number,
                    failed.reason,
                    f" ({failed.detail.splitlines()[0][:300]})" if failed.detail else "",
                )
                return Outcome.reject(failed.reason, failed.detail or None)
        return Outcome.accept(task)

    async def _validate_somewhere(self, patches: PatchSet, has_tests: bool) -> ValidatedTask:
        """The task proven in the first environment where the tests run: the next plausible
        Python is tried when they did not run or nothing passed in one."""
        candidates = self.validator.environments(
            patches.repo, patches.base_commit, patches.instance_id, patches.created_at
        )
        last: ValidationFailed | None = None
        try:
            while True:
                try:
                    environment = await asyncio.to_thread(next, candidates, None)
                except ValidationFailed as not_installed:
                    # no recipe left installs: an earlier one's test failure says more
                    raise last or not_installed from None
                if environment is None:
                    break
                try:
                    return await self._validate(patches, environment, has_tests)
                except ValidationFailed as failed:
                    recipe = environment.recipe
                    failed.detail = (
                        f"[python {recipe.python}; recipe {', '.join(recipe.sources)}] "
                        + failed.detail
                    )
                    if failed.reason not in ENVIRONMENT_REASONS:
                        raise
                    if last is not None:  # what the Python tried before showed, kept
                        failed.detail += f"\nearlier: {last.reason}: {last.detail[:600]}"
                    last = failed
                    log.info("validate: %s#%d on python %s: %s", patches.repo, patches.number,
                             recipe.python, failed.reason)  # fmt: skip
                finally:
                    await asyncio.to_thread(environment.release)
        finally:
            candidates.close()
        assert last is not None  # environments() raises when none was built
        raise last

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


def validate_stage(validator: Validator, testgen: TestGeneration | None = None) -> Stage[PatchSet]:
    """The stage around ``validator`` (shared with the harness: one Docker client, one clone
    cache, one image cache)."""
    handler = ValidateStage(validator, testgen)
    return Stage(STAGE, PATCHES, VALIDATED, handler, concurrency=validator.settings.concurrency)
