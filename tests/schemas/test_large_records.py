"""A record too large for one Kafka message (about 1 MB) as JSON, such as a Go task whose runs
reported tens of thousands of subtests, is written gzipped and read back as it was; small
records stay plain JSON; a gzip that unpacks past the limit is refused, not unpacked."""

from __future__ import annotations

import gzip

import pytest

from schemas.base import COMPRESS_ABOVE_BYTES, GZIP_MAGIC, MAX_RECORD_BYTES, Record

pytestmark = pytest.mark.unit


class Statuses(Record):
    statuses: dict[str, str]


def test_a_large_record_is_gzipped_under_kafkas_limit_and_read_back() -> None:
    ids = {
        f"github.com/expr-lang/expr/test/fuzz/FuzzExpr/seed#{n}": "passed" for n in range(60_000)
    }
    record = Statuses(pipeline_version=1, statuses=ids)
    plain = record.model_dump_json().encode()
    assert len(plain) > 3_000_000
    data = record.to_json()
    assert data.startswith(GZIP_MAGIC) and len(data) < 1_000_000
    assert Statuses.from_json(data) == record


def test_a_small_record_stays_plain_json() -> None:
    record = Statuses(pipeline_version=1, statuses={"a/TestX": "failed"})
    data = record.to_json()
    assert data == record.model_dump_json().encode() and len(data) < COMPRESS_ABOVE_BYTES
    assert Statuses.from_json(data) == record


def test_a_gzip_bomb_is_refused() -> None:
    bomb = gzip.compress(b'{"statuses": {"' + b"x" * (MAX_RECORD_BYTES + 10) + b'": "passed"}}')
    with pytest.raises(ValueError, match="unpacks to more than"):
        Statuses.from_json(bomb)
