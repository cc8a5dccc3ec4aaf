"""The dead-letter record written to every ``<topic>.dlq``."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Annotated, ClassVar, Self

from pydantic import AfterValidator, AwareDatetime, NonNegativeInt, PositiveInt

from schemas.base import NonEmptyStr, Record

__all__ = ["DeadLetter"]


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
