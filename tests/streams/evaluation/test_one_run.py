"""Grading from one run of a task's test files (real Docker, a repository the test makes):
test ids no command line takes as they are, more test files than one exec argument holds, and
a run whose exit code contradicts its statuses; the harness's one run agrees with the checks run
one by one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from schemas import ScoredTask, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.evaluation.harness import HarnessEngine, HarnessOptions
from streams.evaluation.sandbox import Limits
from streams.evaluation.taskdir import write_task_dir
from streams.evaluation.validator import SCRIPT_AFTER_CHARS
from tests.streams.evaluation.setups import calc_files, fix_files, patches_for, validator_for

pytestmark = pytest.mark.docker

ODD_VALUES = ["a b", "x[y]", "semi;colon 'q'", "ü", "a::b", "$(touch /tmp/owned)"]
TEST_ODD = (
    "import pytest\n\nfrom calc.ops import add\n\n\n"
    f"@pytest.mark.parametrize('text', {ODD_VALUES!r})\n"
    "def test_text(text):\n    assert add(1, 1) == 2 and text\n"
)
# a session-level hook that fails a run whose tests all passed, as a coverage threshold does:
# only runs of many tests (a check run alone passes)
CONFTEST = (
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    if exitstatus == 0 and session.testscollected > 100:\n"
    "        session.exitstatus = 1\n"
)
# long names, so that fewer files (each a module pytest imports, in every run) make a command
# line past SCRIPT_AFTER_CHARS
MANY = 180
MANY_NAME = (
    "tests/many/test_a_case_whose_name_is_long_enough_that_a_couple_of_hundred_of_them_make_a_"
    "command_line_longer_than_one_exec_argument_holds_so_the_run_goes_through_a_script_and_no_"
    "test_is_left_out_{:04d}.py"
)


def many_files() -> dict[str, str | None]:
    return {MANY_NAME.format(n): f"def test_case():\n    assert {n} >= 0\n" for n in range(MANY)}


async def test_odd_ids_and_many_files_graded_from_one_run(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    assert len(" ".join(many_files())) > SCRIPT_AFTER_CHARS  # the command goes via a script
    base = calc_files(**{"conftest.py": CONFTEST})
    pr = fix_files(**{"tests/test_odd.py": TEST_ODD}, **many_files())
    patches, repos = await patches_for(tmp_path, base, pr)
    validator = validator_for(repos, docker_client, python_images)
    environment = validator.environment(patches.repo, patches.base_commit, patches.instance_id)
    try:
        proof = await asyncio.to_thread(
            validator.prove, environment, patches.patch, patches.test_patch, patches.test_files
        )
        # pytest writes a non-ASCII parameter escaped (ü as \xfc)
        shown = [value.encode("unicode_escape").decode("ascii") for value in ODD_VALUES]
        odd = [f"tests/test_odd.py::test_text[{value}]" for value in shown]
        assert set(odd) <= set(proof.fail_to_pass)
        many = [f"{MANY_NAME.format(n)}::test_case" for n in range(MANY)]
        assert set(many) <= set(proof.pass_to_pass)
        # every run recorded its exit code; the after-run's contradicts its statuses
        report = proof.report
        assert report.exit_codes == [1, 1]
        assert report.contradictions == [f"run 2: exit code 1, but none of {MANY + 9} tests failed"]
        task = validator.task(patches, environment, proof, patches.test_patch)
    finally:
        environment.release()
    task_dir = export(tmp_path, task)

    engine = harness(validator, tmp_path, "gold", patches.patch)
    result = await asyncio.to_thread(engine.evaluate, task_dir)
    assert (result.status, result.error) == ("resolved", None)
    graded = {c.command.rsplit(" ", 1)[-1]: c.status for c in result.fail_to_pass}
    assert len(graded) == len(task.FAIL_TO_PASS) and set(graded.values()) == {"passed"}
    assert [(r.phase, r.tests) for r in result.test_runs] == [
        ("sanity", MANY + 9),
        ("grading", MANY + 9),
    ]
    sanity, grading = result.test_runs
    assert sanity.contradiction is None
    assert grading.exit_code == 1 and grading.contradiction is not None

    # the same checks run one by one agree, check for check (the odd ids and a few others)
    small = shrink(task_dir, tmp_path / "small", keep=len(ODD_VALUES) + 1)
    one_run = await asyncio.to_thread(engine.evaluate, small)
    isolated = await asyncio.to_thread(
        harness(validator, tmp_path, "iso", patches.patch, True).evaluate, small
    )
    assert isolated.test_runs == [] and len(one_run.test_runs) == 2
    assert [(c.command, c.passed) for c in isolated.fail_to_pass + isolated.pass_to_pass] == [
        (c.command, c.passed) for c in one_run.fail_to_pass + one_run.pass_to_pass
    ]
    assert isolated.status == one_run.status == "resolved"


def export(tmp_path: Path, task: ValidatedTask) -> Path:
    scored = ScoredTask(
        **task.model_dump(), quality_score=0.9, quality_reasoning="r", accepted=True
    )
    workspace = TaskWorkspace.from_scored(scored, "calc-1")
    return write_task_dir(tmp_path / "tasks", workspace)


def shrink(task_dir: Path, target: Path, keep: int) -> Path:
    """A copy of the task with its first ``keep`` FAIL_TO_PASS and two PASS_TO_PASS checks."""
    data = yaml.safe_load((task_dir / "workspace.yaml").read_text())
    for ids, commands, n in (
        ("FAIL_TO_PASS", "fail_to_pass", keep),
        ("PASS_TO_PASS", "pass_to_pass", 2),
    ):
        data[ids], data[commands] = data[ids][:n], data[commands][:n]
    target.mkdir(parents=True)
    for item in task_dir.iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())
    (target / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (target / "checks.txt").write_text(
        "\n".join(data["fail_to_pass"] + data["pass_to_pass"]) + "\n"
    )
    return target


def harness(
    validator: Any, tmp_path: Path, name: str, patch: str, isolate: bool = False
) -> HarnessEngine:
    """An engine whose agent applies ``patch`` (the gold one)."""
    agent = tmp_path / f"agent-{name}"
    agent.mkdir()
    (agent / "fix.patch").write_text(patch)
    options = HarnessOptions(
        agent_command="git apply /agent/fix.patch",
        agent_dir=agent,
        output_dir=tmp_path / f"results-{name}",
        isolate_tests=isolate,
        test_timeout_seconds=120,
    )
    return HarnessEngine(validator, options, Limits.from_settings(validator.docker))
