"""A tiny stage used to test the stage machinery itself: it upper-cases a PR's text,
rejects empty text and raises on "boom". Its own topics keep it apart from the pipeline."""

from __future__ import annotations

from typing import ClassVar

from schemas import PullRequestRecord
from streams.stage import Outcome, Stage
from streams.topics import TopicSpec


class Utterance(PullRequestRecord):
    SCHEMA_VERSION: ClassVar[int] = 1
    text: str


HEARD = TopicSpec("test.heard", Utterance, "what the stage reads", has_dlq=True)
SHOUTED = TopicSpec("test.shouted", Utterance, "what the stage writes")


async def shout(utterance: Utterance) -> Outcome:
    if utterance.text == "boom":
        raise RuntimeError("kaboom: the stage's logic failed")
    if not utterance.text.strip():
        return Outcome.reject("empty-text")
    return Outcome.accept(utterance.model_copy(update={"text": utterance.text.upper()}))


SHOUT = Stage("shout", HEARD, SHOUTED, shout)
