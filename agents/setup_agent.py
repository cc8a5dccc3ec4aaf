"""The environment-setup agent (part of ``validate``): when no recipe tried made a PR's tests
run, an LLM finds what is missing, as RepoLaunch and SWE-rebench's builder do.

It works in a sandbox of the candidate environment (the failed recipe's images, or the
repository on the bare tools layer when they did not build) and reads first what a person
would: README, CI workflows, tox / nox files, pyproject / setup files, and the failing log;
for a JavaScript / TypeScript repository, package.json, ``.nvmrc``, the lockfile's name, the
runners' config files and the Makefile. Its system prompt is its language's
(``SETUP_SYSTEM``: the venv, the Pythons; ``SETUP_SYSTEM_JS``: node_modules, the package
manager, the Node majors with an image and how each JS runner is run so its log parser reads
it). Tools:

- ``shell``: a command in the sandbox (time-limited, output tail returned; it may install
  Debian packages to try them). The sandbox reaches the package registries through a proxy
  and nothing else (``RegistryEgress``): no host path, no secret, limits on CPU, memory and
  pids, each file it writes bounded and all it writes checked after every command
  (``setup_agent.disk_mb``);
- ``read_file``: lines of a file;
- ``submit_recipe``: Python (or, for JavaScript / TypeScript, the Node major), Debian
  packages, env / install / pre-test commands, test command and runner: a change over the
  failed recipe, as an override is.

A submission is verified from scratch (``Validator.recipe_with`` + ``build(fresh=True)`` +
``verify``): its images are built again and the PR's touched test files must run at the base
commit with a passing test. A command that failed when the agent ran it is refused without
a build. A rejection's reason goes back to the model, which may submit again
(``setup_agent.max_submissions``). Turns, tokens and wall time are budgets per PR; running
out is a rejection whose reason says which. Tokens and cost are counted by the LLM client
under ``purpose="setup"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import shlex
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.prompts import SETUP_ACCEPTED, SETUP_TOOLS, SETUP_USER, clip, render
from agents.tool_loop import Budget, BudgetExhausted, ShellArgs, shell_result, tool_loop
from schemas import PatchSet
from streams.clients.llm import LLMClient, Tool, call_arguments, call_name, describe_error
from streams.core import metrics
from streams.core.settings import SetupAgentSettings
from streams.evaluation.egress import RegistryEgress
from streams.evaluation.image_builds import ImageBuildError
from streams.evaluation.recipes.languages import (
    Language,
    interpreter_of,
    language_named,
    language_of,
    toolchains,
    version_key,
)
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import RepositoryOverride
from streams.evaluation.sandbox import Limits, Sandbox
from streams.evaluation.validator import (
    INSTALL_FAILED,
    NO_RUNNER,
    SUBMODULE_MISSING,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
    TESTS_SKIPPED,
    Environment,
    ValidationFailed,
    Validator,
    tail,
)

log = logging.getLogger("swe_stream.setup_agent")

PURPOSE = "setup"
# the rejections a better environment may fix: the agent is asked after these (NO_RUNNER: a
# test script whose runner inference could not read, such as ``make test``; the agent starts
# from inference's recipe, which installs the dependencies, and names it)
SETUP_REASONS = frozenset(
    {
        INSTALL_FAILED, TESTS_DID_NOT_RUN, TESTS_SKIPPED, TESTS_FAIL_AFTER_FIX, SUBMODULE_MISSING,
        NO_RUNNER,
    }
)  # fmt: skip
SUBMISSION_LIMIT = "setup_agent_submission_limit"
DISK_LIMIT = "setup_agent_disk_limit"
DOCUMENT_CHARS = 5000  # of each file shown in the first message
DOCUMENTS_CHARS = 30000  # of them all
# a lockfile (``PromptSection.shown_small``) is shown only when it is this small
LOCKFILE_SHOWN_CHARS = 2000


class ReadArgs(BaseModel):
    path: str = Field(min_length=1, description="a path in /testbed (or absolute)")
    start_line: int = Field(1, ge=1)
    max_lines: int = Field(300, ge=1, le=2000)


def _toolchain_properties(schema: dict[str, Any]) -> None:
    """The submission's schema names each registered toolchain's version (a key of its own,
    ``python: "3.11"``, ``rust: "1.85"``) so the model sees every one it may set."""
    properties = schema.setdefault("properties", {})
    for name, language in toolchains().items():
        properties[name] = {
            "type": "string",
            "pattern": language.version_pattern,
            "description": f"the {language.label} toolchain version to use (a {language.label} "
            "repository's only)",
        }
    schema["additionalProperties"] = False


class SubmitRecipeArgs(RepositoryOverride):
    model_config = ConfigDict(extra="allow", json_schema_extra=_toolchain_properties)

    explanation: str = Field("", description="what was missing, for the people reading it")


SHELL = Tool("shell", "Run a bash command in the repository's container.", ShellArgs)
READ = Tool("read_file", "Read lines of a file.", ReadArgs)
SUBMIT = Tool(
    "submit_recipe",
    "Submit the install recipe: the fields that change the failed recipe.",
    SubmitRecipeArgs,
)


@dataclass
class SetupFailure:
    """Why the recipes tried did not work: the best one, the reason and its detail."""

    patches: PatchSet
    tree: TreeFiles
    recipe: InstallRecipe
    reason: str
    detail: str


@dataclass
class SetupResult:
    """A recipe that passed verification: its images (built from scratch), and the cost."""

    environment: Environment
    explanation: str
    tests: int
    turns: int
    tokens: int


def documents(tree: TreeFiles, language: Language | None = None) -> str:
    """What a person reads first: README, CI workflows and the files the tree's language
    names first (``PromptSection.first_read``: its project and runner config files), and its
    lockfile by its name (its lines only when it is small). Each clipped, all within
    ``DOCUMENTS_CHARS``."""
    language = language or language_of(tree)
    section = language.setup_prompt if language is not None else None
    first = section.first_read if section is not None else _README
    names = [n for n in first if tree.has(n)]
    names += [
        n for n in tree.names
        if n.startswith(".github/workflows/") and n.endswith((".yml", ".yaml"))
    ]  # fmt: skip
    parts: list[str] = []
    used = 0
    for name in names:
        data = tree.read(name)
        if data is None:
            continue
        text = clip(data.decode("utf-8", errors="replace"), DOCUMENT_CHARS)
        if used + len(text) > DOCUMENTS_CHARS:
            parts.append(f"--- {name}: not shown (read it with read_file)")
            continue
        used += len(text)
        parts.append(f"--- {name}\n{text}")
    for lockfile in [n for n in (section.shown_small if section else ()) if tree.has(n)]:
        data = tree.read(lockfile, LOCKFILE_SHOWN_CHARS)
        if data is None:  # larger than that: its name is what matters (the package manager)
            parts.append(f"--- {lockfile}: the lockfile (over {LOCKFILE_SHOWN_CHARS} bytes)")
        else:
            parts.append(f"--- {lockfile}\n{data.decode('utf-8', errors='replace')}")
    return "\n".join(parts) or "(none of them)"


_README = ("README.md", "README.rst", "README.txt", "README", "Makefile")


def unavailable(settings: SetupAgentSettings, llm: LLMClient) -> str | None:
    """Why no setup agent runs, or None when it does."""
    if settings.mode == "off":
        return "setup agent off (setup_agent.mode)"
    if not llm.configured:
        return "no setup agent: no LLM API key (set OPENROUTER_API_KEY or llm.api_key)"
    zero = [
        name
        for name, value in (
            ("max_turns", settings.max_turns),
            ("max_tokens", settings.max_tokens),
            ("max_seconds", settings.max_seconds),
        )
        if not value
    ]
    if zero:
        return f"no setup agent: setup_agent.{', '.join(zero)} is 0"
    return None


def _lines(commands: tuple[str, ...]) -> str:
    return "\n".join(f"  {c}" for c in commands) or "  (none)"


def runner_commands(language: Language) -> str:
    """How swe-stream runs each of the language's runners so that its log parser reads the
    output (``Language.runner_commands``), a line each, for its system prompt."""
    return "\n".join(
        f"  {runner}: `{command.command}`"
        for runner, command in sorted(language.runner_commands.items())
    )


def system_prompt(recipe: InstallRecipe, versions: list[str], submissions: int) -> str:
    """The system prompt of the failed recipe's language (``Language.setup_prompt``): its
    toolchain, the ``versions`` of it with an image, its runners and how each is run."""
    language = language_named(recipe.language)
    if language is None or language.setup_prompt is None:
        raise ValueError(f"no set-up prompt for {recipe.language} recipes")
    runners = language.runner_commands or language.runners
    return Template(language.setup_prompt.system).substitute(
        tools=render(SETUP_TOOLS, shell=SHELL.name, read=READ.name, submit=SUBMIT.name),
        accepted=render(SETUP_ACCEPTED, submissions=submissions),
        version=language.version_of(recipe) or "(the base image's)",
        versions=", ".join(sorted(versions, key=version_key)) or no_versions(language),
        runners=", ".join(sorted(runners)),
        runner_commands=runner_commands(language),
    )


def no_versions(language: Language) -> str:
    """What the prompt says when no version of the language's toolchain has an image: the
    base image's own (a toolchain the base images carry), or none to name."""
    return "the default" if language.toolchain_images is None else "(none built: leave it out)"


def setup_messages(
    failure: SetupFailure, images: Mapping[str, Iterable[str]], submissions: int
) -> list[dict[str, Any]]:
    """The conversation's first two messages: the system prompt of the failed recipe's
    language (``system_prompt``, with the versions of its toolchain that ``images`` has:
    toolchain -> versions) and the failure with what a person reads first."""
    recipe = failure.recipe
    language = language_named(recipe.language)
    toolchain = language.toolchain if language is not None else None
    system = system_prompt(recipe, list(images.get(toolchain or "", ())), submissions)
    user = render(
        SETUP_USER,
        repo=failure.patches.repo,
        number=failure.patches.number,
        test_files=", ".join(failure.patches.test_files) or "(none)",
        interpreter=interpreter_of(recipe),
        system_packages=", ".join(recipe.system_packages) or "(none)",
        env_commands=_lines(recipe.env_commands),
        install_commands=_lines(recipe.install_commands),
        pre_test_commands=_lines(recipe.pre_test_commands),
        test_command=recipe.test_command,
        test_runner=recipe.test_runner,
        reason=failure.reason,
        failure=clip(failure.detail, 6000),
        documents=documents(failure.tree, language),
        tree="\n".join(failure.tree.names[:300]),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class SetupAgent:
    """Plugs into the validate stage as its last resort for environments."""

    def __init__(self, llm: LLMClient, settings: SetupAgentSettings, validator: Validator):
        self.llm = llm
        self.settings = settings
        self.validator = validator

    @property
    def limits(self) -> Limits:
        s = self.settings
        return Limits(s.memory_mb, s.cpus, s.pids_limit, network=False)

    async def repair(self, failure: SetupFailure) -> SetupResult:
        """A verified environment for the PR, or ValidationFailed with the reason the agent
        stopped (budget, submissions) and what it tried."""
        patches = failure.patches
        validator = self.validator
        started = time.monotonic()
        async with contextlib.AsyncExitStack() as stack:  # undone in reverse, whatever happens
            explore = await asyncio.to_thread(
                validator.exploration, patches.repo, patches.instance_id, failure.tree,
                failure.recipe,
            )  # fmt: skip
            stack.push_async_callback(asyncio.to_thread, explore.release)
            egress = RegistryEgress(
                validator.client, validator.docker.base_image, self.settings.registries
            )
            await asyncio.to_thread(egress.__enter__)
            stack.push_async_callback(asyncio.to_thread, egress.__exit__, None, None, None)
            options = dict(egress.sandbox_options)
            box = explore.sandbox(self.limits, options.pop("environment"), **options)
            await asyncio.to_thread(box.__enter__)
            stack.push_async_callback(asyncio.to_thread, box.__exit__, None, None, None)
            await asyncio.to_thread(egress.attach, box)
            return await self._converse(failure, explore, box, started)
        raise AssertionError("unreachable")  # the stack re-raises or the block returns

    def _messages(self, failure: SetupFailure) -> list[dict[str, Any]]:
        validator = self.validator
        images = {name: list(versions) for name, versions in validator.images().items()}
        return setup_messages(failure, images, self.settings.max_submissions)

    async def _converse(
        self, failure: SetupFailure, explore: Environment, box: Sandbox, started: float
    ) -> SetupResult:
        settings = self.settings
        budget = Budget(
            settings.max_turns,
            settings.max_tokens,
            max(1.0, settings.max_seconds - (time.monotonic() - started)),
            settings.reply_max_tokens,
            settings.max_context_chars,
        )
        session = _Session(self, failure, box)
        try:
            accepted = await tool_loop(
                self.llm, self._messages(failure), [SHELL, READ, SUBMIT], session.answer,
                budget, PURPOSE,
            )  # fmt: skip
        except BudgetExhausted as exhausted:
            metrics.SETUP_AGENT_RUNS.labels(outcome=exhausted.limit).inc()
            metrics.SETUP_AGENT_TURNS.labels(outcome=exhausted.limit).observe(exhausted.turns)
            raise ValidationFailed(
                f"setup_agent_{exhausted.limit}",
                f"{exhausted.detail}; {exhausted.tokens} tokens, {session.submissions} "
                f"recipe(s) submitted{session.last_rejection}",
            ) from None
        except SubmissionsExhausted as exhausted:
            metrics.SETUP_AGENT_RUNS.labels(outcome="submission_limit").inc()
            raise ValidationFailed(SUBMISSION_LIMIT, str(exhausted)) from None
        except DiskExhausted as exhausted:
            metrics.SETUP_AGENT_RUNS.labels(outcome="disk_limit").inc()
            raise ValidationFailed(DISK_LIMIT, str(exhausted)) from None
        metrics.SETUP_AGENT_RUNS.labels(outcome="accepted").inc()
        metrics.SETUP_AGENT_TURNS.labels(outcome="accepted").observe(accepted.turns)
        environment, explanation, tests = accepted.result
        log.info(
            "setup agent: %s#%d: recipe accepted after %d turns (%d tokens): %s",
            failure.patches.repo, failure.patches.number, accepted.turns, accepted.tokens,
            explanation[:200],
        )  # fmt: skip
        return SetupResult(environment, explanation, tests, accepted.turns, accepted.tokens)


class SubmissionsExhausted(Exception):
    """Every submission allowed was rejected."""


class DiskExhausted(Exception):
    """The agent's commands wrote more than ``setup_agent.disk_mb``."""


class _Session:
    """One conversation's tool answers and what they remember: the commands that failed,
    the submissions made."""

    def __init__(self, agent: SetupAgent, failure: SetupFailure, box: Sandbox):
        self.agent = agent
        self.failure = failure
        self.box = box
        self.exit_codes: dict[str, int] = {}  # command -> exit code of its last run
        self.submissions = 0
        self.last_rejection = ""

    async def answer(self, call: dict[str, Any], deadline: float) -> tuple[str, Any]:
        name = call_name(call)
        try:
            if name == SHELL.name:
                return await self._shell(call_arguments(call, ShellArgs), deadline), None
            if name == READ.name:
                return await self._read(call_arguments(call, ReadArgs)), None
            if name == SUBMIT.name:
                return await self._submit(call_arguments(call, SubmitRecipeArgs))
        except ValidationError as exc:
            return f"invalid arguments: {describe_error(exc)}", None
        return f"unknown tool {name!r}: use {SHELL.name}, {READ.name} or {SUBMIT.name}", None

    async def _shell(self, args: ShellArgs, deadline: float) -> str:
        settings = self.agent.settings
        limit = settings.command_timeout_seconds
        timeout = min(args.timeout_seconds or limit, limit, max(1.0, deadline - time.monotonic()))
        result = await asyncio.to_thread(
            self.box.run,
            args.command,
            timeout=timeout,
            output_limit=settings.output_limit_bytes,
            file_limit=settings.disk_mb << 20,
        )
        self.exit_codes[args.command.strip()] = result.exit_code
        written = await asyncio.to_thread(self.box.written_bytes)
        if written > settings.disk_mb << 20:
            raise DiskExhausted(
                f"the sandbox holds {written >> 20} MB of written files, over "
                f"setup_agent.disk_mb ({settings.disk_mb})"
            )
        return shell_result(result, timeout)

    async def _read(self, args: ReadArgs) -> str:
        path = posixpath.normpath(posixpath.join("/testbed", args.path))
        end = args.start_line + args.max_lines - 1
        command = f"sed -n '{args.start_line},{end}p' -- {shlex.quote(path)}"
        result = await asyncio.to_thread(self.box.run, command, timeout=30, output_limit=100_000)
        if result.exit_code != 0:
            return f"cannot read {path}: {result.stderr.strip()[:500]}"
        return result.stdout or f"{path}: no lines from {args.start_line}"

    def _refused(self, args: SubmitRecipeArgs) -> str | None:
        commands = [*(args.env or []), *(args.install or []), *(args.pre_test or [])]
        failed = [
            f"`{c}` (exit code {self.exit_codes[c.strip()]})"
            for c in commands
            if self.exit_codes.get(c.strip(), 0) != 0
        ]
        if failed:
            return (
                "refused: these commands failed when you ran them: " + "; ".join(failed)
                + ". Fix them (and run them again) or leave them out."
            )  # fmt: skip
        return None

    async def _submit(self, args: SubmitRecipeArgs) -> tuple[str, Any]:
        settings = self.agent.settings
        refused = self._refused(args)
        if refused:
            metrics.SETUP_AGENT_SUBMISSIONS.labels(result="refused").inc()
            return refused, None
        self.submissions += 1
        verdict, accepted = await self._verify(args)
        if accepted is not None:
            metrics.SETUP_AGENT_SUBMISSIONS.labels(result="accepted").inc()
            return "accepted", accepted
        self.last_rejection = f"; last rejection: {verdict[:300]}"
        left = settings.max_submissions - self.submissions
        if left <= 0:
            raise SubmissionsExhausted(
                f"{self.submissions} recipes submitted, none verified; last: {verdict[:1500]}"
            )
        return f"rejected: {verdict}\nFix the recipe and submit again ({left} left).", None

    async def _verify(self, args: SubmitRecipeArgs) -> tuple[str, Any]:
        """Build the submitted recipe from scratch and run the touched test files in it."""
        validator = self.agent.validator
        patches = self.failure.patches
        change = RepositoryOverride(**args.model_dump(exclude={"explanation"}))
        try:
            recipe = validator.recipe_with(
                patches.repo, patches.base_commit, self.failure.tree, patches.created_at, change,
                "agent", [*patches.test_files, *patches.source_files],
            )  # fmt: skip
            if args.explanation:
                recipe = replace(recipe, notes=(*recipe.notes, f"setup agent: {args.explanation}"))
        except ValidationFailed as failed:
            metrics.SETUP_AGENT_SUBMISSIONS.labels(result="invalid").inc()
            return f"{failed.reason}: {failed.detail}", None
        try:
            environment = await asyncio.to_thread(
                validator.build, patches.repo, patches.instance_id, self.failure.tree, recipe, True
            )
        except ImageBuildError as exc:
            metrics.SETUP_AGENT_SUBMISSIONS.labels(result="build_failed").inc()
            return (
                f"the {exc.layer} image did not build: `{exc.step}` failed\n{tail(exc.log_tail)}",
                None,
            )
        try:
            tests = await asyncio.to_thread(
                validator.verify, environment, patches.test_patch, patches.test_files
            )
        except ValidationFailed as failed:
            await asyncio.to_thread(environment.release)
            metrics.SETUP_AGENT_SUBMISSIONS.labels(result="tests_did_not_run").inc()
            return f"the tests did not run as they should: {failed.detail}", None
        except BaseException:
            await asyncio.to_thread(environment.release)
            raise
        return "accepted", (environment, args.explanation, tests)


def make_setup_agent(
    settings: SetupAgentSettings, llm: LLMClient, validator: Validator
) -> SetupAgent | None:
    """The setup agent the settings ask for; None (and the log says why) when there is none."""
    reason = unavailable(settings, llm)
    if reason is not None:
        # the worker says once at start what is missing; validate's reasons say it per PR
        log.debug("%s: environments come from inference, overrides and the recipe memory", reason)
        return None
    return SetupAgent(llm, settings, validator)
