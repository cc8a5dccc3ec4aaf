"""What the HTTP clients share when an attempt fails: reading ``Retry-After`` and backing off.

``retry_after`` turns a ``Retry-After`` header value into seconds. RFC 9110 allows two forms,
delta-seconds (``120``) and an HTTP-date (``Wed, 21 Oct 2015 07:28:00 GMT``); servers also send
fractions (``1.5``). Anything else (``soon``, ``-3``, ``1.5e9x``, an empty value) is ignored:
a header is a hint from a server we do not control, and a malformed hint must never turn a
retryable answer into a crash.

``backoff_delay`` is the one backoff rule: exponential, capped, and "half fixed, half random"
(``d = min(cap, base * 2**(attempt - 1))``, then ``d/2 + uniform(0, d/2)``), so the delay is
never below ``d/2`` (a burst of retries cannot hammer the server), never above ``cap``, and
clients failing together spread out. A server hint is honoured as a lower bound, itself capped
by the client's own limit for hints.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import time
from datetime import UTC

__all__ = ["backoff_delay", "retry_after"]

# delta-seconds, allowing a fraction; no sign, exponent, inf or nan (float() would take them)
_SECONDS_RE = re.compile(r"\d+(?:\.\d+)?")
# 2 ** 64 times any sane base is far beyond any cap; a bound keeps 2.0 ** n from overflowing
_MAX_EXPONENT = 64


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when there is no usable value.

    ``now`` (epoch seconds, default the current time) is what an HTTP-date is measured from.
    The result is never negative (a date in the past means "now") and this never raises.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if _SECONDS_RE.fullmatch(text):
        seconds = float(text)
        # a digit string longer than a float can hold is nonsense, not "wait forever"
        return seconds if math.isfinite(seconds) else None
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # Python >= 3.10 raises on a value that is no date at all
    if moment.tzinfo is None:
        # "-0000" yields a naive datetime; an HTTP-date is always GMT, never local time
        moment = moment.replace(tzinfo=UTC)
    reference = time.time() if now is None else now
    return max(0.0, moment.timestamp() - reference)


def backoff_delay(
    attempt: int,
    base: float,
    cap: float,
    rng: random.Random,
    hint: float | None = None,
    hint_cap: float | None = None,
) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry).

    Half fixed, half random: ``d/2 + uniform(0, d/2)`` with ``d = min(cap, base * 2**(attempt
    - 1))``, so never above ``cap``. A server ``hint`` (``Retry-After``) makes the wait at
    least ``min(hint, hint_cap)``; ``hint_cap`` defaults to ``cap``, and a client may give a
    larger one where it trusts the server to know when it recovers.
    """
    cap = max(0.0, cap)
    exponent = min(max(attempt, 1) - 1, _MAX_EXPONENT)
    ceiling = min(cap, max(0.0, base) * 2.0**exponent)
    # min(): float rounding must not push half + uniform(0, half) a hair past the cap
    delay = min(ceiling, ceiling / 2 + rng.uniform(0, ceiling / 2))
    if hint is not None:
        limit = cap if hint_cap is None else max(0.0, hint_cap)
        delay = max(delay, min(max(0.0, hint), limit))
    return delay
