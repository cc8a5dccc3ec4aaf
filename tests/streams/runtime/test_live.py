"""The live view, rendered from progress snapshots on a fixed-width console; and what it does to
log lines while it is drawn."""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from streams.core.progress import BuildState, Snapshot, TasksState
from streams.runtime.live import LiveView, render
from streams.runtime.topology import STAGE_ORDER

pytestmark = pytest.mark.unit

NOW = 5000.0


def text_of(snapshot: Snapshot, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    console.print(render(snapshot))
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


def funnel(stages: list[str]) -> dict[str, dict[str, int]]:
    counts = {}
    for number, stage in enumerate(stages):
        seen = 316 // (number + 1)
        counts[stage] = {
            "in": seen,
            "done": seen - 1,
            "out": seen // 2,
            "rejected": seen // 3,
            "failed": number,
            "skipped": 0,
        }
    return counts


def demo_sized() -> Snapshot:
    """The demo's run at its busiest: every stage, an hour in flight, an instance image being
    built, the harness half way."""
    return Snapshot(
        now=NOW,
        started=NOW - 75,
        funnel=funnel(list(STAGE_ORDER)),
        records_in=316,
        exported=1,
        hours_in_flight=(("2015-01-01-1", NOW - 12),),
        hours_done=1,
        builds=(
            BuildState(
                layer="instance",
                tag="swe-stream/instance:swe-stream-demo__units-1-8e507524b7af-b1-p22555-bdd8de",
                steps=4,
                started=NOW - 42,
                step=2,
                command="env -u UV_EXCLUDE_NEWER uv pip install --no-deps -e .",
                step_started=NOW - 30,
            ),
        ),
        tasks=TasksState("harness", total=4, started=NOW - 60, done=1, statuses=(("resolved", 1),)),
    )


def test_the_view_has_the_stage_rows_hours_image_step_and_elapsed_and_the_eta() -> None:
    lines = text_of(demo_sized()).splitlines()
    assert lines[0] == "swe-stream: 316 PR events in, tasks exported 1, 1 min 15 s"
    assert lines[1].split() == ["stage", "in", "out", "rej", "fail", "skip", "pend"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2 : 2 + len(STAGE_ORDER)]}
    assert list(rows) == list(STAGE_ORDER)
    assert rows["prefilter"] == ["316", "158", "105", "0", "0", "1"]
    assert "hours: 1 done; in flight: 2015-01-01-1 (12 s)" in lines
    (image,) = [line for line in lines if line.startswith("image:")]
    assert image.startswith("image: instance step 2/4 42 s swe-stream-demo__units-1-8e50")
    assert "env -u UV" in image and len(image) <= 80
    # 1 of 4 done in 60 s: 3 more at that rate
    assert "harness: 1/4 tasks done (resolved 1), ETA 3 min 00 s" in lines


def test_a_demo_sized_view_fits_an_80_by_24_screen_with_room_for_the_demo_lines() -> None:
    lines = text_of(demo_sized()).splitlines()
    # the demo prints 9 lines of its own around it (header, summary, verdicts)
    assert len(lines) <= 24 - 9, lines
    assert all(len(line) <= 80 for line in lines)


def test_many_builds_are_cut_to_a_few_lines_and_long_tags_shortened() -> None:
    build = demo_sized().builds[0]
    many = Snapshot(
        now=NOW,
        started=NOW,
        builds=(
            *(
                BuildState("env", f"swe-stream/env:{'x' * 100}-{n}", 5, NOW - n, 1)
                for n in range(6)
            ),
            build,
        ),
    )
    lines = text_of(many, width=60).splitlines()
    assert lines[0] == "swe-stream: 0 s"  # no funnel: the harness, validate
    assert sum(line.startswith("image: env step 1/5") for line in lines) == 3
    assert lines[-1] == "image: and 4 more build(s)"
    assert all(len(line) <= 60 for line in lines)


def test_before_its_first_step_a_build_is_copying_files() -> None:
    snapshot = Snapshot(
        now=NOW, started=NOW, builds=(BuildState("tools", "swe-stream/tools:bookworm-1", 3, NOW),)
    )
    assert "image: tools copying files 0 s bookworm-1" in text_of(snapshot)


def test_a_view_that_is_off_leaves_logging_alone(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="swe_stream"), LiveView(False) as view:
        logging.getLogger("swe_stream.progress").info("image built: x")
    assert not view.enabled and "image built: x" in caplog.text


def test_while_a_view_is_drawn_log_lines_are_warnings_only_and_no_per_record_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        with LiveView(True), LiveView(True):  # the inner one (a run inside the demo) adds nothing
            logging.getLogger("swe_stream.progress").info("image built: muted")
            logging.getLogger("swe_stream.stage").warning("stage enrich failed on a/b#1: muted")
            logging.getLogger("swe_stream.sandbox").warning("removed 1 container: shown")
        logging.getLogger("swe_stream.progress").info("image built: after the view")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    err = capsys.readouterr().err
    assert "muted" not in err
    assert "removed 1 container: shown" in err and "image built: after the view" in err
    assert err.count("swe-stream:") == 1  # one view, drawn once on a non-terminal at its end
    assert handler.filters == []
