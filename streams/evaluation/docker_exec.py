"""A command run in a container with ``docker exec``, its stdout and stderr read whole.

Not the Docker SDK's ``exec_run``: it reads the upgraded connection's frames from the raw
socket (``APIClient._get_raw_response_socket``), past the buffered reader the HTTP client read
the response's headers through. When the command's first output reaches the socket together
with the headers (a loaded machine: the reader is scheduled late), that output sits in the
reader's buffer and never reaches the SDK: whole frames are lost without a word, and part of a
frame makes the next header garbage (``ValueError: 115 is not a valid stream``, seen in CI on
``git apply``'s output). Here the frames are read through that buffered reader, to the end of
the stream, and then split.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import docker.errors

_HEADER = struct.Struct(">BxxxL")  # stream (0 stdin, 1 stdout, 2 stderr), 3 bytes, length
STDOUT, STDERR = 1, 2


class ExecStreamError(RuntimeError):
    """The exec's output is not a stream of Docker's frames."""


class ContainerEnded(RuntimeError):
    """The container ended before or while the command ran (its main process killed: the
    memory limit's OOM killer picks any process of the container, PID 1 too). The engine then
    drops the container's running execs: their inspection answers 404."""


def _state(api: Any, container: str) -> dict[str, Any] | None:
    """The engine's ``State`` of the container (None: it is gone)."""
    try:
        return dict(api.inspect_container(container)["State"])
    except docker.errors.NotFound:
        return None


def _ended(state: dict[str, Any] | None) -> ContainerEnded:
    said = (
        "removed"
        if state is None
        else f"status {state.get('Status')}, exit code {state.get('ExitCode')}, "
        f"OOM-killed: {bool(state.get('OOMKilled'))}"
    )
    return ContainerEnded(f"the container ended while the command ran ({said})")


def split_frames(data: bytes) -> tuple[bytes, bytes]:
    """Docker's multiplexed stream (8-byte headers, each before its payload): its stdout and
    its stderr. A stream that ends inside a frame keeps what arrived of it."""
    out, err = bytearray(), bytearray()
    at = 0
    while at < len(data):
        if len(data) - at < _HEADER.size:
            raise ExecStreamError(f"{len(data) - at} byte(s) after the last frame")
        stream, length = _HEADER.unpack_from(data, at)
        payload = data[at + _HEADER.size : at + _HEADER.size + length]
        if stream == STDOUT:
            out += payload
        elif stream == STDERR:
            err += payload
        else:
            raise ExecStreamError(f"a frame of stream {stream} at byte {at}")
        at += _HEADER.size + length
    return bytes(out), bytes(err)


def exec_output(
    api: Any, container: str, command: Sequence[str], workdir: str | None = None
) -> tuple[int, bytes, bytes]:
    """Run ``command`` in ``container`` (an id) with the low-level client ``api`` (docker's
    ``APIClient``) and wait for it: its exit code, stdout and stderr. Raises ContainerEnded
    where the container is not running, or stopped before or while the command ran: the
    engine then answers 409 or 500 to the exec's creation or start, 404 to its inspection, or
    the runtime exits 126 (``cannot exec in a stopped state``), each a race of its own."""
    try:
        code, out, err = _exec_output(api, container, command, workdir)
    except docker.errors.APIError as error:
        state = _state(api, container)
        if state is not None and state.get("Running"):
            raise
        raise _ended(state) from error
    if code == 126:  # the runtime's, where the container stopped as the exec started
        state = _state(api, container)
        if state is None or not state.get("Running"):
            raise _ended(state)
    return code, out, err


def _exec_output(
    api: Any, container: str, command: Sequence[str], workdir: str | None
) -> tuple[int, bytes, bytes]:
    exec_id = api.exec_create(container, list(command), workdir=workdir)["Id"]
    response = api._post_json(
        api._url("/exec/{0}/start", exec_id),
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
        data={"Tty": False, "Detach": False},
        stream=True,
    )
    try:
        api._raise_for_status(response)
        # the HTTP client's buffered reader: it may hold the first frames already
        reader = response.raw._fp.fp
        api._disable_socket_timeout(reader.raw)  # a command may be quiet for minutes
        data = reader.read()
    finally:
        response.close()
    out, err = split_frames(data)
    code = api.exec_inspect(exec_id)["ExitCode"]
    return int(code if code is not None else -1), out, err
