"""What a harness evaluation's phases showed, and the status decided from it (pure: no Docker).

The phases (``Phases``): the sanity run and the grading (``Graded``: the checks' results, from
one run's statuses, ``graded_checks``, or each command's own run), and the agent's run
(``AgentRun``). ``task_checks`` says what grading runs; ``status_of`` the evaluation's status
(``setup_error``, ``sanity_fail``, ``agent_error``, ``test_error``, ``resolved``,
``unresolved``) and its error. The harness engine (``streams.evaluation.harness``) runs the
phases and fills these in.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.harness import CommandResult, HarnessStatus, TestRun
from schemas.tasks import TestStatus
from schemas.workspace import TaskWorkspace
from streams.evaluation.grading import Run
from streams.evaluation.log_parsers import check_command, file_of
from streams.evaluation.provisioner import Environment
from streams.evaluation.sandbox import KILLED

# exit codes of a check that did not run: pytest's internal (3) and usage (4) errors, and
# the shell's "not executable" (126) and "not found" (127)
NOT_RUN = {3, 4, 126, 127}


@dataclass(frozen=True)
class Checks:
    """What grading runs: the task's check commands (checks.txt), and, when its test ids name
    their files, those files, run once and graded per id from that run's statuses."""

    fail_to_pass: list[str]  # commands, one per FAIL_TO_PASS test
    pass_to_pass: list[str]
    fail_to_pass_ids: list[str]
    pass_to_pass_ids: list[str]
    files: list[str]  # empty: every command runs alone

    @property
    def one_run(self) -> bool:
        return bool(self.files)


def task_checks(task: TaskWorkspace, environment: Environment, isolate: bool = False) -> Checks:
    """The task's checks; its commands derived from its test ids when it carries none. Graded
    from one run of the test files unless ``isolate``, or an id names no file (a check
    command of somebody else's making, or a test id of another runner)."""
    f2p_ids, p2p_ids = list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS)
    if task.fail_to_pass:
        f2p, p2p = list(task.fail_to_pass), list(task.pass_to_pass)
    else:
        base, runner = environment.recipe.test_command, environment.recipe.test_runner
        f2p = [check_command(base, runner, t) for t in f2p_ids]
        p2p = [check_command(base, runner, t) for t in p2p_ids]
    ids = f2p_ids + p2p_ids
    files = [file_of(t, environment.recipe.language) for t in ids]
    one_run = (
        not isolate
        and bool(ids)
        and len(f2p_ids) == len(f2p)
        and len(p2p_ids) == len(p2p)
        and all(files)
    )
    named = sorted({f for f in files if f})
    return Checks(f2p, p2p, f2p_ids, p2p_ids, named if one_run else [])


def graded_checks(commands: list[str], ids: list[str], run: Run) -> list[CommandResult]:
    """A result per check, from one run's statuses: passed only when its test passed (a test
    the run did not report is failed)."""
    exit_code = -1 if run.timed_out else (run.exit_code if run.exit_code is not None else -1)
    results = []
    for command, test in zip(commands, ids, strict=True):
        status: TestStatus = run.statuses.get(test, "failed")
        results.append(
            CommandResult(
                command=command,
                exit_code=exit_code,
                passed=status == "passed",
                duration_ms=0,  # the run's time is the TestRun's
                status=status,
            )
        )
    return results


@dataclass
class Graded:
    """The checks run in one container: after ``patch`` (if any) and the hidden tests."""

    patch_applied: bool
    fail_to_pass: list[CommandResult]
    pass_to_pass: list[CommandResult]
    seconds: float
    run: TestRun | None = None  # the one run the checks were graded from, if they were
    output: str = ""  # what the test run(s) printed (test_output.txt)

    @property
    def all_pass(self) -> bool:
        return self.patch_applied and all(c.passed for c in self.fail_to_pass + self.pass_to_pass)

    @property
    def not_run(self) -> list[CommandResult]:
        """The checks that could not run at all (the command, not the test, failed)."""
        if self.run is not None:
            return (self.fail_to_pass + self.pass_to_pass) if self.run.exit_code in NOT_RUN else []
        return [c for c in self.fail_to_pass + self.pass_to_pass if c.exit_code in NOT_RUN]


@dataclass
class AgentRun:
    exit_code: int
    timed_out: bool
    seconds: float
    output: str
    patch: str
    container_id: str | None

    @property
    def succeeded(self) -> bool:
        return not self.timed_out and self.exit_code == 0


@dataclass
class Phases:
    """What one evaluation ran, in order; a phase is None when it did not run."""

    sanity: Graded | None = None
    agent: AgentRun | None = None
    graded: Graded | None = None

    @property
    def patch(self) -> str:
        return self.agent.patch if self.agent else ""

    @property
    def reported(self) -> Graded | None:
        """The checks report.json shows: the grading's, or the sanity run's that failed."""
        if self.graded is not None:
            return self.graded
        if self.sanity is not None and not sanity_passed(self.sanity):
            return self.sanity
        return None


def sanity_passed(sanity: Graded) -> bool:
    """Before any agent: every FAIL_TO_PASS check fails and every PASS_TO_PASS check passes."""
    return not any(c.passed for c in sanity.fail_to_pass) and all(
        c.passed for c in sanity.pass_to_pass
    )


def status_of(
    phases: Phases, agent_timeout_seconds: float, memory_mb: int
) -> tuple[HarnessStatus, str | None]:
    """The evaluation's status and error from what its phases showed (pure; the setup's
    failure and the engine's own exceptions are decided where they are caught)."""
    if phases.sanity is None:
        return "setup_error", "the sanity checks did not run"
    if not sanity_passed(phases.sanity):
        return "sanity_fail", sanity_problem(phases.sanity)
    agent = phases.agent
    if agent is None:
        return "agent_error", "the agent did not run"
    if not agent.succeeded:
        if agent.timed_out:
            error = f"the agent was killed at its timeout ({agent_timeout_seconds:.0f} s)"
        elif agent.exit_code == KILLED:
            error = f"the agent was killed (SIGKILL; its memory limit is {memory_mb} MB)"
        else:
            error = f"the agent exited with {agent.exit_code}"
        return "agent_error", error
    graded = phases.graded
    if graded is None:
        return "test_error", "the agent's patch was not graded"
    if graded.not_run:
        return "test_error", "checks could not run: " + ", ".join(
            f"{c.command} (exit {c.exit_code})" for c in graded.not_run
        )
    if not graded.patch_applied:
        return "unresolved", "the agent's patch does not apply to the base commit"
    return ("resolved" if graded.all_pass else "unresolved"), None


def sanity_problem(sanity: Graded) -> str:
    passing = [c.command for c in sanity.fail_to_pass if c.passed]
    failing = [c.command for c in sanity.pass_to_pass if not c.passed]
    parts = []
    if passing:
        parts.append("FAIL_TO_PASS already passing before the agent: " + "; ".join(passing))
    if failing:
        parts.append("PASS_TO_PASS failing before the agent: " + "; ".join(failing))
    return " | ".join(parts)[:2000]
