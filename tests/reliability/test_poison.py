"""Poison records: for every topic a stage consumes, values that fail the topic's schema and
valid records whose processing makes the stage raise (its real dependency failing) land in
``<topic>.dlq`` with the error and the original bytes, are counted in
``swe_stream_stage_records_failed_total``, and the stage handles the next good record.

Two levels:

- per stage (parametrized): the stage exactly as ``streams.runtime.topology.pipeline_stages``
  builds it from settings, run by ``StageRunner`` into a ``MemorySink``, its dependencies real and
  failing: the GitHub stand-in answering 404 / 503, the LLM stand-in answering prose, 400 or
  503, git remotes and commits that do not exist, a file where export or the harness must make
  a directory, a raw event whose merge sha is not a sha;
- on the embedded broker: one ``swe-stream worker`` running five stages whose topics do not
  feed each other gets poison and good records on each input topic; the dead letters, the good
  records' outputs, the metrics and the group's committed offsets (past the poison) are read
  back from the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from schemas import (
    AgentSpec,
    ClassifiedPullRequest,
    DeadLetter,
    EnrichedPullRequest,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
    LedgerEntry,
    PatchSet,
    PullRequestCandidate,
    RawPullRequestEvent,
    Record,
    ScoredTask,
    SWEBenchInstance,
    ValidatedTask,
    ValidationReport,
    instance_id_for,
)
from schemas.workspace import task_dir_name
from streams.core.settings import Settings
from streams.kafka.broker import free_port
from streams.kafka.client import read_topic_to_end
from streams.kafka.offsets import committed_offsets
from streams.kafka.topics import (
    CANDIDATES,
    CLASSIFIED,
    ENRICHED,
    EXPORTED,
    HARNESS_REQUESTS,
    HARNESS_RESULTS,
    LEDGER,
    PATCHES,
    PRIMARY_TOPICS,
    PULL_REQUEST_EVENTS,
    SCORED,
    VALIDATED,
    TopicSpec,
)
from streams.pipeline.dlq import MAX_VALUE_BYTES
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage, StageRunner
from streams.runtime.topology import StageResources, pipeline_stages
from tests.agents.conftest import wait_for
from tests.agents.repo_tasks import classified_for, make_calc_repo
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.github_server import FakeGitHub, load_cassettes, serve_github
from tests.fakes.llm_server import (
    FakeLLM,
    Reply,
    computed_tool_call,
    error_body,
    first_user_message,
    serve_llm,
    status_reply,
    text_reply,
)
from tests.git_repos import PullRequestRepo
from tests.workers import stop, wait_for_metrics, worker_env

PV = 1
PARTITION = 0
AGENT = "true"  # harness.agent_command: turns on harness-exported
GHOST_REPO = "ghost-org/missing"  # no remote answers for it
MISSING_SHA = "0123456789abcdef0123456789abcdef01234567"  # no repository has this commit
SLIM_235 = "sigmavirus24/github3.py"

# what the LLM stand-in does with a prompt carrying one of these (anything else: a valid call)
LLM_PROSE = "POISON: the model answers in prose"
LLM_REFUSES = "POISON: the endpoint refuses the request"
LLM_DOWN = "POISON: the endpoint is down"


def poison_aware_llm(body: Any) -> Reply:
    """The LLM stand-in's answer: prose (no tool call, every time), 400, 503, or a valid
    computed tool call, by what the prompt says (robust to concurrent requests)."""
    prompt = first_user_message(body)
    if LLM_PROSE in prompt:
        return text_reply("This looks like a medium task to me, but I will not call a tool.")
    if LLM_REFUSES in prompt:
        message = "This model's maximum context length is 8192 tokens."
        return status_reply(400, body=error_body(400, message))
    if LLM_DOWN in prompt:
        return status_reply(503, body=error_body(503, "upstream unavailable", "server_error"))
    return computed_tool_call(body)


# --- the world: stand-ins, a git repository, directories -----------------------------------


@dataclass
class World:
    tmp: Path
    fixtures: Path
    enriched_235: EnrichedPullRequest
    github: FakeGitHub | None = None
    llm: FakeLLM | None = None
    calc: PullRequestRepo | None = None

    @property
    def export_dir(self) -> Path:
        return self.tmp / "export"

    @property
    def harness_out(self) -> Path:
        return self.tmp / "harness-out"

    @property
    def tasks_dir(self) -> Path:
        return self.tmp / "tasks"

    def decoded(self, name: str) -> Any:
        path = self.fixtures / "github_api" / "decoded" / name
        return json.loads(path.read_text(encoding="utf-8"))

    def settings_values(self) -> dict[str, Any]:
        """The settings the stages run with (also the worker's environment)."""
        closed = f"http://127.0.0.1:{free_port()}"  # nobody listens: refused at once
        git = (
            self.calc.url_template
            if self.calc
            else f"file://{self.tmp}/nowhere/{{owner}}/{{repo}}.git"
        )
        return {
            "pipeline_version": PV,
            "worker": {"data_dir": self.tmp / "data"},
            "github": {
                "api_url": self.github.base_url if self.github else closed,
                "git_url_template": git,
                "token": SecretStr("ghp_poison_test_token"),
                "max_attempts": 2,
                "backoff_seconds": 0.01,
                "max_backoff_seconds": 0.05,
                "timeout_seconds": 5.0,
                "rate_limit_reserve": 0,
            },
            "llm": {
                "base_url": self.llm.base_url if self.llm else closed + "/v1",
                "model": "poison/model",
                "api_key": SecretStr("sk-or-poison-test"),
                "max_attempts": 2,
                "backoff_seconds": 0.01,
                "max_backoff_seconds": 0.05,
                "timeout_seconds": 5.0,
            },
            "prefilter": {"org_only": False},
            "classify": {"backend": "llm"},
            "score": {"backend": "llm", "min_quality": 0.0},
            "extract": {"repos_dir": self.tmp / "repos"},
            "testgen": {"mode": "off"},
            "export": {"output_dir": self.export_dir},
            "harness": {
                "output_dir": self.harness_out,
                "tasks_dir": self.tasks_dir,
                "agent_command": AGENT,
            },
        }


# --- records: one builder per topic (valid records; pipeline version 1) ---------------------


def raw_event(world: World, number: int, merge_sha: str | None = None) -> RawPullRequestEvent:
    """A merged full-payload PullRequestEvent: the real PR #235 under another number."""
    pr = dict(world.decoded("pulls_235.json"), number=number)
    if merge_sha is not None:
        pr["merge_commit_sha"] = merge_sha
    return RawPullRequestEvent(
        pipeline_version=PV,
        repo=SLIM_235,
        number=number,
        event_id=f"2014050314{number:06d}",
        created_at=pr["closed_at"],
        action="closed",
        payload_format="full",
        merged=True,
        actor_login="sigmavirus24",
        base_ref=pr["base"]["ref"],
        base_sha=pr["base"]["sha"],
        head_ref=pr["head"]["ref"],
        head_sha=pr["head"]["sha"],
        pull_request=pr,
        gharchive_hour="2014-05-03-14",
    )


def candidate(world: World, number: int) -> PullRequestCandidate:
    """A slim candidate of sigmavirus24/github3.py (enrich asks the API for everything)."""
    pr = world.decoded("pulls_235.json")
    return PullRequestCandidate(
        pipeline_version=PV,
        repo=SLIM_235,
        number=number,
        event_id=f"2014050314{number:06d}",
        payload_format="slim",
        merged=None,
        base_sha=pr["base"]["sha"],
        head_sha=pr["head"]["sha"],
        actor_login="sigmavirus24",
        created_at=pr["closed_at"],
    )


def enriched(world: World, number: int, statement_prefix: str = "") -> EnrichedPullRequest:
    pr = world.enriched_235
    statement = f"{statement_prefix}\n{pr.problem_statement}".strip()
    return pr.model_copy(update={"number": number, "problem_statement": statement})


def classified(
    world: World, number: int, repo: str | None = None, merge_sha: str | None = None
) -> ClassifiedPullRequest:
    assert world.calc is not None
    record = classified_for(world.calc, number)
    inner = record.pull_request.model_copy(
        update={
            "repo": repo or record.repo,
            "merge_commit_sha": merge_sha or record.pull_request.merge_commit_sha,
        }
    )
    return record.model_copy(update={"repo": repo or record.repo, "pull_request": inner})


def patch_set(
    world: World, number: int, repo: str | None = None, base: str | None = None, tests: bool = True
) -> PatchSet:
    assert world.calc is not None
    repo = repo or world.calc.repo
    test_patch = (
        "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n"
        "+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n from calc import sub\n+import calc\n"
    )
    return PatchSet(
        pipeline_version=PV,
        repo=repo,
        number=number,
        instance_id=instance_id_for(repo, number),
        base_commit=base or world.calc.base_sha,
        patch=(
            "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
            "@@ -6 +6 @@\n-    return a - b\n+    return a + b\n"
        ),
        test_patch=test_patch if tests else "",
        problem_statement="add(2, 3) returns -1 instead of 5",
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
        test_files=["tests/test_ops.py"] if tests else [],
        source_files=["calc/ops.py"],
        classification="easy",
        score=0.2,
    )


def validated(world: World, number: int, statement_prefix: str = "") -> ValidatedTask:
    """The real SWE-bench row django__django-16255 as a validated task, under ``number``."""
    path = world.fixtures / "swebench" / "swe-bench-lite-5.json"
    instance = SWEBenchInstance.model_validate(json.loads(path.read_text(encoding="utf-8"))[0])
    report = ValidationReport(
        image="swe-stream/task:latest",
        runs=1,
        duration_seconds=30.0,
        before={
            **{t: "failed" for t in instance.FAIL_TO_PASS},
            **{t: "passed" for t in instance.PASS_TO_PASS},
        },
        after={t: "passed" for t in instance.FAIL_TO_PASS + instance.PASS_TO_PASS},
    )
    fields = instance.model_dump()
    fields["instance_id"] = instance_id_for(instance.repo, number)
    fields["problem_statement"] = f"{statement_prefix}\n{instance.problem_statement}".strip()
    return ValidatedTask(
        pipeline_version=PV,
        number=number,
        **fields,
        validation=report,
        classification="medium",
        difficulty_score=0.5,
    )


def scored(world: World, number: int) -> ScoredTask:
    task = validated(world, number)
    return ScoredTask(
        **task.model_dump(), quality_score=0.9, quality_reasoning="clear", accepted=True
    )


def harness_request(request_id: str, instance_id: str) -> HarnessRequest:
    return HarnessRequest(
        pipeline_version=PV,
        request_id=request_id,
        instance_id=instance_id,
        agent=AgentSpec(name="noop", command="true"),
    )


def exported(world: World, number: int) -> ExportedTask:
    instance = instance_id_for("django/django", number)
    return ExportedTask(
        pipeline_version=PV,
        repo="django/django",
        number=number,
        instance_id=instance,
        export_dir=str(world.export_dir / task_dir_name(instance)),
        dataset_path=str(world.export_dir / "dataset.jsonl"),
        exported_at=datetime(2026, 11, 2, tzinfo=UTC),
        content_sha256=f"{number:064x}",
    )


def exported_request_dir(world: World, task: ExportedTask) -> Path:
    """Where harness-exported writes the evaluation of ``task`` (its request id)."""
    return world.harness_out / f"{task.instance_id}-configured-{task.content_sha256[:12]}"


def blocked(path: Path) -> None:
    """A regular file where a directory must be made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file in the way\n")


# --- values that fail each topic's schema ----------------------------------------------------


def schema_poisons(good: Record) -> list[bytes | None]:
    """Values that fail the schema of ``good``'s topic, derived from ``good`` itself."""
    raw = good.to_json()
    data = json.loads(raw)
    model = type(good)
    required = next(
        name
        for name, spec in model.model_fields.items()
        if spec.is_required() and name != "pipeline_version"
    )

    def dumps(value: Any) -> bytes:
        return json.dumps(value).encode()

    values: list[bytes | None] = [
        None,  # a tombstone: a null value
        b"",
        b"\xff\xfe\x00\x81 not even text",
        b"null",
        b"[1, 2, 3]",
        raw[: len(raw) // 2],  # cut short
        dumps({k: v for k, v in data.items() if k != required}),  # a required field missing
        dumps({**data, "schema_version": 999}),  # a schema this code does not read
        dumps({**data, "unexpected": True}),  # a field the schema does not have
        dumps({**data, "pipeline_version": 0}),
        # bigger than a dead letter may hold (Kafka's ~1 MB limit, base64): cut, not lost
        b'{"padding": "' + b"x" * (MAX_VALUE_BYTES + 200_000) + b'"}',
    ]
    if "repo" in data:
        values += [dumps({**data, "repo": "../../etc/passwd"}), dumps({**data, "number": "7"})]
    if "instance_id" in data:
        values.append(dumps({**data, "instance_id": "../../escape"}))
    return values


# --- the cases: per stage, a good record and the poison its dependency makes fail -----------


@dataclass(frozen=True)
class Poison:
    record: Record
    error_type: str  # of the exception, as the dead letter names it
    says: str  # a part of the error message


@dataclass(frozen=True)
class Case:
    stage: str
    topic: TopicSpec
    arrange: Callable[[World], tuple[Record, list[Poison]]]  # also makes the failures happen
    needs: frozenset[str] = frozenset()  # github / llm / git
    good_status: str | None = "accepted"  # the good record's ledger status (None: no entry)
    good_outputs: int = 1
    by_instance: bool = False  # the output is keyed by instance id (harness results)

    @property
    def marks(self) -> list[Any]:
        # stand-ins on 127.0.0.1 and real git repositories are integration, as elsewhere
        return [pytest.mark.integration if self.needs else pytest.mark.unit]


def arrange_prefilter(world: World) -> tuple[Record, list[Poison]]:
    # a valid event whose payload's merge_commit_sha is no sha: the candidate cannot be made
    bad_sha = Poison(raw_event(world, 901, merge_sha="not-a-sha"), "ValidationError", "sha")
    return raw_event(world, 235), [bad_sha]


def arrange_enrich(world: World) -> tuple[Record, list[Poison]]:
    assert world.github is not None
    world.github.fail(f"/repos/{SLIM_235}/pulls/902", status=503, times=1000)
    return candidate(world, 235), [
        Poison(candidate(world, 901), "GitHubNotFound", "404"),  # no such PR
        Poison(candidate(world, 902), "GitHubUnavailable", "503"),  # GitHub down: retries out
    ]


def arrange_classify(world: World) -> tuple[Record, list[Poison]]:
    return enriched(world, 235), [
        Poison(enriched(world, 901, LLM_PROSE), "LLMOutputError", "no call of the tool"),
        Poison(enriched(world, 902, LLM_REFUSES), "LLMRequestError", "HTTP 400"),
        Poison(enriched(world, 903, LLM_DOWN), "LLMRequestError", "after 2 attempts"),
    ]


def arrange_extract(world: World) -> tuple[Record, list[Poison]]:
    return classified(world, 1), [
        Poison(classified(world, 901, repo=GHOST_REPO), "CloneError", "ghost-org"),
        Poison(classified(world, 902, merge_sha=MISSING_SHA), "CommitNotFound", MISSING_SHA),
    ]


def arrange_validate(world: World) -> tuple[Record, list[Poison]]:
    # the good one has no tests and test generation is off: rejected (no_tests) before Docker
    return patch_set(world, 1, tests=False), [
        Poison(patch_set(world, 901, repo=GHOST_REPO), "CloneError", "ghost-org"),
        Poison(patch_set(world, 902, base=MISSING_SHA), "CommitNotFound", MISSING_SHA),
    ]


def arrange_score(world: World) -> tuple[Record, list[Poison]]:
    return validated(world, 16255), [
        Poison(validated(world, 901, LLM_PROSE), "LLMOutputError", "no call of the tool"),
        Poison(validated(world, 902, LLM_DOWN), "LLMRequestError", "HTTP 503"),
    ]


def arrange_export(world: World) -> tuple[Record, list[Poison]]:
    poison = scored(world, 901)
    blocked(world.export_dir / task_dir_name(poison.instance_id))
    return scored(world, 16255), [Poison(poison, "FileExistsError", "File exists")]


def arrange_harness(world: World) -> tuple[Record, list[Poison]]:
    # a request for a task that does not exist is answered (setup_error), not a dead letter;
    # what makes the stage raise is its output directory: a file stands where it must write
    blocked(world.harness_out / "blocked-request")
    poison = harness_request("blocked-request", "django__django-901")
    good = harness_request("good-request", "django__django-16255")
    return good, [Poison(poison, "NotADirectoryError", "Not a directory")]


def arrange_harness_exported(world: World) -> tuple[Record, list[Poison]]:
    # not django/django#901: the worker test runs every stage at once, and this poison's
    # `failed` ledger entry would make score skip its own django/django#901 poison (a PR
    # already final is skipped), whenever this one happened to fail first
    poison = exported(world, 911)
    blocked(exported_request_dir(world, poison))
    return exported(world, 16255), [Poison(poison, "NotADirectoryError", "Not a directory")]


CASES = [
    Case("prefilter", PULL_REQUEST_EVENTS, arrange_prefilter),
    Case("enrich", CANDIDATES, arrange_enrich, frozenset({"github"})),
    Case("classify", ENRICHED, arrange_classify, frozenset({"llm"})),
    Case("extract", CLASSIFIED, arrange_extract, frozenset({"git"})),
    Case("validate", PATCHES, arrange_validate, frozenset({"git"}), "rejected", 0),
    Case("score", VALIDATED, arrange_score, frozenset({"llm"})),
    Case("export", SCORED, arrange_export, good_status="exported"),
    Case("harness", HARNESS_REQUESTS, arrange_harness, good_status=None, by_instance=True),
    Case(
        "harness-exported", EXPORTED, arrange_harness_exported, good_status=None, by_instance=True
    ),
]


@contextlib.contextmanager
def world_for(
    needs: frozenset[str], tmp: Path, fixtures: Path, enriched_235: EnrichedPullRequest
) -> Iterator[World]:
    world = World(tmp, fixtures, enriched_235)
    with contextlib.ExitStack() as stack:
        if "github" in needs:
            recorded = load_cassettes(fixtures / "github_api" / "recorded")
            world.github = stack.enter_context(serve_github(recorded))
        if "llm" in needs:
            world.llm = stack.enter_context(serve_llm())
            world.llm.default = poison_aware_llm
        if "git" in needs:
            world.calc = make_calc_repo(tmp / "git")
        yield world


def build_stages(world: World, ledger: Ledger) -> list[Stage[Any]]:
    """Every stage as the worker builds it from the settings (the topology's own code)."""
    settings = Settings(**world.settings_values())
    return pipeline_stages(settings, StageResources(ledger, lambda name: {}))


async def close_clients(stages: list[Stage[Any]]) -> None:
    for stage in stages:
        handler = stage.handle
        for owner in (
            handler,
            getattr(handler, "classifier", None),
            getattr(handler, "scorer", None),
        ):
            for name in ("github", "llm"):
                client = getattr(owner, name, None)
                if client is not None and hasattr(client, "aclose"):
                    await client.aclose()


def check_kept(letter: DeadLetter, value: bytes | None) -> None:
    """The letter holds the original bytes exactly, or, for a record too big for a dead
    letter, its first bytes and the whole one's size and sha256; it fits in a Kafka message."""
    if value is not None and len(value) > MAX_VALUE_BYTES:
        assert letter.original_value() == value[:MAX_VALUE_BYTES]
        assert hashlib.sha256(value).hexdigest() in letter.error
        assert f"{len(value)} bytes" in letter.error
    else:
        assert letter.original_value() == (value or b"")  # byte for byte (null: no bytes)
    if value is None:
        assert "tombstone" in letter.error
    assert len(letter.to_json()) < 1_000_000


def key_of(record: Record) -> bytes:
    return str(getattr(record, "key")).encode()  # noqa: B009 - every topic value has a key


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.unit
def test_every_consumed_topic_has_a_case(
    tmp_path: Path, fixtures_dir: Path, enriched_235: Any
) -> None:
    """The cases cover every topic a stage consumes (the topology with the harness agent on,
    i.e. harness-exported too), and those are exactly the catalog's topics with a DLQ."""
    world = World(tmp_path, fixtures_dir, enriched_235)
    stages = build_stages(world, Ledger(SinkLedgerStore(MemorySink()), PV))
    asyncio.run(close_clients(stages))
    consumed = {stage.name: stage.source.name for stage in stages}
    assert consumed == {case.stage: case.topic.name for case in CASES}
    assert set(consumed.values()) == {t.name for t in PRIMARY_TOPICS if t.has_dlq}


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.stage, marks=case.marks) for case in CASES]
)
async def test_poison_goes_to_the_dlq_and_the_stage_goes_on(
    case: Case, tmp_path: Path, fixtures_dir: Path, enriched_235: EnrichedPullRequest
) -> None:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), PV)
    with world_for(case.needs, tmp_path, fixtures_dir, enriched_235) as world:
        stages = build_stages(world, ledger)
        try:
            (stage,) = [s for s in stages if s.name == case.stage]
            assert stage.source is case.topic
            good, poisons = case.arrange(world)
            model = case.topic.value_model
            for record in [good, *(p.record for p in poisons)]:  # all valid records
                assert model.from_json(record.to_json()) == record
            bad_values = schema_poisons(good)
            inputs: list[tuple[bytes, bytes | None]] = [(key_of(good), v) for v in bad_values]
            inputs += [(key_of(p.record), p.record.to_json()) for p in poisons]
            inputs.append((key_of(good), good.to_json()))

            labels = {"stage": case.stage}
            before = {
                "schema": sample("swe_stream_stage_records_failed_total", error="schema", **labels),
                "logic": sample("swe_stream_stage_records_failed_total", error="logic", **labels),
                "dlq": sample("swe_stream_dlq_records_total", topic=case.topic.name),
                "in": sample("swe_stream_stage_records_in_total", **labels),
            }
            runner: StageRunner[Any] = StageRunner(stage, sink, PV, ledger)
            results = []
            for offset, (key, value) in enumerate(inputs, start=40):
                results.append(await runner.process(key, value, PARTITION, offset))  # type: ignore[arg-type]
        finally:
            await close_clients(stages)

    # every poison went to the DLQ (None), the good record after them was handled
    assert results[:-1] == [None] * (len(inputs) - 1)
    assert results[-1] is not None and results[-1].status == case.good_status

    letters = [DeadLetter.from_json(v) for _, v in sink.on(case.topic.dlq_name)]
    assert len(letters) == len(inputs) - 1
    for offset, ((key, value), letter) in enumerate(zip(inputs, letters, strict=False), start=40):
        check_kept(letter, value)
        assert (letter.key or "").encode() == key
        assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
            case.topic.name,
            PARTITION,
            offset,
        )
        assert (letter.stage, letter.attempts, letter.pipeline_version) == (case.stage, 1, PV)
    for letter in letters[: len(bad_values)]:
        assert letter.error_type == "ValidationError", letter.error
    for poison, letter in zip(poisons, letters[len(bad_values) :], strict=True):
        assert letter.error_type == poison.error_type, letter.error
        assert poison.says in letter.error, letter.error

    # counted: schema and logic failures apart, every dead letter, every record read
    after = {
        "schema": sample("swe_stream_stage_records_failed_total", error="schema", **labels),
        "logic": sample("swe_stream_stage_records_failed_total", error="logic", **labels),
        "dlq": sample("swe_stream_dlq_records_total", topic=case.topic.name),
        "in": sample("swe_stream_stage_records_in_total", **labels),
    }
    assert after["schema"] - before["schema"] == len(bad_values)
    assert after["logic"] - before["logic"] == len(poisons)
    assert after["dlq"] - before["dlq"] == len(inputs) - 1
    assert after["in"] - before["in"] == len(inputs)

    # the ledger: each logic poison's PR failed (with its error), the good one decided
    entries = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    by_pr = {(e.repo, e.number): e for e in entries}
    expected = {
        (p.record.repo, p.record.number): ("failed", p.error_type)  # type: ignore[attr-defined]
        for p in poisons
        if hasattr(p.record, "repo")
    }
    if case.good_status is not None:
        expected[(good.repo, good.number)] = (case.good_status, "")  # type: ignore[attr-defined]
    assert len(entries) == len(by_pr) == len(expected)
    for pr, (status, reason) in expected.items():
        assert by_pr[pr].status == status
        assert (by_pr[pr].reason or "").startswith(reason)

    # the good record's outputs, and nothing from the poison
    assert case.topic.dlq_name != (stage.output.name if stage.output else "")
    outputs = sink.on(stage.output.name) if stage.output else []
    output_key = good.instance_id.encode() if case.by_instance else key_of(good)  # type: ignore[attr-defined]
    assert [key for key, _ in outputs] == [output_key] * case.good_outputs
    if case.stage in ("harness", "harness-exported"):
        (result,) = [HarnessResult.from_json(v) for _, v in outputs]
        assert result.status == "setup_error" and "unreadable task" in (result.error or "")
    topics = {topic for topic, _, _ in sink.sent}
    assert topics <= {case.topic.dlq_name, LEDGER.name, stage.output.name if stage.output else ""}


# --- on the embedded broker: a real worker, committed offsets -------------------------------

# stages whose topics do not feed one another: each input gets only the records sent here
BROKER_STAGES = ("enrich", "extract", "score", "harness", "harness-exported")


def worker_environment(world: World) -> dict[str, str]:
    """``world.settings_values()`` as ``SWE_STREAM_<SECTION>_<FIELD>`` variables."""
    env: dict[str, str] = {}
    for section, values in world.settings_values().items():
        if not isinstance(values, dict):
            env[f"SWE_STREAM_{section.upper()}"] = str(values)
            continue
        for name, value in values.items():
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"SWE_STREAM_{section}_{name}".upper()] = str(value)
    return env


@dataclass
class Sent:
    """What was produced to one input topic, in order: (offset, key, value, expected error
    type or None for the good record)."""

    case: Case
    records: list[tuple[int, bytes, bytes | None, str | None]] = field(default_factory=list)
    failed_prs: list[tuple[str, int]] = field(default_factory=list)  # the logic poisons' PRs

    @property
    def poison(self) -> list[tuple[int, bytes, bytes | None, str | None]]:
        return [r for r in self.records if r[3] is not None]

    @property
    def good_offset(self) -> int:
        (offset,) = [r[0] for r in self.records if r[3] is None]
        return offset


async def produce_all(bootstrap: str, world: World) -> dict[str, Sent]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    sent: dict[str, Sent] = {}
    try:
        for case in CASES:
            if case.stage not in BROKER_STAGES:
                continue
            good, poisons = case.arrange(world)
            batch = [(key_of(good), value, "ValidationError") for value in schema_poisons(good)]
            batch += [(key_of(p.record), p.record.to_json(), p.error_type) for p in poisons]
            batch.append((key_of(good), good.to_json(), None))
            entry = sent[case.topic.name] = Sent(case)
            entry.failed_prs = [
                (p.record.repo, p.record.number)  # type: ignore[attr-defined]
                for p in poisons
                if hasattr(p.record, "repo")
            ]
            for key, value, error in batch:
                meta = await producer.send_and_wait(
                    case.topic.name, value, key, partition=PARTITION
                )
                entry.records.append((meta.offset, key, value, error))
    finally:
        await producer.stop()
    return sent


def missing_letters(bootstrap: str, entry: Sent, log: Path) -> str:
    """Which poison records of ``entry`` have no dead letter, and what the worker warned of."""
    letters = asyncio.run(read_values(bootstrap, entry.case.topic.dlq_name))
    found = {DeadLetter.from_json(v).source_offset for _, v in letters}
    missing = [(o, k, e) for o, k, _, e in entry.poison if o not in found]
    warned = [line for line in log.read_text().splitlines() if "WARNING" in line or "ERROR" in line]
    return (
        f"{entry.case.topic.dlq_name}: no dead letter for (offset, key, error) {missing}; "
        "the worker's warnings and errors:\n" + "\n".join(line[:300] for line in warned[-60:])
    )


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


async def wait_committed(
    bootstrap: str, group: str, topic: str, past: int, process: subprocess.Popen[bytes]
) -> int | None:
    """The group's committed offset on ``topic``'s poisoned partition, once it is ``past``."""
    deadline = time.monotonic() + 90
    committed: int | None = None
    while time.monotonic() < deadline:
        committed = (await committed_offsets(bootstrap, group, topic)).get(PARTITION)
        if committed is not None and committed >= past:
            return committed
        assert process.poll() is None, "the worker died"
        await asyncio.sleep(1)
    return committed


async def read_values(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    return [(r.key, r.value) async for r in read_topic_to_end(bootstrap, topic)]


@pytest.mark.integration
def test_a_worker_dead_letters_poison_commits_past_it_and_goes_on(
    bootstrap: str, tmp_path: Path, fixtures_dir: Path, enriched_235: EnrichedPullRequest
) -> None:
    needs = frozenset({"github", "llm", "git"})
    with world_for(needs, tmp_path, fixtures_dir, enriched_235) as world:
        group = f"poison-{os.getpid()}-{time.monotonic_ns()}"
        log, metrics_port = tmp_path / "worker.log", free_port()
        command = [
            SWE_STREAM, "worker", "--bootstrap", bootstrap, "--stages", ",".join(BROKER_STAGES),
            "--app-id", group, "--web-port", str(free_port()), "--metrics-port", str(metrics_port),
        ]  # fmt: skip
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=worker_env() | worker_environment(world),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for_metrics(metrics_port, process, log)
            sent = asyncio.run(produce_all(bootstrap, world))
            assert len(sent) == len(BROKER_STAGES)
            # a PR failing in two stages would be skipped by whichever sees it second
            failing = [pr for entry in sent.values() for pr in entry.failed_prs]
            assert len(failing) == len(set(failing)), failing

            # the good record after the poison: processed, its output written
            outputs: dict[str, list[bytes]] = {}
            expected_outputs = {"pr.enriched": 1, "pr.patches": 1, "tasks.scored": 1}
            expected_outputs[HARNESS_RESULTS.name] = 2  # harness and harness-exported
            for topic, count in expected_outputs.items():
                outputs[topic] = asyncio.run(wait_for(bootstrap, topic, count, process, log))

            # every poison record in its topic's DLQ: original bytes, error, offset
            for topic, entry in sent.items():
                try:
                    values = asyncio.run(
                        wait_for(
                            bootstrap, entry.case.topic.dlq_name, len(entry.poison), process, log
                        )
                    )
                except pytest.fail.Exception:
                    pytest.fail(missing_letters(bootstrap, entry, log))
                letters = sorted(
                    (DeadLetter.from_json(v) for v in values), key=lambda x: x.source_offset
                )
                assert [x.source_offset for x in letters] == [r[0] for r in entry.poison]
                for letter, (offset, key, value, error) in zip(letters, entry.poison, strict=True):
                    check_kept(letter, value)
                    assert (letter.key or "").encode() == key
                    assert (letter.source_topic, letter.source_partition) == (topic, PARTITION)
                    assert letter.error_type == error, (topic, offset, letter.error)
                    assert letter.stage == entry.case.stage

            # the group's committed offsets moved past the poison (to the end of each input)
            committed = {
                topic: asyncio.run(
                    wait_committed(bootstrap, group, topic, entry.good_offset + 1, process)
                )
                for topic, entry in sent.items()
            }
            assert committed == {topic: e.good_offset + 1 for topic, e in sent.items()}

            exposition = scrape(metrics_port)
            for topic, entry in sent.items():
                stage = entry.case.stage
                schema = sum(1 for r in entry.poison if r[3] == "ValidationError")
                logic = len(entry.poison) - schema
                failed = "swe_stream_stage_records_failed_total"
                assert metric(exposition, failed, stage=stage, error="schema") == schema
                assert metric(exposition, failed, stage=stage, error="logic") == logic
                assert metric(exposition, "swe_stream_dlq_records_total", topic=topic) == len(
                    entry.poison
                )
                assert metric(exposition, "swe_stream_stage_records_in_total", stage=stage) == len(
                    entry.records
                )

            # the ledger: every logic poison's PR failed, the good PRs went on
            ledger = [
                LedgerEntry.from_json(v)
                for _, v in asyncio.run(read_values(bootstrap, LEDGER.name))
            ]
            statuses = {(e.repo, e.number, e.stage): e.status for e in ledger}
            for entry in sent.values():
                for repo, number in entry.failed_prs:
                    assert statuses[(repo, number, entry.case.stage)] == "failed"
            assert len(ledger) == sum(len(e.failed_prs) for e in sent.values()) + 3
            assert statuses[(SLIM_235, 235, "enrich")] == "accepted"
            assert statuses[("swe-stream-test/calc", 1, "extract")] == "accepted"
            assert statuses[("django/django", 16255, "score")] == "accepted"

            # nothing arrives twice: the DLQs hold exactly the poison, once each
            time.sleep(2)
            for topic, entry in sent.items():
                values = asyncio.run(read_values(bootstrap, entry.case.topic.dlq_name))
                assert len(values) == len(entry.poison), topic
            for topic, count in expected_outputs.items():
                assert len(asyncio.run(read_values(bootstrap, topic))) == count, topic
            assert process.poll() is None, "the worker died"
            results = [HarnessResult.from_json(v) for v in outputs[HARNESS_RESULTS.name]]
            assert sorted(r.status for r in results) == ["setup_error", "setup_error"]
        finally:
            if process.poll() is None:
                assert stop(process) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "crashed" not in text.lower(), text[-3000:]
