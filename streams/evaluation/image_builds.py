"""One image built by running its steps in a container and committing it (``docker commit``).

Not a Dockerfile build, for three reasons:

* **a package cache shared by every build of the host**: the container mounts the cache volume
  (``docker.package_cache``) where uv and pip keep what they downloaded and built, so a
  repository's next environment, or another repository needing the same wheels, downloads
  nothing again. The classic builder mounts nothing, and BuildKit's cache mounts are not
  reachable through the engine API the Docker SDK speaks;
* **progress**: each step's output is read while it runs and reported to the process's
  progress registry (``streams.core.progress``: layer, tag, step, elapsed time), which the
  live view draws and which logs a line when a build starts, ends, and every few seconds of a
  long one, instead of nothing for a minute;
* **one layer per image** and no build cache: the classic builder's cache probe lists the
  parent's children and reads each, and a child another process removes in between fails the
  build (``unable to find image "sha256:..."``); here nothing but the tag is ever reused.

The container's environment, working directory and labels become the image's; the cache
volume is not part of it. Every step runs under ``timeout -s KILL``.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.core.progress import PROGRESS
from streams.evaluation.sandbox import BUILDER_LABEL, owner_label, remove_now_or_later, tar_files

log = logging.getLogger("swe_stream.environments")

PACKAGE_CACHE_MOUNT = "/var/cache/swe-stream"  # where a build sees the host's package cache
TAIL_CHARS = 3000


class ImageBuildError(RuntimeError):
    """An image could not be built; ``log_tail`` is the tail of the build output, ``step``
    the instruction that failed (``RUN ...``) and ``layer`` the image's layer."""

    def __init__(self, message: str, log_tail: str = "", step: str = "", layer: str = ""):
        super().__init__(f"{message}\n{log_tail}" if log_tail else message)
        self.log_tail = log_tail
        self.step = step
        self.layer = layer


@dataclass
class BuildPlan:
    """What an image is made of: its parent, files, steps and configuration."""

    layer: str  # env, instance, tools: for logs, errors and metrics
    tag: str
    parent: str
    steps: list[str]
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path -> content
    environment: dict[str, str] = field(default_factory=dict)  # the image's, and the steps'
    workdir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class StepRecord:
    """A step that ran: how long it took and the tail of what it printed."""

    step: str
    seconds: float
    output_tail: str


def package_cache_volumes(package_cache: str) -> dict[str, dict[str, str]]:
    """The ``volumes`` option mounting ``package_cache`` (a volume name or an absolute host
    path) at ``PACKAGE_CACHE_MOUNT``; nothing when it is empty (no cache)."""
    if not package_cache:
        return {}
    return {package_cache: {"bind": PACKAGE_CACHE_MOUNT, "mode": "rw"}}


def cache_variables(package_cache: str) -> dict[str, str]:
    """The variables that point uv and pip at the shared cache during a build step (or turn
    their caches off when there is none): never part of the image."""
    if not package_cache:
        return {"UV_NO_CACHE": "1", "PIP_NO_CACHE_DIR": "1"}
    return {
        "UV_CACHE_DIR": f"{PACKAGE_CACHE_MOUNT}/uv",
        "PIP_CACHE_DIR": f"{PACKAGE_CACHE_MOUNT}/pip",
    }


class ImageBuild:
    """Builds ``plan`` on the engine behind ``client``; ``run()`` returns the image."""

    def __init__(
        self, client: Any, plan: BuildPlan, package_cache: str = "", step_timeout: float = 3600
    ):
        self.client = client
        self.plan = plan
        self.package_cache = package_cache
        self.step_timeout = step_timeout
        self.records: list[StepRecord] = []
        self._progress_id = 0  # this build in the progress registry

    def run(self, archives: Iterable[tuple[str, bytes]] = ()) -> Any:
        """Build the image (``archives``: tars extracted at a directory before the steps)."""
        plan = self.plan
        self._progress_id = PROGRESS.build_started(plan.layer, plan.tag, len(plan.steps))
        built = False
        try:
            image = self._run(archives)
            built = True
            return image
        finally:
            PROGRESS.build_finished(self._progress_id, ok=built)

    def _run(self, archives: Iterable[tuple[str, bytes]]) -> Any:
        plan = self.plan
        container = self.client.containers.create(
            plan.parent,
            ["sleep", "infinity"],
            environment=plan.environment,
            working_dir=plan.workdir,
            # the next process of the host removes it if this one dies mid-build
            labels={**plan.labels, BUILDER_LABEL: owner_label()},
            volumes=package_cache_volumes(self.package_cache),
            network_mode="bridge",  # installs download
            log_config={"type": "none"},
        )
        try:
            container.start()
            # the plan's files are a reproducible tar of absolute paths (mtime 0)
            for directory, archive in [*archives, ("/", tar_files(plan.files))]:
                if directory != "/":
                    self._exec(container, f"mkdir -p {shlex.quote(directory)}", quiet=True)
                if not container.put_archive(directory, archive):
                    raise ImageBuildError(f"could not copy files into {plan.tag}", layer=plan.layer)
            for number, step in enumerate(plan.steps, 1):
                self._step(container, number, step)
            container.kill()  # `sleep infinity` stops; commit keeps the file system
            repository, _, tag = plan.tag.rpartition(":")
            # neither the container's Cmd (`sleep infinity`) nor its builder label (the next
            # process would take its later containers for orphans) become the image's
            changes = ['CMD ["/bin/bash"]', f'LABEL {BUILDER_LABEL}=""']
            return container.commit(repository, tag, changes=changes)
        finally:
            remove_now_or_later(container, "build container")

    def _step(self, container: Any, number: int, step: str) -> None:
        plan = self.plan
        started = time.monotonic()
        log.debug(
            "%s image %s: step %d/%d: %s", plan.layer, plan.tag, number, len(plan.steps), step
        )
        PROGRESS.build_step(self._progress_id, number, step)
        code, output = self._exec(container, step, progress=True)
        seconds = time.monotonic() - started
        self.records.append(StepRecord(step, seconds, output[-TAIL_CHARS:]))
        if code != 0:
            raise ImageBuildError(
                f"building {plan.layer} image {plan.tag} failed (exit code {code})",
                output[-TAIL_CHARS:],
                f"RUN {step}",
                plan.layer,
            )

    def _exec(
        self,
        container: Any,
        command: str,
        progress: bool = False,
        quiet: bool = False,
    ) -> tuple[int, str]:
        """Run ``command`` (bash, killed at the step timeout) with the cache variables; its
        exit code and the tail of its output, read as it comes (with ``progress``, its last
        line reported to the progress registry)."""
        api = self.client.api
        timed = f"timeout -s KILL {self.step_timeout:.0f} bash -c {shlex.quote(command)}"
        exec_id = api.exec_create(
            container.id,
            ["bash", "-c", timed],
            environment=cache_variables(self.package_cache),
            workdir=self.plan.workdir,
        )["Id"]
        tail = ""
        for chunk in api.exec_start(exec_id, stream=True):
            text = chunk.decode("utf-8", errors="replace")
            tail = (tail + text)[-4 * TAIL_CHARS :]
            if progress and not quiet and text.strip():
                lines = [line for line in tail[-1000:].splitlines() if line.strip()]
                PROGRESS.build_output(self._progress_id, lines[-1] if lines else "")
        code = api.exec_inspect(exec_id).get("ExitCode")
        return (code if isinstance(code, int) else -1), tail
