"""A tiny stage used to test the stage machinery itself: it upper-cases a PR's text,
rejects empty text and raises on "boom" (or on the text in the file ``SHOUT_FAILS_ON_FILE``
names, so a test can fix the cause while the worker runs). Its own topics keep it apart from
the pipeline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from schemas import PullRequestRecord
from streams.kafka.topics import TopicSpec
from streams.pipeline.stage import Outcome, Stage


class Utterance(PullRequestRecord):
    SCHEMA_VERSION: ClassVar[int] = 1
    text: str


LOST_ACK_TEXT = "lose my ack"  # tests.fakes.lossy_shout_app drops acks of such records
LOST_FETCH_TEXT = "lose my fetch"  # tests.fakes.lost_fetch_shout_app drops the first such record

HEARD = TopicSpec("test.heard", Utterance, "what the stage reads", has_dlq=True)
SHOUTED = TopicSpec("test.shouted", Utterance, "what the stage writes")


def failing_text() -> str:
    path = os.environ.get("SHOUT_FAILS_ON_FILE")
    return Path(path).read_text().strip() if path else "boom"


async def shout(utterance: Utterance) -> Outcome:
    if utterance.text == failing_text():
        raise RuntimeError("kaboom: the stage's logic failed")
    if not utterance.text.strip():
        return Outcome.reject("empty-text")
    return Outcome.accept(utterance.model_copy(update={"text": utterance.text.upper()}))


SHOUT = Stage("shout", HEARD, SHOUTED, shout)
