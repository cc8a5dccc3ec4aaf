"""Records of the ingest stage: raw pull request events and the GH Archive hour ledger."""

from __future__ import annotations

import base64
from typing import Any, ClassVar, Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt, model_validator

from schemas.base import (
    ContentSha256,
    GHArchiveHour,
    GitSha,
    NonEmptyStr,
    PullRequestRecord,
    Record,
)

__all__ = ["HourLedgerEntry", "IngestDeadLetter", "PayloadFormat", "RawPullRequestEvent"]

PayloadFormat = Literal["full", "slim"]


class RawPullRequestEvent(PullRequestRecord):
    """gharchive.pull-request-events: one PullRequestEvent from a GH Archive hour, as recorded."""

    SCHEMA_VERSION: ClassVar[int] = 1

    event_id: NonEmptyStr
    created_at: AwareDatetime
    action: NonEmptyStr = Field(description="opened, closed, reopened, merged (slim), ...")
    payload_format: PayloadFormat
    merged: bool | None = Field(description="None when the payload is slim (merge unknown).")
    actor_login: str
    base_ref: str
    base_sha: GitSha
    head_ref: str
    head_sha: GitSha
    head_repo: str | None = None
    org_login: str | None = None
    pull_request: dict[str, Any] | None = Field(
        default=None, description="The whole PR object when the payload is full."
    )
    gharchive_hour: GHArchiveHour

    @model_validator(mode="after")
    def _check_format(self) -> RawPullRequestEvent:
        if self.payload_format == "slim" and self.merged is not None:
            raise ValueError("a slim payload carries no merged flag: merged must be null")
        if self.payload_format == "full" and self.pull_request is None:
            raise ValueError("a full payload must carry the pull_request object")
        return self


class HourLedgerEntry(Record):
    """gharchive.hours (compacted, key = hour): the outcome of ingesting one GH Archive hour."""

    SCHEMA_VERSION: ClassVar[int] = 1

    hour: GHArchiveHour
    status: Literal["done", "partial", "failed"]
    events_total: NonNegativeInt
    pull_request_events: NonNegativeInt
    bytes: NonNegativeInt
    source_url: NonEmptyStr
    sha256: ContentSha256 | None = Field(
        default=None, description="sha256 of the compressed file as read (None if never read)."
    )
    error: str | None = None
    started_at: AwareDatetime
    finished_at: AwareDatetime
    attempts: PositiveInt = 1

    @property
    def key(self) -> str:
        """The Kafka key: the hour name."""
        return self.hour

    @model_validator(mode="after")
    def _check_consistency(self) -> HourLedgerEntry:
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is earlier than started_at")
        if self.pull_request_events > self.events_total:
            raise ValueError("pull_request_events exceeds events_total")
        if self.status != "done" and not self.error:
            raise ValueError(f"status {self.status!r} requires an error message")
        return self


class IngestDeadLetter(Record):
    """gharchive.dlq (key = hour): a sample of a GH Archive line ingestion could not use."""

    SCHEMA_VERSION: ClassVar[int] = 1

    hour: GHArchiveHour
    source_url: NonEmptyStr
    line_number: NonNegativeInt = Field(description="1-based line; 0 for the file as a whole.")
    reason: NonEmptyStr
    error: str
    sample_b64: str = Field(description="The first bytes of the offending line, base64.")
    failed_at: AwareDatetime

    @property
    def key(self) -> str:
        """The Kafka key: the hour name."""
        return self.hour

    def sample(self) -> bytes:
        """The offending line's first bytes."""
        return base64.b64decode(self.sample_b64)
