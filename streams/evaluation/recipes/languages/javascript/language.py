"""JavaScript / TypeScript as a plugin: detection (a package.json), inference per plausible
Node major, its runners (jest, vitest, mocha, node --test, tap, ava, uvu), its rejection
reasons, dependency files, agent prompts, test-id rules and check commands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.base import LogParser, ReportFile
from streams.evaluation.recipes.languages import (
    Cause,
    Inputs,
    Language,
    ToolchainImages,
    debian_install_steps,
    override_version,
)
from streams.evaluation.recipes.languages.javascript import prompts
from streams.evaluation.recipes.languages.javascript.package import MAX_LOCKFILE_BYTES, JsFacts
from streams.evaluation.recipes.languages.javascript.recipe import (
    infer_js_recipes,
    is_js_tree,
    js_versions,
    read_js_facts,
    tests_of_helpers,
)
from streams.evaluation.recipes.languages.javascript.runners import (
    ava,
    jest,
    js,
    mocha,
    node,
    tap,
    uvu,
    vitest,
)
from streams.evaluation.recipes.languages.javascript.runners.commands import RUNNER_COMMANDS
from streams.evaluation.recipes.languages.javascript.versions import DEBIAN_NODE
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

NO_NODE = "no_node_for_engines"  # engines.node excludes every Node image
# the same language under its other name: TypeScript is run as JavaScript
SPELLINGS = frozenset({"JavaScript", "TypeScript"})
# what its install and its Node major are made of (top level; and every package.json of its
# workspaces)
DEPENDENCY_FILES = frozenset(
    {
        "package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock",
        "pnpm-lock.yaml", "pnpm-workspace.yaml", "lerna.json", ".npmrc", ".yarnrc",
        ".yarnrc.yml", ".nvmrc", ".node-version",
    }
)  # fmt: skip
# JavaScript / TypeScript the tests load from a build (dist/, lib/cjs/): the recipe's build
# steps run again after a patch that changes sources
_JS_SOURCE = re.compile(r"^diff --git a/\S+\.(?:[cm]?[jt]sx?|vue|svelte)\s", re.MULTILINE)
# and, as for any language, sources of a compiled extension
_NATIVE_SOURCE = re.compile(
    r"^diff --git a/\S+\.(?:c|h|cc|cpp|cxx|hpp|pyx|pxd|pxi|f|f90|rs)\s", re.MULTILINE
)


# Node.js images: Debian's own ``nodejs`` and ``npm`` on a suite's base image, and corepack
# (yarn, pnpm) where the suite does not package it (bookworm): from the npm registry. The Node
# major of each suite is ``versions.DEBIAN_NODE`` (checked with ``apt-cache policy nodejs``:
# bookworm 18, trixie 20, forky 24).
NODE_IMAGES = ToolchainImages(
    prefix="swe-stream/node",
    label="org.swe-stream.node",
    by_suite=DEBIAN_NODE,
    steps=debian_install_steps(
        "nodejs npm",
        "(command -v corepack >/dev/null || npm install --global --no-audit --no-fund corepack)",
        "node --version && npm --version && corepack --version",
        also_remove=("/root/.npm",),
    ),
    environment=(("NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/ca-certificates.crt"),),
    note="Node's own CA list lacks a TLS-intercepting proxy's: the system store has it",
)


class JavaScript(Language):
    name = "JavaScript"
    title = "JavaScript / TypeScript"
    spellings = SPELLINGS
    toolchain = "node"
    version_pattern = r"^\d+$"  # a Node major: "20"
    registries = ("registry.npmjs.org",)
    order = 20
    runners = {
        "jest": LogParser(jest.parse_jest_output, jest.running_when_killed, report="jest-json"),
        "vitest": LogParser(vitest.parse_vitest_output, vitest.running_when_killed, "vitest-json"),
        "mocha": LogParser(mocha.parse_mocha_output, mocha.running_when_killed, "mocha-json"),
        "node": LogParser(node.parse_node_output, node.running_when_killed, "node-events"),
        "tap": LogParser(tap.parse_tap, tap.running_when_killed, report="tap"),
        "ava": LogParser(ava.parse_ava_output, ava.running_when_killed, report="ava-tap"),
        "uvu": LogParser(uvu.parse_uvu_output, uvu.running_when_killed),
    }
    reports = {
        "jest-json": jest.parse_jest_json,
        "vitest-json": jest.parse_jest_json,
        "mocha-json": mocha.parse_mocha_json,
        "tap": tap.parse_tap_report,
        "node-events": node.parse_node_events,
        "ava-tap": ava.parse_ava_tap,
    }
    runner_commands = RUNNER_COMMANDS
    default_runner = "node"
    project_files = DEPENDENCY_FILES - {".npmrc", ".nvmrc", ".node-version", ".yarnrc"}
    no_recipe_reasons = (NO_NODE,)
    pre_test_rebuilds = True
    fingerprint_limit = MAX_LOCKFILE_BYTES  # lockfiles pass 1 MiB
    causes = (
        Cause(
            "install_failed",
            r"ERR_PNPM_FETCH_404\s+GET https?://[^/\s]+/(@?[^/\s]+(?:/[^/\s-][^/\s]*)?)/-/|"
            r"npm (?:ERR!|error) 404|"
            r"E404|Not Found - 404|Request failed \"404",
            "a locked dependency is no longer in the registry (404) {0}",
        ),
        Cause(
            "install_failed",
            r"ERR_PNPM_OUTDATED_LOCKFILE|frozen-lockfile|YN0028|not in sync|EUSAGE",
            "the lockfile does not match package.json at this commit",
        ),
        Cause(
            "install_failed",
            r"error TS\d+|Found \d+ errors? in|node_modules/typescript/lib/typescript\.js",
            "the project's TypeScript build fails",
        ),
        Cause(
            "install_failed",
            r"(?:npm (?:ERR!|error) command sh -c|ELIFECYCLE.*?) (.+)$",
            "the project's own install script fails ({0})",
        ),
        Cause("install_failed", r"gyp ERR!", "a native addon does not compile"),
        Cause(
            "install_failed",
            r"EBADENGINE|Unsupported engine",
            "no Node image satisfies the project's engines",
        ),
    )
    toolchain_images = NODE_IMAGES
    setup_prompt = prompts.SETUP
    testgen_prompt = prompts.TESTGEN
    test_file_hint = (
        "name it *.test.js or *.spec.ts, or put it under a test/ or __tests__/ directory"
    )

    def detect(self, tree: TreeFiles) -> bool:
        return is_js_tree(tree)

    def facts(self, tree: TreeFiles) -> JsFacts | None:
        return read_js_facts(tree)

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        images = inputs.images_of(self.toolchain)
        pinned = self.pinned_versions(inputs)
        return js_versions(facts, images, inputs.created_at, inputs.changed_files, pinned)

    def infer(self, tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
        return infer_js_recipes(
            tree,
            node_images=inputs.images_of(self.toolchain),
            created_at=inputs.created_at,
            changed_files=inputs.changed_files,
            pinned=self.pinned_versions(inputs),
        )

    def no_recipe(self, facts: JsFacts, inputs: Inputs) -> tuple[str, str]:
        engines = facts.root.engines_node
        nodes = ", ".join(sorted(inputs.images_of(self.toolchain), key=int)) or "none built"
        pinned = override_version(inputs.override, self.toolchain)
        if pinned is not None:
            return NO_NODE, f"the override's node {pinned} has no image ({nodes})"
        if engines is None:  # every Node fits: an override names one with no image
            return NO_NODE, f"the Node major the override names has no image (built: {nodes})"
        return NO_NODE, f"engines.node {engines!r} excludes every Node with an image ({nodes})"

    def interpreter(self, recipe: InstallRecipe) -> str:
        if recipe.python is not None:  # a recipe of the default base image's Python
            return f"python {recipe.python}"
        return f"node {self.version_of(recipe) or 'default'}"

    def tests_for(self, tree: TreeFiles, files: list[str]) -> list[str]:
        return tests_of_helpers(tree.names, tree.read, files)

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_JS_SOURCE.search(patch) or _NATIVE_SOURCE.search(patch))

    def file_of(self, test_id: str) -> str | None:
        if js.SEPARATOR in test_id and "::" not in test_id and js.names_file(test_id):
            return test_id.split(js.SEPARATOR, 1)[0]
        return None

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        command = RUNNER_COMMANDS.get(runner)
        file = self.file_of(test_id)
        if command is None or file is None:
            return None
        names = test_id[len(file) + len(js.SEPARATOR) :].split(js.SEPARATOR)
        selected = command.select(names) if command.select else []
        passed = [command.passed(names)] if command.passed else []
        return " ".join([test_command, *map(shlex.quote, selected), shlex.quote(file), *passed])

    def report_file(self, runner: str, directory: str) -> ReportFile | None:
        parser, command = self.runners.get(runner), RUNNER_COMMANDS.get(runner)
        if parser is None or parser.report is None or command is None:
            return None
        if command.report_arguments is None or command.report_before_files:
            return None  # node: its console, swe-stream's reporter, is read
        path = f"{directory}/report.{parser.report}"
        return ReportFile(path, command.report_arguments.replace("{path}", shlex.quote(path)))

    def ids_with_files(
        self, runner: str, statuses: dict[str, TestStatus], files: list[str]
    ) -> dict[str, TestStatus]:
        # ava, mocha's console: ids without their file get the file of the run
        return js.with_files(statuses, files) if runner in RUNNER_COMMANDS else statuses

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return sorted(
            name
            for name in names
            if name in DEPENDENCY_FILES
            or (name.endswith("/package.json") and "node_modules/" not in name)
        )

    def test_id_shape(self, runner: str) -> str:
        return prompts.ID_SHAPES.get(runner, prompts.ID_SHAPE)


LANGUAGE = JavaScript()
