"""commits: finding a partition whose offset commit is stuck behind records never acked, and a
real worker on the embedded broker getting past one."""

from __future__ import annotations

import asyncio
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest
from aiokafka.partitioner import DefaultPartitioner

from streams.kafka.commits import (
    CommitStallWatch,
    LostFetchWatch,
    PartitionAcks,
    PartitionStanding,
    blocks_commit,
    commit_passes_unprocessed,
    fetched_not_processed,
)
from streams.kafka.offsets import committed_offsets, topic_bounds
from tests.fakes.shout_stage import HEARD, LOST_ACK_TEXT, LOST_FETCH_TEXT, SHOUTED, Utterance
from tests.fakes.slow_shout_app import SLOW_TEXT
from tests.workers import (
    read,
    restart_shout_worker,
    start_shout_worker,
    stop,
    wait_for_metrics,
)

STUCK = PartitionAcks(committed=1, acked=(3, 4, 5), in_flight=False)


def hellos(count: int) -> list[Utterance]:
    return [
        Utterance(pipeline_version=1, repo="octo/hello", number=n, text=f"hello {n}")
        for n in range(1, count + 1)
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("acks", "blocked"),
    [
        (STUCK, True),
        (PartitionAcks(1, (1, 2), False), False),  # the next offset acked: commits
        (PartitionAcks(1, (2, 3), False), True),  # a hole of one (Faust would commit past it)
        (PartitionAcks(1, (), False), False),  # nothing acked
        # never committed: the first record to process is the log's start
        (PartitionAcks(None, (3, 4), False), True),
        (PartitionAcks(0, (3, 4), False), True),  # Faust keeps a committed 0 as None
        (PartitionAcks(None, (0, 1), False), False),
        (PartitionAcks(None, (3, 4), False, log_start=3), False),  # retention deleted 0-2
        (PartitionAcks(None, (5, 6), False, log_start=3), True),
    ],
)
def test_a_hole_before_the_first_ack_blocks_the_commit(acks: PartitionAcks, blocked: bool) -> None:
    assert blocks_commit(acks) is blocked


@pytest.mark.unit
def test_only_a_hole_unchanged_over_the_checks_with_nothing_in_flight_is_repaired() -> None:
    watch = CommitStallWatch(checks=3)
    assert watch.observe({"p0": STUCK}) == {}
    assert watch.observe({"p0": STUCK}) == {}
    assert watch.observe({"p0": STUCK}) == {"p0": 1}
    assert watch.observe({"p0": STUCK}) == {}  # a repair starts a new count

    moving = CommitStallWatch(checks=2)
    assert moving.observe({"p0": STUCK}) == {}
    assert moving.observe({"p0": PartitionAcks(1, (3, 4, 5, 6), False)}) == {}  # progress
    busy = PartitionAcks(1, (3, 4, 5, 6), True)
    assert moving.observe({"p0": busy}) == {}  # a record of it is being processed
    assert moving.observe({"p0": PartitionAcks(1, (3, 4, 5, 6), False)}) == {}  # count restarts
    assert moving.observe({"p0": PartitionAcks(1, (3, 4, 5, 6), False)}) == {"p0": 1}
    with pytest.raises(ValueError):
        CommitStallWatch(checks=0)

    # nothing committed: read again from the log's start
    first = CommitStallWatch(checks=1)
    assert first.observe({"p0": PartitionAcks(None, (1, 2), False)}) == {"p0": 0}
    assert first.observe({"p0": PartitionAcks(None, (7, 8), False, log_start=5)}) == {"p0": 5}


@pytest.mark.integration
def test_a_worker_gets_its_commit_past_a_lost_ack(bootstrap: str, tmp_path: Path) -> None:
    # first, on one partition (one key): two records whose acks get lost, one after them: the
    # hole is at the partition's start, where nothing is committed (Faust commits past that)
    lost = Utterance(pipeline_version=1, repo="octo/hello", number=50, text=LOST_ACK_TEXT)
    after = lost.model_copy(update={"text": "after the lost acks"})
    utterances = [lost, lost, after, *hellos(12)]
    log = tmp_path / "worker.log"
    env = {"SWE_STREAM_WORKER_COMMIT_STALL_CHECK_SECONDS": "1", "NO_CYTHON": "1"}
    process, group, metrics_port = start_shout_worker(
        "tests.fakes.lossy_shout_app", bootstrap, utterances, env, log
    )
    try:
        asyncio.run(read(bootstrap, SHOUTED.name, len(utterances), process, log=log))
        bounds = asyncio.run(topic_bounds(bootstrap, HEARD.name))
        ends = {partition: end for partition, (_, end) in bounds.items()}
        deadline = time.monotonic() + 120
        while (committed := asyncio.run(committed_offsets(bootstrap, group, HEARD.name))) != ends:
            assert process.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, (committed, ends, log.read_text()[-4000:])
            time.sleep(0.5)
        exposition = wait_for_metrics(metrics_port, process, log)
        assert 'swe_stream_commit_stalls_repaired_total{topic="test.heard"} 1.0' in exposition
        assert "stalled at offset" in log.read_text()
        # the partition was read again from its start, the first lost ack: those three records
        # (and the partition's hellos) came twice, and the stage, which had handled them,
        # skipped them (their acks moved the commit): each record shouted once
        again = re.search(
            r'swe_stream_stage_records_skipped_total\{reason="delivered_again",stage="shout"\} '
            r"(\d+)",
            exposition,
        )
        assert again is not None and int(again.group(1)) >= 3, exposition
        shouted_bounds = asyncio.run(topic_bounds(bootstrap, SHOUTED.name))
        assert sum(end - start for start, end in shouted_bounds.values()) == len(utterances)
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, len(utterances), process))
        texts = [Utterance.from_json(value).text for _, value in shouted]
        assert texts.count(LOST_ACK_TEXT.upper()) == 2 and texts.count(after.text.upper()) == 1
        assert {u.text.upper() for u in utterances} == set(texts)
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            stop(process)


# the replay that hung in CI: its one record at offset 0 fetched (position 1), never processed
LOST = PartitionStanding(
    committed=None, read=0, position=1, highwater=1, paused=False, in_flight=0, acked=0
)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("standing", "lost"),
    [
        (LOST, True),
        (PartitionStanding(4, 6, 7, 9, False, 0, 0), True),  # committed 4, fetched to 7
        (PartitionStanding(7, 6, 7, 9, False, 0, 0), False),  # fetched up to the commit
        (PartitionStanding(None, None, 0, 3, False, 0, 0), False),  # nothing fetched yet
        (PartitionStanding(4, 6, 7, 9, False, 1, 0), False),  # a record in flight
        (PartitionStanding(4, 6, 7, 9, False, 0, 2), False),  # acked, not yet committed
        (PartitionStanding(4, 6, 7, 9, True, 0, 0), False),  # paused: its buffer is full
        (PartitionStanding(4, None, None, None, False, 0, 0), False),  # no position yet
    ],
)
def test_a_fetch_past_the_commit_with_nothing_acked_or_in_flight_is_lost(
    standing: PartitionStanding, lost: bool
) -> None:
    assert fetched_not_processed(standing) is lost


@pytest.mark.unit
def test_only_a_lost_fetch_unchanged_while_the_consumer_is_idle_is_read_again() -> None:
    watch = LostFetchWatch(checks=3)
    moved = PartitionStanding(4, 6, 7, 9, False, 0, 0)
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {}
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {}
    assert watch.observe({"p0": LOST, "p1": moved}, idle=False) == {}  # busy: count restarts
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {}
    assert watch.observe({"p0": LOST}, idle=True) == {}
    # p0 from the start (Faust has no committed offset), p1's count restarted when it left
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {"p0": 0}
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {}
    assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {"p1": 4}
    # the same standing again after a repair: the records are gone (compacted, retention)
    for _ in range(5):
        assert watch.observe({"p0": LOST, "p1": moved}, idle=True) == {}
    fetched_again = PartitionStanding(4, 6, 8, 9, False, 0, 0)
    assert [watch.observe({"p1": fetched_again}, idle=True) for _ in range(3)][-1] == {"p1": 4}
    with pytest.raises(ValueError):
        LostFetchWatch(checks=0)


@pytest.mark.integration
def test_a_worker_reads_again_a_record_no_stream_got(bootstrap: str, tmp_path: Path) -> None:
    """A fetched record that never reached the stream (the last of its partition, as the
    replay's was) is read again once the worker is idle; without the watch it never is."""
    utterances = hellos(8)
    lost = Utterance(pipeline_version=1, repo="octo/hello", number=50, text=LOST_FETCH_TEXT)
    log = tmp_path / "worker.log"
    process, group, metrics_port = start_shout_worker(
        "tests.fakes.lost_fetch_shout_app",
        bootstrap,
        [*utterances, lost],
        {"SWE_STREAM_WORKER_LOST_FETCH_CHECK_SECONDS": "1"},
        log,
    )
    try:
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, len(utterances) + 1, process, log=log))
        texts = [Utterance.from_json(value).text for _, value in shouted]
        assert sorted(texts) == sorted(u.text.upper() for u in [*utterances, lost])
        exposition = wait_for_metrics(metrics_port, process, log)
        assert 'swe_stream_lost_fetches_reread_total{topic="test.heard"} 1.0' in exposition
        # read again from its own offset: the records before it on its partition were committed
        said = re.findall(r"reached no stream: reading the partition again from offset (\d+)",
                          log.read_text())  # fmt: skip
        assert len(said) == 1 and int(said[0]) > 0, said
        bounds = asyncio.run(topic_bounds(bootstrap, HEARD.name))
        ends = {partition: end for partition, (_, end) in bounds.items()}
        deadline = time.monotonic() + 60
        while (committed := asyncio.run(committed_offsets(bootstrap, group, HEARD.name))) != ends:
            assert time.monotonic() < deadline, (committed, ends, log.read_text()[-4000:])
            time.sleep(0.5)
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            stop(process)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("committed", "first_acked", "in_flight", "passes"),
    [
        (5, 6, [5], True),  # the record at the committed offset still in hand (Faust commits)
        (5, 6, [], True),  # ... or taken from a stream's hands: a hole of one
        (5, 5, [], False),  # the next record acked
        (5, 5, [7], False),  # the run stops before the record in flight
        (None, 3, [1], True),  # nothing committed: a record in flight below the acked run
        # nothing committed, nothing in flight: records before the run that no stream acked
        # (seen on the embedded broker: pr.enriched[0] committed at 3, offset 0 never read)
        (None, 3, [], True),
        (None, 0, [], False),  # the run starts at the log's start
        (5, 5, [2], False),  # a record delivered again below the commit holds nothing
    ],
)
def test_a_commit_never_passes_a_record_not_processed(
    committed: int | None, first_acked: int, in_flight: list[int], passes: bool
) -> None:
    assert commit_passes_unprocessed(committed, first_acked, in_flight) is passes


@pytest.mark.unit
def test_with_nothing_committed_a_commit_starts_at_the_log_start() -> None:
    """Retention deleted the records before offset 40: a group with no commit starts there."""
    assert commit_passes_unprocessed(None, 40, [], log_start=40) is False
    assert commit_passes_unprocessed(None, 42, [], log_start=40) is True
    assert commit_passes_unprocessed(None, 42, [41], log_start=40) is True


def same_partition(count: int, partitions: int = 4) -> list[Utterance]:
    """``count`` utterances of distinct PRs whose keys land on one partition of ``HEARD``."""
    partitioner = DefaultPartitioner()
    chosen: list[Utterance] = []
    number = 100
    while len(chosen) < count:
        number += 1
        key = f"octo/hello#{number}".encode()
        if partitioner(key, list(range(partitions)), list(range(partitions))) == 0:
            chosen.append(
                Utterance(pipeline_version=1, repo="octo/hello", number=number, text=f"hi {number}")
            )
    return chosen


@pytest.mark.integration
def test_a_record_in_flight_when_later_ones_commit_is_processed_after_a_sigkill(
    bootstrap: str, tmp_path: Path
) -> None:
    """A stage with two records in hand: the one at the partition's committed offset is slow,
    the ones after it are acked. The commit waits for it (Faust's own rule commits past a hole
    of one), so a worker killed meanwhile leaves it to the next one, which shouts it."""
    before, slow, *after = same_partition(6)
    slow = slow.model_copy(update={"text": SLOW_TEXT})
    release = tmp_path / "release"
    env = {"SHOUT_RELEASE_FILE": str(release)}
    log = tmp_path / "worker.log"
    process, group, _ = start_shout_worker(
        "tests.fakes.slow_shout_app", bootstrap, [before, slow, *after], env, log
    )
    try:
        asyncio.run(read(bootstrap, SHOUTED.name, 1 + len(after), process, log=log))
        deadline = time.monotonic() + 60
        while asyncio.run(committed_offsets(bootstrap, group, HEARD.name)).get(0) != 1:
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.5)
        time.sleep(3 * 2.8)  # three of Faust's commit intervals, with every record but one acked
        assert asyncio.run(committed_offsets(bootstrap, group, HEARD.name)).get(0) == 1
        process.kill()
        process.wait(timeout=30)
        release.touch()
        process = restart_shout_worker("tests.fakes.slow_shout_app", bootstrap, group, env, log)
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, 2 + len(after), process, log=log))
        texts = [Utterance.from_json(value).text for _, value in shouted]
        assert SLOW_TEXT.upper() in texts
        deadline = time.monotonic() + 60
        while asyncio.run(committed_offsets(bootstrap, group, HEARD.name)).get(0) != 6:
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.5)
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            stop(process)


@pytest.mark.unit
def test_stream_partitions_with_nothing_committed_are_sought_to_their_start() -> None:
    """A seek to the committed offset leaves a partition with none where the fetcher left it,
    after records Faust dropped: those are read from their start; a changelog, a partition
    committed at 0 (Faust keeps it as None) or above 0 is left to Faust."""
    from collections import namedtuple

    from streams.kafka.commits import unsought_partitions

    tp = namedtuple("TP", "topic partition")
    assigned = [tp("pr.patches", 2), tp("pr.patches", 1), tp("pr.classified", 0),
                tp("swe.ledger", 2), tp("tasks.scored", 3)]  # fmt: skip
    committed = {tp("pr.patches", 1): 5, tp("pr.classified", 0): None}
    streams = {"pr.patches", "pr.classified", "tasks.scored"}
    assert unsought_partitions(assigned, committed, streams) == {
        tp("pr.patches", 2): 0,
        tp("tasks.scored", 3): 0,
    }
    assert unsought_partitions([], committed, streams) == {}


@pytest.mark.unit
def test_the_seek_after_a_recovery_also_seeks_unsought_partitions() -> None:
    """Faust's seek leaves partitions with nothing committed alone; they are sought to their
    start, whatever Faust's read offset says (after a seek it is the next offset to read: one
    past a partition's end once all of it was read), and what was acked is committed before a
    revocation makes Faust forget it."""
    from collections import namedtuple

    from streams.kafka.commits import seek_uncommitted_to_start

    tp = namedtuple("TP", "topic partition")

    class Consumer:
        def __init__(self) -> None:
            self.calls: list[object] = []
            self._committed_offset: dict[object, int | None] = {}
            # pr.patches[2] was read to its end (73 records): the next offset to read
            self._read_offset: dict[object, int | None] = {tp("pr.patches", 2): 73}
            self._acked: defaultdict[object, list[int]] = defaultdict(list)

        async def commit(self) -> bool:
            self.calls.append("commit")
            return True

        async def perform_seek(self) -> None:
            self.calls.append("perform_seek")
            self._committed_offset = {tp("pr.patches", 0): 3}

        async def on_partitions_revoked(self, revoked: set[object]) -> None:
            self.calls.append("revoke")
            for partition in revoked:  # as Faust does: what was read and acked is forgotten
                self._read_offset.pop(partition, None)
                self._acked.pop(partition, None)

        def assignment(self) -> set[object]:
            return {tp("pr.patches", 0), tp("pr.patches", 1), tp("pr.patches", 2),
                    tp("swe.ledger", 1)}  # fmt: skip

        async def seek(self, partition: object, offset: int) -> None:
            self.calls.append((partition, offset))

    consumer = Consumer()
    seek_uncommitted_to_start(consumer, {"pr.patches"})
    asyncio.run(consumer.perform_seek())
    assert consumer.calls == [
        "perform_seek", (tp("pr.patches", 1), 0), (tp("pr.patches", 2), 0)
    ]  # fmt: skip
    assert consumer._acked == {}  # nothing counted as acked that no stream acked
    # a rebalance: what was acked is committed before Faust forgets it
    consumer.calls.clear()
    asyncio.run(consumer.on_partitions_revoked({tp("pr.patches", 1), tp("pr.patches", 2)}))
    assert consumer.calls == ["commit", "commit", "revoke"]
    assert consumer._read_offset == {}


@pytest.mark.unit
def test_a_record_acked_below_the_commit_leaves_the_consumer_idle() -> None:
    """Faust marks a record delivered again below the committed offset acked but keeps it in
    its ``unacked`` set for good; it is not in flight, so the lost-fetch watch still sees an
    idle consumer (CI: three such records hid 7 lost ones from it for 15 minutes)."""
    import faust
    from faust.types import TP
    from faust.types.tuples import Message

    from streams.kafka.commits import consumer_idle, in_flight_records, read_faust_acks

    app = faust.App("commits-test", broker="kafka://127.0.0.1:1")
    app.topic("pr.patches")
    app.topics._acking_topics.add("pr.patches")  # what subscribing the stream does
    app.flow_control.resume()
    consumer = app.consumer
    tp = TP("pr.patches", 2)
    consumer._committed_offset[tp] = 5

    def taken(offset: int) -> Message:
        message = Message("pr.patches", 2, offset, 0.0, 0, None, b"k", b"v", None, tp=tp)
        consumer.track_message(message)
        return message

    again = taken(3)
    consumer.ack(again)
    assert again.acked and again in consumer.unacked  # Faust's own bookkeeping keeps it
    assert in_flight_records(consumer) == [] and consumer_idle(app)
    fresh = taken(6)
    assert in_flight_records(consumer) == [fresh] and not consumer_idle(app)
    assert read_faust_acks(consumer) == {}  # nothing acked above the commit yet
    consumer.ack(fresh)
    assert in_flight_records(consumer) == [] and consumer_idle(app)
    assert read_faust_acks(consumer) == {tp: PartitionAcks(5, (6,), False)}


@pytest.mark.unit
def test_a_jump_of_the_fetch_counts_as_processed_only_outside_the_stage_inputs() -> None:
    """Faust counts the offsets a fetch jumped over as a gap in the log, processed; on a stage
    input (never compacted) they are records skipped: the commit stops below them."""
    import faust
    from faust.types import TP
    from faust.types.tuples import Message

    from streams.kafka.commits import hold_commits_at_unprocessed_records

    app = faust.App("commits-test", broker="kafka://127.0.0.1:1")
    consumer = app.consumer
    hold_commits_at_unprocessed_records(consumer, {"pr.patches"})

    async def read_with_a_jump(topic: str) -> list[int | None]:
        app.topic(topic)
        app.topics._acking_topics.add(topic)  # what subscribing the stream does
        tp = TP(topic, 0)
        consumer._committed_offset[tp] = 24
        for offset in (24, 36):
            message = Message(topic, 0, offset, 0.0, 0, None, b"k", b"v", None, tp=tp)
            consumer.track_message(message)
            if offset == 36:  # what Faust's fetch loop does on reading 36 right after 24
                await consumer._add_gap(tp, 25, offset)
            consumer.ack(message)
        offsets = [consumer._new_offset(tp)]
        consumer._committed_offset[tp] = offsets[0]
        return [*offsets, consumer._new_offset(tp)]

    assert asyncio.run(read_with_a_jump("pr.patches")) == [25, None]  # 25..35 read again
    assert asyncio.run(read_with_a_jump("pr.scored"))[0] == 37  # Faust's own rule: past them


@pytest.mark.unit
def test_a_commit_that_did_not_go_through_is_not_recorded_as_made() -> None:
    """Faust records a commit's offsets whether the group took them or not; a refused commit
    leaves the record as it was, and one answered after a revocation ran leaves none (CI: the
    same member got the partition back, took it for committed past its end, and dropped the
    acks of its records for ten minutes)."""
    import faust
    from faust.types import TP

    from streams.kafka.commits import keep_commit_record_true

    app = faust.App("commits-test", broker="kafka://127.0.0.1:1")
    consumer = app.consumer
    tp, other = TP("pr.patches", 2), TP("pr.patches", 0)
    consumer.assignment = lambda: {tp, other}
    answers: list[bool] = []
    revoke_while_committing: list[bool] = []

    async def revoke(revoked: set[TP]) -> None:  # what Faust's revocation does to the record
        for partition in revoked:
            consumer._committed_offset.pop(partition, None)

    async def commit(offsets: object) -> bool:  # the group's answer
        if revoke_while_committing:
            await consumer.on_partitions_revoked({tp, other})
        return answers.pop(0)

    consumer._commit = commit
    consumer.on_partitions_revoked = revoke
    keep_commit_record_true(consumer)

    async def commit_offsets(offsets: dict[TP, int], answer: bool) -> bool:
        answers.append(answer)
        # as Faust's commit calls it
        made: bool = await consumer._commit_offsets(offsets, start_new_transaction=True)
        return made

    assert asyncio.run(commit_offsets({tp: 3}, False)) is False
    assert tp not in consumer._committed_offset  # nothing was committed, none is recorded
    assert asyncio.run(commit_offsets({tp: 3, other: 7}, True)) is True
    assert consumer._committed_offset == {tp: 3, other: 7}
    assert asyncio.run(commit_offsets({tp: 5}, False)) is False
    assert consumer._committed_offset == {tp: 3, other: 7}  # as it was
    revoke_while_committing.append(True)
    assert asyncio.run(commit_offsets({tp: 5}, False)) is False
    assert consumer._committed_offset == {}  # the revocation forgot it, and so it stays
