"""When a task was created, for the exports' monthly splits and their ``--since``/``--until``
window, and for anything else that groups tasks by month (the harness's reports).

A task's ``created_at`` is its pull request's creation time as the dataset wrote it:
``2026-01-15T10:00:00Z`` (GitHub's form) or ``2022-11-04 13:49:40.000+00:00`` (the Hugging
Face SWE-bench's). Months are UTC months, whatever zone the string names, so the same task
lands in the same split wherever the export runs.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["created_time", "in_window", "parse_time", "task_month"]


def parse_time(text: str) -> datetime:
    """An ISO date or time as an aware datetime; UTC when it names no zone (a bare date is its
    midnight). ValueError when it is not ISO 8601."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not an ISO date or time: {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def created_time(created_at: str) -> datetime:
    """A task's ``created_at`` in UTC; ValueError naming the value when it is not ISO 8601."""
    try:
        return parse_time(created_at).astimezone(UTC)
    except ValueError:
        raise ValueError(f"created_at {created_at!r} is not an ISO time") from None


def task_month(created_at: str) -> str:
    """The month split of a task: ``"2026_01"`` for ``created_at`` in January 2026 (UTC).

    An underscore, not a dash: Hugging Face split names are word characters only.
    """
    when = created_time(created_at)
    return f"{when.year:04d}_{when.month:02d}"


def in_window(created_at: str, since: datetime | None, until: datetime | None) -> bool:
    """Whether the task was created at or after ``since`` and before ``until`` (either may be
    None: no bound). Half-open, so consecutive windows never share a task."""
    when = created_time(created_at)
    return (since is None or when >= since) and (until is None or when < until)
