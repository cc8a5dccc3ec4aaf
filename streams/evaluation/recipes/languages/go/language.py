"""Go as a plugin: detection (a go.mod or go.work at the root), the toolchain images (Debian's
golang per suite, a newer toolchain fetched through the module proxy), recipes per module,
its runner (``go test -json``), test ids ``<import path>/<TestName>[/<subtest>]``, check
commands, causes and prompts. A compiled language: validated with three runs (``compiled``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from streams.evaluation.log_parsers.base import LogParser
from streams.evaluation.recipes.languages import Cause, Inputs, Language, source_version
from streams.evaluation.recipes.languages.go import prompts
from streams.evaluation.recipes.languages.go.changed import changed_tests
from streams.evaluation.recipes.languages.go.recipe import (
    LANGUAGE_NAME,
    RUNNER,
    GoFacts,
    go_recipe,
    go_versions,
    is_go_tree,
    pull_request_go_facts,
    read_go_facts,
    tested_modules,
    with_added_modules,
)
from streams.evaluation.recipes.languages.go.runners import gotest
from streams.evaluation.recipes.languages.go.tags import build_tags
from streams.evaluation.recipes.languages.go.toolchain import GO_IMAGES
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

NO_GO = "no_go_for_go_mod"  # the go.mod needs a go no image has, and none can be fetched
DEPENDENCY_FILES = ("go.mod", "go.sum", "go.work", "go.work.sum")
_GO_SOURCE = re.compile(r"^diff --git a/\S+\.go\s", re.MULTILINE)
# a top-level test function's name as go declares it: an identifier after its prefix
_TEST_FUNCTION = re.compile(r"(?:Test|Example|Fuzz|Benchmark)(?:[^\Wa-z]\w*)?")


def _split(test_id: str) -> tuple[str, str]:
    """(package, test) of a Go test id; ("", "") when ``test_id`` is none (another
    language's: a path with ``::``, a title with spaces)."""
    if "::" in test_id:
        return "", ""
    try:
        package, test = gotest.split_id(test_id)
    except ValueError:
        return "", ""
    if " " in package or not _TEST_FUNCTION.fullmatch(test.split("/", 1)[0]):
        return "", ""
    return package, test


class Go(Language):
    name = LANGUAGE_NAME
    toolchain = "go"
    version_pattern = r"^1\.\d+$"  # an image's major.minor: "1.24"
    registries = ("proxy.golang.org", "sum.golang.org")
    # before Python and JavaScript: a Go module with a script in Python, or a package.json
    # for its docs site, is tested with go
    order = 5
    compiled = True
    source_suffixes = (".go",)
    runners = {RUNNER: LogParser(gotest.parse_go_test_json, gotest.running_when_killed)}
    default_runner = RUNNER
    project_files = frozenset(DEPENDENCY_FILES)
    no_recipe_reasons = (NO_GO,)
    causes = (
        Cause(
            "install_failed",
            r"go: downloading go1\S* .*\n.*(?:toolchain not available|no such host)|"
            r"go: download go1\S+ for \S+: (.+)",
            "the toolchain the module names cannot be fetched ({0})",
        ),
        Cause(
            "install_failed",
            # ``go: <module>@<version>: reading <proxy URL>: 404 Not Found`` (403: a proxy
            # that serves no such version), or ``verifying <module>@<version>: checksum ...``
            r"go: (\S+@[^\s:]+): (?:reading|verifying) .*(?:403|404|410|not found)|"
            r"verifying (\S+@[^\s:]+).*checksum mismatch",
            "a required module is not in the module proxy ({0})",
        ),
        Cause(
            "install_failed",
            r"requires go >= (\S+)",
            "the module needs a newer go ({0}) than its image's",
        ),
    )
    toolchain_images = GO_IMAGES
    setup_prompt = prompts.SETUP
    testgen_prompt = prompts.TESTGEN
    test_file_hint = "name it <name>_test.go, in the directory of the package it tests"

    def detect(self, tree: TreeFiles) -> bool:
        return is_go_tree(tree) and any(name.endswith(".go") for name in tree.names)

    def facts(self, tree: TreeFiles) -> GoFacts | None:
        return read_go_facts(tree)

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        images = inputs.images_of(self.toolchain)
        pinned = self.pinned_versions(inputs)
        if pinned is not None:
            return pinned
        modules = tested_modules(facts, inputs.changed_files)
        return list(go_versions(facts, images, modules))

    def recipe(
        self, tree: TreeFiles, facts: Any, version: str | None, inputs: Inputs
    ) -> InstallRecipe:
        images = inputs.images_of(self.toolchain)
        tags = build_tags(tree, inputs.changed_files)
        return go_recipe(facts, version, images, inputs.changed_files, tags)

    def infer(self, tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
        facts = self.facts(tree)
        if facts is None:
            return [], None
        if inputs.diffs:  # the modules the PR adds, read off the tree its diffs leave
            facts = with_added_modules(facts, pull_request_go_facts(tree, inputs.diffs))
        return [self.recipe(tree, facts, v, inputs) for v in self.versions(facts, inputs)], facts

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        built = ", ".join(sorted(inputs.images_of(self.toolchain))) or "none built"
        return (
            NO_GO,
            f"no go image for this module (built: {built}; swe-stream images base --toolchains)",
        )

    def interpreter(self, recipe: InstallRecipe) -> str:
        fetched = source_version(recipe.sources, "toolchain")  # one fetched past the image's
        return (
            f"go {fetched.removeprefix('go')}"
            if fetched
            else f"go {self.version_of(recipe) or 'default'}"
        )

    def tests_for(self, tree: TreeFiles, files: list[str]) -> list[str]:
        # go runs packages, not files: the directories of the test files and test data
        return gotest.packages_of(files) or files

    def tests_changed(self, tree: TreeFiles, test_patch: str) -> list[str]:
        facts = read_go_facts(tree, cgo=False)  # the modules' paths alone
        return changed_tests(facts, test_patch) if facts is not None else []

    def compile_failures(self, runner: str, output: str) -> dict[str, str]:
        return gotest.build_failures(output) if runner == RUNNER else {}

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_GO_SOURCE.search(patch))

    def file_of(self, test_id: str) -> str | None:
        # the package an id names: what a run of it is given (``go test <import path>``)
        package, test = _split(test_id)
        return package if test else None

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        if runner != RUNNER:
            return None
        package, test = _split(test_id)
        if not test:
            return None
        pattern = shlex.quote(f"-run={gotest.run_pattern(test)}")
        return f"{test_command} {pattern} {shlex.quote(package)}"

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return sorted(
            n for n in names if n.rsplit("/", 1)[-1] in DEPENDENCY_FILES and "vendor/" not in n
        )

    def test_id_shape(self, runner: str) -> str:
        return (
            "the package's import path, then the test function's name and its subtests' names "
            "as go test -json prints them (example.com/mod/pkg/TestParse/empty_input)"
        )
