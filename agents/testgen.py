"""Agentic test generation, for PRs whose own tests prove nothing (part of ``validate``).

A multi-turn loop with the LLM (as swe-forge does, but verified by execution). The model gets
the task (problem statement, the fix as a diff, a tree summary, the test framework) and two
tools:

- ``shell``: a command run in the task's sandbox container (the repository at the base commit,
  no network; the fix is at ``/tmp/swe-stream/fix.patch`` to apply and revert), with a
  per-command timeout and truncated output: exit code, stdout, stderr;
- ``submit_tests``: test files (path -> full content) and the ids of the tests that must fail
  before the fix and pass after it (and those that pass on both).

A submission is accepted only when the validator, in a fresh container, runs the submitted
tests itself and finds every claimed FAIL_TO_PASS test failing before the fix and passing in
every run after it (and the PASS_TO_PASS ones passing throughout). Otherwise the reasons are
the tool result and the loop goes on. Turns, tokens and wall time are limited; running out is
a rejection with its reason.

The prompt is the recipe's language's: pytest ids (``path::name``) for Python
(``TESTGEN_SYSTEM``); for JavaScript / TypeScript (``TESTGEN_SYSTEM_JS``) test files in the
style of the repository's runner (the recipe's ``test_runner``) and the ids the JS log parsers
make (``<file> > <describe blocks> > <title>``; mocha's ``<file> > <full title>``), with the
ids the validator's run did see told back when a claimed one was not run.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import logging
import posixpath
import time
from collections.abc import Callable
from string import Template
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model

from agents.paths import is_test_path
from agents.prompts import TESTGEN_USER, clip, render
from agents.tool_loop import Budget, BudgetExhausted, ShellArgs, shell_result, tool_loop
from schemas import PatchSet
from streams.clients.llm import LLMClient, Tool, call_arguments, call_name, describe_error
from streams.core import metrics
from streams.core.settings import TestgenSettings
from streams.evaluation.recipes.languages import (
    Language,
    interpreter_of,
    language_named,
    languages,
)
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.sandbox import Limits, Sandbox
from streams.evaluation.validator import (
    PATCH_DIR,
    Environment,
    GeneratedTests,
    Proof,
    ValidationFailed,
)

log = logging.getLogger("swe_stream.testgen")

PURPOSE = "testgen"
TURN_LIMIT = "testgen_turn_limit"  # the reasons of a conversation out of budget
TOKEN_LIMIT = "testgen_token_limit"
TIME_LIMIT = "testgen_time_limit"


class SubmitArgs(BaseModel):
    files: dict[str, str] = Field(
        min_length=1, description="test files to add or replace: path -> whole new content"
    )
    fail_to_pass: list[str] = Field(
        min_length=1, description="ids of the tests that fail before the fix and pass after it"
    )
    pass_to_pass: list[str] = Field(
        default_factory=list, description="ids of the tests that pass before and after the fix"
    )


SHELL = Tool("shell", "Run a bash command in the repository's container.", ShellArgs)
SUBMIT = Tool(
    "submit_tests",
    "Submit test files and the tests that fail before the fix and pass after it.",
    SubmitArgs,
)


@functools.lru_cache(maxsize=64)
def submit_tool(id_shape: str) -> Tool[Any]:
    """``submit_tests`` whose id fields say how the language spells an id (``id_shape``)."""
    arguments = create_model(
        "SubmitTestsArgs",
        __base__=SubmitArgs,
        fail_to_pass=(
            list[str],
            Field(
                min_length=1,
                description=f"ids of the tests that fail before the fix and pass after it; "
                f"an id is {id_shape}",
            ),
        ),
    )
    return Tool(SUBMIT.name, SUBMIT.description, arguments)


class Rejected(ValueError):
    """A submission that cannot be used; the message goes back to the model."""


def safe_path(path: str) -> str:
    """A relative path inside the repository, or Rejected."""
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal.startswith("..") or normal in ("", "."):
        raise Rejected(f"{path!r} is not a relative path inside the repository")
    if any(ord(c) < 32 for c in normal):
        raise Rejected(f"{path!r} contains control characters")
    return normal


def checked_test_path(path: str, language: Language | None = None) -> str:
    """A safe path that names a test file: a submission may not change the code under test
    (that would make "fails before the fix" mean nothing). The rejection says how the
    ``language``'s test files are named (``Language.test_file_hint``; Python's by default)."""
    normal = safe_path(path)
    if not is_test_path(normal):
        names = (language or _default_language()).test_file_hint
        raise Rejected(
            f"{path!r} is not a test file ({names}); submissions may only add or change tests"
        )
    return normal


def files_patch(tree: TreeFiles, files: dict[str, str], language: Language | None = None) -> str:
    """A unified diff (``git apply`` format) turning the base tree's files into ``files``."""
    parts = []
    for raw_path, content in sorted(files.items()):
        path = checked_test_path(raw_path, language)
        old_bytes = tree.read(path)
        old = old_bytes.decode("utf-8", errors="replace") if old_bytes is not None else None
        new = content if content.endswith("\n") else content + "\n"
        if old == new:
            continue
        lines = list(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                new.splitlines(keepends=True),
                "/dev/null" if old is None else f"a/{path}",
                f"b/{path}",
            )
        )
        header = f"diff --git a/{path} b/{path}\n" + (
            "new file mode 100644\n" if old is None else ""
        )
        body = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )
        parts.append(header + body)
    if not parts:
        raise Rejected("the submitted files are identical to the repository's")
    return "".join(parts)


def check_claims(proof: Proof, submitted: SubmitArgs) -> None:
    """The validator's own run must confirm every claim; Rejected says which did not hold
    (and, when a claimed id was not run, the ids the run did see, for the model to match its
    runner's ids)."""
    before, after = proof.report.before, proof.report.after
    problems = [
        f"{test}: before the fix {before.get(test, 'not run')}, after {after.get(test, 'not run')}"
        for test in submitted.fail_to_pass
        if test not in proof.fail_to_pass
    ]
    problems += [
        f"{test} should pass before and after: before {before.get(test, 'not run')}, "
        f"after {after.get(test, 'not run')}"
        for test in submitted.pass_to_pass
        if test not in proof.pass_to_pass
    ]
    if problems:
        claimed = [*submitted.fail_to_pass, *submitted.pass_to_pass]
        unseen = any(test not in before and test not in after for test in claimed)
        seen = sorted({*before, *after})
        ids = ""
        if unseen:
            shown = ", ".join(seen[:MAX_IDS_SHOWN]) or "none"
            more = f" and {len(seen) - MAX_IDS_SHOWN} more" if len(seen) > MAX_IDS_SHOWN else ""
            ids = f". The run's test ids: {shown}{more}"
        raise Rejected("these claims did not hold when re-run: " + "; ".join(problems) + ids)


MAX_IDS_SHOWN = 30  # of the run's test ids, in a rejection


def tree_summary(tree: TreeFiles, limit: int = 200) -> str:
    names = tree.names
    more = f"\n... and {len(names) - limit} more files" if len(names) > limit else ""
    return "\n".join(names[:limit]) + more


def _default_language() -> Language:
    """The language of a submission whose recipe names none the registry knows: the first."""
    return languages()[0]


def language_of_recipe(recipe: InstallRecipe) -> Language:
    return language_named(recipe.language) or _default_language()


def testgen_messages(
    patches: PatchSet, recipe: InstallRecipe, tree: TreeFiles
) -> list[dict[str, Any]]:
    """The conversation's first two messages: the system prompt of the recipe's language
    (``Language.testgen_prompt``: its runner and how its test ids are spelled) and the task."""
    language = language_of_recipe(recipe)
    if language.testgen_prompt is None:
        raise ValueError(f"no testgen prompt for {recipe.language} recipes")
    system = Template(language.testgen_prompt.system).substitute(
        shell=SHELL.name,
        submit=SUBMIT.name,
        fix_path=f"{PATCH_DIR}/fix.patch",
        runner=recipe.test_runner,
        id_shape=language.test_id_shape(recipe.test_runner),
        framework=f"{recipe.language}, {recipe.test_runner} ({interpreter_of(recipe)})",
        test_command=recipe.test_command,
    )
    user = render(
        TESTGEN_USER,
        repo=patches.repo,
        title=patches.title or "(none)",
        body=clip(patches.body, 4000) or "(none)",
        problem_statement=clip(patches.problem_statement, 6000),
        fix=clip(patches.patch, 12000),
        tree=tree_summary(tree),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class AgenticTestGenerator:
    """Plugs into the validate stage (``ValidateStage(validator, testgen)``) as its test
    generation."""

    def __init__(
        self,
        llm: LLMClient,
        settings: TestgenSettings,
        limits: Limits,
    ):
        self.llm = llm
        self.settings = settings
        self.always = settings.mode == "always"
        self.limits = limits

    @staticmethod
    def submit_tool(environment: Environment) -> Tool[Any]:
        """``submit_tests`` with the ids of the recipe's language."""
        language = language_of_recipe(environment.recipe)
        return submit_tool(language.test_id_shape(environment.recipe.test_runner))

    async def generate(
        self,
        patches: PatchSet,
        environment: Environment,
        prove: Callable[[str, list[str]], Proof],
    ) -> GeneratedTests:
        box = environment.sandbox(self.limits)
        await asyncio.to_thread(box.__enter__)
        try:
            await asyncio.to_thread(box.put_file, f"{PATCH_DIR}/fix.patch", patches.patch)
            return await self._loop(patches, environment, box, prove)
        finally:
            await asyncio.to_thread(box.__exit__, None, None, None)

    def _messages(self, patches: PatchSet, environment: Environment) -> list[dict[str, Any]]:
        return testgen_messages(patches, environment.recipe, environment.tree)

    async def _loop(
        self,
        patches: PatchSet,
        environment: Environment,
        box: Sandbox,
        prove: Callable[[str, list[str]], Proof],
    ) -> GeneratedTests:
        settings = self.settings
        budget = Budget(
            settings.max_turns,
            settings.max_tokens,
            settings.max_seconds,
            settings.reply_max_tokens,
            settings.max_context_chars,
        )

        submit = self.submit_tool(environment)
        language = language_of_recipe(environment.recipe)

        async def answer(call: dict[str, Any], deadline: float) -> tuple[str, Any]:
            return await self._answer(
                call, box, environment.tree, prove, deadline, submit, language
            )

        messages = self._messages(patches, environment)
        try:
            accepted = await tool_loop(self.llm, messages, [SHELL, submit], answer, budget, PURPOSE)
        except BudgetExhausted as exhausted:
            metrics.TESTGEN_TURNS.labels(outcome="exhausted").observe(exhausted.turns)
            raise ValidationFailed(f"testgen_{exhausted.limit}", exhausted.detail) from None
        test_patch, proof = accepted.result
        metrics.TESTGEN_TURNS.labels(outcome="accepted").observe(accepted.turns)
        metrics.TESTGEN_ACCEPTED_TOKENS.observe(accepted.tokens)
        return GeneratedTests(test_patch, proof, accepted.turns, accepted.tokens)

    async def _answer(
        self,
        call: dict[str, Any],
        box: Sandbox,
        tree: TreeFiles,
        prove: Callable[[str, list[str]], Proof],
        deadline: float,
        submit: Tool[Any] = SUBMIT,
        language: Language | None = None,
    ) -> tuple[str, tuple[str, Proof] | None]:
        """The tool result for one call, and (test_patch, proof) once tests are accepted."""
        name = call_name(call)
        try:
            if name == SHELL.name:
                return await self._shell(call_arguments(call, ShellArgs), box, deadline), None
            if name == submit.name:
                submitted: SubmitArgs = call_arguments(call, submit.arguments)
            else:
                return f"unknown tool {name!r}: use {SHELL.name} or {submit.name}", None
        except ValidationError as exc:
            return f"invalid arguments: {describe_error(exc)}", None
        try:
            test_patch = files_patch(tree, submitted.files, language)
            test_files = sorted(checked_test_path(path, language) for path in submitted.files)
            proof = await asyncio.to_thread(prove, test_patch, test_files)
            check_claims(proof, submitted)
        except (Rejected, ValidationFailed) as exc:
            metrics.TESTGEN_SUBMISSIONS.labels(result="rejected").inc()
            return f"rejected: {exc}. Fix the tests and submit again.", None
        metrics.TESTGEN_SUBMISSIONS.labels(result="accepted").inc()
        return "accepted", (test_patch, proof)

    async def _shell(self, args: ShellArgs, box: Sandbox, deadline: float) -> str:
        limit = self.settings.command_timeout_seconds
        remaining = max(1.0, deadline - time.monotonic())
        timeout = min(args.timeout_seconds or limit, limit, remaining)
        result = await asyncio.to_thread(
            box.run, args.command, timeout=timeout, output_limit=self.settings.output_limit_bytes
        )
        return shell_result(result, timeout)


def make_test_generator(
    settings: TestgenSettings, llm: LLMClient, limits: Limits
) -> AgenticTestGenerator | None:
    """The generator ``testgen.mode`` asks for; none without an LLM key (said in the log)."""
    if settings.mode == "off":
        return None
    if not llm.configured:
        log.debug(
            "testgen: no LLM API key configured: PRs whose tests prove nothing are rejected "
            "(no_tests / no_fail_to_pass) instead of getting generated tests"
        )
        return None
    return AgenticTestGenerator(llm, settings, limits)
