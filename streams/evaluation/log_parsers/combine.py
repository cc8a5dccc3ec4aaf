"""Merging a run's machine-readable report with its parsed log, as a pure function.

A run may leave two accounts of its tests: the report a runner wrote (pytest's JUnit XML,
``parse_report``) and the log its output gave (``LogParser.parse``). The report is exact where
the log is a reading of text meant for people, so it wins; the log fills in what the report
lacks (a run killed before writing it, tests it does not name).
"""

from __future__ import annotations

from schemas.tasks import TestStatus


def merge_statuses(
    report: dict[str, TestStatus] | None, log: dict[str, TestStatus]
) -> dict[str, TestStatus]:
    """Per-test statuses from a run's report and its log.

    The rule: per test id, the report's status wins; ids only in the log keep the log's; no
    report (None) leaves the log's statuses. One exception: a test the log shows ``failed``
    stays failed where the report says ``passed``. The log fails a test that passed by its own
    line when one of its subtests failed (pytest's ``SUBFAILED`` lines, pytest-subtests'
    ``SUBFAIL``), which a report may not record (pytest-subtests, or a unittest ``subTest``
    under a runner that reports the test alone); the two accounts of one run disagree that
    way for no other reason, and a failure seen in either is not turned into a pass.
    """
    if report is None:
        return dict(log)
    merged = dict(log)
    for test, status in report.items():
        if status == "passed" and log.get(test) == "failed":
            continue
        merged[test] = status
    return merged
