"""What Go says to the agents: the set-up agent's system prompt (``SETUP``) and testgen's
(``TESTGEN``), as ``string.Template`` texts the agents fill (``$${tools}``, ``$${accepted}``:
the agents' own words; ``$$versions``, ``$$version``, ``$$runners``: this language's)."""

from __future__ import annotations

from streams.evaluation.recipes.languages import PromptSection

FIRST_READ = (
    "README.md", "README", "go.mod", "go.work", "Makefile", "magefile.go", ".travis.yml",
    ".gitlab-ci.yml", ".golangci.yml",
)  # fmt: skip
SHOWN_SMALL = ("go.sum", "go.work.sum")

SETUP = PromptSection(
    system=(
        """You set up a Go repository's test environment, as its CI does, so that its tests run. \
The install recipe inferred from its files did not make them run; you find what is missing \
(a build tag its CI passes, a code generation step its tests need (go generate), a Debian \
package a cgo dependency links, another go, another module directory) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, on go $version, with \
the modules the failed recipe downloaded in the module cache. Only package registries are \
reachable (the Go module proxy, Debian, PyPI, npm). Tools:
${tools}run in / that download \
the modules from the go.mod and go.sum files copied to /opt/swe-env (the repository is not there \
yet): `cd /opt/swe-env && go mod download`; `install`: commands run in /testbed after the \
repository is there (go list -deps -test ./... fetches what a workspace needs); `pre_test`: \
build steps run in /testbed (go generate ./...); `test_command`: the command package \
directories (./pkg) are appended to: `go test -count=1 -json -vet=off` with any -tags the \
repository's CI passes (keep -json: its events are what is read); `test_runner`: $runners; \
`go`: one of $versions (set GOTOOLCHAIN in `environment` to run a newer toolchain, fetched \
through the module proxy by the env steps).
${accepted}"""
    ),
    first_read=FIRST_READ,
    shown_small=SHOWN_SMALL,
)

TESTGEN = PromptSection(
    system=(
        """You write a regression test for a bug fix in a Go repository, as a benchmark task: the \
test must fail on the repository as it is (before the fix) and pass once the fix is applied.
You work in a container at /testbed (the repository before the fix, its modules in the module \
cache; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the ids of the tests that fail \
before the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Write the test in a <name>_test.go file of the package it tests, in the style of the package's \
own tests (the testing package, table tests and t.Run subtests as they use them). A test's id \
is $id_shape.
Test framework: $framework. Test command (run in /testbed): $test_command <package directories>"""
    ),
)
