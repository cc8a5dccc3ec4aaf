"""The harness engine: a coding agent evaluated on task directories in Docker (the ``harness``
stage and ``swe-stream harness`` both run it).

Evaluates a coding agent on exported tasks in Docker, grading its patch as SWE-bench does:

1. **setup**: the task's images (validate's three layers, built when missing); a failure is
   ``setup_error``;
2. **sanity**: in a fresh container with the hidden test patch applied, one run of the test
   files (as in grading): every FAIL_TO_PASS check must fail and every PASS_TO_PASS check
   pass, else ``sanity_fail`` (a compiled language's PASS_TO_PASS checks that fail there, where
   the test patch may not compile without the fix, are run on the base without it);
3. **the agent**: a fresh container of the instance image (``/testbed``, a git repository at
   the base commit, is the working directory) with the agent directory mounted read-only at
   ``/agent``, the prompt in ``/run/swe-stream/prompt.md`` and in ``$SWE_PROMPT``, no network
   unless asked, CPU / memory / pids limits, killed at its timeout; the root filesystem is
   read-only and the places it may write are tmpfs, charged to its memory limit (the graders'
   containers, which run its patch, too): it cannot fill the host's disk. Its environment holds
   nothing of the host's but the variables named (``--agent-env``). A crash or a timeout is
   ``agent_error``. What it changed (``git diff`` against the base commit) is its patch;
4. **grading**: in a fresh container, the agent's patch, then the hidden tests (never seen by
   the agent), then one run of the task's test files, as SWE-bench runs them: every
   FAIL_TO_PASS and PASS_TO_PASS id is graded from that run's statuses (the runner's report,
   then its log), all passed is ``resolved``, else ``unresolved``; a run that cannot start
   (usage or internal error, command not found) is ``test_error``. The run's exit code is kept
   beside the statuses, and a contradiction between them is flagged (``TestRun``). Tasks whose
   ids do not name their files, or ``isolate_tests``, run each check command alone instead.

What the phases showed and the status decided from it are in ``harness_status`` (pure, no
Docker); this module runs the phases and writes the outputs.

A SWE-bench prediction (``evaluate_predictions``) is graded the same way with no agent: its
``model_patch`` is the patch (an empty one is not graded: SWE-bench's empty patch).

Every container is removed (also on timeout and Ctrl-C) unless ``keep_containers``. Per task
the output directory gets ``report.json`` (SWE-bench's shape), ``model.patch`` and the logs;
per instance SWE-bench's layout, ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``
(``report.json`` when graded, ``test_output.txt``, ``patch.diff``, ``run_instance.log``), and
per run SWE-bench's summary ``<model>.<run_id>.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schemas.harness import (
    AgentNetwork,
    CommandResult,
    HarnessReport,
    HarnessStatus,
    TaskEvaluation,
    TestRun,
)
from schemas.workspace import TaskWorkspace
from streams.core import metrics
from streams.core.progress import PROGRESS
from streams.evaluation.egress import RegistryEgress
from streams.evaluation.harness_status import (
    AgentRun,
    Checks,
    Graded,
    Phases,
    graded_checks,
    sanity_passed,
    status_of,
    task_checks,
)
from streams.evaluation.predictions import (
    LOG_DIR,
    Outcome,
    Prediction,
    default_run_id,
    model_dir_name,
    run_summary,
    summary_name,
)
from streams.evaluation.prover import (
    PATCH_DIR,
    RUN_VARIABLES,
    apply_patch,
    rebuild_after,
    test_command,
)
from streams.evaluation.provisioner import Environment
from streams.evaluation.reasons import ValidationFailed
from streams.evaluation.recipes.languages import language_named
from streams.evaluation.sandbox import Limits, Sandbox, remove_labelled
from streams.evaluation.taskdir import WORKSPACE, load_workspace
from streams.evaluation.validator import Validator, task_environment

log = logging.getLogger("swe_stream.harness")

PROMPT_FILE = "/run/swe-stream/prompt.md"


AGENT_MOUNT = "/agent"


RUN_LABEL = "org.swe-stream.harness-run"  # on the agents' containers: found again on Ctrl-C


OUTPUT_CHARS = 2000  # per check command's stdout / stderr, as swe-forge keeps them


AGENT_OUTPUT_CHARS = 10_000


@dataclass
class HarnessOptions:
    """How agents are run (swe-forge's defaults)."""

    agent_command: str = "python -m baseagent"
    agent_dir: Path | None = None
    agent_timeout_seconds: float = 600.0
    test_timeout_seconds: float = 120.0
    # none; model / registries: only the model's API / the package registries, through the
    # egress door (the container itself has no network); all: the bridge
    agent_network: AgentNetwork = "none"
    model_endpoints: tuple[tuple[str, int], ...] = ()  # (host, port) reached under "model"
    # reached under "registries" (None: Debian's and every language's, ``package_registries``)
    registries: tuple[str, ...] | None = None
    agent_env: dict[str, str] = field(default_factory=dict)  # only what the user named
    keep_containers: bool = False
    output_dir: Path | None = None  # report.json, model.patch and logs per task
    run_id: str = field(default_factory=lambda: f"{os.getpid()}-{time.time_ns()}")
    # every check in a container of its own run (slow: one runner process per test id)
    isolate_tests: bool = False
    # SWE-bench's run id: logs/run_evaluation/<evaluation_run_id>/ and the summary's name
    evaluation_run_id: str = field(default_factory=default_run_id)
    model_name: str | None = None  # the agent's name in SWE-bench's reports (default: its dir)

    @property
    def model(self) -> str:
        """The agent's name as SWE-bench's reports give it (``model_name_or_path``): the name
        given, else its directory's, else ``agent``."""
        name = self.model_name or (self.agent_dir.resolve().name if self.agent_dir else "")
        try:
            model_dir_name(name)
        except ValueError:
            return safe_name(name, 200, "agent")
        return name


def truncated(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "... [truncated]"


def run_check(box: Sandbox, command: str, timeout: float) -> CommandResult:
    result = box.run(command, timeout=timeout, output_limit=64 << 10)
    return CommandResult(
        command=command,
        exit_code=-1 if result.timed_out else result.exit_code,
        passed=result.exit_code == 0 and not result.timed_out,
        duration_ms=int(result.seconds * 1000),
        stdout=truncated(result.stdout, OUTPUT_CHARS),
        stderr=truncated(result.stderr, OUTPUT_CHARS),
    )


class HarnessEngine:
    """Evaluates agents on task directories; blocking (callers use threads)."""

    def __init__(self, validator: Validator, options: HarnessOptions, limits: Limits):
        self.validator = validator
        self.options = options
        self.limits = limits

    def grading_sandbox(
        self, environment: Environment, contained: bool = True, remover: Executor | None = None
    ) -> Sandbox:
        """A grader's container (not started; removed in ``remover`` if given). The agent's
        patch runs in the grading container (conftest.py...): contained; the sanity run is the
        task's own code, as validation ran it."""
        limits = self.contained(network=False) if contained else replace(self.limits, network=False)
        labels = {RUN_LABEL: self.options.run_id}
        return environment.sandbox(limits, RUN_VARIABLES, labels=labels, remover=remover)

    def sanity(
        self, environment: Environment, task: TaskWorkspace, checks: Checks, remover: Executor
    ) -> Graded:
        """The checks before any agent: with the test patch, its FAIL_TO_PASS checks must
        fail and its PASS_TO_PASS checks pass. A compiled language's test patch may not
        compile without the fix: its PASS_TO_PASS checks failing there are then judged as
        validation's three runs judged them, on the base as it is (no test patch)."""
        graded = self.grade(environment, task, "", checks, remover=remover)
        language = language_named(environment.recipe.language)
        if language is None or not language.compiled or all(c.passed for c in graded.pass_to_pass):
            return graded
        untested = task.model_copy(update={"test_patch": ""})
        base = self.grade(environment, untested, "", checks, remover=remover)
        return replace(
            graded,
            pass_to_pass=base.pass_to_pass,
            seconds=graded.seconds + base.seconds,
            output=f"{graded.output}\n(without the test patch)\n{base.output}",
        )

    def grade(
        self,
        environment: Environment,
        task: TaskWorkspace,
        patch: str,
        checks: Checks,
        prepared: Prepared | None = None,
        remover: Executor | None = None,
    ) -> Graded:
        """The checks after ``patch`` (none: the sanity run), in ``prepared``'s container (made
        while something else ran) or a new one (removed in ``remover`` if given)."""
        started = time.monotonic()
        contained = bool(patch.strip())
        box = prepared.take() if prepared else self.grading_sandbox(environment, contained, remover)
        with box:
            box.put_files(
                {f"{PATCH_DIR}/model.patch": patch, f"{PATCH_DIR}/test.patch": task.test_patch}
            )
            if patch.strip():
                if not apply_patch(box, f"{PATCH_DIR}/model.patch"):
                    return Graded(False, [], [], time.monotonic() - started)
                rebuild_after(box, environment.recipe, patch)
            if task.test_patch.strip() and not apply_patch(box, f"{PATCH_DIR}/test.patch"):
                raise ValidationFailed("test_patch_does_not_apply")
            timeout = self.options.test_timeout_seconds
            if not checks.one_run:
                f2p = [run_check(box, c, timeout) for c in checks.fail_to_pass]
                p2p = [run_check(box, c, timeout) for c in checks.pass_to_pass]
                output = "".join(
                    f"$ {c.command}\n{c.stdout}{c.stderr}\n[exit {c.exit_code}]\n"
                    for c in f2p + p2p
                )
                return Graded(True, f2p, p2p, time.monotonic() - started, output=output)
            # the budget the checks would have had one by one
            budget = timeout * (len(checks.fail_to_pass) + len(checks.pass_to_pass))
            command = test_command(environment.recipe.test_command, checks.files)
            run = self.validator.run_tests(
                box, command, environment.recipe.test_runner, budget, checks.files
            )
        return Graded(
            True,
            graded_checks(checks.fail_to_pass, checks.fail_to_pass_ids, run),
            graded_checks(checks.pass_to_pass, checks.pass_to_pass_ids, run),
            time.monotonic() - started,
            TestRun(
                phase="grading" if patch.strip() else "sanity",
                command=command,
                exit_code=-1 if run.timed_out or run.exit_code is None else run.exit_code,
                seconds=round(run.seconds, 3),
                tests=len(run.statuses),
                contradiction=run.contradiction,
                output=truncated(run.output, OUTPUT_CHARS),
            ),
            output=f"$ {command}\n{run.output}",
        )

    def contained(self, network: bool) -> Limits:
        """The limits of a container that runs the agent's code: its writes go to tmpfs,
        bounded by its memory, never to the host's disk."""
        return replace(
            self.limits,
            network=network,
            writable_mb=self.limits.writable_mb or self.limits.memory_mb,
        )

    def abort(self) -> int:
        """Remove this run's containers now (Ctrl-C): their blocked commands return at once."""
        return remove_labelled(self.validator.client, RUN_LABEL, self.options.run_id)

    def agent_egress(self) -> RegistryEgress | None:
        """The door of the agent's container (not entered), for the ``model`` and
        ``registries`` modes; None for ``none`` and ``all``."""
        options = self.options
        client, image = self.validator.client, self.validator.docker.base_image
        if options.agent_network == "model":
            if not options.model_endpoints:
                raise ValueError("agent_network=model names no model endpoint")
            return RegistryEgress(client, image, (), trusted=options.model_endpoints)
        if options.agent_network == "registries":
            return RegistryEgress(client, image, options.registries)
        return None

    def agent_sandbox(
        self,
        environment: Environment,
        task: TaskWorkspace,
        name: str,
        remover: Executor | None = None,
        egress: RegistryEgress | None = None,
    ) -> Sandbox:
        """The agent's container (not started; removed in ``remover`` if given), reaching
        the network through ``egress`` (entered) when given."""
        options = self.options
        door = dict(egress.sandbox_options) if egress else {}
        variables = {
            **options.agent_env,
            **door.pop("environment", {}),  # the door's proxy, whatever the agent's say
            "SWE_PROMPT": task.prompt,
            "SWE_PROMPT_FILE": PROMPT_FILE,
            "SWE_TASK_ID": task.id,
            "SWE_REPO": task.repo,
            "SWE_WORKDIR": "/testbed",
        }
        limits = self.contained(network=options.agent_network == "all")
        mounts = {str(options.agent_dir.resolve()): AGENT_MOUNT} if options.agent_dir else {}
        return environment.sandbox(
            limits,
            variables,
            mounts=mounts,
            name=name,
            keep=options.keep_containers,
            labels={RUN_LABEL: options.run_id},
            remover=remover,
            **door,
        )

    def run_agent(self, task: TaskWorkspace, prepared: Prepared) -> AgentRun:
        """The agent in its container (``prepared``: made, and the prompt put in it, while the
        sanity run ran)."""
        options = self.options
        with prepared.take() as box:
            result = box.run(
                options.agent_command,
                timeout=options.agent_timeout_seconds,
                output_limit=AGENT_OUTPUT_CHARS,
            )
            diff = box.run("git add -A && git diff --cached --binary HEAD", timeout=120)
            return AgentRun(
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                seconds=result.seconds,
                output=truncated(result.output, AGENT_OUTPUT_CHARS),
                patch=diff.stdout if diff.exit_code == 0 else "",
                container_id=box.container_id,
            )

    def evaluate(self, task_dir: Path) -> TaskEvaluation:
        """One task, start to end; never raises for the task's own failures."""
        return self.evaluate_instance(task_dir).result

    def evaluate_instance(
        self, task_dir: Path | None, prediction: Prediction | None = None
    ) -> Evaluated:
        """One task, start to end, with the agent or, given ``prediction``, its patch (no agent
        runs; an empty one is not graded, ``task_dir`` None: no task has its instance id);
        never raises for the task's own failures."""
        started = time.monotonic()
        model = prediction.model_name_or_path if prediction else self.options.model
        given = None
        if prediction is not None:  # the prediction's patch stands for a succeeded agent's
            given = AgentRun(0, False, 0.0, "", prediction.model_patch or "", None)
        phases = Phases(agent=given)
        if task_dir is None:
            assert prediction is not None, "an agent runs on a task directory"
            missing = setup_error(
                prediction.instance_id, f"no task has instance_id {prediction.instance_id!r}"
            )
            return self._finish(missing, None, started, phases, model, prediction.instance_id)
        try:
            task = load_workspace(task_dir / WORKSPACE)
        except (OSError, ValueError) as exc:
            unreadable = setup_error(task_dir.name, f"unreadable task: {exc}"[:2000])
            instance_id = prediction.instance_id if prediction else task_dir.name
            return self._finish(unreadable, None, started, phases, model, instance_id)
        result = TaskEvaluation(
            task_id=task.id,
            repo=task.repo,
            status="setup_error",
            sanity_check=False,
            agent_duration_secs=0,
            total_duration_secs=0,
        )
        if prediction is not None and prediction.empty:  # SWE-bench does not run it either
            result.status, result.error = "unresolved", "empty patch (not graded)"
            return self._finish(result, task, started, phases, model, task.instance_id)
        setup_started = time.monotonic()
        try:
            # the images a cache level drops are this evaluation's own (see
            # EnvironmentBuilder), so it drops them when it ends, whoever else runs the task
            environment = task_environment(self.validator, task)
        except Exception as exc:  # clone, build, unsupported: all are the setup's failure
            result.error = f"{type(exc).__name__}: {exc}"[:2000]
            return self._finish(result, task, started, phases, model, task.instance_id)
        finally:
            metrics.HARNESS_PHASE_SECONDS.labels(phase="setup").observe(
                time.monotonic() - setup_started
            )
        try:
            self._run_phases(environment, task, result, phases)
            result.status, result.error = status_of(
                phases, self.options.agent_timeout_seconds, self.limits.memory_mb
            )
        except ValidationFailed as exc:
            result.status, result.error = "test_error", str(exc)
        except Exception as exc:  # the engine's own trouble with Docker: the run failed
            log.exception("harness: %s failed", task.id)
            result.status, result.error = "test_error", f"{type(exc).__name__}: {exc}"[:2000]
        finally:
            environment.release()
        return self._finish(result, task, started, phases, model, task.instance_id)

    def _run_phases(
        self, environment: Environment, task: TaskWorkspace, result: TaskEvaluation, phases: Phases
    ) -> None:
        """Sanity, the agent (unless ``phases`` already holds one: a prediction's patch),
        grading, each only when the one before it went well; what ran is in ``phases`` (and
        its durations and output in ``result``). Each phase's container is made and filled
        while the phase before it runs (the agent's during the sanity run, the grader's during
        the agent's): a second to a few of the engine's work per evaluation that no longer
        waits; one made for nothing is removed."""
        checks = task_checks(task, environment, self.options.isolate_tests)
        name = f"swe-harness-{task.id}-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        # containers are made and removed here, in the background, one after another: a
        # phase's container is ready when it starts and the next does not wait for its removal
        with (
            contextlib.ExitStack() as doors,  # left last: after the containers' removal
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-prepare") as pool,
        ):
            agent_box = None
            if phases.agent is None:
                egress = self.agent_egress()
                if egress is not None:
                    # after the door's removal, which reads what it refused once
                    doors.callback(log_refusals, egress, task.id)
                    doors.enter_context(egress)

                def fill(box: Sandbox) -> None:
                    box.put_file(PROMPT_FILE, task.prompt)
                    if egress is not None:
                        egress.attach(box)

                agent_box = Prepared(
                    pool, self.agent_sandbox(environment, task, name, pool, egress), fill
                )
            grader = Prepared(pool, self.grading_sandbox(environment))
            try:
                phases.sanity = self.sanity(environment, task, checks, pool)
                metrics.HARNESS_PHASE_SECONDS.labels(phase="test").observe(phases.sanity.seconds)
                result.sanity_check = sanity_passed(phases.sanity)
                if not result.sanity_check:
                    return
                if agent_box is not None:
                    agent = phases.agent = self.run_agent(task, agent_box)
                    metrics.HARNESS_PHASE_SECONDS.labels(phase="agent").observe(agent.seconds)
                    result.agent_duration_secs = round(agent.seconds, 1)
                    result.agent_output = agent.output
                    keep = self.options.keep_containers
                    result.container_id = agent.container_id if keep else None
                if phases.agent is None or not phases.agent.succeeded:
                    return
                graded = self.grade(environment, task, phases.agent.patch, checks, grader)
                phases.graded = graded
                metrics.HARNESS_PHASE_SECONDS.labels(phase="test").observe(graded.seconds)
                result.fail_to_pass, result.pass_to_pass = graded.fail_to_pass, graded.pass_to_pass
            finally:
                if agent_box is not None:
                    agent_box.discard()
                grader.discard()

    def _finish(
        self,
        result: TaskEvaluation,
        task: TaskWorkspace | None,
        started: float,
        phases: Phases,
        model: str,
        instance_id: str,
    ) -> Evaluated:
        result.total_duration_secs = round(time.monotonic() - started, 1)
        result.test_runs = [
            graded.run for graded in (phases.sanity, phases.graded) if graded and graded.run
        ]
        metrics.HARNESS_EVALUATIONS.labels(status=result.status).inc()
        result.task_month = task.month if task is not None else None
        metrics.HARNESS_TASK_MONTHS.labels(
            model=model,
            month=result.task_month or "unknown",
            resolved=str(result.status == "resolved").lower(),
        ).inc()
        outcome = swebench_outcome(result.status, phases.patch, phases.graded)
        evaluated = Evaluated(result, instance_id, outcome)
        if self.options.output_dir is not None:
            output_dir = self.options.output_dir
            write_task_outputs(output_dir, result, task, phases.reported, phases.patch)
            run_id = self.options.evaluation_run_id
            write_instance_logs(output_dir, run_id, model, evaluated, task, phases)
        return evaluated


def log_refusals(egress: RegistryEgress, task_id: str) -> None:
    """What the agent's door (removed: its refusals kept) refused, in the log."""
    refused = egress.refused()
    for line in refused[:20]:
        log.info("harness: %s: the agent's network door refused %s", task_id, line)
    if len(refused) > 20:
        log.info("harness: %s: ... and %d more refusals", task_id, len(refused) - 20)


@dataclass(frozen=True)
class Evaluated:
    """One evaluation: the harness's result and how SWE-bench's summary counts it."""

    result: TaskEvaluation
    instance_id: str
    outcome: Outcome


class Prepared:
    """A sandbox started in the background (``pool``) while something else runs, and then
    given to ``then`` (files to put in it, say). ``take`` waits for it and hands it over,
    started (its ``with`` block removes it); ``discard`` removes it when nobody took it."""

    def __init__(
        self, pool: ThreadPoolExecutor, box: Sandbox, then: Callable[[Sandbox], None] | None = None
    ):
        self.box = box
        self.future = pool.submit(self._start, box, then)
        self.taken = False

    @staticmethod
    def _start(box: Sandbox, then: Callable[[Sandbox], None] | None) -> Sandbox:
        box.__enter__()
        try:
            if then is not None:
                then(box)
        except BaseException:
            box.__exit__(None, None, None)  # nobody will take it: removed here
            raise
        return box

    def take(self) -> Sandbox:
        self.taken = True
        return self.future.result()  # its failure to start is the taker's

    def discard(self) -> None:
        if self.taken:
            return
        self.taken = True
        try:
            self.future.result()
        except Exception as error:  # it never started: nothing to remove
            log.debug("a prepared container did not start: %s", error)
        self.box.__exit__(None, None, None)


def setup_error(task_id: str, error: str) -> TaskEvaluation:
    """The evaluation of a task that could not even be set up (no task, unreadable)."""
    return TaskEvaluation(
        task_id=task_id,
        repo="",
        status="setup_error",
        sanity_check=False,
        agent_duration_secs=0,
        total_duration_secs=0,
        error=error,
    )


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, limit: int, default: str) -> str:
    """``text`` as a file name: runs of other characters than ``A-Za-z0-9._-`` become one
    ``-``, no leading or trailing dot or dash, at most ``limit`` characters, never empty."""
    return _SAFE.sub("-", text).strip(".-")[:limit] or default


def report_tests_status(
    fail_to_pass: list[str], pass_to_pass: list[str], graded: Graded | None
) -> dict[str, dict[str, list[str]]]:
    """SWE-bench's ``tests_status`` of one instance: its FAIL_TO_PASS and PASS_TO_PASS ids
    split into those whose check passed (``success``) and the others (``failure``: a check
    that did not run, say because the patch does not apply, too). FAIL_TO_FAIL and
    PASS_TO_FAIL are graded from the dataset's lists of them, as SWE-bench grades them; a task
    records none (nor does SWE-bench's dataset), so they are empty, whatever else the run
    reported."""

    def split(ids: list[str], checks: list[CommandResult]) -> dict[str, list[str]]:
        passed = [i < len(checks) and checks[i].passed for i in range(len(ids))]
        return {
            "success": [test for test, ok in zip(ids, passed, strict=True) if ok],
            "failure": [test for test, ok in zip(ids, passed, strict=True) if not ok],
        }

    return {
        "FAIL_TO_PASS": split(fail_to_pass, graded.fail_to_pass if graded else []),
        "PASS_TO_PASS": split(pass_to_pass, graded.pass_to_pass if graded else []),
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }


def swebench_report(
    result: TaskEvaluation,
    task: TaskWorkspace,
    graded: Graded | None,
    patch: str | None,
) -> dict[str, Any]:
    """SWE-bench's report.json for one instance (and the harness's status beside it);
    ``patch`` None: the prediction had none (``patch_is_None``)."""
    return {
        task.instance_id: {
            "patch_is_None": patch is None,
            "patch_exists": bool((patch or "").strip()),
            "patch_successfully_applied": bool(graded and graded.patch_applied),
            "resolved": result.status == "resolved",
            "status": result.status,
            "tests_status": report_tests_status(
                list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS), graded
            ),
        }
    }


def swebench_outcome(status: HarnessStatus, patch: str, graded: Graded | None) -> Outcome:
    """How SWE-bench's summary counts an evaluation: an empty patch is ``empty_patch`` (not
    graded; SWE-bench does not run it), a patch graded (applied, its tests run) is
    ``resolved`` or ``unresolved``, anything else ``error`` (no task, no environment, a failed
    sanity check, an agent that failed, a patch that does not apply, tests that cannot run)."""
    if status not in ("resolved", "unresolved"):
        return "error"
    if not patch.strip():
        return "empty_patch"
    if graded is None or not graded.patch_applied:
        return "error"
    return "resolved" if status == "resolved" else "unresolved"


def instance_log_dir(output_dir: Path, run_id: str, model: str, instance_id: str) -> Path:
    """``OUTPUT/logs/run_evaluation/<run_id>/<model>/<instance_id>/``, SWE-bench's names (an id
    that cannot name a directory gets a safe name)."""

    def name(text: str) -> str:
        try:
            return model_dir_name(text)
        except ValueError:
            return safe_name(text, 200, "instance")

    return output_dir / LOG_DIR / name(run_id) / name(model) / name(instance_id)


def write_instance_logs(
    output_dir: Path,
    run_id: str,
    model: str,
    evaluated: Evaluated,
    task: TaskWorkspace | None,
    phases: Phases,
) -> Path:
    """SWE-bench's files of one instance: ``patch.diff``, ``run_instance.log``, and, when its
    patch ran, ``test_output.txt`` (what the graded run printed), and ``report.json`` when it
    was graded (SWE-bench counts an instance without one as an error)."""
    directory = instance_log_dir(output_dir, run_id, model, evaluated.instance_id)
    directory.mkdir(parents=True, exist_ok=True)
    result = evaluated.result
    (directory / "patch.diff").write_text(phases.patch, encoding="utf-8")
    lines = [
        f"instance_id: {evaluated.instance_id}",
        f"model: {model}",
        f"run_id: {run_id}",
        f"status: {result.status}",
        f"outcome: {evaluated.outcome}",
        f"error: {result.error or ''}",
    ]
    (directory / "run_instance.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if phases.graded is not None:
        (directory / "test_output.txt").write_text(phases.graded.output, encoding="utf-8")
    if task is not None and evaluated.outcome in ("resolved", "unresolved"):
        patch = phases.agent.patch if phases.agent else None
        report = swebench_report(result, task, phases.graded, patch)
        (directory / "report.json").write_text(json.dumps(report, indent=4), encoding="utf-8")
    return directory


def write_task_outputs(
    output_dir: Path,
    result: TaskEvaluation,
    task: TaskWorkspace | None,
    graded: Graded | None,
    patch: str,
) -> Path:
    """``OUTPUT/<task>/``: report.json, model.patch, evaluation.json (commands and logs)."""
    # one safe name, short enough for any file system (NAME_MAX is 255 bytes)
    directory = output_dir / safe_name(result.task_id, 200, "task")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "evaluation.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    (directory / "agent.log").write_text(result.agent_output, encoding="utf-8")
    (directory / "model.patch").write_text(patch, encoding="utf-8")
    if task is not None:
        report = swebench_report(result, task, graded, patch)
        (directory / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return directory


async def evaluate_all(
    engine: HarnessEngine,
    task_dirs: list[Path],
    parallel: int = 1,
    on_done: Callable[[TaskEvaluation], None] | None = None,
) -> HarnessReport:
    """Every task once, ``parallel`` at a time; results in the order of ``task_dirs``. With an
    output directory, SWE-bench's summary of the run is written there too."""
    jobs = [(task_dir, None) for task_dir in task_dirs]
    evaluated = await _evaluate_jobs(engine, jobs, parallel, on_done)
    if engine.options.output_dir is not None:
        dataset = [e.instance_id for e in evaluated]
        write_run_summary(engine, engine.options.model, dataset, evaluated)
    return HarnessReport.of([e.result for e in evaluated])


async def evaluate_predictions(
    engine: HarnessEngine,
    tasks: dict[str, Path],
    predictions: list[Prediction],
    parallel: int = 1,
    on_done: Callable[[TaskEvaluation], None] | None = None,
) -> HarnessReport:
    """Every prediction graded on the task of its instance id (``tasks``: the task directory
    of each instance id; a prediction of none is reported as an error), ``parallel`` at a
    time; results in the predictions' order. With an output directory, SWE-bench's summary
    of the run (named after the first prediction's model, as SWE-bench names it)."""
    jobs = [(tasks.get(p.instance_id), p) for p in predictions]
    evaluated = await _evaluate_jobs(engine, jobs, parallel, on_done)
    if engine.options.output_dir is not None and predictions:
        write_run_summary(engine, predictions[0].model_name_or_path, list(tasks), evaluated)
    return HarnessReport.of([e.result for e in evaluated])


def write_run_summary(
    engine: HarnessEngine, model: str, dataset: list[str], evaluated: list[Evaluated]
) -> Path:
    """SWE-bench's summary report, ``OUTPUT/<model>.<run_id>.json``."""
    assert engine.options.output_dir is not None
    run_id = engine.options.evaluation_run_id
    summary = run_summary(dataset, {e.instance_id: e.outcome for e in evaluated})
    path = engine.options.output_dir / summary_name(model, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=4), encoding="utf-8")
    return path


async def _evaluate_jobs(
    engine: HarnessEngine,
    jobs: Sequence[tuple[Path | None, Prediction | None]],
    parallel: int,
    on_done: Callable[[TaskEvaluation], None] | None,
) -> list[Evaluated]:
    semaphore = asyncio.Semaphore(max(1, parallel))
    PROGRESS.tasks_planned(len(jobs))  # tasks done / total and the ETA, live or in lines

    async def one(task_dir: Path | None, prediction: Prediction | None) -> Evaluated:
        async with semaphore:
            evaluated = await asyncio.to_thread(engine.evaluate_instance, task_dir, prediction)
        PROGRESS.task_done(evaluated.result.status, evaluated.result.task_id)
        if on_done is not None:
            on_done(evaluated.result)
        return evaluated

    try:
        return list(await asyncio.gather(*(one(d, p) for d, p in jobs)))
    except asyncio.CancelledError:  # Ctrl-C: the threads wait on containers; remove them
        removed = await asyncio.to_thread(engine.abort)
        log.warning("harness interrupted: removed %d container(s)", removed)
        raise
