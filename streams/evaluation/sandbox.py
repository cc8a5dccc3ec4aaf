"""Where repository code runs: a Docker container with limits and, by default, no network.

``Sandbox`` starts one long-lived container from an image (``sleep infinity`` as PID 1) and
runs each step with ``docker exec`` under ``timeout -s KILL``, so a validation of several test
runs pays for one container start. Files go in with ``put_archive``. The container is removed
when the ``with`` block ends, whatever happened. Nothing it prints is logged by Docker (a
command writing to ``/proc/1/fd/1`` would otherwise fill the host's disk with the log).

A container's own layer has no disk quota on most engines (overlay2's ``--storage-opt size``
needs xfs with project quotas), and ``ulimit -f`` bounds each file, not how many: ``fallocate``
takes gigabytes of the host's disk a millisecond. So for code that must not be trusted with
the host's disk (``Limits.writable_mb``: the harness's agents and graders) the root filesystem
is read-only and the places a command may write are tmpfs filled from the image: memory,
charged to the container's memory limit.

Blocking (the Docker SDK is synchronous): callers in the event loop use ``asyncio.to_thread``.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shlex
import socket
import tarfile
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from streams.core.settings import DockerSettings
from streams.evaluation.docker_exec import ContainerEnded, exec_output

log = logging.getLogger("swe_stream.sandbox")

KILLED = 137  # 128 + SIGKILL: what `timeout -s KILL` makes the command exit with
LABEL = "org.swe-stream.sandbox"  # on every sandbox container
# host:pid:start-time of the process that made the container: a process killed before it
# could remove its containers (SIGKILL, OOM, power loss) leaves them running `sleep
# infinity`; the next process on the host finds them by this label and removes them
OWNER_LABEL = "org.swe-stream.owner"
# the same, on the container an image is built in (``image_builds``); an image it commits
# has it emptied, so the containers later made from that image do not carry it
BUILDER_LABEL = "org.swe-stream.builder"
# where a command may write when the root filesystem is read-only (besides the working dir)
WRITABLE = ("/tmp", "/var/tmp", "/root", "/run")


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), which
    tells a live process from a later one that reused its pid; None if there is none."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_label() -> str:
    """This process as a container owner: ``host:pid:start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid) or '-'}"


def owner_is_gone(owner: str) -> bool:
    """Whether ``owner`` (an ``owner_label()``) is a process of this host that no longer runs.
    Owners on other hosts, and unreadable ones, are never taken for gone."""
    owner_host, pid, start = [*owner.split(":"), "", "", ""][:3]
    if owner_host != socket.gethostname() or not pid.isdigit():
        return False
    return start == "-" or _process_start(int(pid)) != start


def listed_containers(client: Any, label: str) -> list[dict[str, Any]]:
    """Containers (any state) carrying ``label`` (``name`` or ``name=value``), as the engine
    lists them. The low-level list: the high-level one inspects each container it lists, and
    one that another process removes in between would fail the whole listing."""
    containers: list[dict[str, Any]] = client.api.containers(all=True, filters={"label": label})
    return containers


def listed_image_tags(client: Any, repository: str) -> list[tuple[str, list[str]]]:
    """``(id, tags)`` of the images of ``repository``, as the engine lists them. The low-level
    list: the high-level one inspects each image it lists, and one that another process
    removes in between (a dropped instance image after its task) fails the whole listing."""
    images: list[dict[str, Any]] = client.api.images(name=repository)
    return [(image["Id"], list(image.get("RepoTags") or [])) for image in images]


def _remove(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.api.remove_container(container_id, force=True, v=True)
        return True
    except docker.errors.NotFound:  # removed meanwhile by someone else
        return False
    except docker.errors.APIError as error:  # e.g. removal already in progress
        log.debug("could not remove container %s: %s", container_id[:12], error)
        return False


def remove_orphans(client: Any) -> int:
    """Remove the sandbox containers that processes of this host which no longer run left
    behind, then their images and volumes; those of live processes and of other hosts are left
    alone."""
    removed = 0
    for label in (OWNER_LABEL, BUILDER_LABEL):
        for container in listed_containers(client, label):
            if owner_is_gone((container.get("Labels") or {}).get(label, "")):
                removed += _remove(client, container["Id"])
    if removed:
        log.warning("removed %d sandbox container(s) left by processes that died", removed)
    remove_orphan_images(client)  # only once the containers standing on them are gone
    remove_orphan_volumes(client)  # likewise (an egress proxy's socket volume)
    return removed


def remove_orphan_images(client: Any) -> int:
    """Remove the images of dropped layers whose builder, a process of this host, died before
    its task ended (SIGKILL, OOM): nobody else uses them, and an always-on worker restarted
    after each crash would otherwise leave one or two images per crash behind."""
    import docker.errors

    images = client.api.images(filters={"label": OWNER_LABEL})
    orphans = [i for i in images if owner_is_gone((i.get("Labels") or {}).get(OWNER_LABEL, ""))]
    removed = 0
    # newest first: a dropped instance image stands on its build's dropped env image. An env
    # image whose instance another process is removing at this moment refuses (a conflict):
    # it is tried again once that removal has had time to end
    left = sorted(orphans, key=lambda i: i.get("Created", 0), reverse=True)
    for attempt in range(3):
        refused = []
        for image in left:
            try:
                client.api.remove_image(image["Id"], force=True)
                removed += 1
            except docker.errors.NotFound:  # removed meanwhile by another process
                continue
            except docker.errors.APIError as error:
                log.debug("could not remove image %s: %s", image["Id"][:19], error)
                refused.append(image)
        if not refused:
            break
        left = refused
        time.sleep(0.5 * (attempt + 1))
    if removed:
        log.warning("removed %d image(s) left by processes that died", removed)
    return removed


def remove_orphan_volumes(client: Any) -> int:
    """Remove the volumes (an egress proxy's socket volume) that a process of this host which
    no longer runs made; one still mounted by a container is left for the next time."""
    import docker.errors

    volumes = client.api.volumes(filters={"label": OWNER_LABEL}).get("Volumes") or []
    removed = 0
    for volume in volumes:
        if not owner_is_gone((volume.get("Labels") or {}).get(OWNER_LABEL, "")):
            continue
        try:
            client.api.remove_volume(volume["Name"], force=True)
            removed += 1
        except docker.errors.NotFound:  # removed meanwhile by another process
            continue
        except docker.errors.APIError as error:  # still in use
            log.debug("could not remove volume %s: %s", volume["Name"], error)
    if removed:
        log.warning("removed %d volume(s) left by processes that died", removed)
    return removed


def remove_orphans_if_docker() -> None:
    """``remove_orphans`` on this host's engine, if one answers: a worker killed
    mid-validation (SIGKILL, OOM) left its sandboxes running and its images behind. A worker
    without Docker (no validation) has nothing to remove."""
    try:
        import docker

        remove_orphans(docker.from_env(timeout=60))
    except Exception as exc:  # no Docker here, or it went away: the next worker tries again
        log.debug("no orphan sandboxes removed: %s", exc)


def remove_labelled(client: Any, label: str, value: str) -> int:
    """Remove every container carrying ``label=value`` (what an interrupted run left)."""
    return sum(_remove(client, c["Id"]) for c in listed_containers(client, f"{label}={value}"))


@dataclass(frozen=True)
class Limits:
    """Resource limits of a sandbox container."""

    memory_mb: int = 4096
    cpus: float = 2.0
    pids: int = 512
    network: bool = False
    # None: the container writes to its image layer, on the host's disk (`ulimit -f` bounds
    # each file, not their number). A size: the root filesystem is read-only and the working
    # directory and WRITABLE are tmpfs of this many MB each, filled from the image; what is
    # written there is memory charged to `memory_mb`, so the host's disk never sees it.
    writable_mb: int | None = None

    @classmethod
    def from_settings(cls, docker: DockerSettings) -> Limits:
        return cls(docker.memory_mb, docker.cpus, docker.pids_limit)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str  # stdout then stderr
    seconds: float  # wall time seen from the host (docker exec included)
    timed_out: bool
    inner_seconds: float  # the command's own time, measured inside the container
    stdout: str = ""
    stderr: str = ""


# the command's own duration, printed by the wrapper inside the container (nanoseconds)
_TIMING = "__swe_stream_ns__"
_TIMING_RE = re.compile(rf"^{_TIMING} (\d+)$", re.MULTILINE)

# Output goes to files inside the container, not down the exec stream: a command that prints
# without end (or leaves a background process printing) cannot fill the host's memory, and
# what comes back is bounded. ``ulimit -f`` (KiB) bounds every file the command writes, those
# output files included, so it cannot fill the host's disk either within its timeout.
_WRAPPER = """d=$(mktemp -d /tmp/.swe-stream-exec.XXXXXX)
show() {{
  n=$(stat -c %s "$1")
  if [ "$n" -le {limit} ]; then cat "$1"; else
    head -c {half} "$1"; printf '\\n[... %s bytes cut ...]\\n' $((n - 2 * {half}))
    tail -c {half} "$1"
  fi
}}
s=$(date +%s%N)
(ulimit -f {file_kib}; exec timeout -s KILL {seconds} bash -c {command}) >"$d/o" 2>"$d/e" </dev/null
rc=$?
e=$(date +%s%N)
show "$d/o"; echo; echo "{timing} $((e - s))"; show "$d/e" >&2; rm -rf "$d"; exit $rc
"""


def tar_files(files: Mapping[str, bytes | str], mode: int = 0o644, mtime: int = 0) -> bytes:
    """A tar of ``files`` (absolute path -> content) to extract at ``/``; the directories on
    the way are made by the extraction (root's, 0755)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, data in files.items():
            payload = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size = len(payload)
            info.mode = mode
            info.mtime = mtime
            tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


# containers whose removal failed while the engine did not answer (an outage): removed by the
# next sandbox this process starts, once the engine is back; the orphan reaper only removes
# the containers of processes that are gone
_UNREMOVED: dict[str, Any] = {}
_UNREMOVED_GUARD = threading.Lock()


def remove_now_or_later(container: Any, what: str = "sandbox container") -> None:
    """Remove ``container``; when the engine does not let it (gone, busy), remember it for
    ``remove_unremoved``."""
    import docker.errors

    if _UNREMOVED:
        remove_unremoved()
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:  # the engine already removed it
        pass
    except Exception as error:  # the engine went away, or was busy: try again later
        log.warning("could not remove %s (tried again later): %s", what, error)
        with _UNREMOVED_GUARD:
            _UNREMOVED[str(container.id)] = container


def _remove_container(container: Any, keep: bool, read_only: bool) -> None:
    if not keep:
        remove_now_or_later(container)
        return
    if not read_only:
        try:
            container.stop(timeout=1)
        except Exception as error:  # the engine may already have removed it
            log.warning("could not stop sandbox container: %s", error)


def remove_unremoved() -> int:
    """Remove the containers this process failed to remove earlier; returns how many went."""
    import docker.errors

    with _UNREMOVED_GUARD:
        pending = dict(_UNREMOVED)
    removed = 0
    for container_id, container in pending.items():
        try:
            container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except Exception as error:
            log.debug("sandbox container %s still not removed: %s", container_id[:12], error)
            continue
        removed += 1
        with _UNREMOVED_GUARD:
            _UNREMOVED.pop(container_id, None)
    if removed:
        log.info("removed %d container(s) the engine would not remove earlier", removed)
    return removed


class Sandbox:
    """One container from ``image``; use as a context manager."""

    def __init__(
        self,
        client: Any,
        image: str,
        limits: Limits = Limits(),
        *,
        workdir: str = "/testbed",
        environment: dict[str, str] | None = None,
        name: str | None = None,
        mounts: dict[str, str] | None = None,
        volumes: dict[str, str] | None = None,
        keep: bool = False,
        labels: dict[str, str] | None = None,
        remover: Executor | None = None,
    ):
        self.client = client
        # where the container is removed when the block ends (None: before it ends): the
        # harness's next phase need not wait for the last one's container to go
        self.remover = remover
        self.image = image
        self.limits = limits
        self.workdir = workdir
        self.environment = environment or {}
        self.name = name
        self.mounts = mounts or {}  # host directory -> container path, read-only
        self.volumes = volumes or {}  # named Docker volume -> container path, read-write
        # leave the container for inspection: stopped, not removed (left running when its
        # files are tmpfs, which a stop would empty)
        self.keep = keep
        self.labels = {LABEL: "1", OWNER_LABEL: owner_label(), **(labels or {})}
        self.container: Any = None

    @property
    def container_id(self) -> str | None:
        return str(self.container.id) if self.container is not None else None

    @property
    def read_only(self) -> bool:
        return self.limits.writable_mb is not None

    def _writable(self) -> list[str]:
        return list(dict.fromkeys(p for p in (self.workdir, *WRITABLE) if p.strip("/")))

    def __enter__(self) -> Sandbox:
        if self.container is not None:  # started ahead of its use (the harness prepares them)
            return self
        if _UNREMOVED:
            remove_unremoved()
        options: dict[str, Any] = {}
        if self.read_only:
            size = f"rw,exec,nosuid,nodev,size={self.limits.writable_mb}m"
            options = {"read_only": True, "tmpfs": dict.fromkeys(self._writable(), size)}
        self.container = self.client.containers.create(
            self.image,
            ["sleep", "infinity"],
            name=self.name,
            working_dir=self.workdir,
            environment=self.environment,
            network_mode="bridge" if self.limits.network else "none",
            mem_limit=f"{self.limits.memory_mb}m",
            memswap_limit=f"{self.limits.memory_mb}m",
            nano_cpus=int(self.limits.cpus * 1e9),
            pids_limit=self.limits.pids,
            labels=self.labels,
            init=True,  # reaps what the tests leave behind
            volumes={
                **{host: {"bind": inside, "mode": "ro"} for host, inside in self.mounts.items()},
                **{name: {"bind": inside, "mode": "rw"} for name, inside in self.volumes.items()},
            },
            log_config={"type": "none"},  # what it prints to PID 1's output: never on disk
            **options,
        )
        try:
            files = self._image_files() if self.read_only else b""
            self.container.start()
            if files:
                self._extract([files], "/")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _image_files(self) -> bytes:
        """The image's files of each tmpfs place, as one tar of absolute paths, read from the
        container before it starts (the archive API reads the image's file system then; once
        it runs, the tmpfs mounts hide those files from the container itself)."""
        import docker.errors

        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as combined:
            for path in self._writable():
                try:
                    chunks, _ = self.container.get_archive(path)
                except docker.errors.NotFound:  # not in the image: the mount is all there is
                    continue
                parent = path.rsplit("/", 1)[0].strip("/")
                with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r|") as part:
                    for member in part:
                        data = part.extractfile(member) if member.isfile() else None
                        member.name = f"{parent}/{member.name}" if parent else member.name
                        combined.addfile(member, data)
        return out.getvalue()

    def _extract(self, chunks: Iterable[bytes], directory: str) -> None:
        """Untar ``chunks`` into ``directory`` with ``tar`` inside the container, fed through
        the exec's stdin (``put_archive`` refuses a read-only root filesystem)."""
        api = self.client.api
        exec_id = api.exec_create(
            self.container.id, ["tar", "-x", "-p", "-C", directory], stdin=True
        )["Id"]
        stream = api.exec_start(exec_id, socket=True)
        raw = getattr(stream, "_sock", stream)
        output = b""
        try:
            for chunk in chunks:
                raw.sendall(chunk)
            raw.shutdown(socket.SHUT_WR)
            while data := raw.recv(1 << 16):
                output = (output + data)[-4096:]
        finally:
            stream.close()
        deadline = time.monotonic() + 60
        while (state := api.exec_inspect(exec_id))["Running"] and time.monotonic() < deadline:
            time.sleep(0.05)
        if state["ExitCode"] != 0:
            text = output.decode("utf-8", errors="replace")[-2000:]
            raise RuntimeError(f"could not copy files into the sandbox at {directory}: {text}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        container, self.container = self.container, None
        if container is None:
            return
        if self.remover is not None and not self.keep:
            self.remover.submit(_remove_container, container, self.keep, self.read_only)
        else:
            _remove_container(container, self.keep, self.read_only)

    def written_bytes(self) -> int:
        """What the container's commands wrote to its own layer, in bytes (the engine's
        ``SizeRw``; 0 when it cannot tell)."""
        listed = self.client.api.containers(all=True, filters={"id": self.container.id}, size=True)
        return int(listed[0].get("SizeRw") or 0) if listed else 0

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` (an absolute path) inside the container."""
        self.put_files({path: data}, mode)

    def put_files(self, files: Mapping[str, bytes | str], mode: int = 0o644) -> None:
        """Write each file (absolute path -> content) inside the container, in one call."""
        archive = tar_files(files, mode, mtime=int(time.time()))
        if self.read_only:
            self._extract([archive], "/")
        elif not self.container.put_archive("/", archive):
            raise RuntimeError(f"could not copy {', '.join(files)} into the sandbox")

    def run(
        self,
        command: str,
        *,
        timeout: float,
        workdir: str | None = None,
        output_limit: int = 8 << 20,
        file_limit: int = 1 << 30,
    ) -> ExecResult:
        """``bash -c command`` killed after ``timeout`` seconds.

        Each of stdout and stderr comes back whole up to ``output_limit`` bytes, else its
        first and last halves around a ``[... N bytes cut ...]`` line; no file the command
        writes may grow past ``file_limit`` bytes."""
        started = time.monotonic()
        seconds_limit = f"{max(1.0, timeout):.0f}"
        timed = _WRAPPER.format(
            limit=output_limit,
            half=output_limit // 2,
            file_kib=max(1, file_limit >> 10),
            seconds=seconds_limit,
            command=shlex.quote(command),
            timing=_TIMING,
        )
        try:
            code, out, err = exec_output(
                self.client.api, self.container.id, ["bash", "-c", timed], workdir or self.workdir
            )
        except ContainerEnded as ended:  # killed, as the command would have been: no result
            seconds = time.monotonic() - started
            said = f"swe-stream: {ended}\n"
            log.warning("sandbox %s: %s", self.container.id[:12], ended)
            return ExecResult(KILLED, said, seconds, False, seconds, "", said)
        seconds = time.monotonic() - started
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        matches = list(_TIMING_RE.finditer(stdout))
        match = matches[-1] if matches else None  # the wrapper's line is the last one
        inner = int(match[1]) / 1e9 if match else seconds
        if match:
            stdout = stdout[: match.start()].rstrip("\n") + "\n"
        # SIGKILL before the time limit is not the timeout: the memory limit's OOM killer, say
        timed_out = code == KILLED and inner >= float(seconds_limit) - 0.05
        return ExecResult(int(code), stdout + stderr, seconds, timed_out, inner, stdout, stderr)
