"""Exported tasks' instance images pushed to a registry, and their rows told where
(``swe-stream images push``, and ``export.registry`` as the export stage writes a task).

A task's images are the harness's own (``task_environment``: built, reused, or pulled); its
instance image is pushed as ``registry.image_reference`` names it, then the task directory's
``workspace.yaml`` and its line of the ``dataset.jsonl`` beside it gain ``image_name`` (and the
line ``docker_image``). Pushes build at the kept level (``KEPT_LEVEL``), so the images stay
here at their kept tags too (the harness reuses them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.workspace import TaskWorkspace
from streams.evaluation.prebuild import KEPT_LEVEL, failure_reason
from streams.evaluation.registry import PushedImage, image_reference, parse_registry, push_image
from streams.evaluation.taskdir import (
    DATASET,
    WORKSPACE,
    append_to_dataset,
    find_task_dirs,
    load_workspace,
    write_task_dir,
)
from streams.evaluation.validator import Validator, task_environment

log = logging.getLogger("swe_stream.publish")


@dataclass
class PublishedTask:
    """What pushing one task came to: its image in the registry, or why not (``error``)."""

    task: str
    image: PushedImage | None = None
    error: str = ""
    seconds: float = 0.0

    @property
    def pushed(self) -> bool:
        return self.image is not None

    def line(self) -> str:
        if self.image is None:
            return f"{self.task}: failed ({self.error})"
        return f"{self.task}: {self.image.line()} in {self.seconds:.1f} s"

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "pushed": self.pushed,
            "error": self.error,
            "seconds": self.seconds,
            **(self.image.as_dict() if self.image else {}),
        }


def push_task_image(validator: Validator, task: TaskWorkspace, registry: str) -> PushedImage:
    """Blocking: the task's instance image (built or reused as the harness sets the task up)
    pushed to ``registry``; raises what the setup or the push raised. ``validator`` builds at
    the kept level (``KEPT_LEVEL``): a dropped layer's image is its build's own, labelled with
    its process, and wherever it is pulled on this host once that process has ended, the
    orphan sweep (``sandbox.remove_orphans``) would take it for the dead build's and remove it."""
    if validator.docker.cache_level != KEPT_LEVEL:
        raise ValueError(
            f"images are pushed from cache level {KEPT_LEVEL!r}, not "
            f"{validator.docker.cache_level!r}: a dropped layer's image belongs to its build"
        )
    reference = image_reference(registry, task.repo, task.number)
    # a task pushed before names its image: that one is pushed (pulled first if it is not
    # here), so pushing again sends nothing and another registry gets the very same image
    environment = task_environment(validator, task)
    try:
        return push_image(validator.client, environment.instance.tag, reference)
    finally:
        environment.release()


def publish_task_dir(validator: Validator, task_dir: Path, registry: str) -> PublishedTask:
    """Blocking: push one task directory's image and write its name into the task's
    ``workspace.yaml`` and the ``dataset.jsonl`` beside it (when there is one); never raises
    for the task's own failures."""
    started = time.monotonic()
    try:
        task = load_workspace(task_dir / WORKSPACE)
    except (OSError, ValueError) as exc:
        return PublishedTask(task_dir.name, error=f"unreadable task: {exc}"[:500])
    try:
        pushed = push_task_image(validator, task, registry)
    except Exception as exc:  # clone, build, push: this task's failure
        log.info("images: %s not pushed: %s", task.id, exc)
        return PublishedTask(
            task.id, error=failure_reason(exc), seconds=round(time.monotonic() - started, 1)
        )
    record_image(task_dir, task, pushed.reference)
    return PublishedTask(task.id, pushed, seconds=round(time.monotonic() - started, 1))


def record_image(task_dir: Path, task: TaskWorkspace, reference: str) -> TaskWorkspace:
    """The task with ``image_name`` = ``reference``, written to its directory and to the line
    of the ``dataset.jsonl`` beside it, if that file exists."""
    updated = task.model_copy(update={"image_name": reference})
    root = task_dir.resolve().parent
    write_task_dir(root, updated)
    if (root / DATASET).is_file():
        append_to_dataset(root / DATASET, updated.dataset_row())
    return updated


def publish_tasks(
    validator: Validator,
    path: Path,
    registry: str,
    on_done: Callable[[PublishedTask], None] | None = None,
) -> list[PublishedTask]:
    """Blocking: every task directory under ``path`` (or ``path`` itself), one after another
    (their layers are shared: the second task of a repository sends only its own)."""
    parse_registry(registry)  # RegistryError before any task is built
    results = []
    for task_dir in find_task_dirs(path):
        result = publish_task_dir(validator, task_dir, registry)
        results.append(result)
        if on_done is not None:
            on_done(result)
    return results


def summary_line(results: list[PublishedTask]) -> str:
    """``3 tasks: 2 pushed (1,234 bytes sent), 1 failed``."""
    pushed = [result.image for result in results if result.image is not None]
    sent = sum(image.bytes_sent for image in pushed)
    failed = len(results) - len(pushed)
    return f"{len(results)} tasks: {len(pushed)} pushed ({sent:,} bytes sent), {failed} failed"
