"""StageRunner: the decode / handle / emit / ledger / DLQ contract every stage shares."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from schemas import DeadLetter, LedgerEntry
from streams.core import metrics
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import FailureLines, Outcome, StageRunner, ending_line
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


# the log at the scale of a real hour: a screening stage's endings -----------------------------

SCREENING = dataclasses.replace(SHOUT, screening=True)


def test_a_rejection_is_an_info_line_and_a_debug_line_at_a_screening_stage() -> None:
    rejected = Outcome.reject("empty-text", "nothing but spaces\nsecond line")
    line = "shout: octo/hello#8 rejected: empty-text (nothing but spaces)"
    assert ending_line(SHOUT, "octo/hello#8", rejected) == (logging.INFO, line)
    assert ending_line(SCREENING, "octo/hello#8", rejected) == (logging.DEBUG, line)


def test_an_acceptance_is_a_line_only_at_a_stage_that_says_why() -> None:
    accepted = Outcome.accept(Utterance.from_json(utterance("HI", number=9)))
    assert ending_line(SHOUT, "octo/hello#9", accepted) is None
    saying = dataclasses.replace(SHOUT, accepted_because=lambda o: f"{len(o.outputs)} output(s)")
    assert ending_line(saying, "octo/hello#9", accepted) == (
        logging.INFO,
        "shout: octo/hello#9 accepted: 1 output(s)",
    )
    # an ignored record (a later event of the PR may qualify) and a skip are no verdict
    assert ending_line(saying, "octo/hello#9", Outcome.ignore("not_closed")) is None
    assert ending_line(saying, "octo/hello#9", Outcome()) is None


async def test_a_screening_stage_s_rejections_show_at_debug_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = StageRunner(SCREENING, MemorySink(), pipeline_version=3)
    with caplog.at_level("INFO", logger="swe_stream"):
        await runner.process(b"octo/hello#8", utterance("  ", number=8), 1, 5)
    assert caplog.records == []
    with caplog.at_level("DEBUG", logger="swe_stream"):
        await runner.process(b"octo/hello#9", utterance("  ", number=9), 1, 6)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", "shout: octo/hello#9 rejected: empty-text")
    ]


def test_failures_of_one_kind_are_a_warning_line_now_and_then() -> None:
    lines = FailureLines(every_seconds=600)
    assert lines.level("GitHubNotFound", now=0) == (logging.WARNING, 0)
    assert lines.level("GitHubNotFound", now=1) == (logging.DEBUG, 0)
    assert lines.level("GitHubNotFound", now=599) == (logging.DEBUG, 0)
    assert lines.level("GitError", now=599) == (logging.WARNING, 0)  # each kind its own
    assert lines.level("GitHubNotFound", now=600) == (logging.WARNING, 2)  # two muted since
    assert lines.level("GitHubNotFound", now=601) == (logging.DEBUG, 0)
    assert lines.level("GitHubNotFound", now=1300) == (logging.WARNING, 1)
    assert "1 more GitHubNotFound at enrich" in lines.note("enrich", "GitHubNotFound", 1)


async def test_a_dependency_failing_every_pr_is_one_warning_at_a_screening_stage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Offline, GitHub answers 404 for every PR but one: one WARNING says so at a screening
    stage, each failure is still dead-lettered and in the ledger; elsewhere a line each."""
    from streams.core.errors import DependencyError

    class NotFound(DependencyError):
        pass

    async def not_found(utterance: Utterance) -> Outcome:
        raise NotFound(f"GET /repos/{utterance.repo}/pulls/{utterance.number}: 404")

    for stage, warnings in ((SCREENING, 1), (SHOUT, 3)):
        sink = MemorySink()
        runner = StageRunner(dataclasses.replace(stage, handle=not_found), sink, 3)
        caplog.clear()
        with caplog.at_level("DEBUG", logger="swe_stream"):
            for number in (1, 2, 3):
                raw = utterance("hi", number=number)
                assert await runner.process(b"octo/hello#%d" % number, raw, 0, number) is None
        levels = [r.levelname for r in caplog.records if r.name == "swe_stream.stage"]
        assert levels.count("WARNING") == warnings and len(levels) == 3, levels
        assert len(sink.on(HEARD.dlq_name)) == 3
        ledger = [LedgerEntry.from_json(v) for _, v in sink.on("swe.ledger")]
        assert [e.status for e in ledger] == ["failed"] * 3
    first = next(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert first.startswith("stage shout failed on octo/hello#1: GET /repos/octo/hello/pulls/1")


async def test_a_record_delivered_again_after_its_pr_moved_on_is_skipped_not_redone() -> None:
    """A crash or a rebalance before the offset commit delivers a record again: the ledger,
    which holds the PR as accepted here or at a later stage, says its work (outputs in their
    topic) is done. ``done_at`` names this stage and those after it."""
    stage = dataclasses.replace(SHOUT, done_at=frozenset({"shout", "whisper"}))
    sink = MemorySink()
    runner: StageRunner[Utterance] = StageRunner(stage, sink, pipeline_version=3)
    before = counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="already_done")
    await runner.process(b"octo/hello#7", utterance("hi"), 0, 0)
    await runner.process(b"octo/hello#7", utterance("hi"), 0, 0)  # the same record again
    assert len(sink.on(SHOUTED.name)) == 1 and len(sink.on("swe.ledger")) == 1
    assert counter(metrics.STAGE_RECORDS_SKIPPED, stage="shout", reason="already_done") == (
        before + 1
    )
    # a later stage's acceptance: done here too; an earlier stage's is not
    await runner.ledger.record("octo/hello", 8, stage="whisper", status="accepted")
    await runner.ledger.record("octo/hello", 9, stage="listen", status="accepted")
    await runner.process(b"octo/hello#8", utterance("hi", number=8), 0, 1)
    await runner.process(b"octo/hello#9", utterance("hi", number=9), 0, 2)
    assert [Utterance.from_json(v).number for _, v in sink.on(SHOUTED.name)] == [7, 9]


async def test_a_later_stage_quicker_than_this_stages_ledger_entry_is_not_overwritten() -> None:
    """The outputs are in their topic before this stage writes its ledger entry, so the next
    stage may decide first; the entry this stage would write then would move the PR back."""

    class QuickNextStage(MemorySink):
        async def send(self, topic: str, key: bytes | None, value: bytes) -> None:
            await super().send(topic, key, value)
            if topic == SHOUTED.name:  # the next stage reads it and rejects the PR at once
                await runner.ledger.record("octo/hello", 7, stage="whisper", status="rejected")

    stage = dataclasses.replace(SHOUT, done_at=frozenset({"shout", "whisper"}))
    sink = QuickNextStage()
    runner: StageRunner[Utterance] = StageRunner(stage, sink, pipeline_version=3)
    await runner.process(b"octo/hello#7", utterance("hi"), 0, 0)
    entries = [LedgerEntry.from_json(v) for _, v in sink.on("swe.ledger")]
    assert [(e.stage, e.status) for e in entries] == [("whisper", "rejected")]
    assert runner.ledger.lookup("octo/hello", 7).stage == "whisper"  # type: ignore[union-attr]


async def test_two_records_of_one_pr_at_once_are_handled_in_turn() -> None:
    """A PR's record sent again (a worker died before committing its input) while the first is
    being handled waits for it, then finds its ledger entry: handled once. Other PRs' records
    are handled side by side."""
    import asyncio

    from streams.pipeline.stage import Stage

    handled: list[str] = []
    running, most = 0, 0

    async def slow_shout(record: Utterance) -> Outcome:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        handled.append(record.key)
        return Outcome.accept(record)

    stage = Stage("slow", HEARD, SHOUTED, slow_shout, done_at=frozenset({"slow"}))
    sink = MemorySink()
    runner = StageRunner(stage, sink, pipeline_version=3)
    before = counter(metrics.STAGE_RECORDS_SKIPPED, stage="slow", reason="already_done")
    await asyncio.gather(
        runner.process(b"octo/hello#7", utterance("a"), 0, 10),
        runner.process(b"octo/hello#7", utterance("a"), 0, 11),  # the same PR, sent again
        runner.process(b"octo/hello#8", utterance("b", number=8), 0, 12),
    )
    assert sorted(handled) == ["octo/hello#7", "octo/hello#8"]
    assert most == 2  # the other PR's record was not held
    assert counter(metrics.STAGE_RECORDS_SKIPPED, stage="slow", reason="already_done") == (
        before + 1
    )
    assert len(sink.on(SHOUTED.name)) == 2
    assert len(runner.turns) == 0  # no key is kept once its records are done


async def test_a_pr_another_worker_did_meanwhile_is_not_emitted_again() -> None:
    """A rebalance gives a partition to another worker while this one handles its record: the
    other begins where the commit was and handles it too. Whichever ends second finds the
    first's ledger entry and emits nothing (no second validation record)."""
    import asyncio

    from streams.pipeline.stage import Stage

    async def slow_shout(record: Utterance) -> Outcome:
        await asyncio.sleep(0.05)  # meanwhile the other worker's entry comes in
        await runner.ledger.record("octo/hello", 7, stage="slow2", status="accepted")
        return Outcome.accept(record)

    stage = Stage("slow2", HEARD, SHOUTED, slow_shout, done_at=frozenset({"slow2"}))
    sink = MemorySink()
    runner = StageRunner(stage, sink, pipeline_version=3)
    before = counter(metrics.STAGE_RECORDS_SKIPPED, stage="slow2", reason="done_meanwhile")
    await runner.process(b"octo/hello#7", utterance("a"), 0, 10)
    assert sink.on(SHOUTED.name) == []
    assert len(sink.on("swe.ledger")) == 1  # the other worker's entry alone
    assert counter(metrics.STAGE_RECORDS_SKIPPED, stage="slow2", reason="done_meanwhile") == (
        before + 1
    )
