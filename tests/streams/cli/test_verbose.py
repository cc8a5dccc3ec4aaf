"""``--verbose`` brings back the per-PR lines a screening stage logs at DEBUG (its rejections),
in the command's own process and in a worker it configures through the environment; without
it they stay out of the log (the funnel counts them, the ledger keeps them)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator

import pytest

from streams.cli.main import build_parser
from streams.cli.options import settings_from_args
from streams.cli.worker import _export_for_app
from streams.core.settings import load_settings
from streams.kafka.client import KafkaProfile
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import StageRunner
from tests.fakes.shout_stage import SHOUT, Utterance

pytestmark = pytest.mark.unit

SCREENING = dataclasses.replace(SHOUT, screening=True)  # as prefilter, enrich, classify, extract


@pytest.fixture(autouse=True)
def own_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No SWE_STREAM_ setting from outside; what a command exports is undone after."""
    for name in [n for n in os.environ if n.startswith("SWE_STREAM_")]:
        monkeypatch.delenv(name)
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


async def rejection_lines(level: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    """The lines a screening stage's rejection leaves in a log configured at ``level``."""
    runner = StageRunner(SCREENING, MemorySink(), pipeline_version=1)
    raw = Utterance(pipeline_version=1, repo="octo/hello", number=8, text=" ").to_json()
    with caplog.at_level(level.upper()):  # the root logger's level, as configure_logging sets
        await runner.process(b"octo/hello#8", raw, 0, 0)
    return [r.getMessage() for r in caplog.records if r.name == "swe_stream.stage"]


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["demo"], False),
        (["--verbose", "demo"], True),
        (["demo", "--verbose"], True),
        (["mine", "--once", "--verbose"], True),
        (["mine", "--once", "--log-level", "info"], False),
    ],
)
async def test_verbose_shows_a_screening_stage_s_rejections(
    argv: list[str], shown: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_from_args(build_parser().parse_args(argv))
    lines = await rejection_lines(settings.worker.log_level, caplog)
    assert lines == (["shout: octo/hello#8 rejected: empty-text"] if shown else [])


@pytest.mark.parametrize("argv, shown", [(["worker"], False), (["worker", "--verbose"], True)])
async def test_a_worker_gets_the_level_through_its_environment(
    argv: list[str], shown: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """``swe-stream worker`` hands its settings to the Faust app module through the
    environment, and starts Faust's worker at the level read back from there."""
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args)
    _export_for_app(args, settings, KafkaProfile("127.0.0.1:9092", True, False, None, None))
    effective = load_settings(None)  # what cmd_worker gives faust.Worker(loglevel=...)
    lines = await rejection_lines(effective.worker.log_level, caplog)
    assert bool(lines) is shown, lines
    assert logging.getLevelName(effective.worker.log_level.upper()) == (
        logging.DEBUG if shown else logging.INFO
    )
