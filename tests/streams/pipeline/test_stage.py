"""StageRunner: the decode / handle / emit / ledger / DLQ contract every stage shares."""

from __future__ import annotations

import pytest

from schemas import DeadLetter, LedgerEntry
from streams.core import metrics
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Outcome, StageRunner
from tests.fakes.shout_stage import HEARD, SHOUT, SHOUTED, Utterance

pytestmark = pytest.mark.unit


def utterance(text: str, number: int = 7, version: int = 3) -> bytes:
    """A record of pipeline version 3, the fixture runner's (another version's is skipped)."""
    return Utterance(
        pipeline_version=version, repo="octo/hello", number=number, text=text
    ).to_json()


def counter(metric: object, **labels: str) -> float:
    return float(metric.labels(**labels)._value.get())  # type: ignore[attr-defined]


@pytest.fixture
def runner_and_sink() -> tuple[StageRunner[Utterance], MemorySink]:
    sink = MemorySink()
    return StageRunner(SHOUT, sink, pipeline_version=3), sink


async def test_accepted_record_is_emitted_and_recorded(runner_and_sink) -> None:  # type: ignore[no-untyped-def]
    runner, sink = runner_and_sink
    outcome = await runner.process(b"octo/hello#7", utterance("hi there"), 0, 0)
    assert outcome is not None and outcome.status == "accepted"
    [(key, value)] = sink.on(SHOUTED.name)
    assert key == b"octo/hello#7"
    assert Utterance.from_json(value).text == "HI THERE"
    [(ledger_key, ledger_value)] = sink.on("swe.ledger")
    entry = LedgerEntry.from_json(ledger_value)
    assert ledger_key == b"octo/hello#7@v3"  # the PR in pipeline version 3
    assert (entry.stage, entry.status, entry.reason, entry.pipeline_version) == (
        "shout",
        "accepted",
        None,
        3,
    )


async def test_rejection_is_counted_and_recorded_with_its_reason(runner_and_sink) -> None:  # type: ignore[no-untyped-def]
    runner, sink = runner_and_sink
    before = counter(metrics.STAGE_RECORDS_REJECTED, stage="shout", reason="empty-text")
    await runner.process(b"octo/hello#8", utterance("  ", number=8), 1, 5)
    assert sink.on(SHOUTED.name) == []
    entry = LedgerEntry.from_json(sink.on("swe.ledger")[0][1])
    assert (entry.status, entry.reason) == ("rejected", "empty-text")
    assert counter(metrics.STAGE_RECORDS_REJECTED, stage="shout", reason="empty-text") == before + 1


async def test_a_pr_that_ends_leaves_one_line_saying_why(
    runner_and_sink,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner, _ = runner_and_sink
    with caplog.at_level("DEBUG", logger="swe_stream"):
        await runner.process(b"octo/hello#8", utterance("  ", number=8), 1, 5)
        await runner.process(b"octo/hello#9", utterance("fine", number=9), 1, 6)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert lines == ["shout: octo/hello#8 rejected: empty-text"]


@pytest.mark.parametrize(
    "raw, error_type",
    [
        (b"\xff\xfe not json", "ValidationError"),
        (
            b'{"pipeline_version": 1, "repo": "octo/hello", "number": "seven", "text": "x"}',
            "ValidationError",
        ),
        (b'{"pipeline_version": 1, "repo": "../etc", "number": 1, "text": "x"}', "ValidationError"),
    ],
)
async def test_schema_failures_go_to_the_dlq_with_original_bytes(
    runner_and_sink,
    raw: bytes,
    error_type: str,  # type: ignore[no-untyped-def]
) -> None:
    runner, sink = runner_and_sink
    before = counter(metrics.DLQ_RECORDS, topic=HEARD.name)
    assert await runner.process(b"k", raw, 2, 41) is None
    [(key, value)] = sink.on("test.heard.dlq")
    letter = DeadLetter.from_json(value)
    assert key == b"k" and letter.key == "k"
    assert letter.original_value() == raw
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        HEARD.name,
        2,
        41,
    )
    assert letter.error_type == error_type and letter.stage == "shout"
    assert counter(metrics.DLQ_RECORDS, topic=HEARD.name) == before + 1
    assert sink.on(SHOUTED.name) == [] and sink.on("swe.ledger") == []


async def test_logic_failure_goes_to_dlq_and_ledger_and_processing_continues(
    runner_and_sink,  # type: ignore[no-untyped-def]
) -> None:
    runner, sink = runner_and_sink
    assert await runner.process(b"octo/hello#9", utterance("boom", number=9), 0, 3) is None
    letter = DeadLetter.from_json(sink.on("test.heard.dlq")[0][1])
    assert letter.error_type == "RuntimeError" and "kaboom" in letter.error
    entry = LedgerEntry.from_json(sink.on("swe.ledger")[0][1])
    assert entry.status == "failed" and "kaboom" in (entry.reason or "")
    # the next record is handled normally
    assert await runner.process(b"octo/hello#10", utterance("ok", number=10), 0, 4) is not None
    assert len(sink.on(SHOUTED.name)) == 1


async def test_records_of_another_pipeline_version_are_skipped_unless_any_version() -> None:
    import dataclasses

    old = Utterance(pipeline_version=1, repo="octo/hello", number=9, text="from v1").to_json()
    sink = MemorySink()
    skipped = counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="other_pipeline_version")
    outcome = await StageRunner(SHOUT, sink, 2).process(b"octo/hello#9", old, 0, 0)
    assert outcome is not None and outcome.status is None and sink.sent == []
    assert (
        counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="other_pipeline_version")
        == skipped + 1
    )
    entry_stage = dataclasses.replace(SHOUT, any_version=True)
    outcome = await StageRunner(entry_stage, sink, 2).process(b"octo/hello#9", old, 0, 1)
    assert outcome is not None and outcome.status == "accepted"
    assert [Utterance.from_json(v).text for _, v in sink.on(SHOUTED.name)] == ["FROM V1"]


async def test_a_replayed_dead_letter_is_retried_although_the_pr_failed() -> None:
    sink = MemorySink()
    runner = StageRunner(SHOUT, sink, 1)
    boom = utterance("boom", number=11, version=1)
    assert await runner.process(b"octo/hello#11", boom, 0, 0) is None  # failed: final
    assert await runner.process(b"octo/hello#11", boom, 0, 1) == Outcome()  # skipped: final
    assert await runner.process(b"octo/hello#11", boom, 0, 2, attempt=2) is None  # retried
    letters = [DeadLetter.from_json(v) for _, v in sink.on(HEARD.dlq_name)]
    assert [letter.attempts for letter in letters] == [1, 2]


async def test_records_stamped_at_or_after_until_are_skipped() -> None:
    import dataclasses

    sink = MemorySink()
    runner = StageRunner(dataclasses.replace(SHOUT, until_ms=2_000), sink, 3)
    before = counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="after_until_time")
    for offset, stamp in enumerate((1_000, 1_999, 2_000, 5_000)):
        record = utterance(f"at {stamp}", number=20 + offset)
        await runner.process(b"octo/hello#20", record, 0, offset, timestamp_ms=stamp)
    assert [Utterance.from_json(v).text for _, v in sink.on(SHOUTED.name)] == [
        "AT 1000",
        "AT 1999",
    ]
    skipped = counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="after_until_time")
    assert skipped == before + 2


async def test_an_outage_is_waited_out_and_never_a_verdict(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A service that does not answer (ServiceUnavailable) pauses the record: no dead letter,
    no ledger entry, one WARNING for the outage and one INFO when it is back, waits that
    grow; the record then ends with its true outcome."""
    import dataclasses

    from streams.core.errors import ServiceUnavailable
    from streams.pipeline.outages import Backoff, Outages

    down_for = {"tries": 3}

    async def flaky(utterance: Utterance) -> Outcome:
        if down_for["tries"] > 0:
            down_for["tries"] -= 1
            raise ServiceUnavailable("the Docker engine does not answer", service="docker")
        return await SHOUT.handle(utterance)

    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    outages = Outages(Backoff(first=1.0, longest=3.0), sleep=no_sleep)
    sink = MemorySink()
    runner = StageRunner(dataclasses.replace(SHOUT, handle=flaky), sink, 3, outages=outages)
    retries = counter(metrics.STAGE_OUTAGE_RETRIES, stage="shout", service="docker")
    began = counter(metrics.SERVICE_OUTAGES, service="docker")
    with caplog.at_level("INFO", logger="swe_stream"):
        outcome = await runner.process(b"octo/hello#12", utterance("hi", number=12), 0, 0)
    assert outcome is not None and outcome.status == "accepted"
    assert [Utterance.from_json(v).text for _, v in sink.on(SHOUTED.name)] == ["HI"]
    assert sink.on(HEARD.dlq_name) == []
    [(_, ledger)] = sink.on("swe.ledger")
    assert LedgerEntry.from_json(ledger).status == "accepted"
    # 1, 2, then capped at 3 (each jittered by up to a tenth)
    assert [round(w) for w in waits] == [1, 2, 3] and all(w <= 3.3 for w in waits)
    assert counter(metrics.STAGE_OUTAGE_RETRIES, stage="shout", service="docker") == retries + 3
    assert counter(metrics.SERVICE_OUTAGES, service="docker") == began + 1  # one outage
    assert metrics.SERVICE_UP.labels(service="docker")._value.get() == 1  # type: ignore[attr-defined]
    said = [r.getMessage() for r in caplog.records if r.name == "swe_stream.outages"]
    assert len(said) == 2, said
    assert said[0].startswith("docker does not answer (the Docker engine does not answer)")
    assert "shout pauses" in said[0] and "nothing is marked failed" in said[0]
    assert said[1].startswith("docker is back after") and said[1].endswith("shout resumed")
    assert outages.down() == {}


async def test_an_outcome_that_does_not_serialise_goes_to_dlq_and_ledger() -> None:
    """yaml's tests titled with a lone surrogate (``'\\udead'``) made an output JSON cannot
    encode: the emit raised past the stage, crashed the agent's actor and lost the PR with
    no ledger entry. Now: dead-lettered (kind ``emit``) and ``failed`` in the ledger."""
    from streams.pipeline.stage import Stage

    async def garble(utterance: Utterance) -> Outcome:
        if utterance.text == "garble":
            return Outcome.accept(utterance.model_copy(update={"text": "bad \udead"}))
        return Outcome.accept(utterance)

    sink = MemorySink()
    runner = StageRunner(Stage("shout", HEARD, SHOUTED, garble), sink, pipeline_version=3)
    before = counter(metrics.STAGE_RECORDS_FAILED, stage="shout", error="emit")
    raw = utterance("garble", number=11)
    assert await runner.process(b"octo/hello#11", raw, 0, 9) is None
    letter = DeadLetter.from_json(sink.on("test.heard.dlq")[0][1])
    assert letter.original_value() == raw and letter.source_offset == 9
    entry = LedgerEntry.from_json(sink.on("swe.ledger")[-1][1])
    assert entry.status == "failed" and "Serializ" in (entry.reason or "")
    assert counter(metrics.STAGE_RECORDS_FAILED, stage="shout", error="emit") == before + 1
    assert sink.on(SHOUTED.name) == []
    assert await runner.process(b"octo/hello#12", utterance("ok", number=12), 0, 10) is not None
    assert len(sink.on(SHOUTED.name)) == 1
