"""Stage ``export``: ``tasks.scored`` -> ``tasks.exported``.

Writes every accepted task to disk in the two forms its users read, a task directory
(``workspace.yaml``, ``prompt.md``, ``checks.txt``) and its line of ``dataset.jsonl``; the
formats, and why writing them twice changes nothing, are ``streams.evaluation.taskdir``'s.
Rejected tasks produce nothing: score has already written their rejection to the ledger.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from schemas import ExportedTask, ScoredTask
from schemas.workspace import TaskWorkspace, task_dir_name
from streams.evaluation.taskdir import DATASET, export_task
from streams.kafka.topics import EXPORTED, SCORED
from streams.pipeline.stage import Outcome, Stage

STAGE = "export"


class TaskExporter:
    def __init__(self, output_dir: Path, pipeline_version: int) -> None:
        self.output_dir = Path(output_dir).resolve()
        self.dataset_path = self.output_dir / DATASET
        self.pipeline_version = pipeline_version

    def export(self, ws: TaskWorkspace) -> tuple[Path, str]:
        """Write the task directory and dataset line (blocking); returns the dir and digest."""
        return export_task(self.output_dir, ws)

    async def __call__(self, task: ScoredTask) -> Outcome:
        if not task.accepted:
            return Outcome()
        ws = TaskWorkspace.from_scored(task, task_dir_name(task.instance_id))
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


def export_stage(output_dir: Path, pipeline_version: int) -> Stage[ScoredTask]:
    return Stage(STAGE, SCORED, EXPORTED, TaskExporter(output_dir, pipeline_version))
