"""The month of a task (UTC, whatever zone its created_at names) and the --since/--until
window (inclusive start, exclusive end); a created_at with no month is an error."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from streams.evaluation.months import in_window, parse_time, task_month

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("created_at", "month"),
    [
        ("2026-01-15T10:00:00Z", "2026_01"),
        ("2022-11-04 13:49:40.000+00:00", "2022_11"),  # the Hugging Face SWE-bench's form
        ("2026-01-31T23:30:00-02:00", "2026_02"),  # 01:30 UTC on the 1st of February
        ("2026-03-01T00:30:00+01:00", "2026_02"),  # 23:30 UTC on the 28th of February
        ("2025-12-31T23:59:59Z", "2025_12"),
    ],
)
def test_task_month_is_the_utc_month(created_at: str, month: str) -> None:
    assert task_month(created_at) == month


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("", "is not an ISO time"),
        ("yesterday", "is not an ISO time"),
        ("2026-13-01T00:00:00Z", "is not an ISO time"),
        ("15/01/2026", "is not an ISO time"),
        ("2026-07-04T12:00:00", "names no time zone"),  # the harness counts it under no month
    ],
)
def test_a_created_at_without_a_month_is_named(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"created_at {bad!r} {why}")):
        task_month(bad)
    with pytest.raises(ValueError, match=why):
        in_window(bad, None, None)


def test_the_window_takes_its_start_and_leaves_out_its_end() -> None:
    since, until = parse_time("2026-01-01"), parse_time("2026-02-01")
    assert since == datetime(2026, 1, 1, tzinfo=UTC)
    assert in_window("2026-01-01T00:00:00Z", since, until)
    assert not in_window("2025-12-31T23:59:59Z", since, until)
    assert not in_window("2026-02-01T00:00:00Z", since, until)
    assert in_window("2026-02-01T00:30:00+01:00", since, until)  # 23:30 UTC on Jan 31
    assert in_window("1999-01-01T00:00:00Z", None, until)
    assert in_window("2999-01-01T00:00:00Z", since, None)
    with pytest.raises(ValueError, match="ISO"):
        parse_time("next week")
