"""Why a task is rejected: the short reason codes (for metrics and filters), ``ValidationFailed``
that carries one with its detail (for people), and ``tail``, the end of a log a detail quotes.

Shared by the recipe chooser, the image provisioner and the prover (``streams.evaluation
.validator`` composes them) and by the agents that react to a reason.
"""

from __future__ import annotations

from streams.evaluation.recipes.infer import NO_RUNNER
from streams.evaluation.recipes.languages import no_recipe_reasons

NO_TESTS = "no_tests"
TEST_PATCH_FAILS = "test_patch_does_not_apply"
PATCH_FAILS = "patch_does_not_apply"
NO_FAIL_TO_PASS = "no_fail_to_pass"
TIMED_OUT = "tests_timed_out"
UNSUPPORTED = "unsupported_language"
INSTALL_FAILED = "install_failed"  # an env or instance build step failed
TESTS_DID_NOT_RUN = "tests_did_not_run"  # no test result at all (usage/collection error)
TESTS_FAIL_AFTER_FIX = "tests_fail_after_fix"  # results, but none passed with the fix
TESTS_SKIPPED = "tests_skipped"  # every touched test skipped, with the fix too
SUBMODULE_MISSING = "submodule_missing"  # tests did not run, a submodule is not there
# NO_RUNNER (the test script runs no runner a log parser reads): ``recipes.infer``; each
# language's own (``Language.no_recipe_reasons``: no Python for requires-python, ...)
RECIPE_REJECTED = "recipe_rejected"  # a recipe verified from scratch did not run the tests
REBUILD_FAILED = "rebuild_failed"  # compiled sources changed and rebuilding them failed
# reasons another Python may not have: the next plausible one is tried
ENVIRONMENT_REASONS = frozenset({TESTS_DID_NOT_RUN, TESTS_FAIL_AFTER_FIX})


def rejections() -> tuple[str, ...]:
    """The reasons ``recipes`` rejects with before any build: no runner, and each registered
    language's own."""
    return (*no_recipe_reasons(), NO_RUNNER)


TAIL_CHARS = 1500  # of a failing build step's or test run's output, in a reason's detail


class ValidationFailed(Exception):
    """A rejection found deep inside the sandbox run, with its reason (a short code for
    metrics and filters) and its detail (for people: the step, the counts, a log tail)."""

    def __init__(self, reason: str, detail: str = "", tests_ran: int = 0):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        # tests with a status after the fix: the environment worked although the PR did not
        self.tests_ran = tests_ran


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, from a line start where possible."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    return "..." + (cut[cut.index("\n") :] if "\n" in cut[:200] else cut)
