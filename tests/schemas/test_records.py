"""Topic value models: JSON round trips, rejection of bad records, keys and SWE-bench rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from schemas import (
    ALL_RECORD_MODELS,
    SWEBENCH_FIELDS,
    ClassifiedPullRequest,
    DeadLetter,
    DeadLetterReplay,
    EnrichedPullRequest,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
    HourLedgerEntry,
    IngestDeadLetter,
    LedgerEntry,
    PatchSet,
    PullRequestCandidate,
    PullRequestRecord,
    RawPullRequestEvent,
    Record,
    RememberedRecipe,
    RepoName,
    ScoredTask,
    SWEBenchInstance,
    ValidatedTask,
    gharchive_hour,
    instance_id_for,
    parse_gharchive_hour,
    parse_pr_key,
    pr_key,
)
from tests.schemas.conftest import HOUR, pull_request_events, raw_event_from_gharchive

pytestmark = pytest.mark.unit

MODEL_IDS = [m.__name__ for m in ALL_RECORD_MODELS]
MODELS = pytest.mark.parametrize("model", ALL_RECORD_MODELS, ids=MODEL_IDS)

# One field per model given a value of the wrong type.
WRONG_TYPE: dict[type[Record], tuple[str, Any]] = {
    RawPullRequestEvent: ("number", "abc"),
    HourLedgerEntry: ("events_total", "many"),
    IngestDeadLetter: ("line_number", "forty-two"),
    PullRequestCandidate: ("number", "abc"),
    EnrichedPullRequest: ("additions", "lots"),
    ClassifiedPullRequest: ("score", "high"),
    PatchSet: ("test_files", "tests/test_x.py"),
    ValidatedTask: ("number", "abc"),
    ScoredTask: ("accepted", "perhaps"),
    ExportedTask: ("number", "abc"),
    HarnessRequest: ("agent_timeout_seconds", "soon"),
    HarnessResult: ("agent_time_seconds", "long"),
    LedgerEntry: ("attempts", "twice"),
    RememberedRecipe: ("tests", "several"),
    DeadLetter: ("source_offset", "end"),
    DeadLetterReplay: ("sent_offset", "end"),
}


def wire(record: Record) -> dict[str, Any]:
    """The record as it looks on the wire, decoded to a dict."""
    return json.loads(record.to_json())


def assert_rejected(model: type[Record], data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        model.from_json(json.dumps(data))
    assert field in str(info.value)
    assert any(err["loc"] and err["loc"][0] == field for err in info.value.errors())


def test_registry_lists_every_topic_model() -> None:
    assert len(ALL_RECORD_MODELS) == 16
    assert len(set(ALL_RECORD_MODELS)) == 16
    assert set(WRONG_TYPE) == set(ALL_RECORD_MODELS)
    for model in ALL_RECORD_MODELS:
        assert issubclass(model, Record)
        assert "SCHEMA_VERSION" in vars(model), f"{model.__name__} must declare SCHEMA_VERSION"
        assert model.__doc__ and "\n" not in model.__doc__.strip()


def test_examples_cover_every_model(examples: dict[type[Record], Record]) -> None:
    assert set(examples) == set(ALL_RECORD_MODELS)


@MODELS
def test_json_round_trip(model: type[Record], examples: dict[type[Record], Record]) -> None:
    record = examples[model]
    data = record.to_json()
    assert isinstance(data, bytes)
    assert model.from_json(data) == record
    assert model.from_json(data.decode()) == record
    assert wire(record)["schema_version"] == model.SCHEMA_VERSION
    assert wire(record)["pipeline_version"] == record.pipeline_version


@MODELS
def test_rejects_wrong_type(model: type[Record], examples: dict[type[Record], Record]) -> None:
    field, bad = WRONG_TYPE[model]
    assert_rejected(model, {**wire(examples[model]), field: bad}, field)


@MODELS
def test_rejects_bad_pipeline_version(
    model: type[Record], examples: dict[type[Record], Record]
) -> None:
    data = wire(examples[model])
    assert_rejected(model, {**data, "pipeline_version": "x"}, "pipeline_version")
    assert_rejected(model, {**data, "pipeline_version": 0}, "pipeline_version")
    del data["pipeline_version"]
    assert_rejected(model, data, "pipeline_version")


@MODELS
def test_schema_version_must_equal_the_models(
    model: type[Record], examples: dict[type[Record], Record]
) -> None:
    data = wire(examples[model])
    assert_rejected(model, {**data, "schema_version": model.SCHEMA_VERSION + 1}, "schema_version")
    with pytest.raises(ValidationError, match="schema_version 2 is not supported"):
        model.from_json(json.dumps({**data, "schema_version": 2}))
    del data["schema_version"]  # absent: the model's own version is assumed
    assert model.from_json(json.dumps(data)).schema_version == model.SCHEMA_VERSION


@MODELS
def test_rejects_unknown_fields(model: type[Record], examples: dict[type[Record], Record]) -> None:
    assert_rejected(model, {**wire(examples[model]), "surprise": 1}, "surprise")


def test_nested_models_reject_unknown_fields(examples: dict[type[Record], Record]) -> None:
    data = wire(examples[ClassifiedPullRequest])
    data["pull_request"]["repo_info"]["watchers"] = 3
    with pytest.raises(ValidationError, match="watchers"):
        ClassifiedPullRequest.from_json(json.dumps(data))


def test_pr_level_models_have_keys(examples: dict[type[Record], Record]) -> None:
    for record in examples.values():
        if isinstance(record, PullRequestRecord):
            assert record.key == f"{record.repo}#{record.number}"
            assert parse_pr_key(record.key) == (record.repo, record.number)
    assert examples[HourLedgerEntry].key == HOUR  # type: ignore[attr-defined]
    raw = examples[RawPullRequestEvent]
    assert examples[DeadLetter].key == raw.key  # type: ignore[attr-defined]


# --- keys and names ------------------------------------------------------------------------

BAD_REPOS = [
    "../etc",
    "a b/c",
    "owner/repo/extra",
    "owner/re\x00po",
    "owner/repo\n",
    "owner/\trepo",
    "owner/..",
    "owner/.",
    "-owner/repo",
    "owner",
    "/repo",
    "owner/",
    "o" * 40 + "/repo",
    "owner/" + "r" * 101,
    "owner//repo",
]


def test_pr_key_round_trip() -> None:
    assert pr_key("django/django", 16255) == "django/django#16255"
    assert parse_pr_key("sigmavirus24/github3.py#235") == ("sigmavirus24/github3.py", 235)
    assert parse_pr_key(pr_key("a-b/c.d_e-f", 2**31 - 1)) == ("a-b/c.d_e-f", 2**31 - 1)
    assert instance_id_for("django/django", 16255) == "django__django-16255"


@pytest.mark.parametrize("repo", BAD_REPOS)
def test_bad_repo_names_are_rejected(repo: str) -> None:
    with pytest.raises(ValueError, match="invalid repository name"):
        pr_key(repo, 1)
    with pytest.raises(ValueError, match="invalid"):
        parse_pr_key(f"{repo}#1")
    with pytest.raises(ValidationError):
        TypeAdapter(RepoName).validate_python(repo)


@pytest.mark.parametrize("number", [0, -1, 2**31, True, "1"])
def test_bad_pr_numbers_are_rejected(number: Any) -> None:
    with pytest.raises(ValueError):
        pr_key("owner/repo", number)


@pytest.mark.parametrize(
    "key",
    ["owner/repo#0", f"owner/repo#{2**31}", "owner/repo#01", "owner/repo#", "owner/repo",
     "owner/repo#1\n", "owner/repo#-1", "owner/repo#1#2", "", "owner/repo #1"],
)  # fmt: skip
def test_bad_pr_keys_are_rejected(key: str) -> None:
    with pytest.raises(ValueError, match="PR key"):
        parse_pr_key(key)


def test_pr_number_bounds_in_models(examples: dict[type[Record], Record]) -> None:
    data = wire(examples[LedgerEntry])
    assert_rejected(LedgerEntry, {**data, "number": 0}, "number")
    assert_rejected(LedgerEntry, {**data, "number": 2**31}, "number")
    assert LedgerEntry.from_json(json.dumps({**data, "number": 2**31 - 1})).number == 2**31 - 1
    assert_rejected(LedgerEntry, {**data, "repo": "../etc"}, "repo")


def test_gharchive_hours() -> None:
    moment = parse_gharchive_hour("2015-01-01-0")
    assert moment == datetime(2015, 1, 1, 0, tzinfo=UTC)
    assert gharchive_hour(moment) == "2015-01-01-0"
    assert gharchive_hour(datetime(2024, 3, 9, 23, 59, tzinfo=UTC)) == "2024-03-09-23"
    for bad in ("2015-01-01-00", "2015-01-01-24", "2015-02-30-1", "2015-01-01", "x"):
        with pytest.raises(ValueError, match="GH Archive hour"):
            parse_gharchive_hour(bad)


# --- stage-specific rules ------------------------------------------------------------------


def test_slim_payload_events(fixtures_dir: Any) -> None:
    events = pull_request_events(fixtures_dir / "gharchive" / f"{HOUR}.slim.json.gz")
    records = [raw_event_from_gharchive(e, HOUR) for e in events]
    assert len(records) == 315
    assert {r.payload_format for r in records} == {"slim"}
    assert all(r.merged is None and r.pull_request is None for r in records)
    data = wire(records[0])
    with pytest.raises(ValidationError, match="merged must be null"):
        RawPullRequestEvent.from_json(json.dumps({**data, "merged": True}))


def test_every_real_full_event_parses(gharchive_pr_events: list[dict[str, Any]]) -> None:
    records = [raw_event_from_gharchive(e, HOUR) for e in gharchive_pr_events]
    assert len(records) == 315
    merged = {r.key for r in records if r.action == "closed" and r.merged}
    assert len(merged) == 126  # the fixture README's count of distinct merged PRs
    assert all(RawPullRequestEvent.from_json(r.to_json()) == r for r in records)


def test_hour_ledger_rules(examples: dict[type[Record], Record]) -> None:
    data = wire(examples[HourLedgerEntry])
    with pytest.raises(ValidationError, match="requires an error"):
        HourLedgerEntry.from_json(json.dumps({**data, "status": "failed"}))
    with pytest.raises(ValidationError, match="hour"):
        HourLedgerEntry.from_json(json.dumps({**data, "hour": "2015-01-01-00"}))
    with pytest.raises(ValidationError, match="started_at"):
        HourLedgerEntry.from_json(json.dumps({**data, "started_at": "2026-11-22T04:00:00"}))


def test_classified_must_match_embedded_pr(examples: dict[type[Record], Record]) -> None:
    data = wire(examples[ClassifiedPullRequest])
    with pytest.raises(ValidationError, match="differ from the embedded"):
        ClassifiedPullRequest.from_json(json.dumps({**data, "number": 236}))


def test_ledger_finality(examples: dict[type[Record], Record]) -> None:
    entry = examples[LedgerEntry]
    assert isinstance(entry, LedgerEntry)
    final = {"rejected", "failed", "exported"}
    for status in ("accepted", "rejected", "failed", "exported", "in_progress"):
        assert entry.model_copy(update={"status": status}).is_final() == (status in final)
    with pytest.raises(ValidationError, match="status"):
        LedgerEntry.from_json(json.dumps({**wire(entry), "status": "done"}))


def test_dead_letter_keeps_original_bytes(examples: dict[type[Record], Record]) -> None:
    dead = examples[DeadLetter]
    assert isinstance(dead, DeadLetter)
    assert dead.original_value().endswith(b"\xff\xfe")
    assert DeadLetter.from_json(dead.to_json()).original_value() == dead.original_value()
    assert dead.error_type == "ValueError"
    with pytest.raises(ValidationError, match="base64"):
        DeadLetter.from_json(json.dumps({**wire(dead), "value_b64": "not base64!"}))


# --- SWE-bench instances --------------------------------------------------------------------


def test_swebench_instances_load_all_fixture_rows(swebench_rows: list[dict[str, Any]]) -> None:
    assert len(swebench_rows) == 10
    for row in swebench_rows:
        instance = SWEBenchInstance.model_validate(row)
        assert instance.created_at.tzinfo is not None
        assert isinstance(instance.version, str)
        assert row["FAIL_TO_PASS"] == instance.FAIL_TO_PASS
        assert instance.to_swebench() == {name: row[name] for name in SWEBENCH_FIELDS}
        assert list(instance.to_swebench()) == list(SWEBENCH_FIELDS)


def test_swebench_accepts_hugging_face_string_lists(swebench_rows: list[dict[str, Any]]) -> None:
    for row in swebench_rows:
        hf_row = {
            **row,
            "FAIL_TO_PASS": json.dumps(row["FAIL_TO_PASS"]),
            "PASS_TO_PASS": json.dumps(row["PASS_TO_PASS"]),
        }
        instance = SWEBenchInstance.model_validate(hf_row)
        assert row["FAIL_TO_PASS"] == instance.FAIL_TO_PASS
        assert row["PASS_TO_PASS"] == instance.PASS_TO_PASS
        assert SWEBenchInstance.model_validate_json(json.dumps(hf_row)) == instance


@pytest.mark.parametrize("bad", ["not json", '{"a": 1}', "[1, 2]", '["ok"'])
def test_swebench_rejects_bad_test_lists(swebench_rows: list[dict[str, Any]], bad: str) -> None:
    with pytest.raises(ValidationError, match="FAIL_TO_PASS"):
        SWEBenchInstance.model_validate({**swebench_rows[0], "FAIL_TO_PASS": bad})


def test_tasks_convert_to_swebench_rows(
    examples: dict[type[Record], Record], swebench_rows: list[dict[str, Any]]
) -> None:
    row = {name: swebench_rows[0][name] for name in SWEBENCH_FIELDS}
    for model in (ValidatedTask, ScoredTask):
        task = examples[model]
        assert isinstance(task, ValidatedTask)
        assert task.to_swebench() == row
        assert task.to_instance() == SWEBenchInstance.model_validate(row)
        # the Hugging Face string form is accepted on the topic too
        data = {**wire(task), "FAIL_TO_PASS": json.dumps(row["FAIL_TO_PASS"])}
        assert model.from_json(json.dumps(data)) == task


def test_validated_task_rules(examples: dict[type[Record], Record]) -> None:
    task = examples[ValidatedTask]
    assert isinstance(task, ValidatedTask)
    assert task.validation.fail_to_pass() == sorted(task.FAIL_TO_PASS)
    assert task.validation.pass_to_pass() == sorted(task.PASS_TO_PASS)
    data = wire(task)
    with pytest.raises(ValidationError, match="at least one FAIL_TO_PASS"):
        ValidatedTask.from_json(json.dumps({**data, "FAIL_TO_PASS": []}))
    with pytest.raises(ValidationError, match="both FAIL_TO_PASS and PASS_TO_PASS"):
        ValidatedTask.from_json(
            json.dumps({**data, "PASS_TO_PASS": data["PASS_TO_PASS"] + data["FAIL_TO_PASS"]})
        )
    with pytest.raises(ValidationError, match="failed"):  # statuses are a closed set
        bad = {**data, "validation": {**data["validation"], "after": {"t": "flaky"}}}
        ValidatedTask.from_json(json.dumps(bad))
