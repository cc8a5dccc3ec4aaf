"""Every prompt the pipeline sends to an LLM, in one place, as ``string.Template`` texts.

Placeholders are ``$name``; ``render`` fills them and fails on a missing one, so a template
and its caller cannot drift apart silently. Long inputs are cut by the callers
(``clip``) to keep each purpose within its token budget.
"""

from __future__ import annotations

from string import Template
from typing import Any

__all__ = [
    "CLASSIFY_SYSTEM",
    "CLASSIFY_USER",
    "SCORE_SYSTEM",
    "SCORE_USER",
    "SETUP_SYSTEM",
    "SETUP_SYSTEM_JS",
    "SETUP_USER",
    "TESTGEN_SYSTEM",
    "TESTGEN_SYSTEM_JS",
    "TESTGEN_USER",
    "clip",
    "render",
]

CLASSIFY_SYSTEM = Template(
    """You rate how hard it is for a capable software engineer to reproduce a merged GitHub \
pull request from its description alone, as a benchmark task.
Answer by calling `$tool` with:
- classification: easy (a local, obvious change), medium (several places or some design), \
hard (cross-cutting, subtle or large);
- score in the band of the classification: easy $easy, medium $medium, hard $hard;
- reasoning: one or two sentences."""
)

CLASSIFY_USER = Template(
    """Repository: $repo ($language)
Title: $title
Changed: $changed_files files, +$additions/-$deletions lines; source files: $source_files; \
test files: $test_files
Description:
$body"""
)

SCORE_SYSTEM = Template(
    """You review a candidate benchmark task built from a merged pull request: a problem \
statement, the gold patch that solves it, and tests that fail before the patch and pass after.
Judge whether the task is a fair, well-specified exercise: the statement says what is wrong \
or wanted without giving the solution away, the tests check that and nothing unrelated, and \
the patch is a genuine fix.
Answer by calling `$tool` with:
- classification: the difficulty (easy, medium or hard) now that you see the whole patch;
- score: the task's quality from 0 (unusable) to 1 (excellent);
- reasoning: two or three sentences."""
)

SCORE_USER = Template(
    """Repository: $repo
Problem statement:
$problem_statement

Gold patch:
$patch

Test patch:
$test_patch

FAIL_TO_PASS ($f2p_count): $fail_to_pass
PASS_TO_PASS: $p2p_count tests"""
)


def render(template: Template, **values: Any) -> str:
    """Fill every placeholder (a missing value raises KeyError)."""
    return template.substitute({key: str(value) for key, value in values.items()})


def clip(text: str | None, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


# what the Python and the JavaScript set-up prompts say alike: the tools, how a recipe is judged
_SETUP_TOOLS = """- `$shell`: run a bash command as root; you get its exit code, stdout and stderr \
(truncated). You may try Debian packages here (apt-get update && apt-get install -y ...), \
but the recipe is built from scratch: name them in `system_packages`.
- `$read`: read a file of the repository.
- `$submit`: submit the recipe. Each field you leave out keeps the failed recipe's value \
(shown below). `system_packages`: Debian packages; `env`: commands """
_SETUP_ACCEPTED = """The recipe is rebuilt from scratch in a fresh image and accepted only \
if the pull request's test files then run at the base commit with at least one passing \
test; a command that failed when you ran it is refused. If it is rejected you get the reason \
and may submit again ($submissions submissions in all)."""

SETUP_SYSTEM = Template(
    """You set up a Python repository's test environment, as its CI does, so that its tests \
run. The install recipe inferred from its files did not make them run; you find what is \
missing (a pre-test build step its CI runs, a Debian package, a test dependency, another \
Python, another test command) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, with the venv \
/opt/venv (python, pip, uv) as the failed recipe left it. Only package registries are reachable \
(PyPI, Debian, npm). Tools:
"""
    + _SETUP_TOOLS
    + """that install the \
dependencies into /opt/venv (run in /; the repository is not there yet); `install`: commands \
run in /testbed that install the project; `pre_test`: build steps run in /testbed after the \
install (compiling translations, generating files); `test_command`: the command the test \
files are appended to; `test_runner`: $runners; `python`: one of $pythons.
"""
    + _SETUP_ACCEPTED
)

# the same for a JavaScript / TypeScript repository (a recipe that Node runs)
SETUP_SYSTEM_JS = Template(
    """You set up a JavaScript / TypeScript repository's test environment, as its CI does, so \
that its tests run. The install recipe inferred from its files did not make them run; you find \
what is missing (the test runner behind a test script inference could not read, such as \
`make test` or a script of its own; a build step its CI runs before the tests, such as \
compiling TypeScript into dist/; another test command or runner; another Node major; a Debian \
package a native module needs) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, with its dependencies \
in /testbed/node_modules as the failed recipe's install left them (by npm, yarn or pnpm: the \
package manager its lockfile names), on Node $node. Only package registries are reachable \
(npm, Debian, PyPI). Tools:
"""
    + _SETUP_TOOLS
    + """run in / that fetch the \
dependencies into the package manager's cache from the dependency files copied to \
/opt/swe-env (the repository is not there yet); `install`: commands run in /testbed that \
install the dependencies into node_modules (npm ci, yarn install --frozen-lockfile, pnpm \
install --frozen-lockfile); `pre_test`: build steps run in /testbed after the install \
(compiling TypeScript, bundling, generating files the tests import); `test_command`: the \
command the test files are appended to, run in /testbed: the test runner itself, not a script \
or a Makefile that wraps it (node_modules/.bin is not on the PATH: \
`PATH="/testbed/node_modules/.bin:$$PATH" mocha ...`, or `npx mocha ...`), with the options \
its log parser reads, as swe-stream runs each runner:
$runner_commands
  swe-stream appends the arguments that write the runner's report after the test files: set \
no reporter of your own; `test_runner`: the runner whose output is read, one of $runners; \
`node`: the Node major, one of $nodes (leave `python` out).
"""
    + _SETUP_ACCEPTED
)

SETUP_USER = Template(
    """Repository: $repo (pull request #$number)
Test files the pull request touches: $test_files

The recipe that was tried ($interpreter):
system packages: $system_packages
env commands:
$env_commands
install commands (in /testbed):
$install_commands
pre-test commands:
$pre_test_commands
test command: $test_command
test runner: $test_runner

Why it failed: $reason
$failure

What a person would read first:
$documents

Files:
$tree"""
)


TESTGEN_SYSTEM = Template(
    """You write a regression test for a bug fix in a Python repository, as a benchmark task: \
the test must fail on the repository as it is (before the fix) and pass once the fix is \
applied.
You work in a container at /testbed (the repository before the fix; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the pytest ids that fail before \
the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Test framework: $framework. Test command: $test_command <test files or ids>"""
)

# the same for a JavaScript / TypeScript repository: tests for its runner, ids as the JS log
# parsers make them (``streams.evaluation.recipes.languages.javascript.runners.js``)
TESTGEN_SYSTEM_JS = Template(
    """You write a regression test for a bug fix in a JavaScript / TypeScript repository, as a \
benchmark task: the test must fail on the repository as it is (before the fix) and pass once \
the fix is applied.
You work in a container at /testbed (the repository before the fix, its dependencies in \
node_modules; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the ids of the tests that fail \
before the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Write the tests for the repository's test runner, $runner, in the style of its own tests: the \
same imports, assertion library, module format (require or import) and file names (such as \
test/<name>.test.js beside them), so that its test command runs them. A test's id is \
$id_shape.
Test framework: $framework. Test command (run in /testbed): $test_command <test files>"""
)

TESTGEN_USER = Template(
    """Repository: $repo
Pull request: $title
$body

Problem statement:
$problem_statement

The fix (to be tested, not to be copied into the tests):
$fix

Files:
$tree"""
)
