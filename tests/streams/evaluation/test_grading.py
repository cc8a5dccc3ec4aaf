"""Grading as pure functions: stable results only (flaky tests dropped, before and after the
fix), FAIL_TO_PASS and PASS_TO_PASS from them, and a candidate patch's evaluation."""

from __future__ import annotations

import pytest

from schemas.tasks import TestStatus
from streams.evaluation.grading import Evaluation, Run, exit_code_contradiction, judge


@pytest.mark.unit
def test_judge_drops_tests_whose_result_changes() -> None:
    before = Run({"t::a": "failed", "t::b": "passed", "t::f": "failed"}, 1.0, False)
    afters = [
        Run({"t::a": "passed", "t::b": "passed", "t::f": "passed"}, 1.0, False),
        Run({"t::a": "passed", "t::b": "passed", "t::f": "failed"}, 1.0, False),
    ]
    verdict = judge([before], afters)
    assert verdict.flaky == ["t::f"] and "t::f" not in verdict.before
    assert verdict.after == {"t::a": "passed", "t::b": "passed"}
    assert verdict.fail_to_pass == ["t::a"]


@pytest.mark.unit
def test_judge_drops_tests_whose_result_changes_before_the_fix() -> None:
    befores = [
        Run({"t::a": "failed", "t::r": "failed"}, 1.0, False),
        Run({"t::a": "failed", "t::r": "passed"}, 1.0, False),  # t::r fails only sometimes
    ]
    afters = [Run({"t::a": "passed", "t::r": "passed"}, 1.0, False)] * 2
    verdict = judge(befores, afters)
    assert verdict.flaky == ["t::r"] and verdict.fail_to_pass == ["t::a"]
    assert "t::r" not in verdict.after


@pytest.mark.unit
def test_fail_to_pass_counts_an_error_before_the_fix_as_failing() -> None:
    before = Run({"t::old": "passed", "t::new": "error", "t::gone": "passed"}, 1.0, False)
    after = Run({"t::old": "passed", "t::new": "passed", "t::skip": "skipped"}, 1.0, False)
    verdict = judge([before], [after])
    assert verdict.fail_to_pass == ["t::new"] and verdict.pass_to_pass == ["t::old"]
    # a test missing from the after-run counts as an error there: it is neither
    assert "t::gone" not in verdict.fail_to_pass + verdict.pass_to_pass


@pytest.mark.unit
def test_an_evaluation_resolves_only_when_the_patch_applied_and_every_test_passed() -> None:
    statuses = {"t::f": "passed", "t::p": "passed"}
    assert Evaluation(True, statuses, ["t::f"], ["t::p"]).resolved
    assert not Evaluation(False, statuses, ["t::f"], ["t::p"]).resolved
    failing = Evaluation(True, {"t::f": "passed", "t::p": "failed"}, ["t::f"], ["t::p"])
    assert not failing.resolved and failing.failing(["t::f", "t::p", "t::x"]) == ["t::p", "t::x"]


@pytest.mark.unit
def test_patches_to_compiled_sources_are_told_apart() -> None:
    from streams.evaluation.validator import touches_compiled_sources

    c_patch = "diff --git a/pkg/_speedups.c b/pkg/_speedups.c\n--- a/pkg/_speedups.c\n"
    py_patch = "diff --git a/pkg/speedups.py b/pkg/speedups.py\n--- a/pkg/speedups.py\n"
    assert touches_compiled_sources(py_patch + c_patch, "Python")
    assert not touches_compiled_sources(py_patch, "Python")
    # a JS / TS recipe's build (the tests load dist/) is made again after a source change
    ts_patch = "diff --git a/src/index.ts b/src/index.ts\n--- a/src/index.ts\n"
    assert touches_compiled_sources(ts_patch, "TypeScript")
    assert touches_compiled_sources(ts_patch.replace(".ts", ".mjs"), "JavaScript")
    assert not touches_compiled_sources(ts_patch, "Python") and not touches_compiled_sources(
        py_patch, "JavaScript"
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    ("exit_code", "statuses", "timed_out", "expected"),
    [
        (0, {"t::a": "passed", "t::b": "skipped"}, False, None),
        (1, {"t::a": "passed", "t::b": "failed"}, False, None),
        (2, {"t::a": "error"}, False, None),  # a collection error: pytest's 2, and an error
        (1, {"t::a": "passed", "t::b": "skipped"}, False, "exit code 1, but none of 2 tests"),
        (0, {"t::a": "passed", "t::b": "failed"}, False, "exit code 0, but 1 of 2 tests"),
        (137, {"t::a": "passed"}, True, None),  # killed at its timeout: judged elsewhere
        (4, {}, False, None),  # no statuses: nothing to contradict
        (None, {"t::a": "failed"}, False, None),
    ],
)
def test_an_exit_code_that_contradicts_the_statuses_is_named(
    exit_code: int | None, statuses: dict[str, TestStatus], timed_out: bool, expected: str | None
) -> None:
    found = exit_code_contradiction(exit_code, statuses, timed_out)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.startswith(expected)
    run = Run(statuses, 1.0, timed_out, exit_code=exit_code)
    assert run.contradiction == found
