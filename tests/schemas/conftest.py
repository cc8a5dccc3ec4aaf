"""Realistic example records for every topic model, built from the shared real fixtures."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from schemas import (
    AgentSpec,
    ChangedFile,
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
    LinkedIssue,
    PatchSet,
    PullRequestCandidate,
    RawPullRequestEvent,
    Record,
    RememberedRecipe,
    RepositoryInfo,
    ScoredTask,
    ValidatedTask,
    ValidationReport,
)

PIPELINE_VERSION = 3
HOUR = "2015-01-01-0"


def raw_event_from_gharchive(event: dict[str, Any], hour: str) -> RawPullRequestEvent:
    """Map one GH Archive PullRequestEvent (full or slim payload) onto the raw-event record."""
    payload = event["payload"]
    pr = payload["pull_request"]
    full = "merged" in pr
    head_repo = pr["head"].get("repo") or None
    return RawPullRequestEvent(
        pipeline_version=PIPELINE_VERSION,
        event_id=event["id"],
        created_at=event["created_at"],
        repo=event["repo"]["name"],
        number=payload["number"],
        action=payload["action"],
        payload_format="full" if full else "slim",
        merged=pr["merged"] if full else None,
        actor_login=event["actor"]["login"],
        base_ref=pr["base"]["ref"],
        base_sha=pr["base"]["sha"],
        head_ref=pr["head"]["ref"],
        head_sha=pr["head"]["sha"],
        head_repo=(head_repo.get("full_name") or head_repo.get("name")) if head_repo else None,
        org_login=(event.get("org") or {}).get("login"),
        pull_request=pr if full else None,
        gharchive_hour=hour,
    )


def pull_request_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [e for e in map(json.loads, lines) if e["type"] == "PullRequestEvent"]


@pytest.fixture(scope="session")
def swebench_rows(fixtures_dir: Path) -> list[dict[str, Any]]:
    """The 10 real SWE-bench rows (Lite + dev)."""
    rows: list[dict[str, Any]] = []
    for name in ("swe-bench-lite-5.json", "swe-bench-dev-5.json"):
        rows.extend(json.loads((fixtures_dir / "swebench" / name).read_text(encoding="utf-8")))
    return rows


@pytest.fixture(scope="session")
def gharchive_pr_events(fixtures_dir: Path) -> list[dict[str, Any]]:
    """Every PullRequestEvent of the real hour 2015-01-01-0 (full payloads)."""
    return pull_request_events(fixtures_dir / "gharchive" / f"{HOUR}.json.gz")


@pytest.fixture(scope="session")
def examples(
    fixtures_dir: Path,
    swebench_rows: list[dict[str, Any]],
    gharchive_pr_events: list[dict[str, Any]],
) -> dict[type[Record], Record]:
    """One realistic instance per topic model."""
    hour_path = fixtures_dir / "gharchive" / f"{HOUR}.json.gz"
    with gzip.open(hour_path, "rb") as fh:
        first_line = fh.readline()
        events_total = 1 + sum(1 for _ in fh)

    merged_event = next(
        e
        for e in gharchive_pr_events
        if e["payload"]["action"] == "closed" and e["payload"]["pull_request"]["merged"]
    )
    raw = raw_event_from_gharchive(merged_event, HOUR)
    pr = merged_event["payload"]["pull_request"]
    started = datetime(2026, 11, 22, 4, 0, 0, tzinfo=UTC)

    hour_entry = HourLedgerEntry(
        pipeline_version=PIPELINE_VERSION,
        hour=HOUR,
        status="done",
        events_total=events_total,
        pull_request_events=len(gharchive_pr_events),
        bytes=hour_path.stat().st_size,
        source_url=f"https://data.gharchive.org/{HOUR}.json.gz",
        sha256=hashlib.sha256(hour_path.read_bytes()).hexdigest(),
        started_at=started,
        finished_at=started + timedelta(seconds=2.5),
    )
    candidate = PullRequestCandidate(
        pipeline_version=PIPELINE_VERSION,
        repo=raw.repo,
        number=raw.number,
        event_id=raw.event_id,
        payload_format=raw.payload_format,
        merged=raw.merged,
        base_sha=raw.base_sha,
        head_sha=raw.head_sha,
        merge_commit_sha=pr["merge_commit_sha"],
        actor_login=raw.actor_login,
        org_login=raw.org_login,
        pull_request=raw.pull_request,
        created_at=raw.created_at,
    )

    decoded = fixtures_dir / "github_api" / "decoded"
    api_pr = json.loads((decoded / "pulls_235.json").read_text(encoding="utf-8"))
    api_files = json.loads((decoded / "pulls_235_files.json").read_text(encoding="utf-8"))
    api_repo = json.loads(
        (decoded / "repos_sigmavirus24_github3.py.json").read_text(encoding="utf-8")
    )
    enriched = EnrichedPullRequest(
        pipeline_version=PIPELINE_VERSION,
        repo=api_repo["full_name"],
        number=api_pr["number"],
        title=api_pr["title"],
        body=api_pr["body"],
        merged_at=api_pr["merged_at"],
        merge_commit_sha=api_pr["merge_commit_sha"],
        base_sha=api_pr["base"]["sha"],
        base_ref=api_pr["base"]["ref"],
        additions=api_pr["additions"],
        deletions=api_pr["deletions"],
        changed_files=api_pr["changed_files"],
        files=[
            ChangedFile(
                filename=f["filename"],
                status=f["status"],
                additions=f["additions"],
                deletions=f["deletions"],
                changes=f["changes"],
                patch=f.get("patch"),
            )
            for f in api_files
        ],
        repo_info=RepositoryInfo(
            stars=api_repo["stargazers_count"],
            language=api_repo["language"],
            license=(api_repo.get("license") or {}).get("spdx_id"),
            archived=api_repo["archived"],
            fork=api_repo["fork"],
            default_branch=api_repo["default_branch"],
        ),
        linked_issues=[
            LinkedIssue(repo=api_repo["full_name"], number=234, title="Release assets", body=None)
        ],
        problem_statement=api_pr["title"] + "\n\n" + api_pr["body"],
        hints_text="",
        created_at=api_pr["created_at"],
        author_login=api_pr["user"]["login"],
    )
    classified = ClassifiedPullRequest(
        pipeline_version=PIPELINE_VERSION,
        repo=enriched.repo,
        number=enriched.number,
        pull_request=enriched,
        classification="easy",
        score=0.25,
        reasoning="One new attribute and its unit test.",
        classified_by="heuristic",
    )

    row = swebench_rows[0]  # django__django-16255
    number = int(row["instance_id"].rsplit("-", 1)[1])
    test_files = sorted(
        line.split(" b/", 1)[1]
        for line in row["test_patch"].splitlines()
        if line.startswith("diff --git ")
    )
    source_files = sorted(
        line.split(" b/", 1)[1]
        for line in row["patch"].splitlines()
        if line.startswith("diff --git ")
    )
    patch_set = PatchSet(
        pipeline_version=PIPELINE_VERSION,
        repo=row["repo"],
        number=number,
        instance_id=row["instance_id"],
        base_commit=row["base_commit"],
        patch=row["patch"],
        test_patch=row["test_patch"],
        environment_setup_commit=row["environment_setup_commit"],
        version=row["version"],
        language="Python",
        problem_statement=row["problem_statement"],
        hints_text=row["hints_text"],
        created_at=row["created_at"],
        test_files=test_files,
        source_files=source_files,
        classification="medium",
        score=0.5,
    )
    report = ValidationReport(
        image="swe-stream/django__django-16255:latest",
        runs=3,
        duration_seconds=41.7,
        before={
            **{t: "failed" for t in row["FAIL_TO_PASS"]},
            **{t: "passed" for t in row["PASS_TO_PASS"]},
        },
        after={t: "passed" for t in row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]},
    )
    validated = ValidatedTask(
        pipeline_version=PIPELINE_VERSION,
        number=number,
        **row,
        validation=report,
        tests_generated=False,
        classification="medium",
        difficulty_score=0.5,
    )
    scored = ScoredTask(
        **validated.model_dump(exclude={"schema_version"}),
        quality_score=0.82,
        quality_reasoning="Clear issue, focused fix, deterministic failing test.",
        accepted=True,
    )
    line = json.dumps(scored.to_swebench(), sort_keys=True).encode()
    exported = ExportedTask(
        pipeline_version=PIPELINE_VERSION,
        repo=scored.repo,
        number=scored.number,
        instance_id=scored.instance_id,
        export_dir=f"/data/tasks/{scored.instance_id}",
        dataset_path="/data/dataset.jsonl",
        exported_at=started + timedelta(minutes=5),
        content_sha256=hashlib.sha256(line).hexdigest(),
    )
    request = HarnessRequest(
        pipeline_version=PIPELINE_VERSION,
        request_id="req-0001",
        instance_id=scored.instance_id,
        agent=AgentSpec(
            name="mini-swe-agent",
            command="mini --task /task/problem.md",
            image="swe-stream/agent-mini:1",
            env={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
        ),
    )
    result = HarnessResult(
        pipeline_version=PIPELINE_VERSION,
        request_id=request.request_id,
        instance_id=request.instance_id,
        repo=scored.repo,
        agent_name=request.agent.name,
        status="resolved",
        agent_time_seconds=312.4,
        test_time_seconds=38.9,
        fail_to_pass={t: "passed" for t in row["FAIL_TO_PASS"]},
        pass_to_pass={t: "passed" for t in row["PASS_TO_PASS"]},
        finished_at=started + timedelta(minutes=12),
    )
    ledger = LedgerEntry(
        pipeline_version=PIPELINE_VERSION,
        repo=raw.repo,
        number=raw.number,
        stage="enrich",
        status="rejected",
        reason="no_linked_issue",
        attempts=2,
        first_seen_at=raw.created_at,
        updated_at=started,
    )
    recipe = RememberedRecipe(
        pipeline_version=PIPELINE_VERSION,
        repo=row["repo"],
        fingerprint="0123456789abcdef",
        source="agent",
        python="3.11",
        system_packages=["gettext"],
        pre_test=["make -C locale"],
        instance_id=row["instance_id"],
        base_commit=row["base_commit"],
        tests=len(row["PASS_TO_PASS"]) + len(row["FAIL_TO_PASS"]),
        verified_at=started,
        notes=["setup agent: the translations are compiled before the tests"],
    )
    dead = DeadLetter.capture(
        source_topic="gharchive.pull-request-events",
        source_partition=7,
        source_offset=123456,
        key=raw.key,
        value=first_line[:50] + b"\xff\xfe",
        exc=ValueError("Expecting ',' delimiter: line 1 column 51"),
        stage="prefilter",
        pipeline_version=PIPELINE_VERSION,
        attempts=3,
        failed_at=started,
    )
    replayed = DeadLetterReplay(
        pipeline_version=PIPELINE_VERSION,
        replay_of="2:17",
        source_topic="gharchive.pull-request-events",
        key=raw.key,
        attempt=4,
        sent_partition=7,
        sent_offset=123999,
        replayed_at=started,
    )
    ingest_dead = IngestDeadLetter(
        pipeline_version=PIPELINE_VERSION,
        hour=HOUR,
        source_url=f"https://data.gharchive.org/{HOUR}.json.gz",
        line_number=42,
        reason="malformed-json",
        error="unexpected end of data: line 1 column 80",
        sample_b64=base64.b64encode(first_line[:80]).decode(),
        failed_at=started,
    )
    built: list[Record] = [
        recipe,
        raw,
        hour_entry,
        candidate,
        enriched,
        classified,
        patch_set,
        validated,
        scored,
        exported,
        request,
        result,
        ledger,
        dead,
        replayed,
        ingest_dead,
    ]
    return {type(record): record for record in built}
