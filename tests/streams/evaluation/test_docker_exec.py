"""``docker exec`` output read whole: the frames the HTTP client buffered with the response's
headers are not lost (the Docker SDK's ``exec_run`` reads past them: CI's ``ValueError: 115
is not a valid stream``)."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator

import docker
import pytest

from streams.evaluation.docker_exec import ExecStreamError, exec_output, split_frames

pytestmark = pytest.mark.unit


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(payload)) + payload


def test_frames_split_into_stdout_and_stderr() -> None:
    data = frame(1, b"out 1\n") + frame(2, b"err\n") + frame(1, b"") + frame(1, b"out 2\n")
    assert split_frames(data) == (b"out 1\nout 2\n", b"err\n")
    assert split_frames(b"") == (b"", b"")
    with pytest.raises(ExecStreamError, match="stream 115"):
        split_frames(b"s" * 8 + frame(1, b"x"))
    with pytest.raises(ExecStreamError, match="3 byte"):
        split_frames(frame(1, b"x") + b"abc")


OUTPUT = b"".join(frame(1, b"line %d\n" % i) for i in range(200)) + frame(2, b"warning\n")


def answer(connection: socket.socket) -> None:
    """A Docker engine's answers, each in one write: the exec's start comes back as the
    upgraded connection's headers with the whole output behind them (what a client scheduled
    late finds in its socket)."""
    reader = connection.makefile("rb")
    while True:
        request = reader.readline()
        if not request:
            return
        length = 0
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        reader.read(length)
        path = request.split()[1].decode()
        if path.endswith("/exec") and "/containers/" in path:
            body = json.dumps({"Id": "e1"}).encode()
        elif path.endswith("/start"):
            head = (b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream"
                    b"\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")  # fmt: skip
            connection.sendall(head + OUTPUT)
            connection.close()
            return
        else:  # /exec/e1/json
            body = json.dumps({"ExitCode": 3, "Running": False}).encode()
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)
            + body
        )


@pytest.fixture
def engine() -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    server.close()


def test_output_that_came_with_the_headers_is_read_whole(engine: str) -> None:
    api = docker.APIClient(base_url=engine, version="1.41")
    code, out, err = exec_output(api, "c1", ["bash", "-c", "true"], "/testbed")
    assert code == 3
    assert out == b"".join(b"line %d\n" % i for i in range(200)) and err == b"warning\n"
    # the SDK's own reading of the same answer loses the buffered frames
    exec_id = api.exec_create("c1", ["bash", "-c", "true"])["Id"]
    try:
        sdk_out, sdk_err = api.exec_start(exec_id, demux=True)
    except ValueError:
        return  # part of a frame lost: the next header is garbage
    assert (sdk_out or b"") + (sdk_err or b"") != out + err
