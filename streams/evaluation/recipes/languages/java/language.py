"""Java as a plugin: detection (a pom.xml at the root; a Gradle build without one is Java too,
rejected with its own reason), the toolchain images (Debian's OpenJDK and Maven per suite),
recipes per reactor, its runner (``mvn test`` through swe-mvn-test, Surefire's XML reports),
test ids ``<fully.qualified.Class>#<method>[<parameters>]``, check commands, causes and
prompts. A compiled language: validated with three runs (``compiled``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streams.evaluation.log_parsers.base import LogParser
from streams.evaluation.recipes.languages import Cause, Inputs, Language
from streams.evaluation.recipes.languages.java import prompts
from streams.evaluation.recipes.languages.java.changed import changed_tests
from streams.evaluation.recipes.languages.java.ci import ci_java_versions
from streams.evaluation.recipes.languages.java.pom import (
    MAVEN_CONFIG_DIR,
    POM,
    MavenFacts,
    is_maven_tree,
    pull_request_maven_facts,
    read_maven_facts,
)
from streams.evaluation.recipes.languages.java.recipe import (
    LANGUAGE_NAME,
    RUNNER,
    java_recipe,
    java_versions,
    needed_java,
    warm_up_classes,
)
from streams.evaluation.recipes.languages.java.runners import surefire
from streams.evaluation.recipes.languages.java.toolchain import JAVA_IMAGES
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

NO_JDK = "no_jdk_for_java_level"  # the build needs a JDK no image has
GRADLE = "gradle_build_unsupported"  # Gradle only: its wrapper's distribution host is unreachable
GRADLE_FILES = ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")
_JAVA_SOURCE = re.compile(r"^diff --git a/\S+\.java\s", re.MULTILINE)


@dataclass
class GradleBuild:
    """A Java tree built by Gradle alone (no pom.xml): rejected, its files named."""

    files: tuple[str, ...]


@dataclass
class JavaFacts:
    maven: MavenFacts
    need: int | None
    why: list[str]
    warm_up: list[str]  # one test class per module, for the instance layer (read once)


class Java(Language):
    name = LANGUAGE_NAME
    toolchain = "java"
    version_pattern = r"^\d+$"  # a JDK's major: "17"
    registries = ("repo.maven.apache.org", "repo1.maven.org")
    # after Go and Rust, before Python and JavaScript: a Maven project with a Python script or
    # a package.json for its docs site is tested with Maven
    order = 7
    compiled = True
    source_suffixes = (".java", ".kt")
    runners = {RUNNER: LogParser(surefire.parse_surefire_log, surefire.running_when_killed)}
    default_runner = RUNNER
    project_files = frozenset({POM, *GRADLE_FILES})
    vocabulary_words = frozenset({"maven", "mvn", "surefire", "gradle", "openjdk"})
    no_recipe_reasons = (NO_JDK, GRADLE)
    causes = (
        Cause(
            "install_failed",
            r"Could not (?:resolve|find artifact|transfer artifact) (\S+)",
            "an artifact cannot be resolved from Maven Central ({0})",
        ),
        Cause(
            "install_failed",
            r"(?:invalid target release|release version|Source option) (\d+)",
            "the image's JDK cannot compile the build's Java level ({0})",
        ),
        Cause(
            "install_failed",
            r"requires Maven version (\S+)",
            "a plugin needs a newer Maven ({0}) than the image's",
        ),
        Cause(
            "tests_did_not_run",
            r"Non-resolvable parent POM for \S+: .*?artifact (\S+) has not been downloaded",
            "the parent POM cannot be resolved ({0}): no reachable repository serves it, and "
            "no release of it to stand in for it",
        ),
        Cause(
            "tests_did_not_run",
            r"Cannot access (\S+) in offline mode",
            "an artifact the tests need was not resolved ahead ({0})",
        ),
    )
    toolchain_images = JAVA_IMAGES
    setup_prompt = prompts.SETUP
    testgen_prompt = prompts.TESTGEN
    test_file_hint = "name it <Name>Test.java, under src/test/java/ of the module it tests"

    def detect(self, tree: TreeFiles) -> bool:
        built = is_maven_tree(tree) or any(tree.has(name) for name in GRADLE_FILES)
        return built and any(name.endswith(".java") for name in tree.names)

    def facts(self, tree: TreeFiles) -> JavaFacts | GradleBuild | None:
        maven = read_maven_facts(tree)
        if maven is None:
            gradle = tuple(name for name in GRADLE_FILES if tree.has(name))
            return GradleBuild(gradle) if gradle else None
        need, why = needed_java(maven, ci_java_versions(tree))
        return JavaFacts(maven, need, why, warm_up_classes(maven, tree))

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        if not isinstance(facts, JavaFacts):
            return []
        images = inputs.images_of(self.toolchain)
        pinned = self.pinned_versions(inputs)
        if pinned is not None:
            return pinned
        return list(java_versions(facts.need, images))

    def recipe(
        self, tree: TreeFiles, facts: Any, version: str | None, inputs: Inputs
    ) -> InstallRecipe:
        images = inputs.images_of(self.toolchain)
        pull_request = pull_request_maven_facts(tree, inputs.diffs) if inputs.diffs else None
        return java_recipe(
            facts.maven, version or "", images, facts.need, facts.why, facts.warm_up, pull_request
        )

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        if isinstance(facts, GradleBuild):
            return (
                GRADLE,
                f"a Gradle build ({', '.join(facts.files)}) and no pom.xml: the Gradle "
                "wrapper's distribution host is not reachable",
            )
        images = inputs.images_of(self.toolchain)
        built = ", ".join(f"JDK {v}" for v in sorted(images, key=int)) or "none built"
        asked = "; ".join(facts.why) if isinstance(facts, JavaFacts) else "nothing"
        need = facts.need if isinstance(facts, JavaFacts) else None
        return (
            NO_JDK,
            f"the build needs Java {need} ({asked}); images have {built} "
            "(swe-stream images base --toolchains)",
        )

    def interpreter(self, recipe: InstallRecipe) -> str:
        return f"OpenJDK {self.version_of(recipe) or 'default'}"

    def compile_failures(self, runner: str, output: str) -> dict[str, str]:
        return surefire.build_failures(output) if runner == RUNNER else {}

    def touches_compiled_sources(self, patch: str) -> bool:
        return bool(_JAVA_SOURCE.search(patch))

    def tests_changed(self, tree: TreeFiles, test_patch: str) -> list[str]:
        # a test patch that does not compile without the fix takes its whole module out of
        # the run with it alone: the test methods whose lines it adds are named here
        return changed_tests(tree, test_patch)

    def file_of(self, test_id: str) -> str | None:
        # what a run of the id's test is given: its top-level class (swe-mvn-test finds its
        # module; a run of a class runs its nested classes too)
        try:
            return surefire.split_id(test_id)[0].split("$", 1)[0]
        except ValueError:
            return None

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        if runner != RUNNER:
            return None
        try:
            surefire.split_id(test_id)
        except ValueError:
            return None
        return f"{test_command} {shlex.quote(test_id)}"

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        return sorted(
            n
            for n in names
            if (n.rsplit("/", 1)[-1] == POM and "/target/" not in f"/{n}")
            or n.startswith(f"{MAVEN_CONFIG_DIR}/")
        )

    def test_id_shape(self, runner: str) -> str:
        return (
            "the test class's fully qualified name, # and the method's name as Surefire "
            "reports it (org.demo.ParserTest#parsesEmptyInput; a parameterized case with its "
            "parameters and index: org.demo.ParserTest#converts(int, int)[2])"
        )
