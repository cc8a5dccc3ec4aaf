"""How the worker app shares a group's partitions: the assignor ``create_app`` configures,
given what members already hold, as Faust's leader computes it (no broker: pure decisions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from faust.assignor.client_assignment import CopartitionedAssignment
from faust.assignor.copartitioned_assignor import CopartitionedAssignor

from streams.core.settings import Settings
from streams.runtime.app import create_app

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def no_user_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("SWE_STREAM_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def group_assignment(
    replicas: int, partitions: int, held: dict[str, set[int]]
) -> dict[str, set[int]]:
    """The active partitions each member gets when members holding ``held`` rebalance."""
    members = {name: CopartitionedAssignment(actives=set(parts)) for name, parts in held.items()}
    assignor = CopartitionedAssignor(
        topics={"swe.pull-request-events"},
        cluster_asgn=members,
        num_partitions=partitions,
        replicas=replicas,
    )
    return {name: set(a.actives) for name, a in assignor.get_assignment().items()}


@pytest.mark.parametrize(
    ("partitions", "held"),
    [
        # workers started one after another: the first took all, the second half of them,
        # then the third joins
        (4, {"a": {0, 1}, "b": {2, 3}, "c": set()}),
        (12, {"a": set(range(6)), "b": set(range(6, 12)), "c": set()}),
        (12, {"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6, 7, 8}, "d": {9, 10, 11}, "e": set()}),
    ],
)
def test_a_worker_joining_a_busy_group_gets_a_share(
    partitions: int, held: dict[str, set[int]], tmp_path: Path
) -> None:
    settings = Settings(
        kafka={"bootstrap": "127.0.0.1:9", "partitions": partitions},
        worker={"data_dir": str(tmp_path / "data")},
    )
    app = create_app(settings, lambda settings, resources: [])
    shares = group_assignment(app.assignor.replicas, partitions, held)

    assert all(shares.values()), shares  # no member idles
    assert sorted(p for share in shares.values() for p in share) == list(range(partitions))
    assert max(len(share) for share in shares.values()) <= -(-partitions // len(held)), shares


def test_with_a_standby_copy_the_joining_worker_would_idle() -> None:
    """Why the app keeps no standby: Faust's sticky assignor with one leaves the newcomer
    nothing (this pins the library behaviour the setting works around)."""
    shares = group_assignment(1, 4, {"a": {0, 1}, "b": {2, 3}, "c": set()})
    assert shares["c"] == set()


@pytest.mark.parametrize(
    ("idempotence", "wait_ms", "expected"),
    [("on", None, 100), ("on", 200, 200), ("off", None, 1500), ("off", 300, 300)],
)
def test_the_workers_fetches_wait_at_the_broker_as_kafka_settings_say(
    idempotence: str, wait_ms: int | None, expected: int, tmp_path: Path
) -> None:
    """Faust fixes its consumer's fetch wait at 1.5 s; the worker's is ``kafka.fetch_max_wait_ms``
    (unless set: 100 ms on Apache Kafka, where the idempotent producer runs; Faust's 1.5 s on
    the embedded broker), on the aiokafka consumer Faust creates when it starts."""
    import asyncio

    kafka: dict[str, object] = {"bootstrap": "127.0.0.1:9", "idempotence": idempotence}
    if wait_ms is not None:
        kafka["fetch_max_wait_ms"] = wait_ms
    settings = Settings(kafka=kafka, worker={"data_dir": str(tmp_path / "data")})
    app = create_app(settings, lambda settings, resources: [])

    async def created() -> int:
        loop = asyncio.get_running_loop()
        client = app.consumer._thread._create_consumer(loop)
        return int(client._fetch_max_wait_ms)

    assert asyncio.run(created()) == expected
