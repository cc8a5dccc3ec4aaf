"""The processed-PR ledger record."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import AwareDatetime, Field, PositiveInt, model_validator

from schemas.base import NonEmptyStr, PullRequestRecord, ledger_key

__all__ = ["FINAL_STATUSES", "LedgerEntry", "LedgerStatus"]

LedgerStatus = Literal["accepted", "rejected", "failed", "exported", "in_progress", "ignored"]
"""``ignored``: an event of the PR was seen but did not qualify (e.g. ``opened``, not merged
yet); unlike ``rejected`` it is not final, so a later merge event is still processed."""

FINAL_STATUSES: frozenset[str] = frozenset({"rejected", "failed", "exported"})
"""Statuses after which no stage works on the PR again (``accepted`` moves on to later stages)."""


class LedgerEntry(PullRequestRecord):
    """swe.ledger (compacted, key owner/repo#number@vN): one PR's latest state in version N."""

    # Each version keeps its own entry, so a replay under version N+1 never overwrites what
    # version N decided (nor makes N redo the PR).

    SCHEMA_VERSION: ClassVar[int] = 1

    stage: NonEmptyStr
    status: LedgerStatus
    reason: str | None = None
    # what the reason does not say: the failed step and its log tail, the statuses that
    # showed no FAIL_TO_PASS, ... (for people; metrics and filters use ``reason``)
    detail: str | None = Field(None, max_length=4000)
    attempts: PositiveInt = 1
    first_seen_at: AwareDatetime
    updated_at: AwareDatetime

    @model_validator(mode="after")
    def _check_times(self) -> LedgerEntry:
        if self.updated_at < self.first_seen_at:
            raise ValueError("updated_at is earlier than first_seen_at")
        return self

    @property
    def ledger_key(self) -> str:
        """The ``swe.ledger`` key: ``owner/repo#number@v<pipeline_version>``."""
        return ledger_key(self.repo, self.number, self.pipeline_version)

    def is_final(self) -> bool:
        """True once the PR is done with: rejected, failed or exported."""
        return self.status in FINAL_STATUSES
