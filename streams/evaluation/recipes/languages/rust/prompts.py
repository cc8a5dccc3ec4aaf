"""What Rust says to the agents: the set-up agent's system prompt (``SETUP``) and testgen's
(``TESTGEN``), as ``string.Template`` texts the agents fill (``$${tools}``, ``$${accepted}``:
the agents' own words; ``$$versions``, ``$$version``, ``$$runners``: this language's)."""

from __future__ import annotations

from streams.evaluation.recipes.languages import PromptSection

FIRST_READ = (
    "README.md", "README", "Cargo.toml", "rust-toolchain.toml", "rust-toolchain",
    ".cargo/config.toml", "build.rs", "Makefile", "justfile", ".travis.yml",
)  # fmt: skip
SHOWN_SMALL = ("Cargo.lock",)

SETUP = PromptSection(
    system=(
        """You set up a Rust repository's test environment, as its CI does, so that its tests \
run. The install recipe inferred from its files did not make them run; you find what is \
missing (a Cargo feature its CI tests with, a Debian package a -sys crate links against, \
another rustc, a build step its tests need) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, on rustc $version \
(Debian's, no rustup), with the crates the failed recipe fetched in CARGO_HOME. Only package \
registries are reachable (crates.io, Debian, PyPI). Tools:
${tools}run in / that fetch \
the crates of the Cargo.toml files copied to /opt/swe-env (the repository is not there yet): \
`cd /opt/swe-env && cargo fetch`; `install`: commands run in /testbed after the repository is \
there; `pre_test`: build steps run in /testbed; `test_command`: the command test files are \
appended to: `python3 /opt/swe-env/swe-cargo-test.py` with the cargo options the repository's \
CI passes (--features x,y, --all-features); it runs cargo test of the packages holding the \
files; `test_runner`: $runners; `rust`: one of $versions; `system_packages`: Debian packages.
${accepted}"""
    ),
    first_read=FIRST_READ,
    shown_small=SHOWN_SMALL,
)

TESTGEN = PromptSection(
    system=(
        """You write a regression test for a bug fix in a Rust repository, as a benchmark task: \
the test must fail on the repository as it is (before the fix) and pass once the fix is \
applied.
You work in a container at /testbed (the repository before the fix, its crates fetched; no \
network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the ids of the tests that fail \
before the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Write the test as an integration test file tests/<name>.rs of the package it tests (using its \
public API, in the style of its own tests), not inside a source file. A test's id is \
$id_shape.
Test framework: $framework. Test command (run in /testbed): $test_command <test files>"""
    ),
)
