"""recovery: finding the changelog partitions a table recovery stopped getting records of."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from streams.kafka.recovery import RecoveringPartition, RecoveryStallWatch


class TP(NamedTuple):
    topic: str
    partition: int


LEDGER0, LEDGER2, CHANGELOG2 = TP("swe.ledger", 0), TP("swe.ledger", 2), TP("repos-changelog", 2)


@pytest.mark.unit
def test_a_partition_behind_its_end_that_got_no_record_for_the_time_is_read_again() -> None:
    watch = RecoveryStallWatch(seconds=45)
    never = RecoveringPartition(applied=-1, last=109, last_record_at=None)
    moving = RecoveringPartition(applied=20, last=47, last_record_at=130.0)
    caught_up = RecoveringPartition(applied=7, last=7, last_record_at=None)
    reading = {LEDGER0: never, LEDGER2: moving, CHANGELOG2: caught_up}
    assert watch.observe(reading, started_at=100.0, now=144.0) == {}
    # 45 s after the start: the one that never got a record, from its start
    assert watch.observe(reading, started_at=100.0, now=145.0) == {LEDGER0: 0}
    # repaired: another 45 s before it is sought again; the one moving 15 s ago waits too
    assert watch.observe(reading, started_at=100.0, now=174.0) == {}
    later = {LEDGER0: never, LEDGER2: moving}
    assert watch.observe(later, started_at=100.0, now=175.0) == {LEDGER2: 21}
    assert watch.observe(later, started_at=100.0, now=190.0) == {LEDGER0: 0}
    # no recovery under way: nothing, and a new recovery counts from its own start
    assert watch.observe(reading, started_at=None, now=500.0) == {}
    assert watch.observe({LEDGER0: never}, started_at=480.0, now=500.0) == {}
    assert watch.observe({LEDGER0: never}, started_at=480.0, now=525.0) == {LEDGER0: 0}


@pytest.mark.unit
def test_the_offset_to_read_again_is_the_one_after_the_last_applied() -> None:
    assert RecoveringPartition(-1, 10, None).next_offset() == 0
    assert RecoveringPartition(4, 10, 1.0).next_offset() == 5
    assert not RecoveringPartition(10, 10, 1.0).behind()
    with pytest.raises(ValueError):
        RecoveryStallWatch(seconds=0)
