"""The shared Retry-After reader and backoff rule of the HTTP clients."""

from __future__ import annotations

import random
from email.utils import formatdate

import pytest

from streams.clients.retry import backoff_delay, retry_after

pytestmark = pytest.mark.unit

NOW = 1_700_000_000.0  # a fixed "now" (2023-11-14T22:13:20Z), whole seconds like HTTP dates


# ------------------------------------------------------------------------------ retry_after


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("120", 120.0), ("0", 0.0), (" 7 ", 7.0), ("1.5", 1.5), ("007", 7.0)],
)
def test_delta_seconds(value: str, seconds: float) -> None:
    assert retry_after(value, now=NOW) == seconds


def test_an_http_date_in_the_future_is_the_seconds_until_it() -> None:
    assert retry_after(formatdate(NOW + 90, usegmt=True), now=NOW) == 90.0
    # the obsolete RFC 850 and asctime forms are HTTP dates too
    assert retry_after("Tuesday, 14-Nov-23 22:15:00 GMT", now=NOW) == 100.0
    assert retry_after("Tue Nov 14 22:15:00 2023", now=NOW) == 100.0


def test_a_date_without_a_zone_is_gmt_not_local_time() -> None:
    # "-0000" makes parsedate_to_datetime return a naive datetime; .timestamp() on that would
    # read it as local time and be off by the machine's UTC offset
    assert retry_after("Tue, 14 Nov 2023 22:14:00 -0000", now=NOW) == 40.0


def test_an_http_date_in_the_past_means_now() -> None:
    assert retry_after(formatdate(NOW - 3600, usegmt=True), now=NOW) == 0.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=NOW) == 0.0


def test_the_date_is_measured_from_the_current_time_by_default() -> None:
    import time

    value = formatdate(time.time() + 60, usegmt=True)
    seconds = retry_after(value)
    assert seconds is not None and 58.0 <= seconds <= 60.0


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "soon",
        "1.5e9x",
        "1e3",
        "-5",
        "-0.5",
        "+5",
        "inf",
        "nan",
        "5 seconds",
        "Mon, 99 Foo 2023",
        "Thu, 01 Jan 10000 00:00:00 GMT",  # year out of range
        "1" * 400,  # digits beyond a float: not "wait forever"
        "\x00",
    ],
)
def test_missing_or_garbage_is_no_hint_and_never_raises(value: str | None) -> None:
    assert retry_after(value, now=NOW) is None


# ------------------------------------------------------------------------------ backoff_delay


@pytest.mark.parametrize("seed", range(20))
def test_backoff_never_exceeds_its_cap(seed: int) -> None:
    rng = random.Random(seed)
    for base, cap in [(1.0, 60.0), (0.05, 0.2), (2.0, 2.0), (0.3, 100.0), (1e-9, 1e-9)]:
        for attempt in range(1, 200):
            delay = backoff_delay(attempt, base, cap, rng)
            assert 0.0 <= delay <= cap, (seed, base, cap, attempt, delay)


def test_backoff_is_half_fixed_half_random_and_doubles() -> None:
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (40, 10.0)]:
        delays = [backoff_delay(attempt, 1.0, 10.0, rng) for _ in range(300)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        # jitter: the waits spread over the random half, not one value
        assert max(delays) - min(delays) > ceiling / 4


def test_a_huge_attempt_number_does_not_overflow() -> None:
    assert backoff_delay(10_000, 1.0, 30.0, random.Random(0)) <= 30.0


def test_the_same_seed_gives_the_same_delays() -> None:
    first = [backoff_delay(a, 0.5, 20.0, random.Random(3)) for a in range(1, 10)]
    again = [backoff_delay(a, 0.5, 20.0, random.Random(3)) for a in range(1, 10)]
    assert first == again


def test_a_hint_is_a_lower_bound() -> None:
    rng = random.Random(1)
    # longer than the backoff: the server's word wins
    assert backoff_delay(1, 1.0, 60.0, rng, hint=30.0) == 30.0
    # shorter than the backoff (or zero): the backoff still applies
    for hint in (0.0, 0.1):
        assert 0.5 <= backoff_delay(1, 1.0, 60.0, rng, hint=hint) <= 1.0


def test_a_hint_is_capped_by_the_cap_or_its_own_cap() -> None:
    rng = random.Random(2)
    assert backoff_delay(1, 1.0, 60.0, rng, hint=3600.0) == 60.0
    # a client may trust hints further than its own backoff
    assert backoff_delay(1, 1.0, 60.0, rng, hint=3600.0, hint_cap=300.0) == 300.0
    assert backoff_delay(1, 1.0, 60.0, rng, hint=120.0, hint_cap=300.0) == 120.0
    assert 0.5 <= backoff_delay(1, 1.0, 60.0, rng, hint=-5.0) <= 1.0
