"""Records of the task stages: validated, scored and exported SWE-bench-style tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import (
    AwareDatetime,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    model_validator,
)

from schemas.base import (
    ContentSha256,
    InstanceId,
    NonEmptyStr,
    PullRequestRecord,
    SubRecord,
    ToolchainVersions,
)
from schemas.pull_requests import Difficulty
from schemas.swebench import SWEBenchFields, SWEBenchInstance

__all__ = [
    "ExportedTask",
    "InstallConfig",
    "ScoredTask",
    "TestStatus",
    "ValidatedTask",
    "ValidationReport",
]

TestStatus = Literal["passed", "failed", "error", "skipped"]


class ValidationReport(SubRecord):
    """How a task was validated: per-test statuses before and after applying the patch."""

    image: NonEmptyStr
    runs: PositiveInt
    duration_seconds: NonNegativeFloat
    before: dict[str, TestStatus] = Field(description="Statuses with only the test patch.")
    after: dict[str, TestStatus] = Field(description="Statuses with test patch and fix.")
    flaky: list[str] = Field(
        default_factory=list, description="Tests whose result changed between runs (dropped)."
    )
    timed_out: list[str] = Field(
        default_factory=list, description="Tests running when a run was killed at its timeout."
    )
    test_seconds: NonNegativeFloat = Field(
        default=0.0, description="Time the test commands themselves took, all runs."
    )
    exit_codes: list[int | None] = Field(
        default_factory=list,
        description="Each run's test command exit code, in order (before-runs, then after).",
    )
    contradictions: list[str] = Field(
        default_factory=list,
        description="Runs whose exit code contradicts their per-test statuses, and how.",
    )

    base: dict[str, TestStatus] | None = Field(
        default=None,
        description="Statuses of the base commit as it is, without either patch: a compiled "
        "language's third run (its test patch may not compile without the fix); None: two "
        "runs were made.",
    )

    changed_tests: list[str] = Field(
        default_factory=list,
        description="With three runs: the test functions the test patch adds or changes, "
        "which cannot have passed before the fix when their package did not compile with the "
        "test patch alone (their old subtests are judged by the base run).",
    )

    never_fail_to_pass: list[str] = Field(
        default_factory=list,
        description="Tests of the after-runs whose id a patch may change (a doc test named "
        "by its line): never FAIL_TO_PASS, as their language says.",
    )

    def fail_to_pass(self) -> list[str]:
        """Tests that fail (or error) before the fix and pass after it (with three runs: fail
        or are missing with the test patch alone, and were not passing at the base)."""
        if self.base is not None:
            never = set(self.never_fail_to_pass)
            return sorted(
                t
                for t, s in self.after.items()
                if s == "passed"
                and t not in never
                and fails_without_fix(t, self.base, self.before, self.changed_tests)
            )
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) != "passed"
        )

    def pass_to_pass(self) -> list[str]:
        """Tests that pass both before and after the fix (with three runs: at the base and
        with both patches, and not failing with the test patch alone)."""
        if self.base is not None:
            base = self.base
            return sorted(
                t
                for t, s in self.after.items()
                if s == "passed"
                and base.get(t) == "passed"
                and not fails_without_fix(t, base, self.before, self.changed_tests)
            )
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) == "passed"
        )


def fails_without_fix(
    test: str,
    base: dict[str, TestStatus],
    test_only: dict[str, TestStatus],
    changed: Sequence[str] = (),
) -> bool:
    """Whether ``test`` fails without the fix, as three runs show it: failed or errored with
    the test patch alone; or missing there (its package did not compile) and not passing at
    the base, or a test function the test patch changed (``changed``: its new body never ran
    before the fix). An old test of the package that passed at the base says nothing of the
    fix, and neither does an old subtest of a changed function (a table test's other cases,
    whose entries the patch left as they were)."""
    status = test_only.get(test)
    if status is None:
        return test in changed or base.get(test) != "passed"
    return status in ("failed", "error")


class InstallConfig(ToolchainVersions, SubRecord):
    """How the task's environment was made and its tests run (SWE-bench's install config);
    the toolchain version the tests ran on under its toolchain's name (``python: "3.11"``,
    as SWE-bench's specs write it; ``rust: "1.85"``)."""

    model_config = ConfigDict(**{**SubRecord.model_config, **ToolchainVersions.model_config})

    language: NonEmptyStr
    base_image: NonEmptyStr
    env_image: NonEmptyStr
    instance_image: NonEmptyStr
    install_commands: list[str] = Field(default_factory=list)
    test_command: NonEmptyStr
    test_runner: str = "pytest"
    system_packages: list[str] = Field(default_factory=list)
    env_commands: list[str] = Field(default_factory=list)  # the env image's install steps
    pre_test_commands: list[str] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    recipe: list[str] = Field(default_factory=list)  # what the recipe was inferred from
    # the git remote the task was mined from (no credentials): re-validation and the harness
    # clone it from there, wherever they run
    remote: str | None = None


class ValidatedTask(PullRequestRecord, SWEBenchFields):
    """tasks.validated: a SWE-bench instance whose tests were run and behave as required."""

    model_config = ConfigDict(extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1

    validation: ValidationReport
    tests_generated: bool = False
    testgen_turns: NonNegativeInt | None = None
    testgen_tokens: NonNegativeInt | None = None
    classification: Difficulty
    difficulty_score: float = Field(ge=0.0, le=1.0)
    install_config: InstallConfig | None = None
    checks: list[str] = Field(
        default_factory=list,
        description="Shell commands, one per FAIL_TO_PASS and PASS_TO_PASS test (checks.txt).",
    )

    @model_validator(mode="after")
    def _check_tests(self) -> ValidatedTask:
        if not self.FAIL_TO_PASS:
            raise ValueError("a validated task needs at least one FAIL_TO_PASS test")
        both = set(self.FAIL_TO_PASS) & set(self.PASS_TO_PASS)
        if both:
            raise ValueError(f"tests in both FAIL_TO_PASS and PASS_TO_PASS: {sorted(both)[:5]}")
        return self

    def to_instance(self) -> SWEBenchInstance:
        """The bare SWE-bench instance of this task."""
        return SWEBenchInstance.model_validate(self.to_swebench())


class ScoredTask(ValidatedTask):
    """tasks.scored: a validated task with its quality score and the accept decision."""

    SCHEMA_VERSION: ClassVar[int] = 1

    quality_score: float = Field(ge=0.0, le=1.0)
    quality_reasoning: str
    accepted: bool


class ExportedTask(PullRequestRecord):
    """tasks.exported: where an accepted task was written, and a digest of its content."""

    SCHEMA_VERSION: ClassVar[int] = 1

    instance_id: InstanceId
    export_dir: NonEmptyStr
    dataset_path: NonEmptyStr
    exported_at: AwareDatetime
    content_sha256: ContentSha256
