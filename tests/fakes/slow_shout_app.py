"""The shout app with two records in hand at once (stage concurrency 2), one of which takes its
time: a record whose text is ``SLOW_TEXT`` is shouted only once the file ``SHOUT_RELEASE_FILE``
names exists. The records after it on its partition are acked while it is still in flight."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from streams.core.settings import load_settings
from streams.pipeline.stage import Outcome, Stage
from streams.runtime.app import create_app
from tests.fakes.shout_stage import HEARD, SHOUTED, Utterance, shout

SLOW_TEXT = "take your time"


async def shout_once_released(utterance: Utterance) -> Outcome:
    if utterance.text == SLOW_TEXT:
        release = Path(os.environ["SHOUT_RELEASE_FILE"])
        while not release.exists():
            await asyncio.sleep(0.1)
    return await shout(utterance)


SLOW_SHOUT = Stage("shout", HEARD, SHOUTED, shout_once_released, concurrency=2)
app = create_app(load_settings(), lambda settings, resources: [SLOW_SHOUT])
