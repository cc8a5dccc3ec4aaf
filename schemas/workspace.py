"""``workspace.yaml``: the description of one exported task directory.

A file format contract: the export stage writes it, the evaluation harness and
``swe-stream validate`` read it back. It carries swe-forge's keys (so tools made for
swe-forge task directories can read ours) next to every SWE-bench field under its dataset
name. The SWE-bench values are kept verbatim as strings and lists, never parsed into richer
types, so that dataset -> task directory -> dataset cannot change a single byte of a row.
"""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.base import GitSha, InstanceId, PRNumber, RepoName
from schemas.swebench import IMAGE_FIELDS, SWEBENCH_FIELDS, SWEBenchInstance, TestList
from schemas.tasks import ScoredTask

__all__ = ["DIFFICULTY_SCORES", "TASK_DIR_NAME_MAX", "TaskWorkspace", "task_dir_name", "task_month"]

TASK_DIR_NAME_MAX = 200

DIFFICULTY_SCORES: dict[str, int] = {"easy": 1, "medium": 2, "hard": 3}
"""swe-forge's ``difficulty_score`` (a u8) for each difficulty."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_DOTS = re.compile(r"\.{2,}")


def task_dir_name(instance_id: str) -> str:
    """The task directory name of an instance id: ``owner__repo-12`` -> ``owner-repo-12``.

    Only ``[A-Za-z0-9._-]``, no leading ``.`` or ``-``, no ``..``, at most 200 characters,
    whatever the input; ValueError when nothing usable is left.
    """
    name = _UNSAFE.sub("-", instance_id.replace("__", "-"))
    name = _DOTS.sub(".", name).lstrip(".-")[:TASK_DIR_NAME_MAX]
    if not name:
        raise ValueError(f"instance id {instance_id!r} gives an empty task directory name")
    return name


def task_month(created_at: str) -> str | None:
    """The month of a task's ``created_at`` in UTC, as splits and reports name it (``2026_01``):
    what an agent trained before then cannot have seen. None when it is no ISO time with a zone."""
    try:
        when = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.astimezone(UTC).strftime("%Y_%m")


def _number_of(instance_id: str) -> int:
    digits = instance_id.rsplit("-", 1)[-1]
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"instance id {instance_id!r} does not end in '-<PR number>'")
    return int(digits)


def _split_checks(task: ScoredTask) -> tuple[list[str], list[str]]:
    """The shell commands of the FAIL_TO_PASS and of the PASS_TO_PASS tests."""
    n_f2p, n_p2p = len(task.FAIL_TO_PASS), len(task.PASS_TO_PASS)
    # validate writes one check per test, FAIL_TO_PASS first: split them back the same way
    if task.checks and len(task.checks) == n_f2p + n_p2p:
        return list(task.checks[:n_f2p]), list(task.checks[n_f2p:])
    if task.install_config is None:
        return [], []
    base = task.install_config.test_command
    return (
        [f"{base} {shlex.quote(t)}" for t in task.FAIL_TO_PASS],
        [f"{base} {shlex.quote(t)}" for t in task.PASS_TO_PASS],
    )


class TaskWorkspace(BaseModel):
    """The content of an exported task's ``workspace.yaml``."""

    model_config = ConfigDict(extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1

    schema_version: int = 1
    pipeline_version: int | None = None

    # swe-forge's keys
    id: str = Field(
        pattern=rf"^[A-Za-z0-9_][A-Za-z0-9._-]{{0,{TASK_DIR_NAME_MAX - 1}}}$",
        description="The task directory's name, e.g. owner-repo-12.",
    )
    repo: RepoName
    language: str | None = None
    difficulty: Literal["easy", "medium", "hard"] | None = None
    difficulty_score: int | None = Field(default=None, description="easy 1, medium 2, hard 3.")
    fail_to_pass: list[str] = Field(
        default_factory=list, description="Shell commands that fail before the fix, pass after."
    )
    pass_to_pass: list[str] = Field(
        default_factory=list, description="Shell commands that pass before and after the fix."
    )
    install_config: dict[str, Any] = Field(default_factory=dict)
    prompt: str
    quality_score: float | None = None
    quality_passed: bool | None = None
    docker_passed: bool | None = None
    status: str = "exported"
    image_name: str | None = Field(
        default=None,
        description="The task's instance image in a registry (`swe-stream images push`); "
        "dataset rows carry it as image_name and as SWE-rebench's docker_image.",
    )

    # SWE-bench's fields, verbatim
    instance_id: InstanceId
    base_commit: GitSha
    patch: str
    test_patch: str
    problem_statement: str
    hints_text: str = ""
    created_at: str
    version: str | None = None
    FAIL_TO_PASS: TestList
    PASS_TO_PASS: TestList
    environment_setup_commit: GitSha | None = None

    # ours
    number: PRNumber
    tests_generated: bool = False
    testgen_turns: int | None = None
    testgen_tokens: int | None = None

    @field_validator("schema_version")
    @classmethod
    def _check_schema_version(cls, value: int) -> int:
        if value != cls.SCHEMA_VERSION:
            raise ValueError(
                f"workspace.yaml schema_version {value} is not supported: this code reads "
                f"schema_version {cls.SCHEMA_VERSION} only"
            )
        return value

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        # the pattern alone would let '..' through, and the id is joined to a directory path
        if ".." in value:
            raise ValueError(f"task id {value!r} may not contain '..'")
        return value

    @field_validator("fail_to_pass", "pass_to_pass")
    @classmethod
    def _check_commands(cls, value: list[str]) -> list[str]:
        # checks.txt holds one command per line
        for command in value:
            if not command.strip() or "\n" in command or "\r" in command:
                raise ValueError(f"a check must be one non-empty line, got {command!r}")
        return value

    def to_swebench(self) -> dict[str, Any]:
        """The SWE-bench row: exactly the dataset's fields in its order, test lists as lists."""
        return {name: getattr(self, name) for name in SWEBENCH_FIELDS}

    @property
    def month(self) -> str | None:
        """``task_month`` of ``created_at``: the split the task is exported to, the month its
        harness results are counted under."""
        return task_month(self.created_at)

    def dataset_row(self) -> dict[str, Any]:
        """The task's ``dataset.jsonl`` row: SWE-bench's fields, then, once the instance image
        is in a registry, its name under both names the scaffolds read (mini-swe-agent and
        SWE-agent read ``image_name``, SWE-rebench's rows have ``docker_image``)."""
        row = self.to_swebench()
        if self.image_name:
            row |= {name: self.image_name for name in IMAGE_FIELDS}
        return row

    @classmethod
    def from_scored(cls, task: ScoredTask, task_id: str) -> TaskWorkspace:
        """The workspace of an accepted task, to be written to the directory ``task_id``."""
        fail_to_pass, pass_to_pass = _split_checks(task)
        install: dict[str, Any] = {}
        if task.install_config is not None:
            config = task.install_config
            install = {
                **config.model_dump(mode="json"),
                "install": " && ".join(config.install_commands),
                "test_cmd": config.test_command,
            }
        return cls(
            pipeline_version=task.pipeline_version,
            id=task_id,
            language=task.install_config.language if task.install_config else None,
            difficulty=task.classification,
            difficulty_score=DIFFICULTY_SCORES[task.classification],
            fail_to_pass=fail_to_pass,
            pass_to_pass=pass_to_pass,
            install_config=install,
            prompt=task.problem_statement,
            quality_score=task.quality_score,
            quality_passed=task.accepted,
            # a validated task's tests were proven by running them in Docker
            docker_passed=True,
            number=task.number,
            tests_generated=task.tests_generated,
            testgen_turns=task.testgen_turns,
            testgen_tokens=task.testgen_tokens,
            # the same strings the dataset line gets, so workspace and dataset cannot disagree
            **task.to_swebench(),
        )

    @classmethod
    def from_swebench(cls, row: dict[str, Any]) -> TaskWorkspace:
        """The workspace of a SWE-bench dataset row (unknown columns are ignored).

        The row is validated as a ``SWEBenchInstance``, but the original strings are kept:
        the instance would turn ``created_at`` into a datetime and write it back differently.
        """
        instance = SWEBenchInstance.model_validate(row)
        fields = instance.to_swebench()
        for name in SWEBENCH_FIELDS:
            if name not in ("FAIL_TO_PASS", "PASS_TO_PASS") and isinstance(row.get(name), str):
                fields[name] = row[name]
        image = next((row[name] for name in IMAGE_FIELDS if row.get(name)), None)
        return cls(
            id=task_dir_name(instance.instance_id),
            number=_number_of(instance.instance_id),
            prompt=instance.problem_statement,
            image_name=image if isinstance(image, str) else None,
            **fields,
        )
