"""The cause a rejection's log shows (``failures``): pure, on lines of the real logs the
JS corpus' rejections ended with."""

from __future__ import annotations

import pytest

from streams.evaluation.failures import cause_of, failure_cause, with_cause

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reason", "log", "cause"),
    [
        (
            "tests_fail_after_fix",
            "1/2 Test #1: uv_test ...***Failed    0.01 sec\n"
            "The libuv test suite cannot be run as root.\n",
            "the test suite refuses to run as root, the sandbox's user",
        ),
        (
            "install_failed",
            " ERR_PNPM_FETCH_404  GET https://registry.npmjs.org/@logux/oxc-configs/-/"
            "oxc-configs-0.2.2.tgz: Not Found - 404",
            "a locked dependency is no longer in the registry (404) @logux/oxc-configs",
        ),
        (
            "install_failed",
            "npm ERR! command git --no-replace-objects ls-remote ssh://git@github.com/x/y.git\n"
            "npm ERR! ssh -oStrictHostKeyChecking=accept-new: 1: ssh: not found",
            "an install step reaches a host other than a package registry (a git or URL "
            "dependency, or a script that downloads)",
        ),
        (
            "install_failed",
            "RequestError: getaddrinfo ENOTFOUND moz.com",
            "an install step reaches a host other than a package registry (a git or URL "
            "dependency, or a script that downloads)",
        ),
        (
            "install_failed",
            "npm ERR! code ETARGET\nnpm ERR! notarget No matching version found for x@^9.",
            "no release in the registry matches a dependency's range",
        ),
        (
            "install_failed",
            "lib/yargs-parser.ts(686,48): error TS2322: Type 'unknown' is not assignable",
            "the project's TypeScript build fails",
        ),
        (
            "tests_fail_after_fix",
            "Error: No test suite found in file /testbed/src/cases.spec.ts",
            "the runner finds no test in the PR's test files /testbed/src/cases.spec.ts",
        ),
        (
            "tests_did_not_run",
            "No tests found, exiting with code 1\nPattern: test/response/get.js - 0 matches",
            "the runner finds no test in the PR's test files",
        ),
        (
            "tests_did_not_run",
            "ReferenceError: suite is not defined\n    at Object.<anonymous> (test/utils.js:14:1)",
            "a test file uses a global the runner does not define (suite)",
        ),
        (
            "tests_fail_after_fix",
            "SyntaxError: /testbed/src/index.spec.ts: Missing semicolon. (5:4)",
            "a test file does not parse as the runner loads it (a transform is missing)",
        ),
        (
            "install_failed",
            "Found 3 errors in the same file, starting at: lib/yargs-parser.ts:686",
            "the project's TypeScript build fails",
        ),
        (
            "install_failed",
            "npm ERR! path /testbed\nnpm ERR! command failed\nnpm ERR! command sh -c npm run "
            "compile\n",
            "the project's own install script fails (npm run compile)",
        ),
        (
            "install_failed",
            "go: github.com/sblinch/kdl-go@v0.0.0-20231112203113-9fa9a505b79a: reading "
            "https://proxy.golang.org/github.com/sblinch/kdl-go/@v/v0.0.0-20231112203113-"
            "9fa9a505b79a.mod: 403 Forbidden\n\tserver response: This module version is not "
            "available.",
            "a required module is not in the module proxy "
            "(github.com/sblinch/kdl-go@v0.0.0-20231112203113-9fa9a505b79a)",
        ),
        (
            "install_failed",
            "verifying github.com/pkg/errors@v0.9.1: checksum mismatch\n\tdownloaded: h1:a=",
            "a required module is not in the module proxy (github.com/pkg/errors@v0.9.1)",
        ),
        ("install_failed", "something nobody has seen", None),
        ("no_fail_to_pass", "ReferenceError: x is not defined", None),  # not a log reason
    ],
)
def test_the_cause_a_log_shows(reason: str, log: str, cause: str | None) -> None:
    assert failure_cause(reason, log) == cause


def test_the_cause_opens_the_detail_once_and_reads_back() -> None:
    detail = "[node 20; recipe npm] npm ERR! code E404"
    shown = with_cause("install_failed", detail)
    assert shown is not None and shown.endswith("\n" + detail)
    assert cause_of(shown) == "a locked dependency is no longer in the registry (404)"
    assert with_cause("install_failed", shown) == shown
    assert with_cause("install_failed", "no known cause") == "no known cause"
    assert with_cause("install_failed", None) is None and cause_of(detail) is None
