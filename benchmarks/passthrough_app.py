"""A Faust app with one pass-through agent (topic -> topic, bytes unchanged), built with the
project's app factory: the streaming skeleton with no stage logic, for benchmarks/stream.py."""

from __future__ import annotations

import os
from typing import Any

from streams.core.settings import load_settings
from streams.runtime.app import create_app

SOURCE = os.environ.get("BENCH_SOURCE_TOPIC", "bench.in")
TARGET = os.environ.get("BENCH_TARGET_TOPIC", "bench.out.faust")

app = create_app(load_settings(), stages=lambda settings, resources: [])
source = app.topic(SOURCE, key_serializer="raw", value_serializer="raw")
target = app.topic(TARGET, key_serializer="raw", value_serializer="raw")


@app.agent(source, name="passthrough")
async def passthrough(stream: Any) -> None:
    async for event in stream.events():
        await target.send(key=event.key, value=event.value)
