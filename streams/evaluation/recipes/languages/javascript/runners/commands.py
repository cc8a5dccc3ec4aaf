"""How the recipe side runs each JavaScript / TypeScript runner (``RUNNER_COMMANDS``): the
console options its log parser reads, the arguments that write its report to a path the engine
picks (``{path}``), and how one test of a title path is selected for a check command."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable

from streams.evaluation.log_parsers.base import RunnerCommand
from streams.evaluation.recipes.languages.javascript.runners import node, uvu

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
