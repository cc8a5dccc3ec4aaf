"""The embedded broker's life cycle: it answers, and it never outlives its command."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from streams.kafka.broker import EmbeddedBroker, PortTaken, listens_itself, metadata_answers
from tests.conftest import SWE_STREAM
from tests.workers import start_broker_command

pytestmark = pytest.mark.integration


def tansu_pids(parent: int | None = None, listener: str | None = None) -> set[int]:
    """Running Tansu broker processes on this machine: every one, or those whose parent is
    ``parent`` or that listen on ``listener`` (host:port). Other tests may run brokers of their
    own meanwhile (pytest-xdist), so a test looks only at its own."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if "tansu" not in os.readlink(entry / "exe"):
                    continue
                if parent is not None:
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(stat[1]) != parent:  # the field after the state
                        continue
                url = f"tcp://{listener}".encode()
                if listener is not None and url not in (entry / "cmdline").read_bytes():
                    continue
                found.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # exited, waiting for its parent to reap it
            return True
        time.sleep(0.05)
    return False


def test_a_broker_answering_on_a_taken_port_is_not_taken_for_this_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two brokers picking one port at once: the one that lost the race exits with "address in
    use" only after the winner already answers its probe, so an answer alone proved nothing."""
    from streams.kafka import broker as broker_module

    # Tansu, slow to start as on a busy machine: the probe reaches the port before it binds.
    slow = tmp_path / "slow-tansu"
    slow.write_text(f'#!/bin/sh\nsleep 0.5\nexec {broker_module.broker_binary()} "$@"\n')
    slow.chmod(0o755)
    with EmbeddedBroker() as other:
        assert other.pid is not None and listens_itself(other.pid, other.port)
        monkeypatch.setattr(broker_module, "broker_binary", lambda: str(slow))
        with pytest.raises(PortTaken):  # a port given is not changed
            EmbeddedBroker(port=other.port).start()
        fresh = broker_module.free_port(other.host)
        picks = iter([other.port, fresh])
        monkeypatch.setattr(broker_module, "free_port", lambda host="127.0.0.1": next(picks))
        with EmbeddedBroker() as mine:  # picked the other's port, then another
            assert (mine.port, mine.port_picked) == (fresh, True)
            assert mine.pid is not None and listens_itself(mine.pid, mine.port)
            assert not listens_itself(mine.pid, other.port)
        assert metadata_answers(other.host, other.port)  # the other broker is left alone


# The command's own worst case: 0.5 s to notice the signal, 10 s for the broker to honour
# SIGTERM, 10 s more to reap it after SIGKILL. A busy CI machine once needed more than 20 s.
STOP_DEADLINE = 60.0


def test_embedded_broker_answers_metadata_and_stops() -> None:
    with EmbeddedBroker() as broker:
        assert broker.pid in tansu_pids()
        host, port = broker.bootstrap.split(":")
        assert metadata_answers(host, int(port))
        pid = broker.pid
    assert pid is not None and gone(pid)
    assert not metadata_answers(host, int(port))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_broker_command_stops_its_broker_on_signal(sig: signal.Signals, tmp_path: Path) -> None:
    stderr = tmp_path / "broker-command.err"
    process, bootstrap, pid = start_broker_command(stderr)
    host, port = bootstrap.split(":")
    assert metadata_answers(host, int(port))
    sent = time.monotonic()
    process.send_signal(sig)
    try:
        returncode = process.wait(timeout=STOP_DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        returncode = None
    took = time.monotonic() - sent
    said = stderr.read_text()
    log_line = re.search(r"log: (\S+)", said)
    broker_log = Path(log_line[1]) if log_line else None
    diagnostics = (
        f"after {took:.1f} s; broker alive: {not gone(pid, timeout=0)};\n"
        f"command stderr:\n{said}\n"
        f"broker log:\n{broker_log.read_text() if broker_log and broker_log.exists() else '-'}"
    )
    assert returncode == 0, diagnostics
    assert f"signal {int(sig)}: stopping the embedded broker" in said, diagnostics
    assert gone(pid), "broker outlived the command"


def test_broker_dies_with_a_killed_parent() -> None:
    process, _, pid = start_broker_command()
    process.kill()  # SIGKILL: no handler runs; the kernel's parent-death signal must do it
    process.wait(timeout=10)
    assert gone(pid), "broker orphaned after SIGKILL of its parent"


def test_commands_that_start_the_embedded_broker_leave_none_behind() -> None:
    result = subprocess.run(
        [SWE_STREAM, "topics", "create"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "SWE_STREAM_KAFKA_BOOTSTRAP"},
    )
    assert result.returncode == 0, result.stderr
    assert "embedded broker on 127.0.0.1:" in result.stdout
    assert "created   swe.ledger" in result.stdout
    listener = re.search(r"embedded broker on (127\.0\.0\.1:\d+)", result.stdout)
    assert listener, result.stdout
    leftovers = {pid for pid in tansu_pids(listener=listener[1]) if not gone(pid, timeout=5)}
    assert not leftovers
