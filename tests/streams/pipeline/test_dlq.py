"""Dead letters on the embedded broker: a poison record lands in its DLQ, `dlq replay` sends
it back and marks the letter replayed; failing again it returns with attempts + 1; once the
cause is fixed it moves on, and a second replay does not send it again unless --again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from schemas import DeadLetter, LedgerEntry
from streams.kafka.broker import free_port
from streams.pipeline.dlq import (
    DeadLetterQueue,
    StoredLetter,
    current_letters,
    read_dead_letter_queue,
    replay_attempt,
    select_letters,
)
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.shout_stage import HEARD, SHOUTED, Utterance
from tests.workers import (
    create_test_topics,
    produce,
    read,
    stop,
    wait_for_metrics,
    worker_env,
)


@pytest.mark.unit
def test_the_attempt_comes_from_the_replay_header() -> None:
    assert replay_attempt(None) == 1 and replay_attempt([]) == 1
    assert replay_attempt([("swe-stream-attempt", b"3")]) == 3
    assert replay_attempt({"other": b"9", "swe-stream-attempt": b"2"}) == 2
    assert replay_attempt([("swe-stream-attempt", b"garbage")]) == 1


def letter(value: bytes, attempts: int) -> DeadLetter:
    return DeadLetter.capture(
        source_topic="t", source_partition=0, source_offset=attempts, key="k", value=value,
        exc=RuntimeError("x"), stage="s", pipeline_version=1, attempts=attempts,
    )  # fmt: skip


@pytest.mark.unit
def test_one_replay_per_record_its_latest_attempt() -> None:
    letters = [letter(b"a", 1), letter(b"b", 1), letter(b"a", 2)]
    current = current_letters(letters)
    assert sorted((x.original_value(), x.attempts) for x in current) == [(b"a", 2), (b"b", 1)]


@pytest.mark.unit
def test_letters_where_they_lie_are_chosen_like_letters() -> None:
    stored = [
        StoredLetter("t.dlq", 0, offset, x)
        for offset, x in enumerate([letter(b"a", 1), letter(b"b", 1), letter(b"a", 2)])
    ]
    assert [x.offset for x in current_letters(stored)] == [2, 1]
    assert select_letters(stored, keys=["k"], stages=["s"]) == stored
    assert select_letters(stored, keys=["other"]) == []


@pytest.mark.unit
def test_a_replay_can_be_narrowed_to_stages_keys_and_a_time() -> None:
    t0 = datetime(2026, 11, 25, 12, tzinfo=UTC)

    def failed(stage: str, key: str, minutes: int) -> DeadLetter:
        return DeadLetter.capture(
            source_topic="t", source_partition=0, source_offset=minutes, key=key, value=b"v",
            exc=RuntimeError("x"), stage=stage, pipeline_version=1,
            failed_at=t0 + timedelta(minutes=minutes),
        )  # fmt: skip

    letters = [
        failed("enrich", "o/r#1", 0),
        failed("validate", "o/r#2", 5),
        failed("enrich", "o/r#3", 9),
    ]
    assert select_letters(letters) == letters
    assert [x.key for x in select_letters(letters, stages=["enrich"])] == ["o/r#1", "o/r#3"]
    assert [x.key for x in select_letters(letters, keys=["o/r#2", "o/r#9"])] == ["o/r#2"]
    since = t0 + timedelta(minutes=5)
    assert [x.key for x in select_letters(letters, since=since)] == ["o/r#2", "o/r#3"]
    assert select_letters(letters, stages=["validate"], since=t0 + timedelta(minutes=6)) == []


def letters_in_dlq(bootstrap: str, count: int, timeout: float = 60) -> DeadLetterQueue:
    """The DLQ once it holds at least ``count`` letters (replay marks are no letters)."""
    deadline = time.monotonic() + timeout
    while True:
        queue = asyncio.run(read_dead_letter_queue(bootstrap, HEARD.dlq_name))
        if len(queue.letters) >= count or time.monotonic() > deadline:
            return queue
        time.sleep(0.5)


def dlq(bootstrap: str, action: str, *filters: str) -> str:
    done = subprocess.run(
        [SWE_STREAM, "dlq", action, "--topic", HEARD.dlq_name, "--bootstrap", bootstrap, *filters],
        cwd=REPO_ROOT, env=worker_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.integration
def test_a_poison_record_is_replayed_until_its_cause_is_fixed(
    bootstrap: str, tmp_path: Path
) -> None:
    asyncio.run(create_test_topics(bootstrap))
    cause = tmp_path / "fails-on"
    cause.write_text("boom")
    log, metrics_port = tmp_path / "worker.log", free_port()
    command = [
        SWE_STREAM, "worker", "--app", "tests.fakes.shout_app:app", "--bootstrap", bootstrap,
        "--app-id", f"dlq-{os.getpid()}-{time.monotonic_ns()}", "--web-port", str(free_port()),
        "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=worker_env() | {"SHOUT_FAILS_ON_FILE": str(cause)},
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for_metrics(metrics_port, process, log)
        boom = Utterance(pipeline_version=1, repo="octo/hello", number=7, text="boom")
        fine = Utterance(pipeline_version=1, repo="octo/hello", number=8, text="fine")
        records = [(u.key.encode(), u.to_json()) for u in (boom, fine)]
        asyncio.run(produce(bootstrap, records))
        asyncio.run(read(bootstrap, SHOUTED.name, 1, process))  # FINE: the worker goes on
        (first,) = [
            DeadLetter.from_json(v) for _, v in asyncio.run(read(bootstrap, HEARD.dlq_name, 1))
        ]
        assert (first.attempts, first.original_value()) == (1, boom.to_json())
        assert "attempt 1" in dlq(bootstrap, "show")
        # filters: another stage's, another key's, or a later failure's letters only
        assert dlq(bootstrap, "show", "--stage", "enrich") == ""
        assert "attempt 1" in dlq(bootstrap, "show", "--key", "octo/hello#7", "--stage", "shout")
        assert "replayed 0 records" in dlq(bootstrap, "replay", "--key", "octo/hello#8")
        assert "replayed 0 records" in dlq(bootstrap, "replay", "--since", "2999-01-01T00:00")

        # replayed with the cause still there: back in the DLQ, one attempt more
        assert "replayed 1 records" in dlq(bootstrap, "replay")
        queue = letters_in_dlq(bootstrap, 2)
        letters = [x.letter for x in queue.letters]
        assert sorted(x.attempts for x in letters) == [1, 2]
        assert all(x.original_value() == boom.to_json() for x in letters)
        # the first letter carries its replay mark; the mark is no letter
        assert queue.marks == 1 and not queue.unreadable
        by_attempt = {x.letter.attempts: x for x in queue.letters}
        (mark,) = by_attempt[1].replays
        assert (mark.attempt, mark.source_topic, mark.key) == (2, HEARD.name, "octo/hello#7")
        assert mark.replay_of == f"{by_attempt[1].partition}:{by_attempt[1].offset}"
        assert by_attempt[2].replays == ()
        shown = dlq(bootstrap, "show").splitlines()
        assert len(shown) == 2, shown  # two letters, no line for the mark
        (first_line,) = [line for line in shown if " attempt 1 at " in line]
        assert "(replayed at " in first_line and "as attempt 2" in first_line, first_line
        (second_line,) = [line for line in shown if " attempt 2 at " in line]
        assert "(not replayed)" in second_line, second_line

        # the cause fixed: the replayed record goes through (the failed PR is retried); the
        # letter of attempt 2 is the one sent, attempt 1's (replayed already) is not
        cause.write_text("nothing fails now")
        assert "replayed 1 records" in dlq(bootstrap, "replay")
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, 2, process))
        assert sorted(Utterance.from_json(v).text for _, v in shouted) == ["BOOM", "FINE"]
        ledger = [
            LedgerEntry.from_json(v) for _, v in asyncio.run(read(bootstrap, "swe.ledger", 4))
        ]
        assert [e.status for e in ledger if e.number == 7][-1] == "accepted"
        time.sleep(2)  # nothing more arrives in the DLQ
        queue = letters_in_dlq(bootstrap, 2)
        assert len(queue.letters) == 2 and queue.marks == 2
        assert all(len(x.replays) == 1 for x in queue.letters)

        # a second replay sends nothing by accident, and says why; --again sends it anyway
        again = dlq(bootstrap, "replay")
        assert "replayed 0 records" in again and "skipped 1 already replayed" in again, again
        assert "--again" in again
        assert "replayed 1 records" in dlq(bootstrap, "replay", "--again")
        shouted = asyncio.run(read(bootstrap, SHOUTED.name, 3, process))
        assert sorted(Utterance.from_json(v).text for _, v in shouted) == ["BOOM", "BOOM", "FINE"]
        assert ", 2 times)" in dlq(bootstrap, "show", "--key", "octo/hello#7")
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()[-3000:]


@pytest.mark.integration
async def test_a_replay_sends_a_cut_record_whole_and_a_tombstone_as_a_tombstone(
    bootstrap: str,
) -> None:
    from aiokafka import AIOKafkaProducer

    from streams.kafka.client import read_topic_to_end
    from streams.pipeline.dlq import MAX_VALUE_BYTES, replay_dead_letters, send_to_dlq
    from streams.pipeline.sinks import MemorySink
    from tests.workers import create_test_topics

    await create_test_topics(bootstrap)
    big = b"x" * (MAX_VALUE_BYTES + 150_000)  # in Kafka whole, in its dead letter cut
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=2 << 20)
    await producer.start()
    try:
        placed = await producer.send_and_wait(HEARD.name, big, b"octo/hello#1")
    finally:
        await producer.stop()
    sink = MemorySink()
    cut = await send_to_dlq(
        sink, source_topic=HEARD.name, partition=placed.partition, offset=placed.offset,
        key=b"octo/hello#1", value=big, error=ValueError("bad"), stage="shout",
        pipeline_version=1, dlq_topic=HEARD.dlq_name,
    )  # fmt: skip
    tombstone = await send_to_dlq(
        sink, source_topic=HEARD.name, partition=0, offset=5, key=b"octo/hello#2",
        value=None, error=ValueError("null"), stage="shout", pipeline_version=1,
        dlq_topic=HEARD.dlq_name,
    )  # fmt: skip
    assert len(cut.original_value()) == MAX_VALUE_BYTES
    config = {"bootstrap_servers": bootstrap, "max_request_size": 2 << 20}
    assert await replay_dead_letters(config, [cut, tombstone]) == 2
    records = [r async for r in read_topic_to_end(bootstrap, HEARD.name)]
    by_key = {r.key: r for r in records if r.headers}  # the replayed ones carry the attempt
    assert by_key[b"octo/hello#1"].value == big  # the whole record, not the cut bytes
    assert by_key[b"octo/hello#2"].value is None
    assert dict(by_key[b"octo/hello#1"].headers)["swe-stream-attempt"] == b"2"
