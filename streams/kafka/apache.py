"""Apache Kafka on loopback: 1 or 3 KRaft nodes (each broker and controller) from the jars
``apache_install`` fetched, in a directory this process owns.

    with KafkaCluster(nodes=3) as cluster:      # formats storage, picks ports, starts
        cluster.bootstrap                        # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
        cluster.kill(1); cluster.restart(1)      # a broker's SIGKILL and its return

Ready means the cluster answers: every node's metadata lists every node. Nodes die with the
process that started them (``PR_SET_PDEATHSIG``, as the embedded broker), so no test or
command leaves a JVM behind. A cluster given a ``data_dir`` keeps its topics there across
restarts (``swe-stream run``): the cluster id, the ports and the version are in
``cluster.json`` beside the nodes' storage.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from streams.kafka.apache_install import (
    DEFAULT_VERSION,
    FORMAT_CLASS,
    KAFKA_VERSIONS,
    MAIN_CLASS,
    KafkaInstall,
    installed,
)
from streams.kafka.broker import BrokerError, _die_with_parent, _recv_exactly, free_port

log = logging.getLogger("swe_stream.kafka.apache")

CLUSTER_FILE = "cluster.json"


def new_cluster_id() -> str:
    """A KRaft cluster id: a UUID in URL-safe base64 without padding (22 characters), never
    one starting with "-", which Kafka's command line would read as an option (as Kafka's own
    ``Uuid.randomUuid`` avoids it: one id in 64 did, and its storage could not be formatted)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class NodePorts:
    node_id: int
    port: int  # clients (PLAINTEXT)
    controller_port: int  # the KRaft quorum (CONTROLLER)


def node_properties(
    node: NodePorts,
    nodes: list[NodePorts],
    log_dir: Path,
    host: str = "127.0.0.1",
    overrides: Mapping[str, str] | None = None,
    advertised_host: str | None = None,
) -> dict[str, str]:
    """``server.properties`` of one combined broker+controller node of a KRaft cluster that
    listens on ``host`` and is known to clients and the other nodes as ``advertised_host``
    (default: ``host``; a container listens on 0.0.0.0 and is known by its service name).
    Replication of the internal topics follows the cluster's size: 3 copies and 2 in sync on
    three nodes, 1 on one."""
    replicas = str(min(3, len(nodes)))
    in_sync = str(min(2, len(nodes)))
    known = advertised_host or host
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(
            f"{n.node_id}@{known}:{n.controller_port}" for n in nodes
        ),
        "listeners": f"PLAINTEXT://{host}:{node.port},CONTROLLER://{host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{known}:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dir),
        "offsets.topic.replication.factor": replicas,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": in_sync,
        "default.replication.factor": replicas,
        "min.insync.replicas": in_sync,
        # a local cluster's groups form at once (Kafka waits 3 s for more members to join)
        "group.initial.rebalance.delay.ms": "0",
        "num.partitions": "1",
        # few threads: a node shares two cores with the workers and the tests
        "num.network.threads": "2",
        "num.io.threads": "4",
        "background.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
    }
    properties.update(overrides or {})
    return properties


def write_properties(path: Path, properties: Mapping[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()), encoding="utf-8")


def metadata_broker_count(host: str, port: int, timeout: float = 1.0) -> int | None:
    """How many brokers a node's MetadataResponse (v1) lists, or None when it does not answer.
    v1: every Kafka from 0.10 to 4.x answers it (4.0 dropped v0 for a while)."""
    correlation_id = 0x5158
    client_id = b"swe-stream-probe"
    # header: api_key=3 (Metadata), api_version=1, correlation_id, client_id; body: topics=null
    body = struct.pack(">hhih", 3, 1, correlation_id, len(client_id)) + client_id
    body += struct.pack(">i", -1)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
            reply = _recv_exactly(sock, size)
    except (OSError, struct.error, ConnectionError):
        return None
    if len(reply) < 8:
        return None
    got_correlation, brokers = struct.unpack(">ii", reply[:8])
    return brokers if got_correlation == correlation_id else None


@dataclass
class KafkaNode:
    ports: NodePorts
    home: Path  # config, storage and log of this node
    process: subprocess.Popen[bytes] | None = None

    @property
    def storage(self) -> Path:
        return self.home / "data"

    @property
    def config(self) -> Path:
        return self.home / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.home / "server.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class KafkaCluster:
    """1 or 3 KRaft nodes on ``host``; use as a context manager or start()/stop().

    ``data_dir``: where the nodes keep their storage (kept after stop); None = a temporary
    directory removed at stop. ``overrides``: broker properties for every node (a test's
    compaction settings). ``quick``: the C1 compiler alone, for short-lived test nodes."""

    nodes: int = 1
    version: str = DEFAULT_VERSION
    data_dir: Path | None = None
    host: str = "127.0.0.1"
    overrides: Mapping[str, str] = field(default_factory=dict)
    quick: bool = True
    heap_mb: int = 512
    cache_dir: Path | None = None
    members: list[KafkaNode] = field(default_factory=list, init=False)
    cluster_id: str = field(default="", init=False)
    _temporary: bool = field(default=False, init=False)
    _install: KafkaInstall | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.nodes not in (1, 3):
            raise ValueError(f"a local cluster has 1 or 3 nodes, not {self.nodes}")

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{m.ports.port}" for m in self.members)

    @property
    def pids(self) -> list[int | None]:
        return [m.process.pid if m.running and m.process else None for m in self.members]

    def start(self, timeout: float = 120.0) -> str:
        """Install (once per host), format, start every node; return when all answer."""
        kafka = self._install = self._install or install(self.version, self.cache_dir)
        self._prepare(kafka)
        deadline = time.monotonic() + timeout
        for attempt in range(3):
            for index in range(len(self.members)):
                self._launch(index)
            self._write_state()  # the pids: a later start waits for these to end
            try:
                self._wait_ready(deadline, range(len(self.members)))
                log.info(
                    "Apache Kafka %s ready on %s (%d node(s))",
                    self.version,
                    self.bootstrap,
                    self.nodes,
                )
                return self.bootstrap
            except _PortsTaken as taken:
                if attempt == 2:
                    raise BrokerError(f"no free ports for Kafka after 3 tries:\n{taken}") from None
                log.info("kafka: a port was taken as the nodes started; picking others")
                self._stop_all(graceful=False)
                self._pick_ports(self.members)
                self._write_state()
        raise AssertionError("unreachable")

    def _prepare(self, kafka: KafkaInstall) -> None:
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="swe-stream-kafka-"))
            self._temporary = True
        self.data_dir.mkdir(parents=True, exist_ok=True)
        state = self._read_state()
        if state is not None:
            self.cluster_id = str(state["cluster_id"])
            ports = [NodePorts(**p) for p in state["nodes"]]
            self.members = [KafkaNode(p, self.data_dir / f"node-{p.node_id}") for p in ports]
            for pid in state.get("pids", []):
                outlive(int(pid), self.data_dir)
            taken = [p for p in ports if not _free(self.host, p.port, p.controller_port)]
            if taken:
                self._pick_ports(self.members)
        else:
            self.cluster_id = new_cluster_id()
            self.members = [
                KafkaNode(NodePorts(i, 0, 0), self.data_dir / f"node-{i}")
                for i in range(1, self.nodes + 1)
            ]
            self._pick_ports(self.members)
        self._write_state()
        for member in self.members:
            if not (member.storage / "meta.properties").is_file():
                self._format(kafka, member)

    def _read_state(self) -> dict[str, Any] | None:
        assert self.data_dir is not None
        try:
            state = json.loads((self.data_dir / CLUSTER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if state.get("version") != self.version and state.get("version"):
            log.warning(
                "kafka: %s holds a Kafka %s cluster; starting it with %s",
                self.data_dir, state.get("version"), self.version,
            )  # fmt: skip
        if len(state.get("nodes", [])) != self.nodes:
            raise BrokerError(
                f"{self.data_dir} holds a cluster of {len(state.get('nodes', []))} node(s), "
                f"not {self.nodes}: give another data directory"
            )
        return dict(state)

    def _pick_ports(self, members: list[KafkaNode]) -> None:
        for member in members:
            member.ports.port = free_port(self.host)
            member.ports.controller_port = free_port(self.host)

    def _write_state(self) -> None:
        assert self.data_dir is not None
        for member in self.members:
            member.home.mkdir(parents=True, exist_ok=True)
            write_properties(member.config, self._properties(member))
        state = {
            "cluster_id": self.cluster_id,
            "version": self.version,
            "nodes": [vars(m.ports) for m in self.members],
            "pids": [pid for pid in self.pids if pid is not None],
        }
        (self.data_dir / CLUSTER_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")

    def _properties(self, member: KafkaNode) -> dict[str, str]:
        ports = [m.ports for m in self.members]
        return node_properties(member.ports, ports, member.storage, self.host, self.overrides)

    def _format(self, kafka: KafkaInstall, member: KafkaNode) -> None:
        command = kafka.java_command(
            FORMAT_CLASS, "format", "--cluster-id", self.cluster_id,
            "--config", str(member.config), "--ignore-formatted",
            quick=True, heap_mb=256,
        )  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise BrokerError(
                f"formatting Kafka storage {member.storage} failed:\n"
                + "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            )

    def _launch(self, index: int) -> None:
        member = self.members[index]
        assert self._install is not None
        command = self._install.java_command(
            MAIN_CLASS, str(member.config), quick=self.quick, heap_mb=self.heap_mb
        )
        with open(member.log_path, "ab") as out:
            member.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=member.home,
                preexec_fn=_die_with_parent,
                start_new_session=True,  # a terminal's Ctrl-C reaches the command first
            )

    def _wait_ready(self, deadline: float, indexes: range | list[int]) -> None:
        waiting = list(indexes)
        while waiting:
            for index in list(waiting):
                member = self.members[index]
                assert member.process is not None
                if member.process.poll() is not None:
                    tail = member.log_tail()
                    if "Address already in use" in tail or "BindException" in tail:
                        raise _PortsTaken(tail)
                    raise BrokerError(
                        f"Kafka node {member.ports.node_id} exited at start-up "
                        f"(code {member.process.returncode}):\n{tail}"
                    )
                if metadata_broker_count(self.host, member.ports.port) == self.nodes:
                    waiting.remove(index)
            if waiting and time.monotonic() > deadline:
                self._stop_all(graceful=False)
                raise BrokerError(f"Kafka did not answer on {self.bootstrap}:\n{self._tails()}")
            if waiting:
                time.sleep(0.1)

    def _tails(self) -> str:
        return "\n".join(f"-- node {m.ports.node_id}:\n{m.log_tail()}" for m in self.members)

    # -- faults -----------------------------------------------------------------------------

    def kill(self, index: int) -> int:
        """SIGKILL node ``index`` (0-based): a broker's crash. Returns its pid."""
        member = self.members[index]
        if member.process is None or member.process.poll() is not None:
            raise BrokerError(f"Kafka node {member.ports.node_id} is not running")
        pid = member.process.pid
        member.process.kill()
        member.process.wait(30)
        return pid

    def restart(self, index: int, timeout: float = 120.0) -> None:
        """Start node ``index`` again on its ports and storage; return when it answers and,
        once every node runs again, when each of them counts them all (a node that answers
        first may still count the others fenced for a moment)."""
        if self.members[index].running:
            return
        self._launch(index)
        deadline = time.monotonic() + timeout
        self._wait_ready(deadline, [index])
        if all(member.running for member in self.members):
            self._wait_ready(deadline, range(len(self.members)))

    # -- stop -------------------------------------------------------------------------------

    def stop(self, graceful: bool | None = None, timeout: float = 60.0) -> None:
        """Stop every node: a controlled shutdown when the storage is kept (``graceful``
        default), SIGKILL for a temporary cluster whose storage goes with it."""
        graceful = (not self._temporary) if graceful is None else graceful
        self._stop_all(graceful, timeout)
        if self._temporary and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
            self._temporary = False

    def _stop_all(self, graceful: bool, timeout: float = 60.0) -> None:
        running = [m for m in self.members if m.running]
        for member in running:
            assert member.process is not None
            member.process.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
        deadline = time.monotonic() + timeout
        for member in running:
            assert member.process is not None
            try:
                member.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("kafka node %d ignored SIGTERM: killing it", member.ports.node_id)
                member.process.kill()
                member.process.wait(30)

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class _PortsTaken(BrokerError):
    """A node could not bind its port: another process took it after it was picked."""


def outlive(pid: int, data_dir: Path, patience: float = 60.0) -> None:
    """Wait for an earlier node of the cluster in ``data_dir`` to end: a ``run`` killed with
    SIGKILL leaves its node shutting down (its parent-death signal is SIGTERM), holding the
    storage's lock for a few seconds. One still there after ``patience`` is stopped."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return  # gone
    if str(data_dir) not in command:
        return  # the pid is another process's now
    log.info("kafka: waiting for the earlier node (pid %d) of %s to stop", pid, data_dir)
    deadline = time.monotonic() + patience
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
            deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                return
            time.sleep(0.2)
    raise BrokerError(f"the earlier Kafka node (pid {pid}) of {data_dir} does not stop")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _free(host: str, *ports: int) -> bool:
    """Whether a node could listen on ``ports`` now. SO_REUSEADDR as the JVM's server sockets
    have it: the connections of a node that just stopped linger in TIME_WAIT on its ports,
    which would refuse a plain bind, not Kafka's."""
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


def install(
    version: str = DEFAULT_VERSION, cache_dir: Path | None = None, archive: bool = True
) -> KafkaInstall:
    """The broker of ``version``, installed once per host, with its class-data-sharing
    archive for this JDK made once when ``archive``."""
    with installed(version, cache_dir) as kafka:
        failed = kafka.archive.with_name(f"{kafka.archive.name}.failed")
        if archive and not kafka.archive.exists() and not failed.exists():
            make_class_archive(kafka)
    return kafka


def make_class_archive(kafka: KafkaInstall, timeout: float = 120.0) -> bool:
    """Run a throwaway node once with ``-XX:ArchiveClassesAtExit`` so that later JVMs of this
    install map its classes instead of loading them (about half the start-up CPU). A failure
    is remembered and costs nothing later: nodes start without the archive."""
    target = kafka.archive
    staging = target.with_suffix(f".tmp{os.getpid()}")
    scratch = Path(tempfile.mkdtemp(prefix="swe-stream-kafka-cds-"))
    ports = NodePorts(1, free_port(), free_port())
    storage = scratch / "data"
    config = scratch / "server.properties"
    write_properties(config, node_properties(ports, [ports], storage))
    started = time.monotonic()
    try:
        subprocess.run(
            kafka.java_command(FORMAT_CLASS, "format", "--cluster-id", new_cluster_id(),
                               "--config", str(config)),
            capture_output=True, timeout=timeout, check=True,
        )  # fmt: skip
        command = kafka.java_command(MAIN_CLASS, str(config))
        command.insert(1, f"-XX:ArchiveClassesAtExit={staging}")
        with open(scratch / "server.log", "wb") as out:
            node = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                    preexec_fn=_die_with_parent)  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            while metadata_broker_count("127.0.0.1", ports.port) != 1:
                if node.poll() is not None or time.monotonic() > deadline:
                    raise BrokerError("the archive's node did not start")
                time.sleep(0.1)
        finally:
            node.terminate()
            node.wait(timeout)
        if not staging.is_file():
            raise BrokerError("the JVM wrote no archive")
        staging.rename(target)
        log.info("kafka: class archive made in %.1f s (%s)", time.monotonic() - started, target)
        return True
    except (OSError, subprocess.SubprocessError, BrokerError) as exc:
        log.warning("kafka: no class archive (nodes start slower): %s", exc)
        target.with_name(f"{target.name}.failed").write_text(str(exc), encoding="utf-8")
        return False
    finally:
        staging.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m streams.kafka.apache install|serve``: the Kafka image of ``infra/`` uses
    it without the project's dependencies (``swe-stream broker --apache`` is the operator's).
    ``serve`` runs one combined node of a one-node cluster in a container: it listens on every
    address, is known as ``--advertised-host``, and formats its storage the first time."""
    parser = argparse.ArgumentParser(prog="python -m streams.kafka.apache")
    actions = parser.add_subparsers(dest="action", required=True)
    get = actions.add_parser("install", help="fetch the brokers' jars once")
    serve = actions.add_parser("serve", help="format the storage if new, then run one node")
    get.add_argument(
        "--version", action="append", help=f"repeatable (default: {', '.join(KAFKA_VERSIONS)})"
    )
    serve.add_argument("--version", default=DEFAULT_VERSION)
    for action in (get, serve):
        action.add_argument("--cache-dir", type=Path, default=None)
    get.add_argument("--no-archive", action="store_true", help="no class-data-sharing archive")
    serve.add_argument("--data-dir", type=Path, required=True, help="the node's storage")
    serve.add_argument("--advertised-host", required=True, help="the name clients reach it by")
    serve.add_argument("--port", type=int, default=9092)
    serve.add_argument("--controller-port", type=int, default=9093)
    serve.add_argument("--cluster-id", default=os.environ.get("KAFKA_CLUSTER_ID", ""))
    serve.add_argument("--heap-mb", type=int, default=1024)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.action == "install":
        for version in args.version or KAFKA_VERSIONS:
            print(install(version, args.cache_dir, archive=not args.no_archive).home)
        return 0
    kafka = install(args.version, args.cache_dir, archive=False)
    ports = NodePorts(1, args.port, args.controller_port)
    config = args.data_dir / "server.properties"
    args.data_dir.mkdir(parents=True, exist_ok=True)
    properties = node_properties(
        ports, [ports], args.data_dir / "data", "0.0.0.0", advertised_host=args.advertised_host
    )
    write_properties(config, properties)
    formatted = subprocess.run(
        kafka.java_command(FORMAT_CLASS, "format", "--cluster-id",
                           args.cluster_id or new_cluster_id(), "--config", str(config),
                           "--ignore-formatted"),
    )  # fmt: skip
    if formatted.returncode != 0:
        return formatted.returncode
    command = kafka.java_command(MAIN_CLASS, str(config), quick=False, heap_mb=args.heap_mb)
    sys.stdout.flush()
    os.execv(command[0], command)  # the node is the container's process: signals reach it
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
