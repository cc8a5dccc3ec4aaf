"""Rust as a plugin: detection (a Cargo.toml at the root), the toolchain images (Debian's
rustc and cargo per suite), recipes per workspace, its runner (``cargo test`` through
swe-cargo-test), test ids ``<package>::<target>::<path::to::test>``, check commands, causes
and prompts. A compiled language: validated with three runs (``compiled``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streams.evaluation.log_parsers.base import LogParser
from streams.evaluation.recipes.languages import Cause, Inputs, Language
from streams.evaluation.recipes.languages.rust import prompts
from streams.evaluation.recipes.languages.rust.cargo import (
    CONFIG_FILES,
    LOCKFILE,
    MANIFEST,
    TOOLCHAIN_FILES,
    CargoFacts,
    cargo_facts_of,
    is_cargo_tree,
    needed_rust,
    package_of,
    pull_request_facts,
    read_cargo_facts,
    tested_packages,
)
from streams.evaluation.recipes.languages.rust.changed import changed_tests
from streams.evaluation.recipes.languages.rust.features import feature_options
from streams.evaluation.recipes.languages.rust.inline import test_item_ranges
from streams.evaluation.recipes.languages.rust.recipe import (
    LANGUAGE_NAME,
    RUNNER,
    rust_recipe,
    rust_versions,
)
from streams.evaluation.recipes.languages.rust.runners import libtest
from streams.evaluation.recipes.languages.rust.system import ci_system_packages
from streams.evaluation.recipes.languages.rust.toolchain import DEBIAN_RUST_PATCH, RUST_IMAGES
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

NO_RUST = "no_rustc_for_rust_version"  # the packages ask for a rustc no image has
_RUST_SOURCE = re.compile(r"^diff --git a/\S+\.rs\s", re.MULTILINE)


class Rust(Language):
    name = LANGUAGE_NAME
    toolchain = "rust"
    version_pattern = r"^1\.\d+$"  # a rustc image's major.minor: "1.85"
    registries = ("crates.io", "index.crates.io", "static.crates.io")
    # before Python and JavaScript: a crate with Python bindings or a package.json for its
    # docs site is tested with cargo (after Go: a Go module with a Rust helper is Go's)
    order = 6
    compiled = True
    source_suffixes = (".rs",)
    # a rustc is chosen per PR (its date, its lockfile): one PR's is no guess for the next
    remembers_version = False
    runners = {RUNNER: LogParser(libtest.parse_cargo_test, libtest.running_when_killed)}
    default_runner = RUNNER
    project_files = frozenset({MANIFEST, LOCKFILE, *TOOLCHAIN_FILES})
    vocabulary_words = frozenset({"cargo", "rustc", "crates.io", "libtest"})
    no_recipe_reasons = (NO_RUST,)
    causes = (
        Cause(
            "install_failed",
            r"package `(\S+)` cannot be built because it requires rustc (\S+)",
            "a dependency needs a newer rustc ({0} needs {1})",
        ),
        Cause(
            "install_failed",
            r"failed to (?:select a version for|download|get) (?:the requirement )?`?([^`\s]+)",
            "a crate cannot be fetched or resolved ({0})",
        ),
        Cause(
            "install_failed",
            r"lock file version (\d+) requires `-Znext-lockfile-bump`|"
            r"this version of Cargo is older than the `(\d+)` edition",
            "the image's cargo is too old for the repository ({0})",
        ),
        Cause(
            "install_failed",
            r"could not find system library '([^']+)'",
            "a -sys crate needs a system library ({0}): name its Debian package",
        ),
    )
    toolchain_images = RUST_IMAGES
    setup_prompt = prompts.SETUP
    testgen_prompt = prompts.TESTGEN
    test_file_hint = "name it tests/<name>.rs, in the package it tests"

    def detect(self, tree: TreeFiles) -> bool:
        return is_cargo_tree(tree) and any(name.endswith(".rs") for name in tree.names)

    def facts(self, tree: TreeFiles) -> CargoFacts | None:
        return read_cargo_facts(tree)

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        images = inputs.images_of(self.toolchain)
        pinned = self.pinned_versions(inputs)
        if pinned is not None:
            return pinned
        need = needed_rust(facts, tested_packages(facts, inputs.changed_files))
        return list(rust_versions(need, images, inputs.created_at))

    def recipe(
        self,
        tree: TreeFiles,
        facts: Any,
        version: str | None,
        inputs: Inputs,
        features: tuple[str, ...] | None = None,
    ) -> InstallRecipe:
        images = inputs.images_of(self.toolchain)
        return rust_recipe(
            facts,
            version or "",
            images,
            inputs.changed_files,
            feature_options(tree) if features is None else features,
            inputs.created_at,
            ci_system_packages(tree),
            pull_request_facts(tree, inputs.diffs) if inputs.diffs else None,
        )

    def infer(self, tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
        recipes, facts = super().infer(tree, inputs)
        if recipes and feature_options(tree):
            # the CI's features may take in a dependency today's rustc no longer builds
            # (--all-features taking in an old crate): second (validation tries two), the
            # first rustc without them
            first = self.versions(facts, inputs)[0]
            recipes.insert(1, self.recipe(tree, facts, first, inputs, features=()))
        return recipes, facts

    def tests_for(self, tree: TreeFiles, files: list[str]) -> list[str]:
        # cargo runs packages: the directory of each file's package, which the base has even
        # where the test patch only adds files (its run before the patch is of the package)
        facts = cargo_facts_of(tree)
        if facts is None:
            return files
        found: list[str] = []
        for path in files:
            package = package_of(facts, path)
            target = path if package is None else package.directory
            if target not in found:
                found.append(target)
        return found

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        images = inputs.images_of(self.toolchain)
        built = ", ".join(f"rustc {v}" for v in sorted(images)) or "none built"
        if facts is None or not images:
            return NO_RUST, f"no rust image ({built}; swe-stream images base --toolchains)"
        need = needed_rust(facts, tested_packages(facts, inputs.changed_files))
        asked = "; ".join(need.why) or "nothing"
        debian = ", ".join(DEBIAN_RUST_PATCH.values())
        return (
            NO_RUST,
            f"asked for rustc {need.version} ({asked}); images have {built} "
            f"(Debian's rustc per suite: {debian})",
        )

    def interpreter(self, recipe: InstallRecipe) -> str:
        return f"rustc {self.version_of(recipe) or 'default'}"

    def compile_failures(self, runner: str, output: str) -> dict[str, str]:
        return libtest.build_failures(output) if runner == RUNNER else {}

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_RUST_SOURCE.search(patch))

    def may_fail_to_pass(self, test_id: str) -> bool:
        # a doc test is named by its line, which a patch moves: never FAIL_TO_PASS
        try:
            return libtest.split_id(test_id)[1] != libtest.DOC
        except ValueError:
            return True

    def file_of(self, test_id: str) -> str | None:
        # what a run of the id's test is given: its package (swe-cargo-test takes names too)
        return libtest.package_of_id(test_id)

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        if runner != RUNNER:
            return None
        try:
            return f"{test_command} {libtest.check_arguments(test_id)}"
        except ValueError:
            return None

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        wanted = {MANIFEST, LOCKFILE, *TOOLCHAIN_FILES}
        return sorted(
            n
            for n in names
            if (n.rsplit("/", 1)[-1] in wanted and "/target/" not in f"/{n}") or n in CONFIG_FILES
        )

    def test_id_shape(self, runner: str) -> str:
        return (
            "the package's name, the target (lib for unit tests in src/, the integration "
            "test file's name for tests/<name>.rs) and the test's path as cargo test prints "
            "it, joined by :: (mycrate::parse::empty_input_is_an_error, mycrate::lib::"
            "tests::parses_empty)"
        )

    def tests_changed(self, tree: TreeFiles, test_patch: str) -> list[str]:
        # a test patch that does not compile without the fix takes its whole target out of
        # the run with it alone: the test functions whose lines it adds are named here
        return changed_tests(tree, test_patch)

    # -- inline tests (inline.py) --
    def test_line_ranges(self, path: str, text: str) -> list[tuple[int, int]] | None:
        # unit tests live in #[cfg(test)] modules of the source files themselves
        return test_item_ranges(text) if path.endswith(".rs") else None
