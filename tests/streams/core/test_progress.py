"""The progress registry: what it holds, and the plain lines it logs without a terminal."""

from __future__ import annotations

import logging

import pytest

from streams.core import progress as progress_module
from streams.core.progress import Progress, TasksState, format_seconds

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    return clock


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "swe_stream.progress"]


def test_a_build_logs_its_end_and_a_step_line_at_most_every_ten_seconds(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """One INFO line a build (its end), and step lines while a long one runs; its start is a
    DEBUG line."""
    registry = Progress()
    with caplog.at_level(logging.DEBUG, logger="swe_stream.progress"):
        build = registry.build_started("env", "swe-stream/env:acme__lib-0123", 3)
        registry.build_step(build, 1, "apt-get install -y libxml2-dev")
        clock.now += 4
        registry.build_output(build, "Unpacking libxml2-dev ...")  # 4 s in: no line yet
        (state,) = registry.snapshot().builds
        assert (state.layer, state.step, state.steps, state.output) == (
            "env",
            1,
            3,
            "Unpacking libxml2-dev ...",
        )
        clock.now += 7
        registry.build_step(build, 2, "uv pip install -r requirements.txt")  # 11 s: a line
        clock.now += 5
        registry.build_output(build, "Resolved 40 packages")  # 5 s after the last line: none
        clock.now += 50
        registry.build_output(build, "Installed 40 packages")
        registry.build_finished(build)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == ["image build started: env swe-stream/env:acme__lib-0123 (3 steps)"]
    assert [line for line in lines(caplog) if line not in debug] == [
        "image build: env swe-stream/env:acme__lib-0123 step 2/3 at 11 s: "
        "uv pip install -r requirements.txt",
        "image build: env swe-stream/env:acme__lib-0123 step 2/3 at 1 min 06 s: "
        "Installed 40 packages",
        "image built: env swe-stream/env:acme__lib-0123 in 66.0 s",
    ]
    assert registry.snapshot().builds == ()


def test_a_failed_build_says_at_which_step(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    registry = Progress()
    with caplog.at_level(logging.INFO, logger="swe_stream.progress"):
        build = registry.build_started("instance", "swe-stream/instance:t-1", 4)
        registry.build_step(build, 2, "pip install -e .")
        clock.now += 3
        registry.build_finished(build, ok=False)
    assert lines(caplog)[-1] == (
        "image build failed: instance swe-stream/instance:t-1 at step 2/4 after 3.0 s"
    )


def test_tasks_done_give_a_line_with_the_eta_from_the_rate_so_far(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    registry = Progress()
    with caplog.at_level(logging.INFO, logger="swe_stream.progress"):
        registry.tasks_planned(3)
        clock.now += 40
        registry.task_done("resolved", "acme-lib-1")
        registry.tasks_planned(1)  # a second run of the harness in the same process adds up
        clock.now += 40
        registry.task_done("unresolved", "acme-lib-2")
        clock.now += 40
        registry.task_done("resolved")
        registry.task_done("resolved")
    assert lines(caplog) == [
        "harness: 1/3 tasks done (resolved 1), ETA 1 min 20 s: acme-lib-1 resolved",
        "harness: 2/4 tasks done (resolved 1, unresolved 1), ETA 1 min 20 s: acme-lib-2 unresolved",
        "harness: 3/4 tasks done (resolved 2, unresolved 1), ETA 40 s",
        "harness: 4/4 tasks done (resolved 3, unresolved 1)",
    ]


def test_hours_in_flight_and_done() -> None:
    registry = Progress()
    registry.hour_started("2015-01-01-0")
    registry.hour_started("2015-01-01-1")
    registry.hour_finished("2015-01-01-0")
    snapshot = registry.snapshot()
    assert [hour for hour, _ in snapshot.hours_in_flight] == ["2015-01-01-1"]
    assert snapshot.hours_done == 1


def test_eta_and_durations() -> None:
    tasks = TasksState("harness", total=10, started=0.0, done=0)
    assert tasks.eta_seconds(30.0) is None  # no rate yet
    assert TasksState("harness", 10, 0.0, done=4).eta_seconds(40.0) == 60.0
    assert [format_seconds(s) for s in (0.4, 59.6, 61, 3599, 3720)] == [
        "0 s",
        "1 min 00 s",
        "1 min 01 s",
        "59 min 59 s",
        "1 h 02 min",
    ]
