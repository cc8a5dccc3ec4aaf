"""Records of the harness: agent evaluation requests and their results."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import AwareDatetime, Field, NonNegativeFloat, PositiveFloat

from schemas.base import InstanceId, NonEmptyStr, Record, RepoName, SubRecord
from schemas.tasks import TestStatus

__all__ = ["AgentSpec", "HarnessRequest", "HarnessResult", "HarnessStatus"]

HarnessStatus = Literal[
    "resolved", "unresolved", "agent_error", "test_error", "setup_error", "sanity_fail"
]


class AgentSpec(SubRecord):
    """The coding agent to run on a task, and how to run it."""

    name: NonEmptyStr
    command: NonEmptyStr
    agent_dir: str | None = None
    image: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    network: bool = False


class HarnessRequest(Record):
    """harness.requests: run one agent on one exported task."""

    SCHEMA_VERSION: ClassVar[int] = 1

    request_id: NonEmptyStr
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
