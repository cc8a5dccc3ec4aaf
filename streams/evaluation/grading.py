"""Grading: the decisions made from test statuses, as pure functions (no Docker, no I/O).

A validation runs a task's tests before and after its fix, several times; ``judge`` keeps the
stable results and names the flaky tests, and ``Verdict`` derives FAIL_TO_PASS and
PASS_TO_PASS from them (``judge_three`` and ``ThreeRunVerdict``: the three runs of a compiled
language, whose test patch may not compile without the fix). ``Evaluation`` is a candidate
patch graded the way SWE-bench grades: resolved when it applied and every FAIL_TO_PASS and
PASS_TO_PASS test passed. The statuses come
from the test runner's log parser (``streams.evaluation.log_parsers``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from schemas.tasks import TestStatus, fails_without_fix


@dataclass
class Run:
    """One run of the test command: per-test statuses, and how the command ended."""

    statuses: dict[str, TestStatus]
    seconds: float
    timed_out: bool
    hung_test: str | None = None
    exit_code: int | None = None
    output: str = ""  # the tail of what it printed (for a reason's detail)

    @property
    def contradiction(self) -> str | None:
        """What the exit code says against the statuses (``exit_code_contradiction``)."""
        return exit_code_contradiction(self.exit_code, self.statuses, self.timed_out)


def exit_code_contradiction(
    exit_code: int | None, statuses: dict[str, TestStatus], timed_out: bool = False
) -> str | None:
    """Why a run's exit code contradicts its per-test statuses, or None when it agrees.

    The statuses decide grading (they come from the runner's report and log); the exit code is
    the runner's own summary. They disagree when the parser missed a failure (exit code 1,
    every parsed test passed: a failure in a fixture's teardown, a crash after the report, a
    coverage threshold) or read a failure that the runner did not count (exit code 0 with
    failing tests). A run killed at its timeout, or without statuses, has nothing to
    contradict (those are judged elsewhere).
    """
    if exit_code is None or timed_out or not statuses:
        return None
    failing = sum(1 for status in statuses.values() if status in ("failed", "error"))
    if exit_code == 0 and failing:
        return f"exit code 0, but {failing} of {len(statuses)} tests failed or errored"
    if exit_code != 0 and not failing:
        return f"exit code {exit_code}, but none of {len(statuses)} tests failed"
    return None


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


def _stable(runs: list[Run], flaky: set[str]) -> dict[str, TestStatus]:
    """The statuses every one of ``runs`` agrees on; the tests they disagree on (missing from
    one counts as ``error``) go to ``flaky``."""
    statuses: dict[str, TestStatus] = {}
    for test in sorted({t for run in runs for t in run.statuses}):
        seen = {run.statuses.get(test, "error") for run in runs}
        if len(seen) == 1:
            statuses[test] = seen.pop()
        else:
            flaky.add(test)
    return statuses


def judge(befores: list[Run], afters: list[Run]) -> Verdict:
    """Stable results only: a test whose status differs between the before-runs, or between
    the after-runs, is flaky and dropped."""
    flaky: set[str] = set()
    before, after = _stable(befores, flaky), _stable(afters, flaky)
    return Verdict(
        {t: s for t, s in before.items() if t not in flaky},
        {t: s for t, s in after.items() if t not in flaky},
        sorted(flaky),
    )


@dataclass
class ThreeRunVerdict:
    """FAIL_TO_PASS and PASS_TO_PASS of a compiled language, from three runs (as
    Multi-SWE-bench validates): the base as it is, the base with the test patch alone, and
    both patches. A test patch often does not compile without the fix, so its whole package
    is missing from the test-patch run: missing there is failing for a test the base did not
    pass (a new test), but says nothing of one the base passed (an old test of that package),
    which is PASS_TO_PASS when it passes with both patches."""

    base: dict[str, TestStatus]
    test_only: dict[str, TestStatus]
    fixed: dict[str, TestStatus]
    flaky: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # the tests the test patch changes

    def _fails_without_fix(self, test: str) -> bool:
        return fails_without_fix(test, self.base, self.test_only, self.changed)

    @property
    def fail_to_pass(self) -> list[str]:
        return sorted(
            t for t, s in self.fixed.items() if s == "passed" and self._fails_without_fix(t)
        )

    @property
    def pass_to_pass(self) -> list[str]:
        return sorted(
            t
            for t, s in self.fixed.items()
            if s == "passed" and self.base.get(t) == "passed" and not self._fails_without_fix(t)
        )


def judge_three(
    bases: list[Run], test_onlys: list[Run], fixeds: list[Run], changed: Sequence[str] = ()
) -> ThreeRunVerdict:
    """The three runs' stable results (``judge``'s rule, per kind of run): a test whose status
    differs between runs of one kind is flaky and dropped from all three. ``changed``: the
    tests the test patch adds or changes (``Language.tests_changed``)."""
    flaky: set[str] = set()
    base, test_only = _stable(bases, flaky), _stable(test_onlys, flaky)
    fixed = _stable(fixeds, flaky)

    def kept(statuses: dict[str, TestStatus]) -> dict[str, TestStatus]:
        return {t: s for t, s in statuses.items() if t not in flaky}

    return ThreeRunVerdict(kept(base), kept(test_only), kept(fixed), sorted(flaky), list(changed))


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


def recipe_problem(statuses: dict[str, TestStatus]) -> str | None:
    """Why a run of a repository's test files at its base commit shows that the recipe does
    not work, or None when it does: at least one test passed. No result means the tests did
    not run or collect; only skips, a missing build step or dependency; only failures and
    errors, an environment that imports but does not work (the base commit's own tests
    pass in their CI)."""
    if not statuses:
        return "no test result: the tests did not run or did not collect"
    found = set(statuses.values())
    if "passed" in found:
        return None
    if found == {"skipped"}:
        return f"all {len(statuses)} tests skipped"
    tally = ", ".join(f"{sum(s == k for s in statuses.values())} {k}" for k in sorted(found))
    return f"no test passed ({tally})"
