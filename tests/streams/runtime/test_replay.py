"""``swe-stream replay`` on the embedded broker.

- from a time: only the start topic's records stamped in [--from-time, --until-time) are
  re-derived (the broker's time lookup is replaced by a scan of timestamps);
- end to end: pipeline version 1 mines the fixture hour through a GitHub stand-in that counts
  requests; version 2 replays from ``pr.enriched`` with a stricter classifier threshold and
  version 3 from ``pr.classified``: the stand-in sees no request, each version's records,
  ledger entries and export directory reflect its own settings, version 1's are unchanged.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiokafka import AIOKafkaProducer

from schemas import (
    ClassifiedPullRequest,
    EnrichedPullRequest,
    ExportedTask,
    ScoredTask,
)
from streams.core.settings import KafkaSettings, Settings
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.topics import ALL_TOPICS, CLASSIFIED, ENRICHED, EXPORTED, PATCHES, SCORED
from streams.offline.world import OfflineWorld, offline_world
from streams.pipeline.ledger import latest, of_version, read_ledger
from streams.pipeline.stage import Stage
from streams.runtime.replay import ReplayError, replay_stages
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import worker_env

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
DEMO_PR = "swe-stream-demo/units#1"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def swe_stream(
    env: dict[str, str], *args: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [SWE_STREAM, *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:  # what it printed says where it stopped

        def text(output: str | bytes | None) -> str:
            return output.decode(errors="replace") if isinstance(output, bytes) else output or ""

        pytest.fail(
            f"swe-stream {' '.join(args)} ran past {timeout} s\n{text(exc.stdout)[-3000:]}\n"
            f"{text(exc.stderr)[-8000:]}"
        )


def stage_line(stdout: str, stage: str) -> list[int]:
    """``in / out / rejected / failed / skipped`` of a stage in a replay's summary."""
    line = next(x for x in stdout.splitlines() if x.strip().startswith(stage + " "))
    return [int(n) for n in line.split()[1:] if n != "/"]


async def topic_values(bootstrap: str, topic: str) -> list[bytes]:
    return [record.value async for record in read_topic_to_end(bootstrap, topic)]


# which stages a replay runs -----------------------------------------------------------------


def _stage(name: str, source: Any, output: Any) -> Stage[Any]:
    async def handle(record: Any) -> Any:
        raise AssertionError("not run")

    return Stage(name, source, output, handle)


@pytest.mark.unit
def test_a_replay_runs_the_stages_downstream_of_its_topic() -> None:
    graph = [
        _stage("classify", ENRICHED, CLASSIFIED),
        _stage("extract", CLASSIFIED, PATCHES),
        _stage("score", SCORED, EXPORTED),  # fed by nothing above: not downstream
    ]
    chosen = replay_stages(graph, ENRICHED.name, [], until_ms=T0)
    assert [s.name for s in chosen] == ["classify", "extract"]
    # the start topic's readers take any version's records and stop at --until-time
    assert (chosen[0].any_version, chosen[0].until_ms) == (True, T0)
    assert (chosen[1].any_version, chosen[1].until_ms) == (False, None)
    assert [s.name for s in replay_stages(graph, ENRICHED.name, ["classify"], None)] == ["classify"]
    with pytest.raises(ReplayError, match=r"not downstream of pr\.enriched"):
        replay_stages(graph, ENRICHED.name, ["score"], None)
    with pytest.raises(ReplayError, match="none of the stages"):
        replay_stages(graph, ENRICHED.name, ["extract"], None)
    with pytest.raises(ReplayError, match=r"no stage reads tasks\.exported"):
        replay_stages(graph, EXPORTED.name, [], None)


@pytest.mark.unit
def test_each_pipeline_version_exports_to_its_own_directory(tmp_path: Path) -> None:
    out = tmp_path / "generated-swe"
    assert Settings(export={"output_dir": out}).export_dir == out
    assert Settings(pipeline_version=2, export={"output_dir": out}).export_dir == (
        tmp_path / "generated-swe-v2"
    )
    assert Settings(pipeline_version=2).worker.app_id == "swe-stream-v2"


# --from-time / --until-time ---------------------------------------------------------------


async def publish_enriched(
    bootstrap: str, prs: list[EnrichedPullRequest], stamps: list[int]
) -> None:
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        await admin.create(ALL_TOPICS)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for pr, stamp in zip(prs, stamps, strict=True):
            await producer.send_and_wait(
                ENRICHED.name, pr.to_json(), pr.key.encode(), timestamp_ms=stamp
            )
    finally:
        await producer.stop()


@pytest.mark.integration
async def test_replay_from_a_time_starts_at_the_first_record_at_or_after_it(
    bootstrap: str, broker_kind: str, enriched_235: EnrichedPullRequest, tmp_path: Path
) -> None:
    # twelve real enriched PRs (one recording, renumbered), stamped one second apart
    prs = [enriched_235.model_copy(update={"number": 1000 + i}) for i in range(12)]
    await publish_enriched(bootstrap, prs, [T0 + i * 1000 for i in range(12)])
    env = worker_env() | {
        "SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / "data"),
        "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
    }
    args = ["replay", "--bootstrap", bootstrap, "--from-topic", ENRICHED.name]
    args += ["--pipeline-version", "2", "--stages", "classify", "--no-live"]
    args += ["--from-time", iso(T0 + 3_500), "--until-time", iso(T0 + 9_000)]
    args += ["--metrics-port", "0", "-o", str(tmp_path / "out")]
    done = await asyncio.to_thread(swe_stream, env, *args)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "stopped: the replayed range is done" in done.stdout
    # Kafka's ListOffsets by time is used; the embedded broker's (not faithful) is not
    assert f"(found by {'lookup' if broker_kind == 'kafka' else 'scan'})" in done.stdout
    # PRs 1004..1011 are at or after 3.5 s; 1009..1011 at or after the 9 s end are skipped
    assert "records in range: 8 " in done.stdout
    assert stage_line(done.stdout, "classify") == [8, 5, 0, 0, 3]

    classified = [
        ClassifiedPullRequest.from_json(v) for v in await topic_values(bootstrap, CLASSIFIED.name)
    ]
    assert sorted(c.number for c in classified) == [1004, 1005, 1006, 1007, 1008]
    assert {c.pipeline_version for c in classified} == {2}
    entries = of_version(await read_ledger(bootstrap), 2)
    assert sorted((e.number, e.stage, e.status) for e in entries) == [
        (n, "classify", "accepted") for n in range(1004, 1009)
    ]
    # only the chosen stage ran: nothing was extracted
    assert await topic_values(bootstrap, PATCHES.name) == []


@pytest.mark.integration
async def test_replay_refuses_what_it_cannot_do(bootstrap: str, tmp_path: Path) -> None:
    env = worker_env() | {"SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / "data")}
    base = ["replay", "--bootstrap", bootstrap, "--no-live", "--metrics-port", "0"]
    no_version = await asyncio.to_thread(swe_stream, env, *base, "--from-topic", ENRICHED.name)
    assert no_version.returncode == 2 and "--pipeline-version N" in no_version.stderr
    wrong_topic = await asyncio.to_thread(
        swe_stream, env, *base, "--pipeline-version", "2", "--from-topic", "swe.ledger"
    )
    assert wrong_topic.returncode == 2 and "no stage reads swe.ledger" in wrong_topic.stderr
    not_downstream = await asyncio.to_thread(
        swe_stream,
        env,
        *base,
        "--pipeline-version",
        "2",
        "--from-topic",
        CLASSIFIED.name,
        "--stages",
        "classify",
    )
    assert not_downstream.returncode == 2
    assert "not downstream of pr.classified" in not_downstream.stderr
    embedded = await asyncio.to_thread(
        swe_stream,
        {**env, "SWE_STREAM_KAFKA_BOOTSTRAP": ""},
        "replay",
        "--pipeline-version",
        "2",
        "--from-topic",
        ENRICHED.name,
    )
    assert embedded.returncode == 2 and "--bootstrap HOST:PORT" in embedded.stderr


# end to end: versions 1, 2 and 3 --------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path, fixtures_dir: Path, base_image: str) -> Iterator[OfflineWorld]:
    with offline_world(
        tmp_path / "world", fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    ) as w:
        yield w


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(out)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


async def of_version_on(bootstrap: str, topic: str, model: Any, version: int) -> list[Any]:
    records = [model.from_json(v) for v in await topic_values(bootstrap, topic)]
    return [r for r in records if r.pipeline_version == version]


@pytest.mark.docker
@pytest.mark.timeout(900)  # three runs of swe-stream, each stopped at 240 s
async def test_replay_rederives_under_new_versions_without_github_calls(
    world: OfflineWorld, bootstrap: str, tmp_path: Path
) -> None:
    assert world.github is not None
    out = tmp_path / "generated-swe"
    env = {k: v for k, v in worker_env().items() if k != "OPENROUTER_API_KEY"} | {
        "SWE_STREAM_GHARCHIVE_BASE_URL": world.gharchive_url,
        "SWE_STREAM_GITHUB_API_URL": world.github_url,
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": world.git_url_template,
        "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
        "SWE_STREAM_WORKER_DATA_DIR": str(tmp_path / "data"),
        "SWE_STREAM_CLASSIFY_BACKEND": "heuristic",
        "SWE_STREAM_SCORE_BACKEND": "heuristic",
        "SWE_STREAM_VALIDATION_RUNS": "1",  # three test runs, as the pipeline tests'
    }
    common = ["--bootstrap", bootstrap, "--no-live", "--metrics-port", "0", "-o", str(out)]

    # version 1: the whole pipeline over the hour
    v1 = await asyncio.to_thread(swe_stream, env, "mine", "--once", "--from", world.hour, *common)
    assert v1.returncode == 0, v1.stdout + v1.stderr[-4000:]
    assert "tasks exported: 1" in v1.stdout
    calls_v1 = world.github.requests
    assert calls_v1 > 0  # enrich asked the stand-in (the demo PR and 404s for the rest)
    enriched = [
        EnrichedPullRequest.from_json(v) for v in await topic_values(bootstrap, ENRICHED.name)
    ]
    assert [pr.key for pr in enriched] == [DEMO_PR]
    (classified_v1,) = await of_version_on(bootstrap, CLASSIFIED.name, ClassifiedPullRequest, 1)
    files_v1 = snapshot(out)
    topics_v1 = {t: await topic_values(bootstrap, t) for t in (CLASSIFIED.name, EXPORTED.name)}
    ledger_v1 = latest(of_version(await read_ledger(bootstrap), 1))
    assert ledger_v1[DEMO_PR + "@v1"].status == "exported"

    # version 2: from pr.enriched with a threshold below the PR's score
    threshold = round(classified_v1.score / 2, 3)
    v2 = await asyncio.to_thread(
        swe_stream,
        env | {"SWE_STREAM_CLASSIFY_MAX_SCORE": str(threshold)},
        "replay",
        "--from-topic",
        ENRICHED.name,
        "--pipeline-version",
        "2",
        *common,
    )
    assert v2.returncode == 0, v2.stdout + v2.stderr[-4000:]
    assert "stopped: the replayed range is done" in v2.stdout
    assert "stages: classify, extract, validate, score, export" in v2.stdout
    assert world.github.requests == calls_v1  # zero GitHub API calls
    assert stage_line(v2.stdout, "classify") == [1, 0, 1, 0, 0]
    entries_v2 = latest(of_version(await read_ledger(bootstrap), 2))
    assert [(e.key, e.stage, e.status, e.reason) for e in entries_v2.values()] == [
        (DEMO_PR, "classify", "rejected", "score_above_max")
    ]
    assert await of_version_on(bootstrap, CLASSIFIED.name, ClassifiedPullRequest, 2) == []
    assert await of_version_on(bootstrap, EXPORTED.name, ExportedTask, 2) == []
    assert not (tmp_path / "generated-swe-v2").exists()

    # version 3: from pr.classified (classify not re-run), the task re-validated in Docker
    v3 = await asyncio.to_thread(
        swe_stream,
        env,
        "replay",
        "--from-topic",
        CLASSIFIED.name,
        "--pipeline-version",
        "3",
        *common,
    )
    assert v3.returncode == 0, v3.stdout + v3.stderr[-4000:]
    assert "stages: extract, validate, score, export" in v3.stdout
    assert world.github.requests == calls_v1
    entries_v3 = of_version(await read_ledger(bootstrap), 3)
    assert "classify" not in {e.stage for e in entries_v3}
    assert latest(entries_v3)[DEMO_PR + "@v3"].status == "exported"
    (scored_v3,) = await of_version_on(bootstrap, SCORED.name, ScoredTask, 3)
    (exported_v3,) = await of_version_on(bootstrap, EXPORTED.name, ExportedTask, 3)
    out_v3 = tmp_path / "generated-swe-v3"
    assert Path(exported_v3.export_dir).parent == out_v3
    row_v3 = json.loads((out_v3 / "dataset.jsonl").read_text())
    row_v1 = json.loads((out / "dataset.jsonl").read_text())
    assert row_v3["FAIL_TO_PASS"] == row_v1["FAIL_TO_PASS"] and row_v3["patch"] == row_v1["patch"]
    workspace = yaml.safe_load((Path(exported_v3.export_dir) / "workspace.yaml").read_text())
    assert workspace["pipeline_version"] == 3 and scored_v3.pipeline_version == 3

    # version 1's results are exactly as they were: files, records, ledger
    assert snapshot(out) == files_v1
    for topic, values in topics_v1.items():
        now = await topic_values(bootstrap, topic)
        assert [v for v in now if json.loads(v)["pipeline_version"] == 1] == values
    assert latest(of_version(await read_ledger(bootstrap), 1)) == ledger_v1
    shown = await asyncio.to_thread(
        swe_stream, env, "ledger", "show", "--bootstrap", bootstrap, DEMO_PR
    )
    assert shown.returncode == 0, shown.stderr
    versions = [
        json.loads(x)["pipeline_version"] for x in shown.stdout.splitlines() if x[:1] == "{"
    ]
    assert versions == [1, 2, 3]
