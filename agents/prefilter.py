"""Stage ``prefilter``: ``gharchive.pull-request-events`` -> ``pr.candidates``.

Free decisions first: everything here is read from the event itself, so a PR that can never
become a task costs no API call. Kept: merged PRs (full payload: ``closed`` + ``merged``; slim
payload: ``merged``, or ``closed`` as *maybe merged* for enrichment to confirm). Dropped, each
counted by reason and written to the ledger:

- ``not_closed`` / ``closed_unmerged`` -> status ``ignored``: not final, the PR may be merged
  by a later event (GH Archive carries ``opened`` long before ``closed``). Such an event does
  not overwrite a PR the ledger already holds in a further state (``superseded``, counted only).
- ``repo_denied`` / ``repo_not_allowed`` / ``not_org`` / ``bot`` -> status ``rejected``: final
  for this pipeline version (a new version, with new rules, starts afresh).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from agents.bots import is_bot
from schemas import PullRequestCandidate, RawPullRequestEvent
from streams.core import metrics
from streams.core.settings import PrefilterSettings
from streams.kafka.topics import CANDIDATES, PULL_REQUEST_EVENTS
from streams.pipeline.ledger import Ledger
from streams.pipeline.stage import Outcome, Stage

STAGE = "prefilter"

# not final: a later event of the same PR may still qualify
NOT_CLOSED = "not_closed"
CLOSED_UNMERGED = "closed_unmerged"
# final for this pipeline version
REPO_DENIED = "repo_denied"
REPO_NOT_ALLOWED = "repo_not_allowed"
NOT_ORG = "not_org"
BOT = "bot"


@dataclass(frozen=True)
class PrefilterRules:
    """What the prefilter keeps; built from ``PrefilterSettings``."""

    bots: frozenset[str] = frozenset()
    org_only: bool = True
    allow_repos: tuple[str, ...] = ()
    deny_repos: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: PrefilterSettings) -> PrefilterRules:
        return cls(
            bots=frozenset(login.lower() for login in settings.bots),
            org_only=settings.org_only,
            allow_repos=tuple(p.lower() for p in settings.allow_repos),
            deny_repos=tuple(p.lower() for p in settings.deny_repos),
        )


def repo_matches(repo: str, patterns: tuple[str, ...]) -> bool:
    """``owner/repo`` against ``owner/repo`` or glob patterns (``owner/*``), case-insensitive."""
    lowered = repo.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern.lower()) for pattern in patterns)


def merge_state(event: RawPullRequestEvent) -> tuple[bool | None, str | None]:
    """``(merged, drop_reason)``: merged is True, or None for a slim "maybe merged"."""
    if event.payload_format == "full":
        if event.action != "closed":
            return None, NOT_CLOSED
        return (True, None) if event.merged else (None, CLOSED_UNMERGED)
    if event.action == "merged":
        return True, None
    if event.action == "closed":
        return None, None  # slim payloads carry no merged flag: enrichment confirms
    return None, NOT_CLOSED


def author_login(event: RawPullRequestEvent) -> str:
    """The PR's author when the payload says (full), else the event's actor (slim)."""
    user = (event.pull_request or {}).get("user")
    if isinstance(user, dict) and isinstance(user.get("login"), str):
        return str(user["login"])
    return event.actor_login


def prefilter_event(
    event: RawPullRequestEvent, rules: PrefilterRules, pipeline_version: int
) -> PullRequestCandidate | str:
    """The candidate the event yields, or the reason it is dropped."""
    merged, reason = merge_state(event)
    if reason is not None:
        return reason
    if rules.deny_repos and repo_matches(event.repo, rules.deny_repos):
        return REPO_DENIED
    if rules.allow_repos and not repo_matches(event.repo, rules.allow_repos):
        return REPO_NOT_ALLOWED
    if rules.org_only and not event.org_login:
        return NOT_ORG
    if is_bot(author_login(event), rules.bots):
        return BOT
    pull_request: dict[str, Any] | None = event.pull_request
    merge_commit = pull_request.get("merge_commit_sha") if pull_request else None
    return PullRequestCandidate(
        pipeline_version=pipeline_version,
        repo=event.repo,
        number=event.number,
        event_id=event.event_id,
        payload_format=event.payload_format,
        merged=merged,
        base_sha=event.base_sha,
        head_sha=event.head_sha,
        merge_commit_sha=merge_commit if isinstance(merge_commit, str) else None,
        actor_login=event.actor_login,
        org_login=event.org_login,
        pull_request=pull_request,
        created_at=event.created_at,
    )


class Prefilter:
    """The stage's handler: rules plus the ledger (to avoid overwriting further states)."""

    def __init__(self, rules: PrefilterRules, ledger: Ledger):
        self.rules = rules
        self.ledger = ledger

    async def __call__(self, event: RawPullRequestEvent) -> Outcome:
        result = prefilter_event(event, self.rules, self.ledger.pipeline_version)
        if isinstance(result, PullRequestCandidate):
            return Outcome.accept(result)
        if result in (NOT_CLOSED, CLOSED_UNMERGED):
            known = self.ledger.lookup(event.repo, event.number)
            if (
                known is not None
                and known.pipeline_version == self.ledger.pipeline_version
                and known.status != "ignored"
            ):
                # e.g. a late "edited" after the merge was accepted: keep the further state
                metrics.STAGE_RECORDS_SKIPPED.labels(stage=STAGE, reason="superseded").inc()
                return Outcome()
            return Outcome.ignore(result)
        return Outcome.reject(result)


def prefilter_stage(settings: PrefilterSettings, ledger: Ledger) -> Stage[RawPullRequestEvent]:
    return Stage(
        STAGE,
        PULL_REQUEST_EVENTS,
        CANDIDATES,
        Prefilter(PrefilterRules.from_settings(settings), ledger),
        any_version=True,  # the raw log: every pipeline version reads what ingest published
        screening=True,  # most of an hour's PRs end here: their lines at DEBUG
    )
