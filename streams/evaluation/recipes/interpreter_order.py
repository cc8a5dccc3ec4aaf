"""The order in which to try a language's interpreters (Pythons, Node majors): one rule for
every language, its versions compared by the language's own key.

The best guess first: a version the project pins; else the newest that both its CI tests
(no newer than the newest version it declares) and was released by the PR's time; else the
newest that fits the stronger rule (declared); when every candidate is newer than what the
project declares, the oldest (the closest to it); else the newest released in time, else the
oldest (the closest to an old PR's time). Then the older ones, nearest first, then the newer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any


def best_first(
    candidates: list[str],
    key: Callable[[str], Any],
    newest_declared: Any | None,
    released: Mapping[str, datetime],
    merged_at: datetime | None,
    pinned: str | None = None,
) -> list[str]:
    """``candidates`` (sorted oldest first by ``key``) in the order to try them;
    ``newest_declared``: the ``key`` of the newest version the project's CI names, or None."""
    if not candidates:
        return []

    def tested(version: str) -> bool:
        return newest_declared is None or key(version) <= newest_declared

    def in_time(version: str) -> bool:
        day = released.get(version)
        return merged_at is None or day is None or day <= merged_at

    both = [v for v in candidates if tested(v) and in_time(v)]
    declared = [v for v in candidates if tested(v)] if newest_declared is not None else []
    timely = [v for v in candidates if in_time(v)]
    if pinned in candidates:
        best = pinned
    elif both:
        best = both[-1]
    elif declared:
        best = declared[-1]
    elif newest_declared is not None or not timely:
        best = candidates[0]
    else:
        best = timely[-1]
    index = candidates.index(best)
    return [best, *reversed(candidates[:index]), *candidates[index + 1 :]]
