"""Grading as pure functions: stable results only (flaky tests dropped, before and after the
fix), FAIL_TO_PASS and PASS_TO_PASS from them, and a candidate patch's evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.tasks import TestStatus, ValidationReport
from streams.evaluation.grading import (
    Evaluation,
    Run,
    ThreeRunVerdict,
    exit_code_contradiction,
    judge,
    judge_three,
)
from streams.evaluation.recipes.languages.go.runners.gotest import parse_go_test_json


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


def three(base: dict[str, TestStatus], test_only: dict[str, TestStatus],
          fixed: dict[str, TestStatus]) -> ThreeRunVerdict:  # fmt: skip
    return judge_three(
        [Run(base, 1.0, False)], [Run(test_only, 1.0, False)], [Run(fixed, 1.0, False)]
    )


@pytest.mark.unit
def test_three_runs_a_test_patch_that_does_not_compile_without_the_fix() -> None:
    """The test patch adds TestNew, which calls what the fix adds: with the test patch alone its
    package does not build (every test of it missing). TestNew is FAIL_TO_PASS; TestOld, which
    the base passed, is PASS_TO_PASS, not FAIL_TO_PASS."""
    verdict = three(
        {"p/TestOld": "passed", "q/TestOther": "passed"},
        {"q/TestOther": "passed"},  # package p did not build
        {"p/TestOld": "passed", "p/TestNew": "passed", "q/TestOther": "passed"},
    )
    assert verdict.fail_to_pass == ["p/TestNew"]
    assert verdict.pass_to_pass == ["p/TestOld", "q/TestOther"]
    # the two-run rule would have taken the old test for a fix's test
    two = judge([Run({"q/TestOther": "passed"}, 1, False)],
                [Run(verdict.fixed, 1, False)])  # fmt: skip
    assert two.fail_to_pass == ["p/TestNew", "p/TestOld"]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("base", "test_only", "fixed", "kind"),
    [
        ("passed", "failed", "passed", "fail_to_pass"),  # the test patch changed an old test
        (None, "failed", "passed", "fail_to_pass"),  # a new test that builds and fails
        (None, None, "passed", "fail_to_pass"),  # a new test whose package does not build
        ("failed", None, "passed", "fail_to_pass"),
        ("passed", "passed", "passed", "pass_to_pass"),
        ("passed", None, "passed", "pass_to_pass"),  # its package does not build alone
        ("failed", "passed", "passed", None),  # passes without the fix: proves nothing
        (None, "passed", "passed", None),
        ("passed", "failed", "failed", None),  # the fix does not make it pass
        ("passed", "skipped", "passed", "pass_to_pass"),  # a skip shows no failure
    ],
)
def test_three_runs_each_kind_of_test(
    base: TestStatus | None, test_only: TestStatus | None, fixed: TestStatus, kind: str | None
) -> None:
    runs = [{"p/T": status} if status else {} for status in (base, test_only, fixed)]
    verdict = three(*runs)
    found = [k for k in ("fail_to_pass", "pass_to_pass") if getattr(verdict, k) == ["p/T"]]
    assert found == ([kind] if kind else [])


@pytest.mark.unit
def test_three_runs_drop_a_test_flaky_in_any_kind_of_run() -> None:
    stable = {"p/TestA": "passed", "p/TestF": "passed"}
    verdict = judge_three(
        [Run(stable, 1, False), Run({"p/TestA": "passed", "p/TestF": "failed"}, 1, False)],
        [Run({"p/TestA": "failed"}, 1, False)],
        [Run(stable, 1, False)],
    )
    assert verdict.flaky == ["p/TestF"] and "p/TestF" not in verdict.fixed
    assert verdict.fail_to_pass == ["p/TestA"] and verdict.pass_to_pass == []


@pytest.mark.unit
def test_three_runs_of_recorded_go_output() -> None:
    """go1.26's recorded run: package broken does not build; read as the test-patch run of a
    task whose fix adds New, with a base run where TestOld passed and a fixed run where both
    pass."""
    output = (Path(__file__).parents[2] / "data" / "go" / "go126-all.jsonl").read_text()
    test_only = parse_go_test_json(output)
    assert not [t for t in test_only if t.startswith("example.com/rec/broken/")]
    base = {**test_only, "example.com/rec/broken/TestOld": "passed"}
    fixed = {**test_only, "example.com/rec/broken/TestOld": "passed",
             "example.com/rec/broken/TestNew": "passed"}  # fmt: skip
    verdict = three(base, test_only, fixed)
    assert verdict.fail_to_pass == ["example.com/rec/broken/TestNew"]
    assert "example.com/rec/broken/TestOld" in verdict.pass_to_pass
    assert "example.com/rec/calc/TestSub" not in verdict.pass_to_pass + verdict.fail_to_pass


@pytest.mark.unit
def test_three_runs_a_test_the_patch_changes_in_a_package_that_does_not_compile() -> None:
    """TestOld's body is changed by the test patch (it now calls what the fix adds): it passed
    at the base in its old body, which says nothing of the new one; missing with the test patch
    alone, it is FAIL_TO_PASS. Its old subtest ``a`` (a table's case the patch left as it was)
    and TestKept, untouched, stay PASS_TO_PASS; and the report of the runs says the same."""
    base: dict[str, TestStatus] = {
        "p/TestOld": "passed",
        "p/TestOld/a": "passed",
        "p/TestKept": "passed",
    }
    fixed: dict[str, TestStatus] = {**base}
    verdict = judge_three(
        [Run(base, 1.0, False)], [Run({}, 1.0, False)], [Run(fixed, 1.0, False)], ["p/TestOld"]
    )
    assert verdict.fail_to_pass == ["p/TestOld"]
    assert verdict.pass_to_pass == ["p/TestKept", "p/TestOld/a"]
    report = ValidationReport(
        image="i", runs=3, duration_seconds=1, before={}, after=fixed, base=base,
        changed_tests=["p/TestOld"],
    )  # fmt: skip
    assert (report.fail_to_pass(), report.pass_to_pass()) == (
        verdict.fail_to_pass, verdict.pass_to_pass,
    )  # fmt: skip
