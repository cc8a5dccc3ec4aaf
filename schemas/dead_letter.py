"""The dead-letter record written to every ``<topic>.dlq``, and the mark ``dlq replay`` leaves
beside a letter it sent back."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Annotated, ClassVar, Self

from pydantic import AfterValidator, AwareDatetime, Field, NonNegativeInt, PositiveInt

from schemas.base import NonEmptyStr, Record

__all__ = ["DeadLetter", "DeadLetterReplay"]


def _check_base64(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"value_b64 is not valid base64: {exc}") from None
    return value


Base64Str = Annotated[str, AfterValidator(_check_base64)]


class DeadLetter(Record):
    """<topic>.dlq: a record a stage could not handle, with its original bytes and the error."""

    SCHEMA_VERSION: ClassVar[int] = 1

    source_topic: NonEmptyStr
    source_partition: NonNegativeInt
    source_offset: NonNegativeInt
    key: str | None = None
    value_b64: Base64Str
    error_type: NonEmptyStr
    error: str
    stage: NonEmptyStr
    attempts: PositiveInt = 1
    failed_at: AwareDatetime

    def original_value(self) -> bytes:
        """The original record value, byte for byte."""
        return base64.b64decode(self.value_b64)

    @classmethod
    def capture(
        cls,
        *,
        source_topic: str,
        source_partition: int,
        source_offset: int,
        key: str | None,
        value: bytes,
        exc: BaseException,
        stage: str,
        pipeline_version: int,
        attempts: int = 1,
        failed_at: datetime | None = None,
    ) -> Self:
        """Build the dead letter for ``value`` that failed with ``exc``."""
        return cls(
            pipeline_version=pipeline_version,
            source_topic=source_topic,
            source_partition=source_partition,
            source_offset=source_offset,
            key=key,
            value_b64=base64.b64encode(value).decode("ascii"),
            error_type=type(exc).__qualname__,
            error=str(exc),
            stage=stage,
            attempts=attempts,
            failed_at=failed_at or datetime.now(UTC),
        )


class DeadLetterReplay(Record):
    """<topic>.dlq: the mark of a dead letter that `dlq replay` sent back (not a letter)."""

    SCHEMA_VERSION: ClassVar[int] = 1

    replay_of: str = Field(
        pattern=r"^[0-9]+:[0-9]+$",
        description="the replayed letter's partition:offset in this DLQ topic",
    )
    source_topic: NonEmptyStr
    key: str | None = None
    attempt: PositiveInt = Field(description="the attempt the record was sent back as")
    sent_partition: NonNegativeInt = Field(description="where the record went in source_topic")
    sent_offset: NonNegativeInt
    replayed_at: AwareDatetime

    @property
    def position(self) -> tuple[int, int]:
        """The replayed letter's (partition, offset)."""
        partition, offset = self.replay_of.split(":")
        return int(partition), int(offset)
