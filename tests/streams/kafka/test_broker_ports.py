"""free_port: a port for a server started next, outside the range the kernel hands to
outgoing connections, so another process's client cannot take it in between."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

import pytest

from streams.kafka.broker import (
    LISTEN_PORTS_FROM,
    ephemeral_ports,
    free_port,
    listening_sockets,
    listens_itself,
)

pytestmark = pytest.mark.unit


def test_ports_are_picked_below_the_ephemeral_range_and_bind() -> None:
    ephemeral = range(32768, 61000)
    ports = {free_port(ephemeral=ephemeral) for _ in range(20)}
    assert all(LISTEN_PORTS_FROM <= port < ephemeral.start for port in ports), ports
    assert len(ports) > 1  # picked at random, not one port for every process
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_seeded_random_module_does_not_make_every_process_pick_alike() -> None:
    """pytest-randomly seeds ``random`` alike in every xdist worker."""
    random.seed(7)
    first = [free_port(ephemeral=range(32768, 61000)) for _ in range(5)]
    random.seed(7)
    second = [free_port(ephemeral=range(32768, 61000)) for _ in range(5)]
    assert first != second


def test_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    from streams.kafka import broker

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", LISTEN_PORTS_FROM + 123))
        taken.listen()
        draws = iter([LISTEN_PORTS_FROM + 123, LISTEN_PORTS_FROM + 123, LISTEN_PORTS_FROM + 456])
        monkeypatch.setattr(broker._PORTS, "randrange", lambda low, high: next(draws))
        assert free_port(ephemeral=range(32768, 61000)) == LISTEN_PORTS_FROM + 456


def test_without_room_below_the_ephemeral_range_the_kernel_picks() -> None:
    port = free_port(ephemeral=range(LISTEN_PORTS_FROM + 10, 65536))
    assert not LISTEN_PORTS_FROM <= port < LISTEN_PORTS_FROM + 10


def test_the_kernels_range_is_read_and_an_unreadable_one_is_none(tmp_path: Path) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    assert ephemeral_ports(ranges) == range(32768, 61000)
    ranges.write_text("garbage")
    assert ephemeral_ports(ranges) is None
    assert ephemeral_ports(tmp_path / "missing") is None
    assert isinstance(free_port(), int)


def test_a_listening_socket_is_told_to_be_this_processs_or_another_s(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as mine:
        mine.bind(("127.0.0.1", 0))
        port = mine.getsockname()[1]
        assert listens_itself(os.getpid(), port) is False  # bound, not yet listening
        mine.listen()
        assert listens_itself(os.getpid(), port) is True
        assert listening_sockets(port)
        parent = os.getppid()  # pytest's parent holds no socket on this port
        assert listens_itself(parent, port) is False
    assert listening_sockets(port) == set()
    # where /proc cannot be read, nothing can be told
    assert listening_sockets(port, proc=tmp_path) is None
    assert listens_itself(os.getpid(), port, proc=tmp_path) is None
