"""The harness's status decision as a pure function of what its phases showed (no Docker):
``status_of``, ``sanity_passed`` and ``Phases``' ``reported`` / ``patch``."""

from __future__ import annotations

import shlex
from typing import Any, cast

import pytest

from schemas.harness import CommandResult, TestRun
from schemas.workspace import TaskWorkspace
from streams.evaluation.grading import Run
from streams.evaluation.harness_status import (
    AgentRun,
    Graded,
    Phases,
    graded_checks,
    sanity_passed,
    status_of,
    task_checks,
)
from streams.evaluation.recipes.model import InstallRecipe
from streams.evaluation.sandbox import KILLED

TIMEOUT = 600.0
MEMORY_MB = 4096
F2P = "python -m pytest tests/test_x.py::test_fixed"
P2P = "python -m pytest tests/test_x.py::test_kept"


def check(command: str, passed: bool, exit_code: int | None = None) -> CommandResult:
    code = exit_code if exit_code is not None else (0 if passed else 1)
    return CommandResult(command=command, exit_code=code, passed=passed, duration_ms=10)


def graded(f2p: list[CommandResult], p2p: list[CommandResult], applied: bool = True) -> Graded:
    return Graded(patch_applied=applied, fail_to_pass=f2p, pass_to_pass=p2p, seconds=1.0)


GOOD_SANITY = graded([check(F2P, passed=False)], [check(P2P, passed=True)])
PATCH = "diff --git a/x.py b/x.py\n"


def agent(exit_code: int = 0, timed_out: bool = False, patch: str = PATCH) -> AgentRun:
    return AgentRun(
        exit_code=exit_code,
        timed_out=timed_out,
        seconds=3.0,
        output="done",
        patch=patch,
        container_id=None,
    )


def status(phases: Phases) -> tuple[str, str | None]:
    return status_of(phases, TIMEOUT, MEMORY_MB)


@pytest.mark.unit
def test_sanity_passes_when_fail_to_pass_fails_and_pass_to_pass_passes() -> None:
    assert sanity_passed(GOOD_SANITY)
    assert sanity_passed(graded([], []))  # nothing to contradict
    assert not sanity_passed(graded([check(F2P, passed=True)], [check(P2P, passed=True)]))
    assert not sanity_passed(graded([check(F2P, passed=False)], [check(P2P, passed=False)]))


@pytest.mark.unit
def test_no_sanity_run_is_a_setup_error() -> None:
    assert status(Phases()) == ("setup_error", "the sanity checks did not run")


@pytest.mark.unit
def test_a_fail_to_pass_check_passing_before_the_agent_is_sanity_fail() -> None:
    sanity = graded([check(F2P, passed=True)], [check(P2P, passed=True)])
    result, error = status(Phases(sanity=sanity))
    assert result == "sanity_fail"
    assert error == f"FAIL_TO_PASS already passing before the agent: {F2P}"


@pytest.mark.unit
def test_a_pass_to_pass_check_failing_before_the_agent_is_sanity_fail() -> None:
    sanity = graded([check(F2P, passed=False)], [check(P2P, passed=False)])
    result, error = status(Phases(sanity=sanity))
    assert result == "sanity_fail"
    assert error == f"PASS_TO_PASS failing before the agent: {P2P}"


@pytest.mark.unit
def test_sanity_fail_names_both_problems() -> None:
    other = "python -m pytest tests/test_x.py::test_other"
    sanity = graded(
        [check(F2P, passed=True), check(other, passed=True)], [check(P2P, passed=False)]
    )
    result, error = status(Phases(sanity=sanity, agent=agent()))
    assert result == "sanity_fail"
    assert error is not None
    assert f"FAIL_TO_PASS already passing before the agent: {F2P}; {other}" in error
    assert f"PASS_TO_PASS failing before the agent: {P2P}" in error
    assert " | " in error


@pytest.mark.unit
def test_the_agent_not_running_is_an_agent_error() -> None:
    assert status(Phases(sanity=GOOD_SANITY)) == ("agent_error", "the agent did not run")


@pytest.mark.unit
def test_an_agent_killed_at_its_timeout_is_an_agent_error() -> None:
    phases = Phases(sanity=GOOD_SANITY, agent=agent(exit_code=KILLED, timed_out=True))
    assert status(phases) == ("agent_error", "the agent was killed at its timeout (600 s)")


@pytest.mark.unit
def test_an_agent_killed_by_sigkill_is_an_agent_error_naming_the_memory_limit() -> None:
    assert KILLED == 137
    phases = Phases(sanity=GOOD_SANITY, agent=agent(exit_code=KILLED))
    result, error = status(phases)
    assert result == "agent_error"
    assert error == "the agent was killed (SIGKILL; its memory limit is 4096 MB)"


@pytest.mark.unit
@pytest.mark.parametrize("exit_code", [1, 2, 139, -1])
def test_an_agent_exiting_non_zero_is_an_agent_error(exit_code: int) -> None:
    phases = Phases(sanity=GOOD_SANITY, agent=agent(exit_code=exit_code))
    assert status(phases) == ("agent_error", f"the agent exited with {exit_code}")


@pytest.mark.unit
def test_a_succeeded_agent_whose_patch_was_not_graded_is_a_test_error() -> None:
    phases = Phases(sanity=GOOD_SANITY, agent=agent())
    assert status(phases) == ("test_error", "the agent's patch was not graded")


@pytest.mark.unit
@pytest.mark.parametrize("exit_code", [3, 4, 126, 127])
def test_a_check_that_could_not_run_is_a_test_error(exit_code: int) -> None:
    result = graded([check(F2P, passed=False, exit_code=exit_code)], [check(P2P, passed=True)])
    phases = Phases(sanity=GOOD_SANITY, agent=agent(), graded=result)
    assert status(phases) == (
        "test_error",
        f"checks could not run: {F2P} (exit {exit_code})",
    )


@pytest.mark.unit
def test_checks_that_could_not_run_are_all_named() -> None:
    result = graded(
        [check(F2P, passed=False, exit_code=4)], [check(P2P, passed=False, exit_code=127)]
    )
    phases = Phases(sanity=GOOD_SANITY, agent=agent(), graded=result)
    assert status(phases) == (
        "test_error",
        f"checks could not run: {F2P} (exit 4), {P2P} (exit 127)",
    )


@pytest.mark.unit
def test_a_patch_that_does_not_apply_is_unresolved() -> None:
    phases = Phases(sanity=GOOD_SANITY, agent=agent(), graded=graded([], [], applied=False))
    assert status(phases) == (
        "unresolved",
        "the agent's patch does not apply to the base commit",
    )


@pytest.mark.unit
def test_every_check_passing_is_resolved() -> None:
    result = graded([check(F2P, passed=True)], [check(P2P, passed=True)])
    phases = Phases(sanity=GOOD_SANITY, agent=agent(), graded=result)
    assert status(phases) == ("resolved", None)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("f2p_passed", "p2p_passed"), [(False, True), (True, False), (False, False)]
)
def test_one_failing_check_is_unresolved(f2p_passed: bool, p2p_passed: bool) -> None:
    result = graded([check(F2P, passed=f2p_passed)], [check(P2P, passed=p2p_passed)])
    phases = Phases(sanity=GOOD_SANITY, agent=agent(), graded=result)
    assert status(phases) == ("unresolved", None)


@pytest.mark.unit
def test_the_reported_checks_are_the_gradings_or_a_failed_sanity_runs() -> None:
    assert Phases().reported is None
    # a sanity run that passed is not what report.json shows
    assert Phases(sanity=GOOD_SANITY).reported is None
    assert Phases(sanity=GOOD_SANITY, agent=agent(exit_code=1)).reported is None
    bad_sanity = graded([check(F2P, passed=True)], [])
    assert Phases(sanity=bad_sanity).reported is bad_sanity
    result = graded([check(F2P, passed=True)], [check(P2P, passed=True)])
    assert Phases(sanity=GOOD_SANITY, agent=agent(), graded=result).reported is result


@pytest.mark.unit
def test_the_patch_is_the_agents() -> None:
    assert Phases().patch == ""
    assert Phases(sanity=GOOD_SANITY).patch == ""
    assert Phases(sanity=GOOD_SANITY, agent=agent(patch=PATCH)).patch == PATCH
    assert Phases(sanity=GOOD_SANITY, agent=agent(exit_code=1, patch="")).patch == ""


def workspace(f2p: list[str], p2p: list[str], commands: bool = True) -> TaskWorkspace:
    base = "python -m pytest -rA"
    return TaskWorkspace.model_validate(
        {
            "id": "o-r-1",
            "repo": "o/r",
            "instance_id": "o__r-1",
            "base_commit": "a" * 40,
            "patch": PATCH,
            "test_patch": PATCH,
            "prompt": "fix it",
            "problem_statement": "fix it",
            "created_at": "2024-01-01T00:00:00Z",
            "number": 1,
            "FAIL_TO_PASS": f2p,
            "PASS_TO_PASS": p2p,
            "fail_to_pass": [f"{base} {shlex.quote(t)}" for t in f2p] if commands else [],
            "pass_to_pass": [f"{base} {shlex.quote(t)}" for t in p2p] if commands else [],
        }
    )


class FakeEnvironment:
    """What ``task_checks`` reads of an environment: its recipe's test command."""

    recipe = InstallRecipe(language="Python", test_command="python -m pytest -rA")


ODD = [
    "tests/test_x.py::test_text[a b]",
    "tests/test_x.py::test_text[x[y]]",
    "tests/test_x.py::test_text[semi;colon 'quoted']",
    "tests/sub dir/test_y.py::TestY::test_it[ü-1]",
]


@pytest.mark.unit
def test_checks_of_odd_ids_are_graded_from_one_run_of_their_files() -> None:
    task = workspace(ODD[:1], ODD[1:])
    for environment_commands in (True, False):
        task = workspace(ODD[:1], ODD[1:], commands=environment_commands)
        checks = task_checks(task, cast(Any, FakeEnvironment()))
        assert checks.one_run
        assert checks.files == ["tests/sub dir/test_y.py", "tests/test_x.py"]
        assert checks.fail_to_pass_ids == ODD[:1] and checks.pass_to_pass_ids == ODD[1:]
        assert len(checks.pass_to_pass) == 3  # a command per check, kept for checks.txt
        # every command names its id as one shell word
        assert [shlex.split(c)[-1] for c in checks.pass_to_pass] == ODD[1:]
    assert not task_checks(task, cast(Any, FakeEnvironment()), isolate=True).one_run


@pytest.mark.unit
def test_checks_that_do_not_name_their_files_run_alone() -> None:
    # ids of another runner, and check commands that do not match the ids one to one
    assert not task_checks(workspace(["test_a (m.C)"], []), cast(Any, FakeEnvironment())).one_run
    task = workspace(ODD[:1], ODD[1:]).model_copy(update={"pass_to_pass": ["make check"]})
    assert not task_checks(task, cast(Any, FakeEnvironment())).one_run


@pytest.mark.unit
def test_checks_graded_from_one_run_take_each_tests_status() -> None:
    run = Run({ODD[0]: "passed", ODD[1]: "failed", ODD[2]: "skipped"}, 2.0, False, exit_code=1)
    results = graded_checks(["c0", "c1", "c2", "c3"], ODD, run)
    assert [(r.status, r.passed, r.exit_code) for r in results] == [
        ("passed", True, 1),
        ("failed", False, 1),
        ("skipped", False, 1),
        ("failed", False, 1),  # not reported by the run: failed
    ]
    killed = Run({ODD[0]: "passed"}, 2.0, True, exit_code=137)
    assert graded_checks(["c0"], ODD[:1], killed)[0].exit_code == -1


@pytest.mark.unit
def test_a_run_that_could_not_start_makes_every_check_not_run() -> None:
    results = [check(F2P, passed=False, exit_code=4)]
    run = TestRun(phase="grading", command="pytest x", exit_code=4, seconds=0.1, tests=0)
    assert Graded(True, results, [], 1.0, run).not_run == results
    ran = run.model_copy(update={"exit_code": 1})
    assert Graded(True, results, [], 1.0, ran).not_run == []
