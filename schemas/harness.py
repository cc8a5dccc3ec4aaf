"""Records of the harness: agent evaluation requests and their results."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    field_validator,
)

from schemas.base import InstanceId, NonEmptyStr, Record, RepoName, SubRecord
from schemas.tasks import TestStatus

__all__ = [
    "AgentNetwork",
    "AgentSpec",
    "CommandResult",
    "HarnessReport",
    "HarnessRequest",
    "HarnessResult",
    "HarnessStatus",
    "TaskEvaluation",
    "TestRun",
]

HarnessStatus = Literal[
    "resolved", "unresolved", "agent_error", "test_error", "setup_error", "sanity_fail"
]


AgentNetwork = Literal["none", "model", "registries", "all"]


class AgentSpec(SubRecord):
    """The coding agent to run on a task, and how to run it."""

    name: NonEmptyStr
    command: NonEmptyStr
    agent_dir: str | None = None
    image: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    # what the agent's container reaches: nothing; only the model's API or the package
    # registries (through the egress door); or all of the network (it can look the fix up)
    network: AgentNetwork = "none"

    @field_validator("network", mode="before")
    @classmethod
    def _network_of_a_flag(cls, value: object) -> object:
        # requests written before the modes said true (the bridge) or false (none)
        if isinstance(value, bool):
            return "all" if value else "none"
        return value


# the harness writes a request's outputs to <harness output dir>/<request_id>/: one safe name
RequestId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")]


class HarnessRequest(Record):
    """harness.requests: run one agent on one exported task."""

    SCHEMA_VERSION: ClassVar[int] = 1

    request_id: RequestId
    instance_id: InstanceId
    agent: AgentSpec
    agent_timeout_seconds: PositiveFloat = 600.0
    test_timeout_seconds: PositiveFloat = 120.0

    @property
    def key(self) -> str:
        """The Kafka key: the task's instance id."""
        return self.instance_id


class HarnessResult(Record):
    """harness.results: the graded outcome of one harness request."""

    SCHEMA_VERSION: ClassVar[int] = 1

    request_id: NonEmptyStr
    instance_id: InstanceId
    repo: RepoName
    agent_name: NonEmptyStr
    status: HarnessStatus
    agent_time_seconds: NonNegativeFloat
    test_time_seconds: NonNegativeFloat
    fail_to_pass: dict[str, TestStatus]
    pass_to_pass: dict[str, TestStatus]
    error: str | None = None
    finished_at: AwareDatetime

    @property
    def key(self) -> str:
        """The Kafka key: the task's instance id."""
        return self.instance_id


# `swe-stream harness --json`: swe-forge's output shape ------------------------------------


class CommandResult(BaseModel):
    """One check command (a line of checks.txt) as run after the agent."""

    model_config = ConfigDict(extra="forbid")

    command: str
    exit_code: int = Field(description="-1 when it could not run or was killed at its timeout")
    passed: bool
    duration_ms: int = Field(ge=0)
    stdout: str = ""
    stderr: str = ""
    status: TestStatus | None = Field(
        None, description="the test's status in a graded run of its files (None: run alone)"
    )


class TestRun(BaseModel):
    """One run of a task's test files, from which every check it holds was graded."""

    __test__: ClassVar[bool] = False  # a record, not a pytest test class
    model_config = ConfigDict(extra="forbid")

    phase: Literal["sanity", "grading"]
    command: str
    exit_code: int = Field(description="-1 when it was killed at its timeout")
    seconds: float = Field(ge=0)
    tests: int = Field(ge=0, description="tests the run reported (any status)")
    contradiction: str | None = Field(
        None, description="how the exit code contradicts the statuses (None: it agrees)"
    )
    output: str = ""


class TaskEvaluation(BaseModel):
    """One task's evaluation, as swe-forge's harness reports it."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    repo: str
    task_month: str | None = Field(
        None, description="the UTC month of the task's created_at, e.g. 2026_01"
    )
    status: HarnessStatus
    sanity_check: bool
    fail_to_pass: list[CommandResult] = Field(default_factory=list)
    pass_to_pass: list[CommandResult] = Field(default_factory=list)
    agent_duration_secs: float = Field(ge=0)
    total_duration_secs: float = Field(ge=0)
    agent_output: str = ""
    error: str | None = None
    container_id: str | None = None
    test_runs: list[TestRun] = Field(default_factory=list)


class MonthCounts(BaseModel):
    """One task month of a run: how many tasks, how many resolved (an agent whose share
    falls after its training cut-off had seen the earlier ones)."""

    total: int = Field(0, ge=0)
    resolved: int = Field(0, ge=0)


class HarnessReport(BaseModel):
    """The whole run: counts by status and every task's evaluation."""

    model_config = ConfigDict(extra="forbid")

    total: int = Field(ge=0)
    resolved: int = Field(ge=0)
    unresolved: int = Field(ge=0)
    agent_error: int = Field(ge=0)
    test_error: int = Field(ge=0)
    setup_error: int = Field(ge=0)
    sanity_fail: int = Field(ge=0)
    avg_agent_time_secs: float = Field(ge=0)
    by_month: dict[str, MonthCounts] = Field(
        default_factory=dict,
        description="tasks and resolved tasks per task month (unknown: no readable created_at)",
    )
    results: list[TaskEvaluation]

    @classmethod
    def of(cls, results: list[TaskEvaluation]) -> HarnessReport:
        counts = {status: sum(1 for r in results if r.status == status) for status in STATUSES}
        times = [r.agent_duration_secs for r in results]
        average = round(sum(times) / len(times), 1) if times else 0.0
        by_month: dict[str, MonthCounts] = {}
        for result in sorted(results, key=lambda r: r.task_month or "unknown"):
            month = by_month.setdefault(result.task_month or "unknown", MonthCounts())
            month.total += 1
            month.resolved += result.status == "resolved"
        return cls(
            total=len(results),
            avg_agent_time_secs=average,
            by_month=by_month,
            results=results,
            **counts,
        )


STATUSES: tuple[str, ...] = (
    "resolved",
    "unresolved",
    "agent_error",
    "test_error",
    "setup_error",
    "sanity_fail",
)
