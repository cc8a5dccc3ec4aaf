"""The prover: a task's tests run in a sandbox of its environment, and what they showed judged.

In one sandbox container from the task's instance image (an ``Environment`` of
``streams.evaluation.provisioner``; no network, CPU / memory / pids limits):

1. apply ``test_patch``, run the test files it touches once: the *before* results;
2. apply ``patch``, run them ``validation.runs`` times (default 3): the *after* results; a test
   whose result changes between runs is flaky and dropped;
3. FAIL_TO_PASS = failed (or errored) before and passed in every after-run;
   PASS_TO_PASS = passed before and in every after-run (``streams.evaluation.grading``).

Per-test results come from the test runner's log parser (``streams.evaluation.log_parsers``),
never from the exit code alone; each run is killed at ``validation.test_timeout_seconds`` and
the test it was in is reported (``timed_out``). A patch that does not apply is tried as
SWE-bench does: ``git apply``, then with fuzz (``git apply -C1 --ignore-whitespace``), then
``patch --fuzz=5``. ``evaluate`` grades any candidate patch the same way (the harness, and
``swe-stream validate``'s gold and empty patches); ``verify`` checks that a recipe runs the
tests at all; ``task`` is the validated task a proof makes.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from schemas import InstallConfig, PatchSet, ValidatedTask, ValidationReport
from schemas.tasks import TestStatus
from streams.clients.git import RepoCache
from streams.core import metrics
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.grading import (
    Evaluation,
    Run,
    ThreeRunVerdict,
    Verdict,
    judge,
    judge_three,
    recipe_problem,
)
from streams.evaluation.log_parsers import (
    LogParser,
    check_command,
    file_of,
    log_parser,
    merge_statuses,
    parse_report,
)
from streams.evaluation.log_parsers.base import ReportFile
from streams.evaluation.provisioner import Environment
from streams.evaluation.reasons import (
    NO_FAIL_TO_PASS,
    PATCH_FAILS,
    REBUILD_FAILED,
    RECIPE_REJECTED,
    SUBMODULE_MISSING,
    TAIL_CHARS,
    TEST_PATCH_FAILS,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
    TESTS_SKIPPED,
    TIMED_OUT,
    ValidationFailed,
    tail,
)
from streams.evaluation.recipes.languages import language_named, runner_owner
from streams.evaluation.recipes.memory import interpreter_fields
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.patched import file_patches
from streams.evaluation.sandbox import Limits, Sandbox

log = logging.getLogger("swe_stream.validator")

PATCH_DIR = "/tmp/swe-stream"
APPLY_COMMANDS = (
    "git apply --verbose {path}",
    "git apply --verbose --ignore-whitespace -C1 {path}",  # fuzz: one line of context
    "patch --batch --forward --fuzz=5 -p1 -i {path}",
)


RUN_VARIABLES = {"PYTHONUNBUFFERED": "1"}
# One exec argument is at most 128 KiB (MAX_ARG_STRLEN): a longer test command (thousands of
# test files) runs from a script file, whose words the shell hands to the runner as argv
SCRIPT_AFTER_CHARS = 32_000
TEST_SCRIPT = f"{PATCH_DIR}/run-tests.sh"


def report_file(runner: str, parser: LogParser | None = None) -> ReportFile | None:
    """Where ``runner`` writes its report (under ``PATCH_DIR``) and the arguments appended
    after the test files, as the runner's language says (``Language.report_file``); None when
    it writes none that way."""
    language = runner_owner(runner)
    return language.report_file(runner, PATCH_DIR) if language is not None else None


REPORT_MARKER = "__swe_stream_report_7c1e__"
RUN_OUTPUT_LIMIT = 64 << 20  # of a test run's stdout, its report included


def split_report(stdout: str) -> tuple[str, str]:
    """A run's stdout as (the runner's log, the report printed after ``REPORT_MARKER``); no
    marker (the run was killed first): all log, no report."""
    log_text, marker, report_text = stdout.rpartition(f"\n{REPORT_MARKER}\n")
    if not marker:
        return stdout, ""
    return log_text + "\n", report_text


def read_report(kind: str, text: str) -> dict[str, TestStatus] | None:
    """The statuses of a run's machine-readable report, or None (not written: the run died
    before, or the runner could not write it)."""
    if not text.strip():
        return None
    try:
        return parse_report(kind, text.encode())
    except ValueError as exc:
        log.info("unreadable %s report: %s", kind, exc)
        return None


def why_no_fail_to_pass(
    recipe: InstallRecipe, verdict: Verdict, befores: list[Run], afters: list[Run]
) -> ValidationFailed:
    """The rejection of a proof without FAIL_TO_PASS: what the runs showed, in a reason that
    says which of "it did not run", "nothing passes", "all skipped", "already passing" it
    was, with the counts and the last run's output tail."""
    runs = [*befores, *afters]
    last = afters[-1] if afters else befores[-1]
    shown = f"before the fix: {counts(verdict.before)}; after: {counts(verdict.after)}"
    ended = f"exit code {last.exit_code}" + (", timed out" if last.timed_out else "")
    output = tail(last.output)
    if all(run.timed_out for run in runs):
        return ValidationFailed(TIMED_OUT, f"{shown}; every run timed out\n{output}")
    after = set(verdict.after.values())
    if not verdict.after:
        broken = compile_failures(recipe, last.output)
        if broken:
            return ValidationFailed(TESTS_DID_NOT_RUN, f"{broken} ({ended})\n{output}")
        reason = TESTS_DID_NOT_RUN
        if any("submodule" in note for note in recipe.notes):
            reason = SUBMODULE_MISSING
        notes = "; ".join(recipe.notes)
        return ValidationFailed(
            reason, f"no test result ({ended}){'; ' + notes if notes else ''}\n{output}"
        )
    if after == {"skipped"}:
        steps = f"; pre-test steps: {list(recipe.pre_test_commands)}"
        return ValidationFailed(TESTS_SKIPPED, f"{shown}{steps}\n{output}")
    broken = compile_failures(recipe, last.output)
    if broken:
        shown = f"{broken}\n{shown}"
    if "passed" not in after:
        return ValidationFailed(TESTS_FAIL_AFTER_FIX, f"{shown} ({ended})\n{output}")
    return ValidationFailed(NO_FAIL_TO_PASS, shown, tests_ran=len(verdict.after))


def compile_failures(recipe: InstallRecipe, output: str) -> str:
    """``compile failure: <package>: <first line the compiler said>`` for each package of a
    run that did not build, as its language reads the run (empty: none did not)."""
    language = language_named(recipe.language)
    failures = language.compile_failures(recipe.test_runner, output) if language else {}
    lines = []
    for package, said in sorted(failures.items()):
        first = next((line.strip() for line in said.splitlines() if line.strip()), "")
        lines.append(f"compile failure: {package}: {first[:300]}")
    return "\n".join(lines)


def runnable_test_files(environment: Environment, files: list[str]) -> list[str]:
    """The test files to run for a PR's ``files``, as the recipe's language says
    (``Language.tests_for``: a JS/TS test-named file that defines no test is replaced by the
    test files importing it)."""
    language = language_named(environment.recipe.language)
    return language.tests_for(environment.tree, files) if language is not None else files


def present(tree: TreeFiles, targets: list[str]) -> list[str]:
    """The test ``targets`` (files, or a compiled language's package directories: ``./pkg``)
    the base commit's tree has: a run before the test patch is given no other."""
    names = tree.names
    found = []
    for target in targets:
        path = target.removeprefix("./").rstrip("/")
        if path in ("", ".") or tree.has(path) or any(n.startswith(path + "/") for n in names):
            found.append(target)
    return found


def test_command(base: str, files: list[str]) -> str:
    """The recipe's test command run on ``files`` (shell-quoted)."""
    return " ".join([base, *(shlex.quote(f) for f in files)])


def counts(statuses: dict[str, TestStatus]) -> str:
    """``3 passed, 1 failed`` (statuses by number, most first)."""
    tally = Counter(statuses.values())
    return ", ".join(f"{n} {status}" for status, n in tally.most_common()) or "no results"


@dataclass
class Proof:
    """What running a test patch before and after the fix showed."""

    report: ValidationReport
    fail_to_pass: list[str]
    pass_to_pass: list[str]


@dataclass
class GeneratedTests:
    """Tests the test generator wrote, proven like a PR's own."""

    test_patch: str
    proof: Proof
    turns: int
    tokens: int


class Prover:
    """Sandbox runs and verdicts in a task's environment; blocking (callers use threads).
    ``repos``: the clones, whose public remote a validated task names; ``pipeline_version``:
    the one a validated task is stamped with."""

    def __init__(
        self,
        repos: RepoCache,
        docker: DockerSettings,
        settings: ValidateSettings,
        pipeline_version: int,
    ):
        self.repos = repos
        self.docker = docker
        self.settings = settings
        self.pipeline_version = pipeline_version

    @property
    def limits(self) -> Limits:
        return Limits.from_settings(self.docker)

    def verify(self, environment: Environment, test_patch: str, test_files: list[str]) -> int:
        """Blocking: whether ``environment`` runs the PR's touched test files at the base
        commit with per-test statuses (those the base commit has; all of them with the test
        patch applied when it has none); the number of tests with a status, or
        ValidationFailed(recipe_rejected) saying what the run showed."""
        existing = [f for f in test_files if environment.tree.has(f)]
        files = runnable_test_files(environment, existing or test_files)
        language = language_named(environment.recipe.language)
        if not existing and language is not None and language.compiled:
            # the packages of the new test files that the base has, run without the test
            # patch (which may not compile without the fix)
            existing = present(environment.tree, files)
            files = existing or files
        command = test_command(environment.recipe.test_command, files)
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            if not existing and test_patch.strip():
                box.put_file(f"{PATCH_DIR}/test.patch", test_patch)
                if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                    raise ValidationFailed(TEST_PATCH_FAILS)
            run = self.run_tests(box, command, environment.recipe.test_runner, files=files)
        problem = recipe_problem(run.statuses)
        if problem:
            ended = f"exit code {run.exit_code}" + (", timed out" if run.timed_out else "")
            raise ValidationFailed(
                RECIPE_REJECTED, f"{problem} ({ended}; `{command}`)\n{tail(run.output)}"
            )
        return len(run.statuses)

    def evaluate(
        self,
        environment: Environment,
        candidate: str,
        test_patch: str,
        fail_to_pass: list[str],
        pass_to_pass: list[str],
    ) -> Evaluation:
        """Blocking: grade ``candidate`` (a patch; empty = the repository as it is) as
        SWE-bench does: hidden tests applied after it, then every FAIL_TO_PASS and
        PASS_TO_PASS test must pass."""
        tests = fail_to_pass + pass_to_pass
        language = environment.recipe.language
        files = sorted({file_of(test, language) or test for test in tests})
        command = test_command(environment.recipe.test_command, files)
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            box.put_files(
                {f"{PATCH_DIR}/candidate.patch": candidate, f"{PATCH_DIR}/test.patch": test_patch}
            )
            if candidate.strip() and not self._apply(box, f"{PATCH_DIR}/candidate.patch"):
                return Evaluation(False, {}, fail_to_pass, pass_to_pass)
            rebuild_after(box, environment.recipe, candidate)
            if test_patch.strip() and not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            runner = environment.recipe.test_runner
            statuses = self.run_tests(box, command, runner, files=files).statuses
        return Evaluation(
            True, {t: statuses.get(t, "error") for t in tests}, fail_to_pass, pass_to_pass
        )

    def prove(
        self,
        environment: Environment,
        fix: str,
        test_patch: str,
        test_files: list[str],
        before_runs: int = 1,
    ) -> Proof:
        """Blocking: in a fresh sandbox, the tests ``before_runs`` times before the fix, then
        ``validation.runs`` times after it."""
        test_files = runnable_test_files(environment, test_files)
        command = test_command(environment.recipe.test_command, test_files)
        language = language_named(environment.recipe.language)
        compiled = language is not None and language.compiled
        at_base = present(environment.tree, test_files) if compiled else []
        changed = language.tests_changed(environment.tree, test_patch) if language else []
        started = time.monotonic()
        with environment.sandbox(self.limits, RUN_VARIABLES) as box:
            box.put_files({f"{PATCH_DIR}/test.patch": test_patch, f"{PATCH_DIR}/fix.patch": fix})
            runner = environment.recipe.test_runner
            # a compiled language's third run: the base as it is, before the test patch (which
            # may not compile without the fix), for what its packages' old tests did there
            bases = (
                [
                    self.run_tests(
                        box,
                        test_command(environment.recipe.test_command, at_base),
                        runner,
                        files=at_base,
                    )
                ]
                if compiled and (at_base or (language is not None and language.runs_whole_suite))
                else []
            )
            if not self._apply(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed(TEST_PATCH_FAILS)
            befores = [
                self.run_tests(box, command, runner, files=test_files) for _ in range(before_runs)
            ]
            if not self._apply(box, f"{PATCH_DIR}/fix.patch"):
                raise ValidationFailed(PATCH_FAILS)
            rebuild_after(box, environment.recipe, fix)
            afters = [
                self.run_tests(box, command, runner, files=test_files)
                for _ in range(self.settings.runs)
            ]
            if compiled and language is not None:
                changed = language.changed_ids(
                    changed, {t for run in [*bases, *befores, *afters] for t in run.statuses}
                )
                if bases and resting_on_base(judge_three(bases, befores, afters, changed)):
                    # the base's one run is these tests' only failure: it is run once more
                    base_command = test_command(environment.recipe.test_command, at_base)
                    if restore_base(box, [test_patch, fix]):
                        bases.append(self.run_tests(box, base_command, runner, files=at_base))
        runs = [*bases, *befores, *afters]
        if compiled:
            three = judge_three(bases, befores, afters, changed)
            verdict = Verdict(three.test_only, three.fixed, three.flaky)
            base_statuses: dict[str, TestStatus] | None = three.base
        else:
            verdict, base_statuses = judge(befores, afters), None
        report = ValidationReport(
            image=environment.instance.tag,
            runs=len(runs),
            duration_seconds=round(time.monotonic() - started, 3),
            before=verdict.before,
            after=verdict.after,
            base=base_statuses,
            changed_tests=changed if compiled else [],
            never_fail_to_pass=(
                sorted(t for t in verdict.after if not language.may_fail_to_pass(t))
                if compiled and language is not None
                else []
            ),
            flaky=verdict.flaky,
            timed_out=sorted({r.hung_test for r in runs if r.hung_test}),
            test_seconds=round(sum(r.seconds for r in runs), 3),
            exit_codes=[r.exit_code for r in runs],
            contradictions=[
                f"run {n}: {r.contradiction}" for n, r in enumerate(runs, 1) if r.contradiction
            ],
        )
        fail_to_pass, pass_to_pass = report.fail_to_pass(), report.pass_to_pass()
        if not fail_to_pass:
            raise why_no_fail_to_pass(environment.recipe, verdict, befores, afters)
        return Proof(report, fail_to_pass, pass_to_pass)

    def task(
        self,
        patches: PatchSet,
        environment: Environment,
        proof: Proof,
        test_patch: str,
        generated: tuple[int, int] | None = None,
    ) -> ValidatedTask:
        recipe = environment.recipe
        tests = proof.fail_to_pass + proof.pass_to_pass
        return ValidatedTask(
            pipeline_version=self.pipeline_version,
            number=patches.number,
            repo=patches.repo,
            instance_id=patches.instance_id,
            base_commit=patches.base_commit,
            patch=patches.patch,
            test_patch=test_patch,
            problem_statement=patches.problem_statement,
            hints_text=patches.hints_text,
            created_at=patches.created_at,
            version=patches.version,
            FAIL_TO_PASS=proof.fail_to_pass,
            PASS_TO_PASS=proof.pass_to_pass,
            environment_setup_commit=patches.environment_setup_commit,
            validation=proof.report,
            tests_generated=generated is not None,
            testgen_turns=generated[0] if generated else None,
            testgen_tokens=generated[1] if generated else None,
            classification=patches.classification,
            difficulty_score=patches.score,
            install_config=InstallConfig(
                language=recipe.language,
                base_image=recipe.base_image or self.docker.base_image,
                env_image=environment.env.tag,
                instance_image=environment.instance.tag,
                install_commands=list(recipe.install_commands),
                test_command=recipe.test_command,
                **interpreter_fields(recipe),
                test_runner=recipe.test_runner,
                system_packages=list(recipe.system_packages),
                env_commands=list(recipe.env_commands),
                pre_test_commands=list(recipe.pre_test_commands),
                environment=recipe.variables,
                recipe=list(recipe.sources),
                remote=self.repos.public_url(patches.repo),
            ),
            checks=[check_command(recipe.test_command, recipe.test_runner, t) for t in tests],
        )

    def _apply(self, box: Sandbox, path: str) -> bool:
        return apply_patch(box, path)

    def run_tests(
        self,
        box: Sandbox,
        command: str,
        runner: str,
        timeout: float | None = None,
        files: Sequence[str] = (),
    ) -> Run:
        """One run of ``command`` in ``box`` (killed at ``timeout``, default
        ``validation.test_timeout_seconds``): per-test statuses from ``runner``'s report and
        log, the exit code, and whether the two contradict each other (logged, counted).
        ``files``: the test files it runs, put in the ids of a JS runner that names none."""
        parser = log_parser(runner)
        report = report_file(runner, parser)
        if report is not None:
            # the report is printed after the run, in the same exec, behind a marker line
            command = (
                f"rm -f {report.path}; {command} {report.arguments}; rc=$?; "
                f"echo; echo {REPORT_MARKER}; cat {report.path} 2>/dev/null; exit $rc"
            )
        if len(command) > SCRIPT_AFTER_CHARS:
            box.put_file(TEST_SCRIPT, command + "\n")
            command = f"sh {TEST_SCRIPT}"
        result = box.run(
            command,
            timeout=timeout or self.settings.test_timeout_seconds,
            output_limit=RUN_OUTPUT_LIMIT,
        )
        metrics.VALIDATION_RUN_SECONDS.observe(result.inner_seconds)
        log_text, report_text = split_report(result.stdout)
        output = log_text + result.stderr
        statuses = parser.parse(output)
        if report is not None and parser.report is not None:
            statuses = merge_statuses(read_report(parser.report, report_text), statuses)
        owner = runner_owner(runner)
        if owner is not None:  # ids the runner printed without their file (ava, mocha)
            statuses = owner.ids_with_files(runner, statuses, list(files))
        hung = parser.running_when_killed(output) if result.timed_out else None
        if hung:
            statuses[hung] = "error"
        run = Run(
            statuses,
            result.inner_seconds,
            result.timed_out,
            hung,
            exit_code=result.exit_code,
            output=tail(output, 4 * TAIL_CHARS),
        )
        if run.contradiction:
            metrics.TEST_EXIT_CONTRADICTIONS.inc()
            log.warning("test run contradicts itself: %s (%s)", run.contradiction, command[:200])
        return run


def touches_compiled_sources(patch: str, language: str) -> bool:
    """Whether ``patch`` changes what a recipe of ``language`` rebuilds (a compiled
    extension's sources; for JavaScript / TypeScript, the sources of the build the tests
    load), as that language says."""
    owner = language_named(language)
    return owner.touches_compiled_sources(patch) if owner is not None else False


def rebuild_after(box: Sandbox, recipe: InstallRecipe, patch: str, timeout: float = 900) -> None:
    """Rebuild the compiled extensions in place when ``patch`` changed their sources (the
    images hold what the base commit's sources built into); ValidationFailed when the
    rebuild fails."""
    if not recipe.rebuild_commands or not touches_compiled_sources(patch, recipe.language):
        return
    for command in recipe.rebuild_commands:
        result = box.run(command, timeout=timeout)
        if result.exit_code != 0:
            raise ValidationFailed(
                REBUILD_FAILED, f"`{command}` exited {result.exit_code}\n{tail(result.output)}"
            )


def resting_on_base(three: ThreeRunVerdict) -> list[str]:
    """The FAIL_TO_PASS whose failure only the base run shows: missing from the test-patch
    runs (their binary or package did not build), not changed by the test patch, and failed
    at the base. One run of the base is weak evidence for them: a flaky old test that failed
    there by chance would be taken for one the fix makes pass."""
    return [
        t
        for t in three.fail_to_pass
        if t not in three.test_only and t not in three.changed and t in three.base
    ]


def restore_base(box: Sandbox, patches: list[str]) -> bool:
    """The box's tree back at the base commit where the ``patches`` changed it: the files they
    changed or deleted checked out again, the ones they added (or renamed to) removed. Nothing
    else is touched: built files are kept, so only what changed compiles again, and so are the
    files the image's build wrote (a resolved lockfile). False when git could not."""
    files = [f for patch in patches for f in file_patches(patch)]
    changed = sorted({f.old for f in files if f.old})
    added = sorted({f.new for f in files if f.new and f.new != f.old} - set(changed))
    commands = []
    if changed:
        commands.append("git checkout -q HEAD -- " + " ".join(map(shlex.quote, changed)))
    if added:
        commands.append("rm -f -- " + " ".join(map(shlex.quote, added)))
    if not commands:
        return True
    result = box.run(" && ".join(commands), timeout=120)
    if result.exit_code != 0:
        log.warning("could not restore the base to run it again: %s", tail(result.output))
    return result.exit_code == 0


def apply_patch(box: Sandbox, path: str) -> bool:
    """Apply the patch at ``path`` (inside the box) as SWE-bench does: plain, then with fuzz."""
    for template in APPLY_COMMANDS:
        result = box.run(template.format(path=path), timeout=120)
        if result.exit_code == 0:
            return True
    return False
