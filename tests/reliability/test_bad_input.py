"""The bad input corpus (``tests/data/bad_input/``, indexed by its ``cases.yaml``) through the
real entry points, and property-based tests of the record parsers.

Every case must get a clear error (its type, and a message naming the problem) or a counted
rejection (metric, hour ledger status, dead letter), must not crash its worker, and anything
that writes must write inside its output directory only.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agents import ingest
from agents.export import TaskExporter
from agents.harness import harness_stages
from agents.ingest import HourSelection, Ingestor, plan_sources
from agents.ingest_scan import HourScanner, ScanOutput, ScanProblem
from schemas import (
    ALL_RECORD_MODELS,
    DeadLetter,
    HarnessResult,
    HourLedgerEntry,
    IngestDeadLetter,
    RawPullRequestEvent,
    Record,
    parse_gharchive_hour,
    parse_pr_key,
    pr_key,
)
from schemas.base import REPO_NAME_RE, validate_repo_name
from schemas.harness import TaskEvaluation
from schemas.workspace import TaskWorkspace
from streams.clients.gharchive import GHArchiveClient, resolve_sources
from streams.core import metrics
from streams.core.settings import (
    ConfigFileError,
    GHArchiveSettings,
    HarnessSettings,
    load_settings,
    read_yaml_config,
)
from streams.evaluation.harness import HarnessEngine, HarnessOptions, write_task_outputs
from streams.evaluation.sandbox import Limits
from streams.evaluation.taskdir import (
    dataset_to_task_dirs,
    load_workspace,
    read_dataset,
    task_dir_path,
    task_dirs_to_dataset,
    write_task_dir,
)
from streams.evaluation.validator import Validator
from streams.kafka.topics import (
    GHARCHIVE_DLQ,
    GHARCHIVE_HOURS,
    HARNESS_RESULTS,
    PRIMARY_TOPICS,
    PULL_REQUEST_EVENTS,
    TopicSpec,
    topic,
)
from streams.pipeline.ledger import PrFileError, read_pr_file
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Outcome, Stage, StageRunner

# fixtures: the realistic example record of every topic model, built from the shared real data
from tests.schemas.conftest import examples, gharchive_pr_events, swebench_rows

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_input"
INDEX: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (CORPUS / "cases.yaml").read_text(encoding="utf-8")
)
CONTROLS = {case["id"]: case for case in INDEX["controls"]}
PIPELINE_VERSION = 3  # the example records' version
HOUR = "2015-01-01-0"
CHUNK = 64  # GH Archive bytes per read: lines and gzip members straddle reads
ERRORS: dict[str, type[Exception] | tuple[type[Exception], ...]] = {
    "ValueError": ValueError,
    "OSError": OSError,
    "ValidationError": ValidationError,
    "ConfigFileError": ConfigFileError,
    "PrFileError": PrFileError,
    "OSError|ValueError": (OSError, ValueError),
}
CONSUMED = [spec for spec in PRIMARY_TOPICS if spec.has_dlq]  # the topics a stage reads
# pytest finds fixtures among a module's globals: imported, they are this module's too
SHARED_FIXTURES = (examples, gharchive_pr_events, swebench_rows)


def cases(section: str, **only: Any) -> pytest.MarkDecorator:
    chosen = [c for c in INDEX[section] if all(c.get(k) == v for k, v in only.items())]
    assert chosen, f"no {section} cases with {only}"
    return pytest.mark.parametrize("case", chosen, ids=[c["id"] for c in chosen])


def counter(metric: Any, **labels: str) -> float:
    return float(metric.labels(**labels)._value.get())


def matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.S) is not None


def corpus_bytes(case: dict[str, Any], tmp_path: Path | None = None) -> bytes:
    """A case file's bytes as the entry point gets them: unzipped if stored gzipped, and
    ``{tmp}`` made the test's directory, so an absolute path attacks a place it can see."""
    data = (CORPUS / case["file"]).read_bytes()
    if case.get("gzipped"):
        data = gzip.decompress(data)
    if tmp_path is not None:
        data = data.replace(b"{tmp}", str(tmp_path).encode())
    return data


def materialise(case: dict[str, Any], where: Path, tmp_path: Path) -> Path:
    """The case file copied under ``where`` (keeping its parent directory's name)."""
    source = Path(case["file"])
    name = source.name.removesuffix(".gz") if case.get("gzipped") else source.name
    path = where / source.parent.name / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(corpus_bytes(case, tmp_path))
    return path


def tree(root: Path) -> dict[str, Any]:
    """Every path under ``root`` (links not followed) with its bytes, link target or 'dir'."""
    found: dict[str, Any] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            if path.is_symlink():
                found[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                found[str(path)] = "dir"
            else:
                found[str(path)] = path.read_bytes()
    return found


def changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def assert_changes_only_under(
    before: dict[str, Any], after: dict[str, Any], *allowed: Path
) -> None:
    outside = [
        p for p in changed(before, after) if not any(Path(p).is_relative_to(a) for a in allowed)
    ]
    assert outside == [], f"written outside {[str(a) for a in allowed]}: {sorted(outside)}"


# -- the corpus itself -------------------------------------------------------------------------


def load_make_corpus() -> Any:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being made
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_corpus_is_what_make_corpus_writes() -> None:
    make = load_make_corpus()
    files, index, _ = make.build()
    deflated = {c["file"] for entries in index.values() for c in entries if c.get("gzipped")}
    for relative, data in files.items():
        committed = (CORPUS / relative).read_bytes()
        if relative in deflated:  # compressed by zlib, whose bytes differ between versions
            committed, data = gzip.decompress(committed), gzip.decompress(data)
        assert committed == data, f"{relative} differs from make_corpus.py's"
    on_disk = {
        str(p.relative_to(CORPUS))
        for p in CORPUS.rglob("*")
        if p.is_file() and p.parent != CORPUS and "__pycache__" not in p.parts
    }
    assert on_disk == set(files), "files in the corpus that no case uses, or missing"
    assert (CORPUS / "cases.yaml").read_text(encoding="utf-8") == make.render_index(index)
    assert (CORPUS / "README.md").read_text(encoding="utf-8") == make.render_readme(index)


def test_the_corpus_has_at_least_50_cases_in_every_section() -> None:
    sizes = {section: len(entries) for section, entries in INDEX.items() if section != "controls"}
    assert sum(sizes.values()) >= 50
    assert all(sizes.values()), sizes


# -- GH Archive hours: Ingestor.ingest_hour (HourScanner) -------------------------------------


class RecordedBatch:
    """What ``BatchPublisher`` needs of an aiokafka batch: records appended until it is full."""

    def __init__(self, capacity: int | None = None) -> None:
        self.records: list[tuple[bytes, bytes]] = []
        self.capacity = capacity

    def append(self, *, timestamp: int | None, key: bytes, value: bytes) -> int | None:
        if self.capacity is not None and len(self.records) >= self.capacity:
            return None
        self.records.append((key, value))
        return len(self.records)


class RecordingProducer:
    """What ``Ingestor`` needs of an aiokafka producer: sends (one record, or a batch of them)
    are recorded and acknowledged."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []

    @staticmethod
    def _acknowledged() -> Any:
        import asyncio

        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def send(self, topic_name: str, value: bytes, key: bytes) -> Any:
        self.sent.append((topic_name, key, value))
        return self._acknowledged()

    async def partitions_for(self, topic_name: str) -> set[int]:
        return {0}

    def create_batch(self) -> RecordedBatch:
        return RecordedBatch()

    async def send_batch(self, batch: RecordedBatch, topic_name: str, *, partition: int) -> Any:
        self.sent.extend((topic_name, key, value) for key, value in batch.records)
        return self._acknowledged()

    async def send_and_wait(self, topic_name: str, value: bytes, key: bytes) -> None:
        self.sent.append((topic_name, key, value))

    def on(self, topic_name: str) -> list[tuple[bytes, bytes]]:
        return [(k, v) for t, k, v in self.sent if t == topic_name]


class UnacknowledgingProducer(RecordingProducer):
    """Takes batches of 40 records and fails every other one, as batches a broker never
    acknowledged fail (the failure aiokafka gives each record of the batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: list[tuple[bytes, bytes]] = []

    def create_batch(self) -> RecordedBatch:
        return RecordedBatch(capacity=40)

    async def send_batch(self, batch: RecordedBatch, topic_name: str, *, partition: int) -> Any:
        import asyncio

        from aiokafka.errors import KafkaTimeoutError

        if len(self.lost) < len(self.on(topic_name)):
            self.lost += batch.records
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            failed.set_exception(KafkaTimeoutError("batch expired"))
            return failed
        return await super().send_batch(batch, topic_name, partition=partition)


async def ingest_file(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    max_line_bytes: int | None = None,
    producer: RecordingProducer | None = None,
    chunk: int = CHUNK,
) -> tuple[ingest.HourReport, RecordingProducer]:
    if max_line_bytes is not None:  # the production limit (64 MiB) would need a huge file
        scanner = functools.partial(HourScanner, max_line_bytes=max_line_bytes)
        monkeypatch.setattr(ingest, "HourScanner", scanner)
    producer = producer or RecordingProducer()
    async with GHArchiveClient("http://127.0.0.1:9", chunk_size=chunk) as client:
        (source,) = resolve_sources([str(path)], client.base_url)
        ingestor = Ingestor(
            producer=producer,
            client=client,
            settings=GHArchiveSettings(),
            pipeline_version=PIPELINE_VERSION,
            ledger={},
        )
        report = await ingestor.ingest_hour(source)
    return report, producer


@cases("gharchive", entry=None)
async def test_a_bad_hour_is_counted_and_never_stops_ingest(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    expect = case["expect"]
    problems: dict[str, int] = expect["problems"]
    before = {reason: counter(metrics.INGEST_ERRORS, reason=reason) for reason in problems}
    hours_before = counter(metrics.INGEST_HOURS, status=expect["status"])
    report, producer = await ingest_file(
        CORPUS / case["file"], monkeypatch, case.get("max_line_bytes")
    )
    assert (report.hour, report.status) == (HOUR, expect["status"])
    assert (report.published, report.problems) == (expect["published"], problems)
    # the good records around the bad input are all published, each valid and rightly keyed
    events = producer.on(PULL_REQUEST_EVENTS.name)
    assert len(events) == expect["published"]
    for key, value in events:
        record = RawPullRequestEvent.from_json(value)
        assert key == pr_key(record.repo, record.number).encode()
    # every problem counted, a dead letter for each (well under the per-hour sample cap)
    for reason, count in problems.items():
        assert counter(metrics.INGEST_ERRORS, reason=reason) == before[reason] + count
    letters = [IngestDeadLetter.from_json(v) for _, v in producer.on(GHARCHIVE_DLQ.name)]
    assert sorted(letter.reason for letter in letters) == sorted(
        reason for reason, count in problems.items() for _ in range(count)
    )
    assert all(letter.line_number == expect["line"] for letter in letters)
    if "error_match" in expect:
        assert any(matches(expect["error_match"], letter.error) for letter in letters)
    # the hour ledger says how the hour ended, and why when it is not done
    [(key, value)] = producer.on(GHARCHIVE_HOURS.name)
    entry = HourLedgerEntry.from_json(value)
    assert (key, entry.status, entry.pull_request_events) == (
        HOUR.encode(),
        expect["status"],
        expect["published"],
    )
    assert (entry.error is None) == (expect["status"] == "done")
    assert counter(metrics.INGEST_HOURS, status=expect["status"]) == hours_before + 1


async def test_a_clean_hour_of_the_same_shape_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    case = CONTROLS["clean-hour"]
    report, producer = await ingest_file(CORPUS / case["file"], monkeypatch)
    expect = case["expect"]
    assert (report.status, report.published, report.problems) == (
        expect["status"],
        expect["published"],
        expect["problems"],
    )
    assert producer.on(GHARCHIVE_DLQ.name) == []


async def test_unacknowledged_batches_leave_the_hour_partial_and_are_counted(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed_before = counter(metrics.INGEST_ERRORS, reason="publish-failed")
    producer = UnacknowledgingProducer()
    hour = fixtures_dir / "gharchive" / f"{HOUR}.json.gz"
    report, _ = await ingest_file(hour, monkeypatch, None, producer, chunk=1 << 16)
    acknowledged = producer.on(PULL_REQUEST_EVENTS.name)
    assert 0 < len(producer.lost) < 315
    assert len(acknowledged) + len(producer.lost) == 315  # every record once, one or the other
    assert (report.status, report.published) == ("partial", len(acknowledged))
    assert f"{len(producer.lost)} records not published" in (report.error or "")
    assert "KafkaTimeoutError" in (report.error or "")
    failed = counter(metrics.INGEST_ERRORS, reason="publish-failed")
    assert failed == failed_before + len(producer.lost)
    [(_, value)] = producer.on(GHARCHIVE_HOURS.name)
    entry = HourLedgerEntry.from_json(value)
    assert (entry.status, entry.pull_request_events) == ("partial", len(acknowledged))


@cases("gharchive", entry="plan_sources")
async def test_a_source_without_an_hour_is_refused_before_anything_is_read(
    case: dict[str, Any], tmp_path: Path
) -> None:
    good = tmp_path / f"{HOUR}.json.gz"
    good.write_bytes((CORPUS / CONTROLS["clean-hour"]["file"]).read_bytes())
    bad = materialise(case, tmp_path, tmp_path)
    selection = HourSelection(sources=(str(good), str(bad)))
    async with GHArchiveClient("http://127.0.0.1:9") as client:
        with pytest.raises(ERRORS[case["expect"]["raises"]]) as info:
            await plan_sources(selection, client, client.base_url)
    assert matches(case["expect"]["match"], str(info.value)) and bad.name in str(info.value)


# -- topic values: StageRunner with each topic's value model -----------------------------------


async def unreachable(record: Record) -> Outcome:
    raise AssertionError(f"a bad record was decoded: {record!r}")


def probe_runner(spec: TopicSpec, handle: Any = unreachable) -> tuple[StageRunner[Any], MemorySink]:
    sink = MemorySink()
    stage: Stage[Any] = Stage("bad-input-probe", spec, None, handle, skip_final=False)
    return StageRunner(stage, sink, PIPELINE_VERSION), sink


async def assert_dead_lettered(spec: TopicSpec, value: bytes) -> DeadLetter:
    """``value`` fails ``spec``'s schema: it goes to the topic's DLQ byte for byte, counted,
    and nothing else is sent (no output, no ledger entry)."""
    runner, sink = probe_runner(spec)
    failed = counter(metrics.STAGE_RECORDS_FAILED, stage="bad-input-probe", error="schema")
    dead = counter(metrics.DLQ_RECORDS, topic=spec.name)
    assert await runner.process(b"octo/hello#1", value, 3, 99) is None
    [(sent_to, key, letter_bytes)] = sink.sent
    letter = DeadLetter.from_json(letter_bytes)
    assert (sent_to, key, letter.key) == (spec.dlq_name, b"octo/hello#1", "octo/hello#1")
    assert letter.original_value() == value
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        spec.name,
        3,
        99,
    )
    assert letter.error_type == "ValidationError"
    failed_after = counter(metrics.STAGE_RECORDS_FAILED, stage="bad-input-probe", error="schema")
    assert failed_after == failed + 1
    assert counter(metrics.DLQ_RECORDS, topic=spec.name) == dead + 1
    return letter


@cases("records_raw")
@pytest.mark.parametrize("spec", CONSUMED, ids=[spec.name for spec in CONSUMED])
async def test_a_bad_value_goes_to_the_dlq_of_every_topic(
    case: dict[str, Any], spec: TopicSpec
) -> None:
    letter = await assert_dead_lettered(spec, corpus_bytes(case))
    assert matches(case["expect"]["match"], letter.error), letter.error[:500]


def with_field(
    examples: dict[type[Record], Record], case: dict[str, Any]
) -> tuple[TopicSpec, bytes]:
    change = json.loads(corpus_bytes(case))
    spec = topic(change["topic"])
    wire = json.loads(examples[spec.value_model].to_json())
    wire.update(change["set"])
    return spec, json.dumps(wire).encode()


@cases("records_fields")
async def test_a_hostile_field_goes_to_the_dlq_naming_the_field(
    case: dict[str, Any], examples: dict[type[Record], Record]
) -> None:
    spec, value = with_field(examples, case)
    letter = await assert_dead_lettered(spec, value)
    field = case["expect"]["field"]
    assert re.search(rf"^{re.escape(field)}\b", letter.error, re.M), letter.error[:500]


@pytest.mark.parametrize("spec", CONSUMED, ids=[spec.name for spec in CONSUMED])
async def test_the_unchanged_example_of_every_topic_is_decoded(
    spec: TopicSpec, examples: dict[type[Record], Record]
) -> None:
    seen: list[Record] = []

    async def keep(record: Record) -> Outcome:
        seen.append(record)
        return Outcome()

    runner, sink = probe_runner(spec, keep)
    assert await runner.process(b"k", examples[spec.value_model].to_json(), 0, 0) == Outcome()
    assert seen == [examples[spec.value_model]] and sink.sent == []


# -- tasks: export and the harness ------------------------------------------------------------


class NoDocker:
    """The harness's validator in unit tests: any use of Docker is a test failure."""

    def environment(self, *args: Any) -> Any:
        raise AssertionError("the harness reached for Docker on a task it could not read")

    def engine_answers(self) -> bool:
        # asked after an evaluation that did not resolve (is it an outage?); builds nothing
        return True


def no_docker() -> Validator:
    return cast(Validator, NoDocker())


def control_workspace() -> TaskWorkspace:
    return load_workspace(CORPUS / CONTROLS["workspace"]["file"])


def hostile_evaluation(task_id: str) -> TaskEvaluation:
    return TaskEvaluation(
        task_id=task_id,
        repo="",
        status="setup_error",
        sanity_check=False,
        agent_duration_secs=0,
        total_duration_secs=0,
    )


@cases("tasks_dataset")
def test_a_hostile_dataset_row_is_refused_naming_it(case: dict[str, Any], tmp_path: Path) -> None:
    dataset = materialise(case, tmp_path / "in", tmp_path)
    out = tmp_path / "work" / "tasks"
    out.parent.mkdir()
    before = tree(tmp_path)
    with pytest.raises(ValueError) as info:
        dataset_to_task_dirs(read_dataset(dataset), out)
    assert matches(case["expect"]["match"], str(info.value)), str(info.value)[:500]
    assert_changes_only_under(before, tree(tmp_path), out)
    written = {p.name for p in out.iterdir()} if out.exists() else set()
    assert written <= {"octo-hello-1"}  # at most the good first row's directory


def test_the_control_dataset_row_is_exported(tmp_path: Path) -> None:
    rows = read_dataset(CORPUS / CONTROLS["dataset"]["file"])
    written = dataset_to_task_dirs(rows, tmp_path / "tasks")
    assert len(written) == CONTROLS["dataset"]["expect"]["task_dirs"]


@cases("tasks_workspace")
def test_a_hostile_workspace_is_refused_by_export_and_the_harness(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a tag that ran a command would leave its marker here
    tasks = tmp_path / "in"
    workspace = materialise(case, tasks, tmp_path)
    harness_out, dataset = tmp_path / "work" / "harness", tmp_path / "work" / "dataset.jsonl"
    harness_out.parent.mkdir()
    before = tree(tmp_path)
    for read in (lambda: load_workspace(workspace), lambda: task_dirs_to_dataset(tasks, dataset)):
        with pytest.raises(ValueError) as info:
            read()
        assert matches(case["expect"]["match"], str(info.value)), str(info.value)[:500]
    assert not dataset.exists()
    options = HarnessOptions(output_dir=harness_out)
    result = HarnessEngine(no_docker(), options, Limits()).evaluate(workspace.parent)
    assert result.status == "setup_error" and "unreadable task" in (result.error or "")
    assert (harness_out / workspace.parent.name / "evaluation.json").is_file()
    assert_changes_only_under(before, tree(tmp_path), harness_out)
    if "marker" in case:
        assert not (tmp_path / case["marker"]).exists()


def test_the_control_workspace_is_read() -> None:
    assert control_workspace().id == CONTROLS["workspace"]["expect"]["id"]


@cases("tasks_ids")
def test_a_hostile_task_id_stays_inside_export_and_harness_directories(
    case: dict[str, Any], tmp_path: Path
) -> None:
    value = case["value"].replace("{tmp}", str(tmp_path))
    expect = case["expect"]
    out, harness_out = tmp_path / "work" / "tasks", tmp_path / "work" / "harness"
    out.mkdir(parents=True)
    harness_out.mkdir()
    ws = control_workspace()
    before = tree(tmp_path)
    with pytest.raises(ERRORS[expect["workspace"]]):
        TaskWorkspace.model_validate({**ws.model_dump(), "id": value})
    hostile = ws.model_copy(update={"id": value})  # as if validation had let it through
    if expect["export"] == "inside":
        assert write_task_dir(out, hostile).parent == out.resolve()
    else:
        with pytest.raises(ERRORS[expect["export"]]):
            write_task_dir(out, hostile)
    if expect["export"] == "ValueError":
        with pytest.raises(ValueError, match=r"would not be inside|null byte"):
            task_dir_path(out, value)
    if expect["harness"] == "inside":
        directory = write_task_outputs(harness_out, hostile_evaluation(value), None, None, "")
        assert directory.parent == harness_out and (directory / "evaluation.json").is_file()
    else:
        with pytest.raises(ERRORS[expect["harness"]]):
            write_task_outputs(harness_out, hostile_evaluation(value), None, None, "")
    assert_changes_only_under(before, tree(tmp_path), out, harness_out)


@cases("tasks_requests")
async def test_a_harness_request_writes_only_under_its_output_directory(
    case: dict[str, Any], tmp_path: Path
) -> None:
    harness_out, tasks = tmp_path / "work" / "harness", tmp_path / "work" / "tasks"
    tasks.mkdir(parents=True)
    harness_out.mkdir()
    settings = HarnessSettings(output_dir=harness_out)
    (stage,) = harness_stages(settings, tasks, no_docker(), Limits(), PIPELINE_VERSION)
    sink = MemorySink()
    runner = StageRunner(stage, sink, PIPELINE_VERSION)
    value = corpus_bytes(case, tmp_path)
    before = tree(tmp_path)
    outcome = await runner.process(b"octo__gone-1", value, 0, 7)
    expect = case["expect"]
    if "dlq" in expect:
        assert outcome is None
        [(sent_to, _, letter_bytes)] = sink.sent
        letter = DeadLetter.from_json(letter_bytes)
        assert sent_to == stage.source.dlq_name and letter.original_value() == value
        assert letter.error_type == expect["dlq"]
        assert re.search(rf"^{re.escape(expect['field'])}\b", letter.error, re.M)
        assert changed(before, tree(tmp_path)) == set()
        return
    assert outcome is not None
    [(sent_to, _, result_bytes)] = sink.sent
    result = HarnessResult.from_json(result_bytes)
    assert sent_to == HARNESS_RESULTS.name and result.status == expect["status"]
    assert matches(expect["match"], result.error or "")
    request_id = json.loads(value)["request_id"]
    assert_changes_only_under(before, tree(tmp_path), harness_out / request_id)


@cases("tasks_planted")
def test_links_planted_in_the_export_directory_are_not_followed_out(
    case: dict[str, Any], tmp_path: Path
) -> None:
    out, outside = tmp_path / "work" / "tasks", tmp_path / "outside"
    out.mkdir(parents=True)
    outside.mkdir()
    target = {"empty-file": outside / "victim", "missing": outside / "new", "directory": outside}
    if case["target"] == "empty-file":
        target["empty-file"].write_bytes(b"")
    (out / case["link"]).symlink_to(target[case["target"]])
    before = tree(outside)
    with pytest.raises(ERRORS[case["expect"]["raises"]]) as info:
        TaskExporter(out, PIPELINE_VERSION).export(control_workspace())
    assert matches(case["expect"]["match"], str(info.value)), str(info.value)
    assert tree(outside) == before and not target["missing"].exists()


# -- pr-files, settings files, keys ------------------------------------------------------------


@cases("pr_files")
def test_a_bad_pr_file_line_is_an_error_naming_the_line(
    case: dict[str, Any], tmp_path: Path
) -> None:
    path = materialise(case, tmp_path, tmp_path)
    with pytest.raises(PrFileError) as info:
        read_pr_file(path, PIPELINE_VERSION)
    assert str(info.value).startswith(f"{path}:2: ")
    assert matches(case["expect"]["match"], str(info.value)), str(info.value)[:500]


def test_the_control_pr_file_is_read() -> None:
    entries = read_pr_file(CORPUS / CONTROLS["pr-file"]["file"], PIPELINE_VERSION)
    assert len(entries) == CONTROLS["pr-file"]["expect"]["entries"]


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SWE_STREAM_") or name in {"GITHUB_TOKEN", "OPENROUTER_API_KEY"}:
            monkeypatch.delenv(name)


@cases("config")
def test_a_hostile_settings_file_is_a_clear_error_and_runs_nothing(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_environment: None
) -> None:
    monkeypatch.chdir(tmp_path)  # a tag that ran a command would leave its marker here
    path = materialise(case, tmp_path, tmp_path)
    started = time.monotonic()
    with pytest.raises(ERRORS[case["expect"]["raises"]]) as info:
        load_settings(path)
    message = str(info.value)  # an alias bomb's repr alone took minutes before it was refused
    assert time.monotonic() - started < 10
    assert matches(case["expect"]["match"], message), message[:500]
    if "marker" in case:
        assert not (tmp_path / case["marker"]).exists()


def test_the_control_settings_file_is_read(clean_environment: None) -> None:
    settings_ = load_settings(CORPUS / CONTROLS["config"]["file"])
    assert settings_.kafka.partitions == CONTROLS["config"]["expect"]["partitions"]


KEY_FUNCTIONS = {
    "parse_pr_key": parse_pr_key,
    "pr_key": pr_key,
    "validate_repo_name": validate_repo_name,
    "parse_gharchive_hour": parse_gharchive_hour,
}


@cases("keys")
def test_a_hostile_key_is_a_value_error_naming_it(case: dict[str, Any]) -> None:
    with pytest.raises(ERRORS[case["expect"]["raises"]]) as info:
        KEY_FUNCTIONS[case["call"]](*case["args"])
    assert matches(case["expect"]["match"], str(info.value)), str(info.value)


# -- properties of the record parsers ------------------------------------------------------------

MODELS = pytest.mark.parametrize(
    "model", ALL_RECORD_MODELS, ids=[m.__name__ for m in ALL_RECORD_MODELS]
)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PER_MODEL = settings(PROPERTIES, max_examples=60)  # times 14 models


@MODELS
@PER_MODEL
@given(data=st.binary(max_size=400))
def test_any_bytes_are_a_record_or_a_validation_error(model: type[Record], data: bytes) -> None:
    with contextlib.suppress(ValidationError):
        model.from_json(data)


@MODELS
@PER_MODEL
@given(data=st.data())
def test_any_json_object_is_a_record_or_a_validation_error(
    model: type[Record], data: st.DataObject
) -> None:
    names = st.sampled_from(sorted(model.model_fields)) | st.text(max_size=12)
    value = data.draw(st.dictionaries(names, JSON_VALUES, max_size=8))
    try:
        record = model.from_json(json.dumps(value))
    except ValidationError:
        return
    assert model.from_json(record.to_json()) == record


@MODELS
@PER_MODEL
@given(data=st.data())
def test_an_example_with_any_field_changed_is_refused_or_round_trips(
    model: type[Record], examples: dict[type[Record], Record], data: st.DataObject
) -> None:
    wire = json.loads(examples[model].to_json())
    name = data.draw(st.sampled_from(sorted(wire)))
    wire[name] = data.draw(JSON_VALUES)
    try:
        record = model.from_json(json.dumps(wire))
    except ValidationError:
        return
    assert model.from_json(record.to_json()) == record


REPO_NAMES = st.from_regex(REPO_NAME_RE, fullmatch=True).filter(
    lambda repo: repo.split("/")[1] not in {".", ".."}
)


@PROPERTIES
@given(repo=REPO_NAMES, number=st.integers(min_value=1, max_value=2**31 - 1))
def test_valid_pr_keys_round_trip(repo: str, number: int) -> None:
    assert parse_pr_key(pr_key(repo, number)) == (repo, number)


@PROPERTIES
@given(
    key=st.text(max_size=40)
    | st.from_regex(r"[A-Za-z0-9./#\- \u0663\uff10-\uff19]{0,30}", fullmatch=True)
)
def test_any_text_is_a_canonical_pr_key_or_a_value_error(key: str) -> None:
    try:
        repo, number = parse_pr_key(key)
    except ValueError:
        return
    assert pr_key(repo, number) == key and key.isascii()


@PROPERTIES
@given(name=st.text(max_size=40) | st.from_regex(r"[A-Za-z0-9./\\\- ]{0,20}", fullmatch=True))
def test_any_text_is_a_safe_repo_name_or_a_value_error(name: str) -> None:
    try:
        validate_repo_name(name)
    except ValueError:
        return
    owner, repo = name.split("/")
    assert name.isascii() and owner and repo not in {".", ".."}
    assert not any(ch.isspace() or not ch.isprintable() for ch in name)


# real dates, in ASCII, full-width and Arabic-Indic digits: only the ASCII ones are hour names
DIGIT = st.sampled_from("0123456789") | st.sampled_from("\uff10\uff11\uff12\u0660\u0661")
HOUR_NAMES = st.builds(
    lambda year, month, day, hour: f"{''.join(year)}-{month:02}-{day:02}-{''.join(hour)}",
    st.lists(DIGIT, min_size=4, max_size=4),
    st.integers(1, 12),
    st.integers(1, 28),
    st.lists(DIGIT, min_size=1, max_size=2),
)


@PROPERTIES
@given(hour=st.text(max_size=20) | HOUR_NAMES)
def test_any_text_is_a_canonical_hour_name_or_a_value_error(hour: str) -> None:
    try:
        moment = parse_gharchive_hour(hour)
    except ValueError:
        return
    # not gharchive_hour(moment): strftime writes year 1 as "1" on some platforms
    assert f"{moment.year:04}-{moment.month:02}-{moment.day:02}-{moment.hour}" == hour


SHA = st.sampled_from(["a" * 40, "b" * 40]) | st.text(max_size=41)
EVENT_FIELDS = {
    "number": st.integers(min_value=-2, max_value=2**31 + 1) | JSON_SCALARS,
    "repo_name": REPO_NAMES | JSON_SCALARS,
    "action": st.sampled_from(["closed", "merged", "opened"]) | JSON_SCALARS,
    "sha": SHA,
    "created_at": st.sampled_from(["2015-01-01T00:00:01Z"]) | JSON_SCALARS,
    "merged": st.booleans() | JSON_SCALARS,
    "full": st.booleans(),
    "type": st.sampled_from(["PullRequestEvent", "PushEvent"]),
    "pull_request_shape": st.sampled_from(["object", "missing"]) | JSON_SCALARS,
}


@st.composite
def gharchive_events(draw: Any) -> dict[str, Any]:
    """A GH Archive event, every field of which may be of the wrong type or missing."""
    f = {name: draw(strategy) for name, strategy in EVENT_FIELDS.items()}
    pr: Any = {
        "number": f["number"],
        "head": {"ref": "fix", "sha": f["sha"], "repo": {"full_name": "octocat/hello"}},
        "base": {"ref": "main", "sha": draw(SHA)},
    }
    if f["full"]:
        pr |= {"merged": f["merged"], "title": draw(st.text(max_size=20)), "user": {"login": "u"}}
    payload: dict[str, Any] = {"action": f["action"], "number": f["number"]}
    if f["pull_request_shape"] == "object":
        payload["pull_request"] = pr
    elif f["pull_request_shape"] != "missing":
        payload["pull_request"] = f["pull_request_shape"]
    if draw(st.booleans()):
        del payload["number"]
    event = {
        "id": draw(st.text(alphabet="0123456789", min_size=1, max_size=10) | JSON_SCALARS),
        "type": f["type"],
        "actor": {"login": "octocat"},
        "repo": {"name": f["repo_name"]},
        "payload": payload,
        "created_at": f["created_at"],
    }
    return event


KNOWN_REASONS = {"malformed-json", "not-an-object", "missing-pr-number", "bad-repo-name"}
KNOWN_REASONS |= {"invalid-record", "line-too-long"}


@PROPERTIES
@given(events=st.lists(gharchive_events(), max_size=6), chunk=st.integers(1, 200))
def test_every_pull_request_event_line_is_one_record_or_one_problem(
    events: list[dict[str, Any]], chunk: int
) -> None:
    lines = [json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() for e in events]
    data = gzip.compress(b"\n".join(lines) + b"\n", mtime=0)
    scanner = HourScanner(HOUR, PIPELINE_VERSION)
    out: list[ScanOutput] = []
    for start in range(0, len(data), chunk):
        out.extend(scanner.feed(data[start : start + chunk]))
    out.extend(scanner.close())
    records = [item for item in out if isinstance(item, tuple)]
    problems = [item for item in out if isinstance(item, ScanProblem)]
    assert len(records) + len(problems) == sum(e["type"] == "PullRequestEvent" for e in events)
    for key, value in records:
        record = RawPullRequestEvent.from_json(value)
        assert key == pr_key(record.repo, record.number).encode()
        assert record.gharchive_hour == HOUR and record.pipeline_version == PIPELINE_VERSION
    for problem in problems:
        assert problem.reason in KNOWN_REASONS and 1 <= problem.line_number <= len(lines)
    assert scanner.stats.pull_request_events == len(records) and not scanner.stats.truncated


YAML_TOKENS = st.sampled_from(
    [
        *("- ", ": ", "&a ", "*a ", "!!python/name:os.system ", "!x ", "[", "]", "{", "}", "\n"),
        *("  ", "\t", "kafka", "id", "'", '"', "|", ">", "---\n", "...\n", "<<: ", "\x00", "é"),
    ]
)


@PROPERTIES
@given(parts=st.lists(YAML_TOKENS | st.text(max_size=5), max_size=30))
def test_any_yaml_is_settings_or_a_config_file_error_and_a_workspace_or_a_value_error(
    parts: list[str],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "swe-stream.yaml"
        path.write_text("".join(parts), encoding="utf-8")
        with contextlib.suppress(ConfigFileError):
            assert isinstance(read_yaml_config(path), dict)
        with contextlib.suppress(ValueError):
            assert isinstance(load_workspace(path), TaskWorkspace)


PR_FILE_LINES = (
    st.binary(max_size=40)
    | st.builds(lambda v: json.dumps(v).encode(), JSON_VALUES)
    | st.builds(
        lambda repo, pr: json.dumps({"repo": repo, "pr": pr}).encode(),
        REPO_NAMES | st.text(max_size=10),
        JSON_SCALARS,
    )
)


@PROPERTIES
@given(lines=st.lists(PR_FILE_LINES, max_size=5))
def test_any_pr_file_is_entries_or_a_pr_file_error(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "prs.jsonl"
        path.write_bytes(b"\n".join(lines))
        try:
            entries = read_pr_file(path, PIPELINE_VERSION)
        except PrFileError as exc:
            assert str(exc).startswith(f"{path}:")
            return
        assert all(isinstance(entry.number, int) for entry in entries)
