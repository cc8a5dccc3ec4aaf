"""The ledger on a real worker: a record's offset commits only once its ledger entry is in
``swe.ledger``, so a worker killed at any point loses no entry of a committed record."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from streams.kafka.offsets import committed_offsets, topic_bounds
from streams.pipeline.ledger import read_ledger
from tests.fakes.shout_stage import HEARD, Utterance
from tests.workers import start_shout_worker

pytestmark = pytest.mark.integration

RECORDS = 16  # at 0.5 s a changelog send: 8 s of sends, past Faust's first commit (2.8 s)


@pytest.mark.timeout(240)
def test_a_worker_killed_once_its_offsets_commit_has_written_every_ledger_entry(
    bootstrap: str, tmp_path: Path
) -> None:
    utterances = [
        Utterance(pipeline_version=1, repo="octo/ledger", number=n, text=f"entry {n}")
        for n in range(1, RECORDS + 1)
    ]
    log = tmp_path / "worker.log"
    process, group, _ = start_shout_worker(
        "tests.fakes.slow_buffer_shout_app", bootstrap, utterances, {}, log
    )
    try:
        ends = {p: end for p, (_, end) in asyncio.run(topic_bounds(bootstrap, HEARD.name)).items()}
        deadline = time.monotonic() + 180
        while (committed := asyncio.run(committed_offsets(bootstrap, group, HEARD.name))) != ends:
            assert process.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, (committed, ends, log.read_text()[-4000:])
            time.sleep(0.2)
    finally:
        process.kill()  # SIGKILL: nothing Faust still holds is sent
        process.wait(timeout=30)
    written = {e.key for e in asyncio.run(read_ledger(bootstrap)) if e.repo == "octo/ledger"}
    missing = sorted({u.key for u in utterances} - written)
    assert not missing, f"{len(missing)} of {RECORDS} entries lost: {missing}"
