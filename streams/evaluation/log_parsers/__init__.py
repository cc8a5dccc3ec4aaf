"""Test-log parsers, one module per test runner, behind one registry (as SWE-bench's
``harness/log_parsers``): a recipe names its runner (``InstallRecipe.test_runner``) and the
validator reads the test command's output with that runner's parser.

A parser is two pure functions of the output: the per-test statuses, and the test a run was
inside when it was killed at its timeout (reported as ``error``). A new runner is a module
here and a line in ``LOG_PARSERS``.

A runner may also write a machine-readable report (pytest's JUnit XML): ``parse_report`` reads
one by its kind (``REPORT_PARSERS``; ``LogParser.report`` names the kind a runner writes), and
``merge_statuses`` (``combine``) merges it with the parsed log, the report winning.

JavaScript / TypeScript runners: ``jest``, ``vitest``, ``mocha``, ``node`` (``node --test``),
``tap`` (node-tap), ``ava``, ``uvu``. Their test ids are ``<file from the repository root> >
<describe blocks> > <title>``, one `` > `` between parts, the same from a runner's report and
its console where both name the file (``js`` says where a runner's output names no file:
node's own TAP, ava, mocha's console). Reports: ``jest-json``, ``vitest-json`` (jest's shape),
``mocha-json``, ``node-events`` (``node.NODE_REPORTER``), ``tap`` (node-tap, node's own),
``ava-tap``; uvu has none. ``RUNNER_COMMANDS`` is the recipe side's table of how to run each
so: the console options its log parser reads, and the arguments that write its report to a
path the engine picks (``{path}``), the counterpart of ``validator.REPORTS`` for pytest: the
one source of the options a recipe gives each runner (``js_recipe.RUNNER_OPTIONS``) and of
the report arguments the validator appends.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.combine import merge_statuses
from streams.evaluation.recipes.languages.javascript.runners import (
    ava,
    jest,
    js,
    mocha,
    node,
    tap,
    uvu,
    vitest,
)
from streams.evaluation.recipes.languages.javascript.runners.js import with_files
from streams.evaluation.recipes.languages.python.runners import junit, pytest, unittest

__all__ = [
    "LOG_PARSERS",
    "REPORT_PARSERS",
    "RUNNER_COMMANDS",
    "LogParser",
    "RunnerCommand",
    "check_command",
    "file_of",
    "log_parser",
    "merge_statuses",
    "parse_report",
    "with_files",
]


@dataclass(frozen=True)
class LogParser:
    """How to read one test runner's output."""

    parse: Callable[[str], dict[str, TestStatus]]
    running_when_killed: Callable[[str], str | None]
    # the kind of machine-readable report the runner can write (a key of REPORT_PARSERS), if
    # any: for pytest, ``--junitxml=PATH`` (``-o junit_family=xunit1`` keeps each test's file)
    report: str | None = None


LOG_PARSERS: dict[str, LogParser] = {
    "pytest": LogParser(pytest.parse_pytest_output, pytest.running_when_killed, report="junit"),
    "unittest": LogParser(unittest.parse_unittest_output, unittest.running_when_killed),
    # JavaScript / TypeScript (ids: ``<file> > <describe blocks> > <title>``, see ``js``)
    "jest": LogParser(jest.parse_jest_output, jest.running_when_killed, report="jest-json"),
    "vitest": LogParser(vitest.parse_vitest_output, vitest.running_when_killed, "vitest-json"),
    "mocha": LogParser(mocha.parse_mocha_output, mocha.running_when_killed, report="mocha-json"),
    "node": LogParser(node.parse_node_output, node.running_when_killed, report="node-events"),
    "tap": LogParser(tap.parse_tap, tap.running_when_killed, report="tap"),
    "ava": LogParser(ava.parse_ava_output, ava.running_when_killed, report="ava-tap"),
    "uvu": LogParser(uvu.parse_uvu_output, uvu.running_when_killed),
}

# machine-readable reports by kind: the report's bytes -> per-test statuses (ValueError when
# the report is malformed or refused)
REPORT_PARSERS: dict[str, Callable[[bytes], dict[str, TestStatus]]] = {
    "junit": junit.parse_junit_xml,
    "jest-json": jest.parse_jest_json,
    "vitest-json": jest.parse_jest_json,
    "mocha-json": mocha.parse_mocha_json,
    "tap": tap.parse_tap_report,
    "node-events": node.parse_node_events,
    "ava-tap": ava.parse_ava_tap,
}


@dataclass(frozen=True)
class RunnerCommand:
    """How the recipe side runs a JS runner so that its log and report can be read (the shape
    of ``validator.REPORTS``: the engine appends the test files, and ``report_arguments``
    with ``{path}`` replaced by where it wants the report, before or after the files)."""

    program: str  # how the runner is started
    options: tuple[str, ...]  # the console options its log parser reads (the recipe's too)
    report_arguments: str | None  # turn the report on, written to {path}; None: no report
    report_before_files: bool = False  # node refuses options after its file arguments
    # "appended": test files are positional arguments; "pattern": one regex of their paths
    files: str = "appended"
    note: str = ""
    # the options that run only the test of a title path (its describe blocks, then its
    # title), for a check command of one test id (``check_command``); None: the runner has none
    select: Callable[[list[str]], list[str]] | None = None
    # where ``select`` may run more than that test (a title alone): a shell pipe after the
    # command whose status is that test's, read from the runner's console
    passed: Callable[[list[str]], str] | None = None

    @property
    def command(self) -> str:
        """The runner with its console options."""
        return " ".join([self.program, *(shlex.quote(option) for option in self.options)])

    def line(self, files: Sequence[str] = (), report_path: str | None = None) -> str:
        """The shell command running ``files`` (all tests when empty), with the report written
        to ``report_path`` when given and the runner has one."""
        if self.files == "pattern":
            chosen = "(?:" + "|".join(re.escape(file) for file in files) + ")$" if files else ""
            arguments = [shlex.quote(chosen)] if chosen else []
        else:
            arguments = [shlex.quote(file) for file in files]
        report = []
        if report_path is not None and self.report_arguments is not None:
            report = [self.report_arguments.replace("{path}", shlex.quote(report_path))]
        if self.report_before_files:
            return " ".join([self.command, *report, *arguments])
        return " ".join([self.command, *arguments, *report])


_JS_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/]")


_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def js_regex(text: str) -> str:
    """``text`` as a JavaScript regular expression matching it alone (no identity escapes,
    which a ``u``-flag RegExp refuses; line breaks and tabs as ``\\n`` / ``\\r`` / ``\\t``:
    a check is one line)."""
    escaped = _JS_SPECIAL.sub(lambda m: "\\" + m.group(), text)
    return "^" + re.sub(r"[\n\r\t]", lambda m: _CONTROL[m.group()], escaped) + "$"


def _json_list(names: list[str]) -> str:
    """``names`` as JavaScript's JSON.stringify writes them."""
    return json.dumps(names, ensure_ascii=False, separators=(",", ":"))


def _full_name(option: str) -> Callable[[list[str]], list[str]]:
    """``option <regex of the names joined by a space>``: jest's, vitest's and mocha's full
    test name."""
    return lambda names: [option, js_regex(" ".join(names))]


RUNNER_COMMANDS: dict[str, RunnerCommand] = {
    "jest": RunnerCommand(
        "npx jest",
        ("--ci", "--verbose", "--watchAll=false", "--coverage=false"),
        "--json --outputFile={path}",
        select=_full_name("--testNamePattern"),
    ),
    "vitest": RunnerCommand(
        "npx vitest run",
        ("--reporter=verbose",),
        "--reporter=json --outputFile={path}",
        note="vitest run, not watch; the verbose console stays beside the JSON file",
        select=_full_name("--testNamePattern"),
    ),
    "mocha": RunnerCommand(
        "npx mocha",
        (),  # its default console reporter is spec; a second --reporter is refused
        "--reporter json --reporter-option output={path}",
        note="mocha >= 9; with the json reporter the console is empty",
        select=_full_name("--grep"),
    ),
    # swe-stream's reporter (a data: URL) to stdout and to {path}: ids with the test's file
    "node": RunnerCommand(
        "node --test",
        (f"--test-reporter={node.NODE_REPORTER}",),
        f"--test-reporter-destination=stdout --test-reporter='{node.NODE_REPORTER}' "
        "--test-reporter-destination={path}",
        report_before_files=True,
        note="node >= 20; reporters pair with destinations in order; options after files fail",
        # the title alone (which ancestors a pattern is matched with changed between majors),
        # then the reporter's line of that title path passing, not skipped
        select=lambda names: [f"--test-name-pattern={js_regex(names[-1])}"],
        passed=lambda names: (
            '| grep -F \'"event":"pass"\' | grep -qF '
            + shlex.quote(f'"path":{_json_list(names)},"skip":false')
        ),
    ),
    "tap": RunnerCommand(
        "npx tap",
        ("--reporter=tap",),
        None,
        note="the console is the TAP report (kind tap): read it with parse_report too",
        select=lambda names: [f"--grep={js_regex(name)}" for name in names],  # one per level
    ),
    "ava": RunnerCommand(
        "npx ava",
        ("--tap",),
        None,
        note="the console is the TAP report (kind ava-tap)",
        # ava's titles are flat; a line break (a check is one line) matched by its wildcard
        select=lambda names: ["--match", re.sub(r"[\n\r]", "*", " > ".join(names))],
    ),
    "uvu": RunnerCommand(
        "npx uvu .",
        (),
        None,
        files="pattern",
        note="uvu takes a directory and one regex of file paths, not files",
        # no selection: the file runs whole, and the line of the test passing is looked for
        passed=lambda names: (
            "| grep -qxF " + shlex.quote(f"{uvu.PASS_MARK} {_json_list(['', *names][-2:])}")
        ),
    ),
}


def file_of(test_id: str) -> str | None:
    """The file a test id names: ``path::name`` (pytest, unittest, JUnit), ``path > name``
    (the JS runners; the path ends with a JS/TS extension); None when it names none."""
    if "::" in test_id:
        return test_id.split("::", 1)[0] or None
    return (
        test_id.split(js.SEPARATOR, 1)[0]
        if js.SEPARATOR in test_id and js.names_file(test_id)
        else None
    )


def check_command(test_command: str, runner: str, test_id: str) -> str:
    """A shell command that runs the one test ``test_id`` of a recipe's ``test_command``
    (its exit status is the test's): pytest-style ids are appended whole; a JS id runs its
    file with the runner's option selecting its title path (the whole file when the runner
    has none)."""
    command = RUNNER_COMMANDS.get(runner)
    file = file_of(test_id)
    if command is None or file is None or "::" in test_id:
        return " ".join([test_command, shlex.quote(test_id)])
    names = test_id[len(file) + len(js.SEPARATOR) :].split(js.SEPARATOR)
    selected = command.select(names) if command.select else []
    passed = [command.passed(names)] if command.passed else []
    return " ".join([test_command, *map(shlex.quote, selected), shlex.quote(file), *passed])


def log_parser(runner: str) -> LogParser:
    """The parser registered for ``runner``; ValueError naming the known ones otherwise."""
    try:
        return LOG_PARSERS[runner]
    except KeyError:
        raise ValueError(
            f"no log parser for test runner {runner!r}; known: {sorted(LOG_PARSERS)}"
        ) from None


def parse_report(kind: str, data: bytes) -> dict[str, TestStatus]:
    """Per-test statuses from a report of ``kind`` (``"junit"``); ValueError for an unknown
    kind (naming the known ones) or a report that does not parse."""
    try:
        parser = REPORT_PARSERS[kind]
    except KeyError:
        raise ValueError(
            f"no parser for report kind {kind!r}; known: {sorted(REPORT_PARSERS)}"
        ) from None
    return parser(data)
