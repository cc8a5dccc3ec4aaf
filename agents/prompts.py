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
    "SETUP_ACCEPTED",
    "SETUP_TOOLS",
    "SETUP_USER",
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


# what every language's set-up prompt says alike (its ``${tools}`` and ``${accepted}``): the
# tools, how a recipe is judged
SETUP_TOOLS = Template(
    """- `$shell`: run a bash command as root; you get its exit code, stdout and stderr \
(truncated). You may try Debian packages here (apt-get update && apt-get install -y ...), \
but the recipe is built from scratch: name them in `system_packages`.
- `$read`: read a file of the repository.
- `$submit`: submit the recipe. Each field you leave out keeps the failed recipe's value \
(shown below). `system_packages`: Debian packages; `env`: commands """
)
SETUP_ACCEPTED = Template(
    """The recipe is rebuilt from scratch in a fresh image and accepted only \
if the pull request's test files then run at the base commit with at least one passing \
test; a command that failed when you ran it is refused. If it is rejected you get the reason \
and may submit again ($submissions submissions in all)."""
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
