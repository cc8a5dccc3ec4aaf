"""The prover alone (``streams.evaluation.prover``), without Docker: its report reading and
splitting, the rejection a proof without FAIL_TO_PASS gets, patch application and rebuilds,
and ``run_tests`` / ``prove`` / ``evaluate`` / ``verify`` in a scripted sandbox."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast

import pytest

from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.grading import Run, Verdict, judge_three
from streams.evaluation.log_parsers import log_parser
from streams.evaluation.prover import (
    APPLY_COMMANDS,
    PATCH_DIR,
    REPORT_MARKER,
    SCRIPT_AFTER_CHARS,
    TEST_SCRIPT,
    Prover,
    apply_patch,
    counts,
    read_report,
    rebuild_after,
    report_file,
    resting_on_base,
    split_report,
    touches_compiled_sources,
    why_no_fail_to_pass,
)
from streams.evaluation.prover import test_command as command_on  # not collected as a test
from streams.evaluation.provisioner import Environment
from streams.evaluation.reasons import (
    NO_FAIL_TO_PASS,
    REBUILD_FAILED,
    RECIPE_REJECTED,
    SUBMODULE_MISSING,
    TEST_PATCH_FAILS,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
    TESTS_SKIPPED,
    TIMED_OUT,
    ValidationFailed,
)
from streams.evaluation.recipes.model import InstallRecipe
from streams.evaluation.sandbox import ExecResult, Sandbox
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

PYTEST = "python -m pytest -rA"
RECIPE = InstallRecipe(language="Python", test_command=PYTEST, test_runner="pytest")
FIXED = "tests/test_a.py::test_fixed"
KEPT = "tests/test_a.py::test_kept"
JUNIT = (
    '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
    '<testcase classname="tests.test_a" name="test_fixed" file="tests/test_a.py"/>'
    "</testsuite></testsuites>"
)


def ok(stdout: str = "", exit_code: int = 0, timed_out: bool = False) -> ExecResult:
    return ExecResult(exit_code, stdout, 0.1, timed_out, 0.1, stdout=stdout)


@dataclass
class ScriptedBox:
    """A sandbox whose commands answer from ``answer`` (the command, the files put so far);
    every command and file is recorded."""

    answer: Callable[[str, dict[str, str]], ExecResult] = lambda command, files: ok()
    commands: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)  # the patches `git apply` took

    def __enter__(self) -> ScriptedBox:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        return None

    def put_file(self, path: str, data: str) -> None:
        self.files[path] = data

    def put_files(self, files: dict[str, str]) -> None:
        self.files.update(files)

    def run(self, command: str, timeout: float = 0, output_limit: int = 0) -> ExecResult:
        self.commands.append(command)
        result = self.answer(command, self.files)
        if command.startswith("git apply") and result.exit_code == 0:
            self.applied.append(command.split()[-1])
        return result


@dataclass
class ScriptedEnvironment:
    """An ``Environment``'s face to the prover: its recipe, tree, images and one sandbox."""

    box: ScriptedBox
    recipe: InstallRecipe = RECIPE
    tree: Any = field(default_factory=lambda: tree({"tests/test_a.py": ""}))
    instance: Any = field(default_factory=lambda: type("Image", (), {"tag": "i:1"})())
    sandboxes: int = 0

    def sandbox(self, limits: Any, variables: Any = None, **options: Any) -> ScriptedBox:
        self.sandboxes += 1
        return self.box


def environment(box: ScriptedBox, recipe: InstallRecipe = RECIPE) -> Environment:
    return cast(Environment, ScriptedEnvironment(box, recipe))


def pytest_log(statuses: dict[str, str]) -> str:
    return "".join(f"{status.upper()} {test}\n" for test, status in statuses.items())


def fixed_by_the_patch(command: str, files: dict[str, str], box: ScriptedBox) -> ExecResult:
    """A repository whose FIXED test passes once fix.patch is applied; KEPT always passes."""
    if command.startswith("git apply"):
        return ok()
    fixed = f"{PATCH_DIR}/fix.patch" in box.applied
    return ok(pytest_log({FIXED: "passed" if fixed else "failed", KEPT: "passed"}))


def prover(**settings: Any) -> Prover:
    return Prover(
        None,  # type: ignore[arg-type]  # no clone is asked outside ``task``
        DockerSettings(),
        ValidateSettings(**({"runs": 2} | settings)),
        pipeline_version=1,
    )


def scripted(answer: Callable[[str, dict[str, str], ScriptedBox], ExecResult]) -> ScriptedBox:
    box = ScriptedBox()
    box.answer = lambda command, files: answer(command, files, box)
    return box


# -- reports ---------------------------------------------------------------------------------


def test_a_runs_stdout_splits_at_the_last_marker() -> None:
    stdout = f"log line\n{REPORT_MARKER}\nnot the report\n{REPORT_MARKER}\n<xml/>"
    assert split_report(stdout) == (f"log line\n{REPORT_MARKER}\nnot the report\n", "<xml/>")
    assert split_report("killed before the report") == ("killed before the report", "")


def test_a_report_not_written_or_unreadable_is_none() -> None:
    assert read_report("junit", "  \n") is None
    assert read_report("junit", "<testsuites><not closed") is None
    assert read_report("junit", JUNIT) == {FIXED: "passed"}


def test_the_report_file_of_each_runner() -> None:
    junit = report_file("pytest", log_parser("pytest"))
    assert junit is not None and junit.path == f"{PATCH_DIR}/report.xml"
    assert "junit_family=xunit1" in junit.arguments
    assert report_file("unittest", log_parser("unittest")) is None


def test_the_test_command_quotes_its_files() -> None:
    assert command_on(PYTEST, ["a b.py", "c.py"]) == f"{PYTEST} 'a b.py' c.py"
    assert counts({"a": "passed", "b": "failed", "c": "passed"}) == "2 passed, 1 failed"
    assert counts({}) == "no results"


# -- why a proof proves nothing --------------------------------------------------------------


def run(statuses: dict[str, Any], timed_out: bool = False, exit_code: int = 1) -> Run:
    return Run(statuses, 1.0, timed_out, exit_code=exit_code, output="the log's tail")


@pytest.mark.parametrize(
    ("after", "timed_out", "notes", "reason"),
    [
        ({}, True, (), TIMED_OUT),
        ({}, False, (), TESTS_DID_NOT_RUN),
        ({}, False, ("submodule vendor/x is missing",), SUBMODULE_MISSING),
        ({KEPT: "skipped"}, False, (), TESTS_SKIPPED),
        ({KEPT: "failed"}, False, (), TESTS_FAIL_AFTER_FIX),
        ({KEPT: "passed"}, False, (), NO_FAIL_TO_PASS),
    ],
)
def test_a_proof_without_fail_to_pass_says_what_the_runs_showed(
    after: dict[str, Any], timed_out: bool, notes: tuple[str, ...], reason: str
) -> None:
    recipe = InstallRecipe(
        language="Python", test_command=PYTEST, test_runner="pytest", notes=notes
    )
    befores, afters = [run(after, timed_out)], [run(after, timed_out)]
    failed = why_no_fail_to_pass(recipe, Verdict(after, after), befores, afters)
    assert failed.reason == reason
    assert failed.tests_ran == (len(after) if reason == NO_FAIL_TO_PASS else 0)
    if reason not in (NO_FAIL_TO_PASS, TIMED_OUT):
        assert "the log's tail" in failed.detail


# -- patches ---------------------------------------------------------------------------------


def diff_of(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n"


def test_compiled_sources_by_language() -> None:
    assert touches_compiled_sources(diff_of("src/ext.c"), "Python")
    assert touches_compiled_sources(diff_of("rust/lib.rs"), "JavaScript")
    assert not touches_compiled_sources(diff_of("pkg/mod.py"), "Python")
    assert touches_compiled_sources(diff_of("src/index.ts"), "TypeScript")
    assert not touches_compiled_sources(diff_of("src/index.ts"), "Python")


def test_a_patch_is_tried_plain_then_with_fuzz() -> None:
    box = ScriptedBox(lambda command, files: ok(exit_code=0 if "--fuzz" in command else 1))
    assert apply_patch(cast(Sandbox, box), "/p.patch")
    assert box.commands == [template.format(path="/p.patch") for template in APPLY_COMMANDS]
    refused = ScriptedBox(lambda command, files: ok(exit_code=1))
    assert not apply_patch(cast(Sandbox, refused), "/p.patch")


def test_a_rebuild_runs_only_after_compiled_sources_change() -> None:
    recipe = InstallRecipe(language="Python", rebuild_commands=("make ext",))
    box = ScriptedBox(lambda command, files: ok("cc: error", exit_code=2))
    rebuild_after(cast(Sandbox, box), recipe, diff_of("pkg/mod.py"))
    assert box.commands == []
    with pytest.raises(ValidationFailed) as failed:
        rebuild_after(cast(Sandbox, box), recipe, diff_of("src/ext.c"))
    assert failed.value.reason == REBUILD_FAILED and "cc: error" in failed.value.detail


# -- runs ------------------------------------------------------------------------------------


def test_a_runs_report_is_read_behind_its_marker_and_merged_with_its_log() -> None:
    # the report, printed after the marker, names a test the log did not
    box = ScriptedBox(
        lambda command, files: ok(f"PASSED {KEPT}\n\n{REPORT_MARKER}\n{JUNIT}", exit_code=0)
    )
    result = prover().run_tests(cast(Sandbox, box), f"{PYTEST} tests/test_a.py", "pytest")
    (command,) = box.commands
    assert command.startswith(f"rm -f {PATCH_DIR}/report.xml; {PYTEST} tests/test_a.py --junit")
    assert f"echo {REPORT_MARKER}; cat {PATCH_DIR}/report.xml" in command
    assert result.statuses == {KEPT: "passed", FIXED: "passed"}
    assert REPORT_MARKER not in result.output and result.contradiction is None


def test_a_long_test_command_runs_from_a_script() -> None:
    box = ScriptedBox(lambda command, files: ok(f"PASSED {FIXED}\n"))
    files = [f"tests/test_{n:05}.py" for n in range(SCRIPT_AFTER_CHARS // 10)]
    prover().run_tests(cast(Sandbox, box), command_on(PYTEST, files), "unittest")
    assert box.commands == [f"sh {TEST_SCRIPT}"]
    assert box.files[TEST_SCRIPT].startswith(PYTEST) and files[-1] in box.files[TEST_SCRIPT]


def test_the_test_a_killed_run_was_in_is_an_error() -> None:
    killed = "tests/test_a.py::test_hangs "  # pytest -v's line of a test that never ended
    box = ScriptedBox(lambda command, files: ok(f"{FIXED} PASSED\n{killed}", 137, True))
    result = prover().run_tests(cast(Sandbox, box), PYTEST, "pytest", timeout=1)
    assert result.timed_out and result.hung_test == "tests/test_a.py::test_hangs"
    assert result.statuses["tests/test_a.py::test_hangs"] == "error"


def test_prove_runs_before_once_and_after_as_often_as_set() -> None:
    box = scripted(fixed_by_the_patch)
    proof = prover(runs=2).prove(environment(box), "fix", "tests", ["tests/test_a.py"])
    assert proof.fail_to_pass == [FIXED] and proof.pass_to_pass == [KEPT]
    assert proof.report.runs == 3 and proof.report.image == "i:1"
    assert box.files[f"{PATCH_DIR}/fix.patch"] == "fix"
    assert box.applied == [f"{PATCH_DIR}/test.patch", f"{PATCH_DIR}/fix.patch"]
    runs = [c for c in box.commands if PYTEST in c]
    assert len(runs) == 3 and all("tests/test_a.py" in c for c in runs)


def test_a_test_that_flips_after_the_fix_is_flaky_not_proven() -> None:
    after_runs = iter(["passed", "failed"])

    def flips(command: str, files: dict[str, str], box: ScriptedBox) -> ExecResult:
        if command.startswith("git apply"):
            return ok()
        if f"{PATCH_DIR}/fix.patch" not in box.applied:
            return ok(pytest_log({FIXED: "failed", KEPT: "failed"}))
        return ok(pytest_log({FIXED: "passed", KEPT: next(after_runs)}))

    proof = prover(runs=2).prove(environment(scripted(flips)), "fix", "t", ["tests/test_a.py"])
    assert proof.fail_to_pass == [FIXED] and proof.report.flaky == [KEPT]


def test_prove_rejects_what_proves_nothing() -> None:
    def never_fixed(command: str, files: dict[str, str], box: ScriptedBox) -> ExecResult:
        return ok() if command.startswith("git apply") else ok(pytest_log({KEPT: "passed"}))

    with pytest.raises(ValidationFailed) as failed:
        prover().prove(environment(scripted(never_fixed)), "fix", "t", ["tests/test_a.py"])
    assert failed.value.reason == NO_FAIL_TO_PASS and failed.value.tests_ran == 1

    refused = ScriptedBox(lambda command, files: ok(exit_code=1))
    with pytest.raises(ValidationFailed) as failed:
        prover().prove(environment(refused), "fix", "t", ["tests/test_a.py"])
    assert failed.value.reason == TEST_PATCH_FAILS
    assert not any(PYTEST in c for c in refused.commands)


def test_evaluate_grades_a_candidate_as_swebench_does() -> None:
    def gold_or_not(command: str, files: dict[str, str], box: ScriptedBox) -> ExecResult:
        if command.startswith("git apply") or command.startswith("patch "):
            return ok(exit_code=0 if files[f"{PATCH_DIR}/candidate.patch"] != "junk" else 1)
        fixed = f"{PATCH_DIR}/candidate.patch" in box.applied
        return ok(pytest_log({FIXED: "passed" if fixed else "failed", KEPT: "passed"}))

    gold = prover().evaluate(environment(scripted(gold_or_not)), "fix", "t", [FIXED], [KEPT])
    assert gold.resolved and gold.statuses == {FIXED: "passed", KEPT: "passed"}
    empty = prover().evaluate(environment(scripted(gold_or_not)), "", "t", [FIXED], [KEPT])
    assert not empty.resolved and empty.failing([FIXED, KEPT]) == [FIXED]
    junk = prover().evaluate(environment(scripted(gold_or_not)), "junk", "t", [FIXED], [KEPT])
    assert not junk.patch_applied and not junk.resolved


def test_verify_rejects_a_recipe_whose_run_reports_no_test() -> None:
    box = ScriptedBox(lambda command, files: ok("ModuleNotFoundError: no module named p", 4))
    with pytest.raises(ValidationFailed) as failed:
        prover().verify(environment(box), "", ["tests/test_a.py"])
    assert failed.value.reason == RECIPE_REJECTED
    assert "no module named p" in failed.value.detail
    # the base commit has the file: the test patch is not applied to run it
    assert not any(c.startswith("git apply") for c in box.commands)

    passing = ScriptedBox(lambda command, files: ok(pytest_log({KEPT: "passed"})))
    assert prover().verify(environment(passing), "t", ["tests/test_a.py"]) == 1
    assert re.search(r"tests/test_a\.py", passing.commands[-1])


def test_a_fail_to_pass_only_the_bases_one_run_says_failed_is_run_again() -> None:
    base = Run({"s": "failed", "s::old": "passed", "s::flake": "failed", "t": "passed"}, 1.0, False)
    test_only = Run({"t": "failed"}, 1.0, False)  # the suite ``s`` did not build
    fixed = Run(
        {
            "s": "passed",
            "s::old": "passed",
            "s::flake": "passed",
            "s::new": "passed",
            "t": "passed",
        },
        1.0,
        False,
    )
    three = judge_three([base], [test_only], [fixed], changed=["s::changed"])
    # ``s::new`` is new (not at the base) and ``t`` failed with the test patch: both stand;
    # ``s`` and ``s::flake`` rest on the base's one run
    assert three.fail_to_pass == ["s", "s::flake", "s::new", "t"]
    assert resting_on_base(three) == ["s", "s::flake"]
    again = Run(
        {"s": "passed", "s::old": "passed", "s::flake": "passed", "t": "passed"}, 1.0, False
    )
    confirmed = judge_three([base, again], [test_only], [fixed])
    assert confirmed.fail_to_pass == ["s::new", "t"] and resting_on_base(confirmed) == []
    assert confirmed.flaky == ["s", "s::flake"]
