"""When a task was created, for the exports' monthly splits and their ``--since``/``--until``
window.

A task's ``created_at`` is its pull request's creation time as the dataset wrote it:
``2026-01-15T10:00:00Z`` (GitHub's form) or ``2022-11-04 13:49:40.000+00:00`` (the Hugging
Face SWE-bench's). Months are UTC months, whatever zone the string names, so the same task
lands in the same split wherever the export runs. The month is ``schemas.workspace.task_month``
(the harness counts its results under it too); here it is strict: a ``created_at`` with no month
is an error, as an export cannot leave a task out of every split.
"""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.workspace import task_month as month_or_none

__all__ = ["created_time", "in_window", "parse_time", "task_month"]


def parse_time(text: str) -> datetime:
    """An ISO date or time (a user's ``--since``) as an aware datetime; UTC when it names no
    zone (a bare date is its midnight). ValueError when it is not ISO 8601."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not an ISO date or time: {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def created_time(created_at: str) -> datetime:
    """A task's ``created_at`` in UTC; ValueError naming the value when it is no ISO time with
    a zone (a time without one is no moment readers could agree on, as ``task_month`` says)."""
    try:
        when = datetime.fromisoformat(created_at)
    except ValueError:
        raise ValueError(f"created_at {created_at!r} is not an ISO time") from None
    if when.tzinfo is None:
        raise ValueError(f"created_at {created_at!r} names no time zone")
    return when.astimezone(UTC)


def task_month(created_at: str) -> str:
    """The month split of a task: ``"2026_01"`` for ``created_at`` in January 2026 (UTC);
    ValueError when it has none. An underscore, not a dash: Hugging Face split names are word
    characters only."""
    month = month_or_none(created_at)
    if month is None:
        created_time(created_at)  # raises, saying why
        raise ValueError(f"created_at {created_at!r} has no month")
    return month


def in_window(created_at: str, since: datetime | None, until: datetime | None) -> bool:
    """Whether the task was created at or after ``since`` and before ``until`` (either may be
    None: no bound). Half-open, so consecutive windows never share a task."""
    when = created_time(created_at)
    return (since is None or when >= since) and (until is None or when < until)
