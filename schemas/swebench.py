"""SWE-bench task instance fields, shared by the task topics and the exports."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict

from schemas.base import GitSha, InstanceId, RepoName

__all__ = ["IMAGE_FIELDS", "SWEBENCH_FIELDS", "SWEBenchFields", "SWEBenchInstance", "TestList"]

SWEBENCH_FIELDS: tuple[str, ...] = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
)
"""The columns of a SWE-bench row, in the dataset's order."""

IMAGE_FIELDS: tuple[str, ...] = ("image_name", "docker_image")
"""The columns naming a task's image in a registry, after SWE-bench's: ``image_name`` (read by
mini-swe-agent and SWE-agent) and ``docker_image`` (SWE-rebench's); both hold the same name."""


def _decode_test_list(value: Any) -> Any:
    # The Hugging Face dataset stores the test lists as JSON-encoded strings.
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"test list string is not valid JSON: {exc}") from None
        if not isinstance(decoded, list):
            raise ValueError("test list string must encode a JSON list")
        return decoded
    return value


TestList = Annotated[list[str], BeforeValidator(_decode_test_list)]
"""A list of test ids; also accepts the JSON-encoded string form."""


class SWEBenchFields(BaseModel):
    """The fields of a SWE-bench task instance (names exactly as in the dataset)."""

    repo: RepoName
    instance_id: InstanceId
    base_commit: GitSha
    patch: str
    test_patch: str
    problem_statement: str
    hints_text: str = ""
    created_at: AwareDatetime
    version: str | None = None
    FAIL_TO_PASS: TestList
    PASS_TO_PASS: TestList
    environment_setup_commit: GitSha | None = None

    def to_swebench(self) -> dict[str, Any]:
        """The SWE-bench JSONL row: exactly the dataset's fields, test lists as lists."""
        data = self.model_dump(mode="json", include=set(SWEBENCH_FIELDS))
        return {name: data[name] for name in SWEBENCH_FIELDS}


class SWEBenchInstance(SWEBenchFields):
    """A SWE-bench task instance as read from a dataset row (unknown columns ignored)."""

    model_config = ConfigDict(extra="ignore")
