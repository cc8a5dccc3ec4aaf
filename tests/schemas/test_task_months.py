"""Task months: the split a task is exported to and the month its harness results count
under, from its created_at in UTC; a run's report counts tasks and resolved ones per month."""

from __future__ import annotations

import pytest

from schemas.harness import HarnessReport, TaskEvaluation
from schemas.workspace import task_month

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("created_at", "month"),
    [
        ("2026-01-15T10:00:00Z", "2026_01"),
        ("2022-11-04 13:49:40.000+00:00", "2022_11"),
        # the last evening of January in New York is February in UTC
        ("2026-01-31T22:30:00-05:00", "2026_02"),
        ("2026-01-31", None),  # no zone: no month a reader could agree on
        ("yesterday", None),
    ],
)
def test_the_month_of_a_created_at(created_at: str, month: str | None) -> None:
    assert task_month(created_at) == month


def evaluation(month: str | None, status: str) -> TaskEvaluation:
    return TaskEvaluation(
        task_id=f"t-{month}-{status}",
        repo="o/r",
        task_month=month,
        status=status,  # type: ignore[arg-type]
        sanity_check=True,
        agent_duration_secs=1,
        total_duration_secs=2,
    )


def test_a_report_counts_tasks_and_resolved_ones_per_month() -> None:
    report = HarnessReport.of(
        [
            evaluation("2026_02", "unresolved"),
            evaluation("2026_01", "resolved"),
            evaluation("2026_01", "resolved"),
            evaluation("2026_02", "resolved"),
            evaluation(None, "setup_error"),
        ]
    )
    counts = {month: (c.total, c.resolved) for month, c in report.by_month.items()}
    assert counts == {"2026_01": (2, 2), "2026_02": (2, 1), "unknown": (1, 0)}
    assert list(report.by_month) == ["2026_01", "2026_02", "unknown"]
    again = HarnessReport.model_validate_json(report.model_dump_json())
    assert again.by_month == report.by_month
