"""A toy language that exists only in the tests: a repository whose tests are shell scripts that
``make test`` runs, one ``PASS <file>`` / ``FAIL <file>`` line each. It is found the way a
third-party plugin is, through an entry point of the group ``swe_stream.languages``
(``tests/streams/evaluation/recipes/test_language_plugins.py`` installs one), and needs no
edit anywhere in ``streams/``, ``agents/`` or ``schemas/``: the registry, inference, the
settings (``docker.toolchain_images``, ``docker.make_images``), the overrides (``make:
"4.3"``), the validator, the check commands and the recipe memory take it as they take
Python or Rust. Its toolchain is versioned: GNU make, one image per Debian suite's."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.base import LogParser
from streams.evaluation.recipes.languages import (
    Inputs,
    Language,
    ToolchainImages,
    debian_install_steps,
    version_key,
)
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

RUNNER = "make-lines"
_LINE = re.compile(r"^(PASS|FAIL|SKIP) (\S+)\s*$", re.MULTILINE)
_STATUS: dict[str, TestStatus] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
_RUNNING = re.compile(r"^RUN (\S+)\s*$", re.MULTILINE)


def parse_make_lines(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``PASS <file>`` / ``FAIL <file>`` lines."""
    return {test: _STATUS[word] for word, test in _LINE.findall(output)}


def running_when_killed(output: str) -> str | None:
    """The test a killed run was in: the last ``RUN <file>`` without its result line."""
    started = _RUNNING.findall(output)
    done = set(parse_make_lines(output))
    return next((test for test in reversed(started) if test not in done), None)


# GNU make of each Debian suite, on its base image (the tests build the bookworm one)
MAKE_IMAGES = ToolchainImages(
    prefix="swe-stream-test/make",
    label="org.swe-stream.test.make",
    by_suite={"bookworm": "4.3", "trixie": "4.4"},
    steps=debian_install_steps("make", "make --version"),
)


def _has_test_target(tree: TreeFiles) -> bool:
    text = (tree.read("Makefile") or b"").decode("utf-8", errors="replace")
    return any(line.startswith("test:") for line in text.splitlines())


class MakeLanguage(Language):
    name = "Make"
    toolchain = "make"
    version_pattern = r"^4\.\d+$"
    toolchain_images = MAKE_IMAGES
    order = 90  # after the built-in languages: a Python project with a Makefile stays Python's
    runners = {RUNNER: LogParser(parse_make_lines, running_when_killed)}
    default_runner = RUNNER
    project_files = frozenset({"Makefile"})
    test_file_hint = "put it under tests/ as an executable shell script"

    def detect(self, tree: TreeFiles) -> bool:
        return _has_test_target(tree) and any(n.startswith("tests/") for n in tree.names)

    def facts(self, tree: TreeFiles) -> Any:
        return {"tests": [n for n in tree.names if n.startswith("tests/")]}

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        pinned = self.pinned_versions(inputs)
        if pinned is not None:
            return pinned
        built = sorted(inputs.images_of(self.toolchain), key=version_key, reverse=True)
        return [*built] if built else [None]

    def recipe(
        self, tree: TreeFiles, facts: Any, version: str | None, inputs: Inputs
    ) -> InstallRecipe:
        image = inputs.images_of(self.toolchain).get(version or "")
        return InstallRecipe(
            language=self.name,
            # the test files are appended: the shell hands them to make as one variable
            test_command="sh -c 'make -s test TESTS=\"$*\"' make",
            test_runner=RUNNER,
            base_image=image,
            # no image of its own: Debian's make in the env layer of the default base image
            system_packages=() if image else ("make",),
            sources=("Makefile", f"make:{version or 'default'}"),
        )

    def file_of(self, test_id: str) -> str | None:
        return test_id if test_id.startswith("tests/") and test_id.endswith(".sh") else None

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return [name for name in names if name == "Makefile"]

    def test_id_shape(self, runner: str) -> str:
        return "the test script's path (tests/test_x.sh)"


LANGUAGE = MakeLanguage()
