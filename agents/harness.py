"""Stage ``harness``: ``harness.requests`` -> ``harness.results``; and ``harness-exported``:
``tasks.exported`` -> ``harness.results`` when an agent is configured (``harness.agent_command``).

A request names a task (a directory of the export) and an agent; the harness engine
(``streams.evaluation.harness``: setup, sanity, the agent in its sandbox, grading) evaluates it
and the result, with the per-check statuses, is the stage's output.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schemas import AgentSpec, ExportedTask, HarnessRequest, HarnessResult
from schemas.harness import CommandResult, HarnessStatus, TaskEvaluation
from schemas.workspace import task_dir_name
from streams.core.errors import DOCKER, ServiceUnavailable
from streams.core.settings import HarnessSettings
from streams.evaluation.harness import HarnessEngine, HarnessOptions, safe_name
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Validator
from streams.kafka.topics import EXPORTED, HARNESS_REQUESTS, HARNESS_RESULTS
from streams.pipeline.stage import Outcome, Stage

STAGE = "harness"
ALL_NETWORK_WARNING = (
    "harness: the agent runs with all of the network (agent_network=all): it can fetch the "
    "upstream repository and the pull request it is asked to redo; use model (its model's API "
    "only) to benchmark"
)

log = logging.getLogger("swe_stream.harness")


def _request_dir(output_dir: Path, request_id: str) -> Path:
    """``output_dir/request_id``, refused unless it is a direct child of ``output_dir`` (the
    schema already allows only safe names; this guards the path itself)."""
    directory = (output_dir / request_id).resolve()
    if directory.parent != output_dir.resolve():
        raise ValueError(f"request id {request_id!r} leaves the harness output directory")
    return directory


class HarnessHandler:
    """The stage's handler: a request names a task (in the export directory) and an agent."""

    def __init__(
        self,
        tasks_dir: Path,
        validator: Validator,
        limits: Limits,
        pipeline_version: int,
        output_dir: Path | None = None,
        isolate_tests: bool = False,
        model_endpoints: tuple[tuple[str, int], ...] = (),
        registries: Sequence[str] | None = None,
    ):
        self.tasks_dir = tasks_dir
        self.isolate_tests = isolate_tests
        self.model_endpoints = model_endpoints  # what agent_network=model reaches
        self.registries = registries  # what agent_network=registries reaches
        self._warned_all = False
        self.validator = validator
        self.limits = limits
        self.pipeline_version = pipeline_version
        self.output_dir = output_dir

    async def __call__(self, request: HarnessRequest) -> Outcome:
        agent = request.agent
        if agent.network == "all" and not self._warned_all:
            self._warned_all = True
            log.warning(ALL_NETWORK_WARNING)
        options = HarnessOptions(
            agent_command=agent.command,
            agent_dir=Path(agent.agent_dir) if agent.agent_dir else None,
            agent_timeout_seconds=request.agent_timeout_seconds,
            test_timeout_seconds=request.test_timeout_seconds,
            agent_network=agent.network,
            model_endpoints=self.model_endpoints,
            registries=None if self.registries is None else tuple(self.registries),
            agent_env=dict(agent.env),
            output_dir=_request_dir(self.output_dir, request.request_id)
            if self.output_dir
            else None,
            isolate_tests=self.isolate_tests,
            model_name=agent.name,  # the <model> of SWE-bench's report layout
        )
        engine = HarnessEngine(self.validator, options, self.limits)
        task_dir = self.tasks_dir / task_dir_name(request.instance_id)
        evaluation = await asyncio.to_thread(engine.evaluate, task_dir)
        if evaluation.status != "resolved" and not await asyncio.to_thread(
            self.validator.engine_answers
        ):  # a run the engine cut short grades nothing: wait for it, evaluate again
            raise ServiceUnavailable(
                f"the Docker engine does not answer ({evaluation.status})", service=DOCKER
            )
        return Outcome.accept(
            harness_result(request, evaluation, self.pipeline_version), status=None
        )


def harness_result(
    request: HarnessRequest, evaluation: TaskEvaluation, pipeline_version: int
) -> HarnessResult:
    def statuses(commands: list[CommandResult]) -> dict[str, Any]:
        return {c.command: c.status or ("passed" if c.passed else "failed") for c in commands}

    status: HarnessStatus = evaluation.status
    return HarnessResult(
        pipeline_version=pipeline_version,
        request_id=request.request_id,
        instance_id=request.instance_id,
        repo=evaluation.repo or "unknown/unknown",
        agent_name=request.agent.name,
        status=status,
        agent_time_seconds=evaluation.agent_duration_secs,
        test_time_seconds=round(
            sum(c.duration_ms for c in evaluation.fail_to_pass + evaluation.pass_to_pass) / 1000
            + sum(run.seconds for run in evaluation.test_runs if run.phase == "grading"),
            3,
        ),
        fail_to_pass=statuses(evaluation.fail_to_pass),
        pass_to_pass=statuses(evaluation.pass_to_pass),
        error=evaluation.error,
        finished_at=datetime.now(UTC),
    )


def exported_request_id(task: ExportedTask, agent_name: str) -> str:
    """A request id for an exported task: a safe path name (``RequestId``) of at most 200
    characters whatever the instance id and agent name, unique per task content and agent."""
    agent = safe_name(agent_name, 40, "agent")
    return f"{task.instance_id[:140]}-{agent}-{task.content_sha256[:12]}"


class ExportedTaskHarness:
    """Evaluates every exported task with the configured agent (``harness.agent_command``)."""

    def __init__(
        self, handler: HarnessHandler, agent: AgentSpec, agent_timeout: float, test_timeout: float
    ):
        self.handler = handler
        self.agent = agent
        self.agent_timeout = agent_timeout
        self.test_timeout = test_timeout

    async def __call__(self, task: ExportedTask) -> Outcome:
        request = HarnessRequest(
            pipeline_version=task.pipeline_version,
            request_id=exported_request_id(task, self.agent.name),
            instance_id=task.instance_id,
            agent=self.agent,
            agent_timeout_seconds=self.agent_timeout,
            test_timeout_seconds=self.test_timeout,
        )
        return await self.handler(request)


def harness_stages(
    settings: HarnessSettings,
    tasks_dir: Path,
    validator: Validator,
    limits: Limits,
    pipeline_version: int,
    model_endpoints: tuple[tuple[str, int], ...] = (),
    registries: Sequence[str] | None = None,
) -> list[Stage[Any]]:
    """``harness`` (requests) and, with an agent configured, ``harness-exported``
    (``model_endpoints``, ``registries``: what an agent's door lets through)."""
    handler = HarnessHandler(
        tasks_dir,
        validator,
        limits,
        pipeline_version,
        settings.output_dir,
        settings.isolate_tests,
        model_endpoints,
        registries,
    )
    stages: list[Stage[Any]] = [
        Stage(
            STAGE,
            HARNESS_REQUESTS,
            HARNESS_RESULTS,
            handler,
            concurrency=1,
            skip_final=False,
            any_version=True,  # requests come from users, for tasks of any version
        )
    ]
    if settings.agent_command:
        agent = AgentSpec(
            name="configured",
            command=settings.agent_command,
            agent_dir=str(settings.agent_dir) if settings.agent_dir else None,
            network=settings.agent_network,
        )
        on_export = ExportedTaskHarness(
            handler, agent, settings.agent_timeout_seconds, settings.test_timeout_seconds
        )
        stages.append(
            Stage(f"{STAGE}-exported", EXPORTED, HARNESS_RESULTS, on_export, skip_final=False)
        )
    return stages
