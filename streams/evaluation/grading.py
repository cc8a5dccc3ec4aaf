"""Grading: the decisions made from test statuses, as pure functions (no Docker, no I/O).

A validation runs a task's tests before and after its fix, several times; ``judge`` keeps the
stable results and names the flaky tests, and ``Verdict`` derives FAIL_TO_PASS and
PASS_TO_PASS from them. ``Evaluation`` is a candidate patch graded the way SWE-bench grades:
resolved when it applied and every FAIL_TO_PASS and PASS_TO_PASS test passed. The statuses come
from the test runner's log parser (``streams.evaluation.log_parsers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.tasks import TestStatus


@dataclass
class Run:
    """One run of the test command: per-test statuses, and how the command ended."""

    statuses: dict[str, TestStatus]
    seconds: float
    timed_out: bool
    hung_test: str | None = None
    exit_code: int | None = None
    output: str = ""  # the tail of what it printed (for a reason's detail)


@dataclass
class Verdict:
    before: dict[str, TestStatus]
    after: dict[str, TestStatus]
    flaky: list[str] = field(default_factory=list)

    @property
    def fail_to_pass(self) -> list[str]:
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) != "passed"
        )

    @property
    def pass_to_pass(self) -> list[str]:
        return sorted(
            t for t, s in self.after.items() if s == "passed" and self.before.get(t) == "passed"
        )


def judge(befores: list[Run], afters: list[Run]) -> Verdict:
    """Stable results only: a test whose status differs between the before-runs, or between
    the after-runs, is flaky and dropped."""
    flaky: set[str] = set()

    def stable(runs: list[Run]) -> dict[str, TestStatus]:
        statuses: dict[str, TestStatus] = {}
        for test in sorted({t for run in runs for t in run.statuses}):
            seen = {run.statuses.get(test, "error") for run in runs}
            if len(seen) == 1:
                statuses[test] = seen.pop()
            else:
                flaky.add(test)
        return statuses

    before, after = stable(befores), stable(afters)
    return Verdict(
        {t: s for t, s in before.items() if t not in flaky},
        {t: s for t, s in after.items() if t not in flaky},
        sorted(flaky),
    )


@dataclass
class Evaluation:
    """A candidate patch graded against a task's tests."""

    patch_applied: bool
    statuses: dict[str, TestStatus]
    fail_to_pass: list[str]
    pass_to_pass: list[str]

    def failing(self, tests: list[str]) -> list[str]:
        return [t for t in tests if self.statuses.get(t) != "passed"]

    @property
    def resolved(self) -> bool:
        return self.patch_applied and not self.failing(self.fail_to_pass + self.pass_to_pass)
