"""The supervise loop with a fake app (no Kafka): why and when it stops, the settle rule (two
polls in a row), ``started`` / ``stopping`` and the signal handlers it installs and removes."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from streams.runtime import supervise as supervise_module
from streams.runtime.supervise import (
    Counts,
    LiveFunnel,
    Session,
    funnel_moved,
    one_line,
    supervise,
)

POLL = 0.01


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervise_module, "POLL_SECONDS", POLL)


class FakeConsumer:
    def __init__(self, app: FakeApp, assigns: bool):
        self.app = app
        self.assigns = assigns

    def assignment(self) -> set[Any]:
        return {("pr.candidates", 0)} if self.app.started and self.assigns else set()


class FakeApp:
    """What supervise uses of a Faust app, recording the calls in ``events``."""

    def __init__(self, events: list[str] | None = None, assigns: bool = True):
        self.events = events if events is not None else []
        self.consumer = FakeConsumer(self, assigns)
        self.rebalancing = False
        self.crashed = False
        self.crash_reason: BaseException | None = None
        self.started = False

    async def start(self) -> None:
        self.events.append("app.start")
        self.started = True

    async def stop(self) -> None:
        self.events.append("app.stop")


KEYS = ("in", "done", "out", "rejected", "failed", "skipped", "other_version")


def counts(n: int) -> dict[str, int]:
    """One stage's counts as StageCounters makes them: n records in, done and out."""
    return {key: n if key in {"in", "done", "out"} else 0 for key in KEYS}


class FakeCounters:
    """Duck-typed StageCounters: counts from a list, one entry per poll (the last repeats);
    ``on_poll`` runs at each ``now()`` the loop makes."""

    def __init__(self, on_poll: Callable[[int], None] = lambda polls: None):
        self.polls = 0
        self.on_poll = on_poll

    def now(self) -> Counts:
        self.polls += 1
        self.on_poll(self.polls)
        return {"export": counts(self.polls)}

    def published(self) -> int:
        return self.polls

    def pending(self, counts: Any = None) -> int:
        return 0


def session(app: FakeApp, counters: FakeCounters, **kwargs: Any) -> Session:
    kwargs.setdefault("join_timeout_seconds", 5.0)
    return Session(app=app, counters=counters, live=LiveFunnel(False), **kwargs)  # type: ignore[arg-type]


@pytest.mark.unit
async def test_a_crashed_app_stops_the_run() -> None:
    app = FakeApp()
    failure = RuntimeError("consumer died")

    def crash_at_third_poll(polls: int) -> None:
        if polls == 3:
            app.crashed, app.crash_reason = True, failure

    counters = FakeCounters(crash_at_third_poll)
    reason, final = await asyncio.wait_for(supervise(session(app, counters)), 10)
    assert reason.startswith("the stream processor crashed")
    assert repr(failure) in reason
    assert app.events == ["app.start", "app.stop"]
    assert counters.polls == 4  # three polls, then the final counts
    assert final == {"export": counts(4)}


@pytest.mark.unit
async def test_sigterm_interrupts_the_run_and_the_handlers_are_restored() -> None:
    before_term = signal.getsignal(signal.SIGTERM)
    app = FakeApp()
    counters = FakeCounters()
    loop = asyncio.get_running_loop()

    def started() -> None:
        loop.call_later(5 * POLL, os.kill, os.getpid(), signal.SIGTERM)

    reason, _ = await asyncio.wait_for(supervise(session(app, counters, started=started)), 10)
    assert reason == "interrupted"
    assert app.events == ["app.start", "app.stop"]
    assert signal.getsignal(signal.SIGTERM) == before_term


@pytest.mark.unit
async def test_a_custom_handler_installed_before_is_restored() -> None:
    """loop.remove_signal_handler alone would put back SIG_DFL, not (say) asyncio.run's own
    Ctrl-C handler."""

    def custom(signum: int, frame: Any) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, custom)
    try:
        reason, _ = await asyncio.wait_for(
            supervise(session(FakeApp(), FakeCounters(), stop_when=lambda c: "done")), 10
        )
        assert reason == "done"
        assert signal.getsignal(signal.SIGTERM) is custom
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.unit
async def test_settled_stops_only_after_two_polls_in_a_row() -> None:
    answers: list[str | None] = []

    def settled_when(counts: Counts) -> str | None:
        poll = len(answers) + 1
        # polls 1-6 alternate (never two in a row), from poll 7 on it holds
        answer = ("drained" if poll % 2 == 1 else None) if poll <= 6 else "drained"
        answers.append(answer)
        return answer

    app = FakeApp()
    reason, _ = await asyncio.wait_for(
        supervise(session(app, FakeCounters(), settled_when=settled_when)), 10
    )
    assert reason == "drained"
    assert answers == ["drained", None, "drained", None, "drained", None, "drained", "drained"]
    assert app.events == ["app.start", "app.stop"]


@pytest.mark.unit
async def test_stop_when_stops_at_once_with_its_reason() -> None:
    seen: list[Counts] = []

    def stop_when(counts: Counts) -> str | None:
        seen.append(counts)
        return "max tasks reached" if counts["export"]["out"] >= 3 else None

    settled_calls: list[Counts] = []

    def settled_when(counts: Counts) -> str | None:
        settled_calls.append(counts)
        return None

    app = FakeApp()
    counters = FakeCounters()
    reason, _ = await asyncio.wait_for(
        supervise(session(app, counters, stop_when=stop_when, settled_when=settled_when)), 10
    )
    assert reason == "max tasks reached"
    assert len(seen) == 3
    assert len(settled_calls) == 2  # not consulted on the poll that stopped
    assert app.events == ["app.start", "app.stop"]


@pytest.mark.unit
async def test_started_once_after_assignment_and_stopping_before_the_app_stops() -> None:
    events: list[str] = []
    app = FakeApp(events)

    def started() -> None:
        assert app.consumer.assignment(), "started before the partitions were assigned"
        events.append("started")

    async def stopping() -> None:
        events.append("stopping")

    def stop_when(counts: Counts) -> str | None:
        events.append("poll")
        return "enough" if counts["export"]["out"] >= 3 else None

    reason, _ = await asyncio.wait_for(
        supervise(
            session(app, FakeCounters(), started=started, stopping=stopping, stop_when=stop_when)
        ),
        10,
    )
    assert reason == "enough"
    assert events == ["app.start", "started", "poll", "poll", "poll", "stopping", "app.stop"]


@pytest.mark.unit
async def test_waits_while_the_group_rebalances() -> None:
    events: list[str] = []
    app = FakeApp(events)
    app.rebalancing = True
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, setattr, app, "rebalancing", False)

    def started() -> None:
        assert not app.rebalancing
        events.append("started")

    reason, _ = await asyncio.wait_for(
        supervise(session(app, FakeCounters(), started=started, stop_when=lambda c: "done")), 10
    )
    assert reason == "done"
    assert events == ["app.start", "started", "app.stop"]


@pytest.mark.unit
async def test_no_partitions_in_time_is_a_timeout_and_the_app_still_stops() -> None:
    before_term = signal.getsignal(signal.SIGTERM)
    events: list[str] = []
    app = FakeApp(events, assigns=False)
    started: list[bool] = []

    async def stopping() -> None:
        events.append("stopping")

    run = session(
        app,
        FakeCounters(),
        started=lambda: started.append(True),
        stopping=stopping,
        join_timeout_seconds=0.3,
    )
    with pytest.raises(TimeoutError, match="did not assign partitions"):
        await asyncio.wait_for(supervise(run), 10)
    assert started == []
    assert events == ["app.start", "stopping", "app.stop"]
    assert signal.getsignal(signal.SIGTERM) == before_term


@pytest.mark.unit
async def test_the_funnel_line_is_logged_only_when_it_changed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(supervise_module, "LOG_EVERY_SECONDS", 0.0)
    moving = [0, 0, 1, 1, 1, 2, 2, 2, 2, 3]  # nothing in yet: no line of zeros

    class Stalling(FakeCounters):
        def now(self) -> Counts:
            self.polls += 1
            return {"export": counts(moving[min(self.polls, len(moving)) - 1])}

    stalling = Stalling()
    with caplog.at_level("INFO", logger="swe_stream"):
        await supervise(
            session(
                FakeApp(),
                stalling,
                stop_when=lambda c: "enough" if stalling.polls >= len(moving) + 5 else None,
            )
        )
    funnel = [r.getMessage() for r in caplog.records if r.getMessage().startswith("funnel:")]
    assert [line.split("in=")[1].split()[0] for line in funnel] == ["1", "2", "3"]


@pytest.mark.unit
async def test_the_run_s_last_funnel_is_logged_when_the_period_held_it_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A funnel line at most every period (none at the start, when records are on their
    way), and the last change at the end: the log ends with the run's real funnel."""
    monkeypatch.setattr(supervise_module, "LOG_EVERY_SECONDS", 3600.0)
    counters = FakeCounters()
    with caplog.at_level("INFO", logger="swe_stream"):
        await supervise(session(FakeApp(), counters, stop_when=lambda c: "enough"))
    funnel = [r.getMessage() for r in caplog.records if r.getMessage().startswith("funnel:")]
    # one poll, then the final counts (the polls are the records in)
    assert funnel == [f"funnel: export in={counters.polls} out={counters.polls} rej=0 fail=0"]


@pytest.mark.unit
def test_a_funnel_line_says_something_moved() -> None:
    zero, one = {"prefilter": counts(0)}, {"prefilter": counts(1)}
    assert not funnel_moved(zero, one_line(zero), "")  # nothing came in yet
    assert funnel_moved(one, one_line(one), one_line(zero))
    assert not funnel_moved(one, one_line(one), one_line(one))  # the same line again


@pytest.mark.unit
def test_a_stalled_run_says_once_what_it_waits_for(caplog: pytest.LogCaptureFixture) -> None:
    """Pending records and counts that do not move: one WARNING naming a table recovery that
    has not ended (and where it stands), the partitions owned; none while counts move or
    nothing is pending, and again only after the run moved and stalled anew."""
    from collections import namedtuple
    from types import SimpleNamespace

    from streams.runtime.stalls import StallWatch

    tp = namedtuple("TP", "topic partition")("swe.ledger", 2)
    recovery = SimpleNamespace(
        in_recovery=True,
        active_stats=lambda: {tp: SimpleNamespace(offset=4, highwater=9)},
        active_remaining_total=lambda: 5,
    )
    app = FakeApp()
    app.started = True
    app.tables = SimpleNamespace(recovery=recovery)  # type: ignore[attr-defined]
    watch = StallWatch(seconds=0.05)
    frozen = {"validate": counts(1)}
    with caplog.at_level("WARNING", logger="swe_stream.supervise"):
        assert not watch.observe(app, frozen, pending=1)  # the first sight of these counts
        assert not watch.observe(app, frozen, pending=0)  # nothing pending: no stall
        assert not watch.observe(app, frozen, pending=1)
        time.sleep(0.06)
        assert watch.observe(app, frozen, pending=1)  # stalled
        time.sleep(0.06)
        assert not watch.observe(app, frozen, pending=1)  # said once
        assert not watch.observe(app, {"validate": counts(2)}, pending=1)  # it moved
        time.sleep(0.06)
        recovery.in_recovery = False
        assert watch.observe(app, {"validate": counts(2)}, pending=1)  # a new stall
    said = [r.getMessage() for r in caplog.records if r.name == "swe_stream.supervise"]
    assert len(said) == 2, said
    assert said[0].startswith("no progress for 0 s with 1 record(s) pending: ")
    assert "table recovery in progress, 5 changelog records to read" in said[0]
    assert "swe.ledger[2]': '4/9'" in said[0] and "1 partition(s) assigned" in said[0]
    assert "table recovery done" in said[1]


@pytest.mark.unit
def test_a_stall_names_the_stream_partitions_not_committed_and_where_they_stand() -> None:
    """The replay that hung in CI: the line shows its record fetched (position 1) and never
    processed (nothing in flight), and leaves out changelogs (no acks) and caught-up streams."""
    from collections import namedtuple
    from types import SimpleNamespace

    from streams.runtime.stalls import stall_report

    tp = namedtuple("TP", "topic partition")
    lost, done, changelog = tp("pr.classified", 2), tp("pr.classified", 0), tp("swe.ledger", 1)
    states = {
        lost: SimpleNamespace(position=1, has_valid_position=True, highwater=1, paused=False),
        done: SimpleNamespace(position=5, has_valid_position=True, highwater=5, paused=False),
        changelog: SimpleNamespace(position=9, has_valid_position=True, highwater=9, paused=False),
    }
    aiokafka = SimpleNamespace(
        _subscription=SimpleNamespace(
            subscription=SimpleNamespace(assignment=SimpleNamespace(state_value=states.get))
        )
    )
    consumer = SimpleNamespace(
        assignment=lambda: set(states),
        unacked=set(),
        _acked={},
        _committed_offset={done: 5},
        _read_offset={lost: 0, done: 4},
        _thread=SimpleNamespace(_ensure_consumer=lambda: aiokafka),
    )
    app = SimpleNamespace(
        consumer=consumer,
        tables=SimpleNamespace(recovery=SimpleNamespace(in_recovery=False)),
        topics=SimpleNamespace(acks_enabled_for=lambda topic: topic.startswith("pr.")),
        rebalancing=False,
    )
    line = stall_report(app)
    assert line == (
        "table recovery done; 3 partition(s) assigned; not committed: pr.classified[2] "
        "committed None, read 0, position 1, end 1, 0 in flight"
    )
    # a record a stream took and never acked is named, with its offset
    consumer.unacked = [SimpleNamespace(tp=lost, offset=0, acked=False)]
    assert stall_report(app).endswith("1 in flight; in flight: pr.classified[2]@0"), app
