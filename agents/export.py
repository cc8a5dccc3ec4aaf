"""Stage ``export``: ``tasks.scored`` -> ``tasks.exported``.

Writes every accepted task to disk in the two forms its users read, a task directory
(``workspace.yaml``, ``prompt.md``, ``checks.txt``) and its line of ``dataset.jsonl``; the
formats, and why writing them twice changes nothing, are ``streams.evaluation.taskdir``'s.
Rejected tasks produce nothing: score has already written their rejection to the ledger.
With ``export.registry`` set, the task's instance image is pushed there first and the rows
name it (``streams.evaluation.publish``); a push that fails exports the task without one (the
failure logged and counted: ``swe-stream images push`` can push it later).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from schemas import ExportedTask, ScoredTask
from schemas.workspace import TaskWorkspace, task_dir_name
from streams.core import metrics
from streams.evaluation.publish import push_task_image
from streams.evaluation.registry import PushedImage, parse_registry
from streams.evaluation.taskdir import DATASET, export_task
from streams.evaluation.validator import Validator
from streams.kafka.topics import EXPORTED, SCORED
from streams.pipeline.stage import Outcome, Stage

STAGE = "export"
log = logging.getLogger("swe_stream.export")

Pusher = Callable[[TaskWorkspace], PushedImage]


def registry_pusher(validator: Validator, registry: str) -> Pusher:
    """What pushes a task's instance image to ``registry`` (checked now: ValueError)."""
    parse_registry(registry)

    def push(ws: TaskWorkspace) -> PushedImage:
        return push_task_image(validator, ws, registry)

    return push


class TaskExporter:
    def __init__(self, output_dir: Path, pipeline_version: int, push: Pusher | None = None) -> None:
        self.output_dir = Path(output_dir).resolve()
        self.dataset_path = self.output_dir / DATASET
        self.pipeline_version = pipeline_version
        self.push = push

    async def pushed(self, ws: TaskWorkspace) -> TaskWorkspace:
        """``ws`` naming its pushed image; unchanged when there is no registry or the push
        failed (a registry's outage loses no task)."""
        if self.push is None:
            return ws
        try:
            image = await asyncio.to_thread(self.push, ws)
        except Exception as exc:  # clone, build, push: the task goes out without an image
            metrics.IMAGE_PUSHES.labels(result="failed").inc()
            log.warning("export: %s exported without an image: %s", ws.instance_id, exc)
            return ws
        metrics.IMAGE_PUSHES.labels(result="pushed").inc()
        metrics.IMAGE_PUSH_BYTES.inc(image.bytes_sent)
        return ws.model_copy(update={"image_name": image.reference})

    def export(self, ws: TaskWorkspace) -> tuple[Path, str]:
        """Write the task directory and dataset line (blocking); returns the dir and digest."""
        return export_task(self.output_dir, ws)

    async def __call__(self, task: ScoredTask) -> Outcome:
        if not task.accepted:
            return Outcome()
        ws = await self.pushed(TaskWorkspace.from_scored(task, task_dir_name(task.instance_id)))
        task_dir, digest = await asyncio.to_thread(self.export, ws)
        exported = ExportedTask(
            pipeline_version=self.pipeline_version,
            repo=task.repo,
            number=task.number,
            instance_id=task.instance_id,
            export_dir=str(task_dir),
            dataset_path=str(self.dataset_path),
            exported_at=datetime.now(UTC),
            content_sha256=digest,
        )
        return Outcome.accept(exported, status="exported")


def export_stage(
    output_dir: Path, pipeline_version: int, push: Pusher | None = None
) -> Stage[ScoredTask]:
    return Stage(STAGE, SCORED, EXPORTED, TaskExporter(output_dir, pipeline_version, push))
