"""Why a rejection happened, in one line a person reads: the cause a failed install or test
run's log shows (a pure function of the rejection's reason and detail, for every language).

The reason codes stay what they are (metrics, the setup agent's triggers, filters); the cause
is the first line of the rejection's detail (``cause: ...``) and what ``benchmarks.yield``
groups rejections by. Causes are tried in order: the first whose pattern the log matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.evaluation.recipes.languages import languages
from streams.evaluation.validator import (
    INSTALL_FAILED,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
    TESTS_SKIPPED,
)

CAUSE_PREFIX = "cause: "


@dataclass(frozen=True)
class Cause:
    pattern: re.Pattern[str]
    text: str  # ``{0}``: the pattern's first group, where it has one


def _cause(pattern: str, text: str) -> Cause:
    return Cause(re.compile(pattern, re.MULTILINE), text)


# the causes every language's logs may show; each language adds its own before them
# (``Language.causes``: its package manager's and build's messages)
INSTALL_CAUSES = (
    _cause(
        r"ENOTFOUND|EAI_AGAIN|getaddrinfo|Could not resolve host|EALLOWREMOTE|"
        r"Could not read from remote repository|ssh: not found",
        "an install step reaches a host other than a package registry (a git or URL "
        "dependency, or a script that downloads)",
    ),
    _cause(
        r"ETARGET|ENOVERSIONS|No matching version found|No matching distribution found|"
        r"Could not find a version that satisfies",
        "no release in the registry matches a dependency's range",
    ),
    _cause(r"Failed building wheel|subprocess-exited-with-error", "a package's build fails"),
)
RUN_CAUSES = (
    # a compiled language's package that did not build (``prover.compile_failures``)
    _cause(r"^compile failure: (\S+):", "a package does not compile ({0})"),
    _cause(
        r"No tests found|No test files found|No test suite found in file (\S+)|"
        r"Your test suite must contain at least one test",
        "the runner finds no test in the PR's test files {0}",
    ),
    _cause(
        r"ReferenceError: (\w+) is not defined",
        "a test file uses a global the runner does not define ({0})",
    ),
    _cause(
        r"Cannot find module '([^']+)'|ERR_MODULE_NOT_FOUND|ModuleNotFoundError: No module "
        r"named '([^']+)'",
        "a module the tests import is missing ({0})",
    ),
    _cause(
        r"SyntaxError|Unexpected token|Missing semicolon|Support for the experimental syntax",
        "a test file does not parse as the runner loads it (a transform is missing)",
    ),
    _cause(
        r"(?:cannot|can't|must not|should not|refuses? to) (?:be )?run as root",
        "the test suite refuses to run as root, the sandbox's user",
    ),
    _cause(r"timed out|Timeout", "the test run timed out"),
)
CAUSES = {
    INSTALL_FAILED: INSTALL_CAUSES,
    TESTS_DID_NOT_RUN: RUN_CAUSES,
    TESTS_FAIL_AFTER_FIX: RUN_CAUSES,
    TESTS_SKIPPED: (),
}


def causes_of(reason: str) -> tuple[Cause, ...]:
    """The causes to try for a rejection of ``reason``, in order: every language's own, then
    the ones every language shares."""
    own = tuple(
        _cause(cause.pattern, cause.cause)
        for language in languages()
        for cause in language.causes
        if cause.reason == reason
    )
    return (*own, *CAUSES.get(reason, ()))


def failure_cause(reason: str, detail: str | None) -> str | None:
    """The cause ``detail``'s log shows for a rejection of ``reason``, or None."""
    if not detail:
        return None
    for cause in causes_of(reason):
        if match := cause.pattern.search(detail):
            group = next((g for g in match.groups() if g), "")
            return cause.text.format(group).strip().replace(" ()", "")
    return None


def with_cause(reason: str, detail: str | None) -> str | None:
    """``detail`` opening with its ``cause:`` line (unchanged when none is found, or when it
    already opens with one)."""
    if detail and detail.startswith(CAUSE_PREFIX):
        return detail
    cause = failure_cause(reason, detail)
    if cause is None:
        return detail
    return f"{CAUSE_PREFIX}{cause}\n{detail}"


def cause_of(detail: str | None) -> str | None:
    """The ``cause:`` line a detail opens with, or None."""
    if detail and detail.startswith(CAUSE_PREFIX):
        return detail.splitlines()[0].removeprefix(CAUSE_PREFIX)
    return None
