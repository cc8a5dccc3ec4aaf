"""Images built ahead of an evaluation (``swe-stream images instances``, SWE-bench's
``prepare_images``): the env and instance images of exported tasks, so that the harness run
that follows builds nothing.

Each task's images come from ``task_environment``, the harness's own setup (the recipe of the
task's ``install_config``, else inference's, the same tags), on a validator at cache level
``instance``: every layer at its kept tag, which no task drops. The harness reuses them at
``--cache-level instance`` and at ``env`` (the default; ``environments`` keeps instance images
that were there before a task); at ``base`` and ``none`` every task builds its own env image,
and so its own instance image too.

A task is ``built`` (a layer was built), ``cached`` (both were there) or ``failed`` (the reason
in one line: the layer and step that failed, its exit code and last line of output).
``force`` removes the tasks' kept instance images and the env images they stand on first,
then builds them again.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from schemas.workspace import TaskWorkspace
from streams.evaluation.environments import INSTANCE_REPOSITORY, ImageBuildError, kept_tags
from streams.evaluation.sandbox import BUILDER_LABEL, owner_label, remove_labelled
from streams.evaluation.taskdir import WORKSPACE, find_task_dirs, load_workspace, read_dataset
from streams.evaluation.validator import ValidationFailed, Validator, task_environment

log = logging.getLogger("swe_stream.prebuild")

# the cache level the images are built at: every layer kept
KEPT_LEVEL: Literal["instance"] = "instance"
REASON_CHARS = 500

Status = Literal["built", "cached", "failed"]


@dataclass(frozen=True)
class TaskSource:
    """One task to build: its workspace, or why it could not be read (``problem``)."""

    name: str
    workspace: TaskWorkspace | None = None
    problem: str = ""


@dataclass(frozen=True)
class PreparedTask:
    """What building one task's images came to."""

    task: str
    status: Status
    instance_id: str = ""
    env_image: str = ""
    instance_image: str = ""
    built: tuple[str, ...] = ()  # the layers built (env, instance); none: all were there
    seconds: float = 0.0
    error: str = ""  # why it failed, one line

    @property
    def ready(self) -> bool:
        return self.status != "failed"

    def line(self) -> str:
        """The task's line of the report."""
        if self.status == "failed":
            return f"{self.task}: failed ({self.error})"
        if self.status == "cached":
            return f"{self.task}: cached ({self.instance_image})"
        layers = " and ".join(self.built)
        return f"{self.task}: built {layers} in {self.seconds:.1f} s ({self.instance_image})"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["built"] = list(self.built)
        return data


def read_task_sources(path: Path) -> list[TaskSource]:
    """The tasks at ``path``: a task directory, a directory of them, or a SWE-bench dataset
    file (JSONL, or a JSON array; its rows carry no ``install_config``: their recipes are
    inferred, as for the task directories ``swe-stream export`` makes of them). A task that
    cannot be read is a source with its problem; FileNotFoundError / ValueError when ``path``
    is none of these (or the dataset file is not JSON)."""
    path = Path(path)
    if path.is_file():
        sources = []
        for index, row in enumerate(read_dataset(path)):
            name = str(row.get("instance_id") or f"row {index}")
            try:
                sources.append(TaskSource(name, TaskWorkspace.from_swebench(row)))
            except ValueError as exc:  # pydantic's ValidationError is a ValueError too
                sources.append(TaskSource(name, problem=f"{path}: row {index}: {_one_line(exc)}"))
        return sources
    sources = []
    for task_dir in find_task_dirs(path):
        try:
            sources.append(TaskSource(task_dir.name, load_workspace(task_dir / WORKSPACE)))
        except (OSError, ValueError) as exc:
            sources.append(TaskSource(task_dir.name, problem=f"unreadable task: {_one_line(exc)}"))
    return sources


def prepare_task(validator: Validator, source: TaskSource) -> PreparedTask:
    """Blocking: build (or find) the env and instance images of one task, as the harness sets
    it up; never raises for the task's own failures."""
    task = source.workspace
    if task is None:
        return PreparedTask(source.name, "failed", error=source.problem)
    started = time.monotonic()
    try:
        environment = task_environment(validator, task)
    except Exception as exc:  # clone, recipe, build: all are this task's failure
        log.info("images: %s failed: %s", task.id, _one_line(exc))
        return PreparedTask(
            task.id,
            "failed",
            task.instance_id,
            seconds=round(time.monotonic() - started, 1),
            error=failure_reason(exc),
        )
    environment.release()  # at the kept level it drops nothing
    built = tuple(
        layer
        for layer, image in (("env", environment.env), ("instance", environment.instance))
        if image.built
    )
    return PreparedTask(
        task.id,
        "built" if built else "cached",
        task.instance_id,
        environment.env.tag,
        environment.instance.tag,
        built,
        round(time.monotonic() - started, 1),
    )


def failure_reason(error: BaseException) -> str:
    """One line saying why a task's images could not be built: the failing layer and step,
    its exit code and last line of output, or the validator's reason."""
    if isinstance(error, ImageBuildError) and error.step:
        first = str(error).splitlines()[0]
        code = first[first.rfind("(exit code") :] if "(exit code" in first else ""
        reason = f"{error.layer} step `{error.step}` failed {code}".rstrip()
        last = [line for line in error.log_tail.splitlines() if line.strip()]
        if last:
            reason += f": {last[-1].strip()}"
        return _one_line(reason)
    if isinstance(error, ValidationFailed):
        return _one_line(error)
    return _one_line(f"{type(error).__name__}: {error}")


def _one_line(error: BaseException | str) -> str:
    """The first line of ``error`` that says something, cut at ``REASON_CHARS``."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0][:REASON_CHARS] if lines else "no reason given"


def remove_kept_images(client: Any, sources: list[TaskSource]) -> list[str]:
    """Remove the kept instance images of the tasks and the env images they stand on
    (``force``); the tags removed, instance images first."""
    import docker.errors

    tags: list[str] = []
    for source in sources:
        if source.workspace is not None:
            tags += kept_tags(client, source.workspace.instance_id)
    # instance images before the env images they stand on
    ordered = sorted(dict.fromkeys(tags), key=lambda tag: not tag.startswith(INSTANCE_REPOSITORY))
    removed = []
    for tag in ordered:
        try:
            client.images.remove(tag, force=True)
        except docker.errors.ImageNotFound:
            continue
        removed.append(tag)
        log.info("images: removed %s (--force)", tag)
    return removed


def prepare_images(
    validator: Validator,
    sources: list[TaskSource],
    parallel: int = 1,
    force: bool = False,
    on_done: Callable[[PreparedTask], None] | None = None,
) -> list[PreparedTask]:
    """Blocking: every task's images, ``parallel`` tasks at once (two tasks of one env image
    build it once: the second waits for it); results in the order of ``sources``, each given
    to ``on_done`` as it ends. ``validator`` must build at the kept level (``KEPT_LEVEL``):
    images a task drops would be gone before anyone used them. On Ctrl-C the builds'
    containers are removed (their steps end) and KeyboardInterrupt goes on."""
    if validator.docker.cache_level != KEPT_LEVEL:
        raise ValueError(
            f"images are pre-built at cache level {KEPT_LEVEL!r}, not "
            f"{validator.docker.cache_level!r}: they would be dropped after each task"
        )
    client = validator.client  # made (and the orphans of dead processes removed) once, here
    if force:
        remove_kept_images(client, sources)
    results: list[PreparedTask | None] = [None] * len(sources)
    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="prebuild")
    try:
        futures = {pool.submit(prepare_task, validator, s): n for n, s in enumerate(sources)}
        for future in as_completed(futures):
            result = results[futures[future]] = future.result()
            if on_done is not None:
                on_done(result)
    except BaseException:  # Ctrl-C: the threads wait on build containers; remove them
        pool.shutdown(wait=False, cancel_futures=True)
        removed = remove_labelled(client, BUILDER_LABEL, owner_label())
        log.warning("images: interrupted; removed %d build container(s)", removed)
        raise
    pool.shutdown()
    return [result for result in results if result is not None]


def summary_line(results: list[PreparedTask]) -> str:
    """``3 tasks: 1 built, 1 cached, 1 failed``."""
    counts = Counter(result.status for result in results)
    shown = ", ".join(f"{counts[status]} {status}" for status in ("built", "cached", "failed"))
    return f"{len(results)} tasks: {shown}"
