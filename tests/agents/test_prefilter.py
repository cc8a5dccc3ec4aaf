"""prefilter: the rules on the real fixture hours, the ledger interplay, and the stage in a
worker on the embedded broker over hour 0."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.bots import is_bot
from agents.prefilter import (
    BOT,
    CLOSED_UNMERGED,
    NOT_CLOSED,
    NOT_ORG,
    REPO_DENIED,
    REPO_NOT_ALLOWED,
    Prefilter,
    PrefilterRules,
    prefilter_event,
    repo_matches,
)
from schemas import LedgerEntry, PullRequestCandidate, RawPullRequestEvent
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import CANDIDATES, LEDGER, PULL_REQUEST_EVENTS
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Outcome, StageRunner
from tests.agents.conftest import ingest_file, start_stage_worker, wait_for
from tests.workers import stop, wait_for_metrics

HOUR0 = "2015-01-01-0"
Events = Callable[[str], list[RawPullRequestEvent]]
Json = Callable[[str], list[dict[str, Any]]]


def run(events: list[RawPullRequestEvent], rules: PrefilterRules) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    for event in events:
        result = prefilter_event(event, rules, pipeline_version=1)
        outcomes["candidate" if isinstance(result, PullRequestCandidate) else result] += 1
    return outcomes


@pytest.mark.unit
def test_hour0_keeps_the_merged_pull_requests_of_organisations(
    hour_events: Events, hour_json: Json
) -> None:
    raw = hour_json(HOUR0)
    merged = [
        e
        for e in raw
        if e["payload"]["action"] == "closed" and e["payload"]["pull_request"]["merged"]
    ]
    in_org = [e for e in merged if e.get("org")]
    assert (len(raw), len(merged), len(in_org)) == (315, 126, 77)  # fixtures README

    outcomes = run(hour_events(HOUR0), PrefilterRules(org_only=True))
    assert outcomes == {
        "candidate": 77,
        NOT_ORG: 126 - 77,
        NOT_CLOSED: sum(1 for e in raw if e["payload"]["action"] != "closed"),
        CLOSED_UNMERGED: 151 - 126,
    }
    assert sum(outcomes.values()) == 315
    assert run(hour_events(HOUR0), PrefilterRules(org_only=False))["candidate"] == 126


@pytest.mark.unit
def test_candidates_carry_what_enrich_needs_from_a_full_payload(hour_events: Events) -> None:
    for event in hour_events(HOUR0):
        result = prefilter_event(event, PrefilterRules(org_only=False), pipeline_version=4)
        if isinstance(result, PullRequestCandidate):
            assert result.key == event.key and result.merged is True
            assert result.pull_request == event.pull_request
            assert result.merge_commit_sha == event.pull_request["merge_commit_sha"]  # type: ignore[index]
            assert (result.base_sha, result.head_sha) == (event.base_sha, event.head_sha)
            assert result.pipeline_version == 4


@pytest.mark.unit
def test_slim_payloads_pass_closed_as_maybe_merged(hour_events: Events, hour_json: Json) -> None:
    raw = hour_json(f"{HOUR0}.slim")
    closed_in_org = sum(
        1 for e in raw if e["payload"]["action"] in ("closed", "merged") and e.get("org")
    )
    candidates = [
        r
        for e in hour_events(f"{HOUR0}.slim")
        if isinstance(r := prefilter_event(e, PrefilterRules(), 1), PullRequestCandidate)
    ]
    assert len(candidates) == closed_in_org
    assert all(c.merged is None and c.pull_request is None for c in candidates)
    merged = hour_events(f"{HOUR0}.slim")[0].model_copy(update={"action": "merged"})
    result = prefilter_event(merged, PrefilterRules(org_only=False), 1)
    assert isinstance(result, PullRequestCandidate) and result.merged is True


@pytest.mark.unit
def test_bots_are_dropped_by_suffix_or_list_but_not_by_name_alone(hour_events: Events) -> None:
    assert is_bot("dependabot[bot]") and is_bot("Renovate[BOT]")
    assert not is_bot("robot-dreams")  # a real hour-1 author whose name merely contains "bot"
    assert is_bot("robot-dreams", frozenset({"robot-dreams"}))
    rules = PrefilterRules(org_only=False, bots=frozenset({"greenkeeperio-bot"}))
    merged = next(e for e in hour_events("2015-01-01-1") if e.merged)
    assert isinstance(prefilter_event(merged, rules, 1), PullRequestCandidate)
    for login in ("dependabot[bot]", "greenkeeperio-bot"):
        pr = dict(merged.pull_request or {}, user={"login": login})
        assert prefilter_event(merged.model_copy(update={"pull_request": pr}), rules, 1) == BOT


@pytest.mark.unit
def test_allow_and_deny_lists(hour_events: Events) -> None:
    merged = next(e for e in hour_events(HOUR0) if e.merged)
    owner = merged.repo.split("/")[0]
    assert repo_matches(merged.repo, (f"{owner.upper()}/*",))
    assert (
        prefilter_event(
            merged, PrefilterRules(org_only=False, deny_repos=(f"{owner.lower()}/*",)), 1
        )
        == REPO_DENIED
    )
    assert (
        prefilter_event(merged, PrefilterRules(org_only=False, allow_repos=("octo/only",)), 1)
        == REPO_NOT_ALLOWED
    )
    allowed = PrefilterRules(org_only=False, allow_repos=(merged.repo.lower(),))
    assert isinstance(prefilter_event(merged, allowed, 1), PullRequestCandidate)


@pytest.mark.unit
async def test_ledger_holds_ignored_accepted_and_is_not_overwritten_by_a_late_event(
    hour_events: Events,
) -> None:
    events = hour_events(HOUR0)
    merged = next(e for e in events if e.merged and e.org_login)
    opened = merged.model_copy(update={"action": "opened", "merged": False})
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), pipeline_version=1)
    prefilter = Prefilter(PrefilterRules(), ledger)

    async def through_ledger(event: RawPullRequestEvent) -> Outcome:
        outcome = await prefilter(event)
        if outcome.status:
            await ledger.record(
                event.repo,
                event.number,
                stage="prefilter",
                status=outcome.status,
                reason=outcome.reason,
            )
        return outcome

    assert (await through_ledger(opened)).status == "ignored"
    assert (await through_ledger(merged)).status == "accepted"
    late = await through_ledger(opened)  # e.g. a redelivered "opened" after the merge
    assert late.status is None and not late.outputs
    entry = ledger.lookup(merged.repo, merged.number)
    assert entry is not None and entry.status == "accepted" and entry.attempts == 2


@pytest.mark.unit
async def test_a_pr_final_in_the_ledger_is_skipped_without_any_work(hour_events: Events) -> None:
    event = next(e for e in hour_events(HOUR0) if e.merged and not e.org_login)
    calls: list[RawPullRequestEvent] = []
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), pipeline_version=1)

    async def counting(e: RawPullRequestEvent) -> Outcome:
        calls.append(e)
        return await Prefilter(PrefilterRules(), ledger)(e)

    from streams.pipeline.stage import Stage

    runner: StageRunner[Any] = StageRunner(
        Stage("prefilter", PULL_REQUEST_EVENTS, CANDIDATES, counting), sink, 1, ledger
    )
    first = await runner.process(event.key.encode(), event.to_json(), 0, 0)
    assert first is not None and first.status == "rejected" and first.reason == NOT_ORG
    again = await runner.process(event.key.encode(), event.to_json(), 0, 1)
    assert again == Outcome() and len(calls) == 1
    assert len(sink.on(LEDGER.name)) == 1
    # a new pipeline version starts afresh
    v2 = Ledger(ledger.store, pipeline_version=2)
    assert v2.final_entry(event.repo, event.number) is None


async def read_values(bootstrap: str, topic: str) -> list[bytes]:
    return [r.value async for r in read_topic_to_end(bootstrap, topic)]


@pytest.mark.integration
def test_prefilter_worker_over_hour0_accounts_for_every_event(
    bootstrap: str, fixtures_dir: Path, hour_json: Json, tmp_path: Path
) -> None:
    source = fixtures_dir / "gharchive" / f"{HOUR0}.json.gz"
    ingest_file(bootstrap, source)
    log = tmp_path / "worker.log"
    process, metrics_port = start_stage_worker(bootstrap, "prefilter", log)
    try:
        wait_for_metrics(metrics_port, process, log)
        candidates = [
            PullRequestCandidate.from_json(v)
            for v in asyncio.run(wait_for(bootstrap, CANDIDATES.name, 77, process, log))
        ]
        ledger = [
            LedgerEntry.from_json(v)
            for v in asyncio.run(wait_for(bootstrap, LEDGER.name, 315, process, log))
        ]

        raw = hour_json(HOUR0)
        expected = {
            f"{e['repo']['name']}#{e['payload']['number']}"
            for e in raw
            if e["payload"]["action"] == "closed"
            and e["payload"]["pull_request"]["merged"]
            and e.get("org")
        }
        assert len(candidates) == 77 and {c.key for c in candidates} == expected
        assert len(ledger) == 315, "one ledger transition per PR event"
        by_status = Counter((e.status, e.reason) for e in ledger)
        assert by_status == {
            ("accepted", None): 77,
            ("rejected", NOT_ORG): 49,
            ("ignored", NOT_CLOSED): 164,
            ("ignored", CLOSED_UNMERGED): 25,
        }
        final = {e.key for e in ledger if e.is_final()}

        # the same hour again: PRs final in the ledger (the Faust table over swe.ledger) are skipped
        second_pass = datetime.now(UTC)
        ingest_file(bootstrap, source, "--force")
        repeats = sum(1 for e in raw if f"{e['repo']['name']}#{e['payload']['number']}" in final)
        deadline = time.monotonic() + 120
        skipped = 0.0
        while time.monotonic() < deadline:
            exposition = wait_for_metrics(metrics_port, process, log)
            skipped = sum(
                float(line.rsplit(" ", 1)[1])
                for line in exposition.splitlines()
                if line.startswith(
                    'swe_stream_stage_records_skipped_total{reason="already_final",stage="prefilter"}'
                )
            )
            if skipped >= repeats:
                break
            time.sleep(0.5)
        assert skipped == repeats
        time.sleep(2)  # anything the worker would (wrongly) still write for them
        after = [LedgerEntry.from_json(v) for v in asyncio.run(read_values(bootstrap, LEDGER.name))]
        written = [e for e in after if e.updated_at >= second_pass]
        assert written, "the second pass wrote nothing at all"
        assert not [e for e in written if e.key in final], "a final PR was processed again"
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()[-3000:]
