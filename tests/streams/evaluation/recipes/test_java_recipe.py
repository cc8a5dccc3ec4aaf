"""Java's recipes from trees the tests make (git archives of real git repositories): detection
(Maven, and Gradle rejected), the reactor read from its POMs, which JDK image (the build's Java
level, a toolchains plugin's range, the CI's setup-java), what the layers run, test ids, check
commands and the tests a test patch changes; Surefire's reports as real runs printed them
(``tests/data/java``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.evaluation.log_parsers import LOG_PARSERS, check_command, file_of
from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import language_named, language_of
from streams.evaluation.recipes.languages.java.changed import changed_tests, find_test_methods
from streams.evaluation.recipes.languages.java.language import GRADLE, NO_JDK
from streams.evaluation.recipes.languages.java.pom import (
    java_level,
    lowest_of_range,
    read_maven_facts,
)
from streams.evaluation.recipes.languages.java.recipe import (
    KEEP_IN_CACHE,
    RUNNER_SCRIPT,
    TESTS,
    USE_CACHE,
)
from streams.evaluation.recipes.languages.java.runners.surefire import (
    build_failures,
    parse_report,
    parse_surefire_log,
    running_when_killed,
)
from streams.evaluation.recipes.languages.java.toolchain import MAVEN_REPOSITORY
from streams.evaluation.recipes.model import ENV_DIR, InstallRecipe
from streams.offline.world import JAVA_BASE, JAVA_FIX, JAVA_TEST
from tests.streams.evaluation.recipes.test_go_recipe import tree_of

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "java"
JAVA_IMAGES = {
    "11": "swe-stream/java:bullseye",
    "17": "swe-stream/java:bookworm",
    "21": "swe-stream/java:trixie",
    "25": "swe-stream/java:forky",
}
SOURCE = "public class A {}\n"


def pom(body: str = "", artifact: str = "lib", parent: str = "") -> str:
    return (
        '<?xml version="1.0"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        f"<modelVersion>4.0.0</modelVersion>{parent}<groupId>g</groupId>"
        f"<artifactId>{artifact}</artifactId><version>1</version>{body}</project>\n"
    )


def maven_steps(recipe: InstallRecipe) -> list[str]:
    """The env layer's Maven steps, between reading the package cache and keeping in it."""
    assert recipe.env_commands[0] == USE_CACHE and recipe.env_commands[-1] == KEEP_IN_CACHE
    return list(recipe.env_commands[1:-1])


def recipes(tmp_path: Path, files: dict[str, str]) -> tuple[list, object]:
    tree = tree_of(tmp_path, files)
    return infer_recipes(tree, repo="o/r", images={"java": JAVA_IMAGES})  # type: ignore[return-value]


def test_a_maven_project_is_java_before_python_and_javascript(tmp_path: Path) -> None:
    tree = tree_of(
        tmp_path,
        {
            "pom.xml": pom(),
            "src/main/java/A.java": SOURCE,
            "docs/package.json": "{}",
            "scripts/pyproject.toml": "[project]\nname='x'\n",
        },
    )
    language = language_of(tree)
    assert language is not None and language.name == "Java"


def test_java_8_sources_are_compiled_by_the_oldest_jdk_then_the_newer_ones(
    tmp_path: Path,
) -> None:
    body = (
        "<properties><maven.compiler.source>1.8</maven.compiler.source>"
        "<maven.compiler.target>1.8</maven.compiler.target></properties>"
    )
    found, _ = recipes(tmp_path, {"pom.xml": pom(body), "src/main/java/A.java": SOURCE})
    assert [r.base_image for r in found] == list(JAVA_IMAGES.values())
    first = found[0]
    assert first.test_command == TESTS and first.test_runner == "surefire"
    assert "java:11" in first.sources and "java-level:8" in first.sources
    assert any("JDK 11 compiles the Java 8 sources" in note for note in first.notes)
    assert RUNNER_SCRIPT in first.dependency_files and "pom.xml" in first.dependency_files
    assert "dependency:go-offline" in maven_steps(first)[0]
    assert "-Denforcer.skip=true" in first.install_commands[0]


def test_levels_from_properties_the_compiler_plugin_and_a_parent_in_the_tree(
    tmp_path: Path,
) -> None:
    parent = pom(
        "<packaging>pom</packaging><modules><module>core</module></modules>"
        "<properties><jdk>17</jdk></properties>",
        artifact="parent",
    )
    core = pom(
        "<build><plugins><plugin><artifactId>maven-compiler-plugin</artifactId>"
        "<configuration><release>${jdk}</release></configuration></plugin></plugins></build>",
        artifact="core",
        parent="<parent><groupId>g</groupId><artifactId>parent</artifactId>"
        "<version>1</version></parent>",
    )
    tree = tree_of(
        tmp_path, {"pom.xml": parent, "core/pom.xml": core, "core/src/main/java/A.java": SOURCE}
    )
    facts = read_maven_facts(tree)
    assert facts is not None and sorted(facts.modules) == [".", "core"]
    assert facts.java_levels() == {"core/pom.xml compiler release": 17}
    found = infer_recipes(tree, repo="o/r", images={"java": JAVA_IMAGES})[0]
    assert [r.base_image for r in found] == [
        JAVA_IMAGES["17"],
        JAVA_IMAGES["21"],
        JAVA_IMAGES["25"],
    ]
    assert "core/pom.xml" in found[0].dependency_files


def test_a_toolchains_range_and_the_ci_setup_java_say_which_jdk(tmp_path: Path) -> None:
    toolchains = pom(
        "<build><plugins><plugin><artifactId>maven-toolchains-plugin</artifactId>"
        "<configuration><toolchains><jdk><version>[21,26)</version></jdk></toolchains>"
        "</configuration></plugin></plugins></build>"
    )
    found, _ = recipes(tmp_path / "a", {"pom.xml": toolchains, "src/main/java/A.java": SOURCE})
    assert found[0].base_image == JAVA_IMAGES["21"]
    workflow = (
        "jobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n"
        "        java: [21, 25]\n    steps:\n      - uses: actions/setup-java@v4\n"
        "        with:\n          java-version: ${{ matrix.java }}\n"
    )
    files = {
        "pom.xml": pom(),
        "src/main/java/A.java": SOURCE,
        ".github/workflows/ci.yml": workflow,
    }
    found, _ = recipes(tmp_path / "b", files)
    assert found[0].base_image == JAVA_IMAGES["21"]
    # nothing says: 17 first, then the newer, then the older
    found, _ = recipes(tmp_path / "c", {"pom.xml": pom(), "src/main/java/A.java": SOURCE})
    assert [r.base_image for r in found][:2] == [JAVA_IMAGES["17"], JAVA_IMAGES["21"]]
    assert found[-1].base_image == JAVA_IMAGES["11"]


def test_levels_are_read_as_majors() -> None:
    assert [java_level(v) for v in ("1.8", "8", "17", "1.7", "${x}")] == [8, 8, 17, 7, None]
    assert [lowest_of_range(v) for v in ("[17,24)", "11", "[1.8,)", "")] == [17, 11, 8, None]


def test_a_gradle_build_and_a_jdk_no_image_has_are_rejected_with_their_reasons(
    tmp_path: Path,
) -> None:
    from streams.evaluation.recipes.infer import infer_for
    from streams.evaluation.recipes.languages import Inputs

    tree = tree_of(tmp_path / "g", {"build.gradle": "plugins {}\n", "src/main/java/A.java": SOURCE})
    java = language_named("Java")
    assert java is not None and java.detect(tree)
    inputs = Inputs(repo="o/r", images={"java": JAVA_IMAGES})
    assert infer_for(tree, inputs)[0] == []
    reason, detail = java.no_recipe(java.facts(tree), inputs)
    assert reason == GRADLE and "build.gradle" in detail
    body = "<properties><maven.compiler.release>30</maven.compiler.release></properties>"
    tree = tree_of(tmp_path / "m", {"pom.xml": pom(body), "src/main/java/A.java": SOURCE})
    assert infer_for(tree, inputs)[0] == []
    reason, detail = java.no_recipe(java.facts(tree), inputs)
    assert reason == NO_JDK and "Java 30" in detail and "JDK 25" in detail


def test_the_warm_up_runs_one_small_test_class_of_each_module(tmp_path: Path) -> None:
    files = {
        "pom.xml": pom("<packaging>pom</packaging><modules><module>a</module></modules>"),
        "a/pom.xml": pom(artifact="a"),
        "a/src/test/java/x/BigTest.java": "class BigTest {\n" + "// long\n" * 50 + "}\n",
        "a/src/test/java/x/SmallTest.java": "class SmallTest {}\n",
        "src/test/java/y/RootTest.java": "class RootTest {}\n",
        "other/src/test/java/z/NotAModuleTest.java": "class NotAModuleTest {}\n",
    }
    found, _ = recipes(tmp_path, files)
    assert "-Dtest=RootTest,SmallTest " in found[0].install_commands[0]


def test_fingerprint_files_are_every_pom_and_mvn_config() -> None:
    java = language_named("Java")
    assert java is not None
    names = ["pom.xml", "a/pom.xml", "a/target/pom.xml", ".mvn/maven.config", "src/A.java"]
    assert java.fingerprint_files(names) == [".mvn/maven.config", "a/pom.xml", "pom.xml"]


# -- runs: Surefire's reports as swe-mvn-test printed them in a real run (JDK 11, Maven 3.6.3)


def test_the_reports_of_a_real_run_give_every_case_its_status() -> None:
    base = parse_surefire_log((DATA / "junit5-base.log").read_text())
    assert base == {
        "demo.TemperatureTest$Body#normal": "passed",
        "demo.TemperatureTest#freezingPoint": "passed",
        "demo.TemperatureTest#toFahrenheit(double, double)[1]": "passed",
        "demo.TemperatureTest#toFahrenheit(double, double)[2]": "passed",
    }
    test_only = parse_surefire_log((DATA / "junit5-test-only.log").read_text())
    assert {t: s for t, s in test_only.items() if t not in base} == {
        "demo.TemperatureTest#toCelsius(double, double)[1]": "failed",
        "demo.TemperatureTest#toCelsius(double, double)[2]": "failed",
    }
    check = parse_surefire_log((DATA / "junit5-check.log").read_text())
    assert check["demo.TemperatureTest#toCelsius(double, double)[1]"] == "passed"
    assert LOG_PARSERS["surefire"].parse is parse_surefire_log


def test_a_module_whose_test_patch_does_not_compile_is_named_with_what_javac_said() -> None:
    """A real run of a multi-module build (JDK 17, Maven 3.8.7): at the base, then with a test
    patch that calls a method only the fix adds."""
    base = (DATA / "multi-module-base.log").read_text()
    assert parse_surefire_log(base) == {"demo.shapes.RectangleTest#area": "passed"}
    assert build_failures(base) == {}
    test_only = (DATA / "multi-module-test-only.log").read_text()
    assert parse_surefire_log(test_only) == {}
    assert build_failures(test_only) == {
        "core": "/testbed/core/src/test/java/demo/shapes/RectangleTest.java:[16,47] cannot find "
        "symbol"
    }
    # Maven 3.8 may end its output with a colour reset and no newline: the marker still counts
    reset = base.replace("swe-mvn-test: report", "\x1b[0m\x1b[0mswe-mvn-test: report")
    assert parse_surefire_log(reset) == parse_surefire_log(base)


def test_a_reports_statuses_and_a_refused_report() -> None:
    report = (
        '<testsuite name="a.B"><testcase classname="a.B" name="ok"/>'
        '<testcase classname="a.B" name="bad"><failure message="x"/></testcase>'
        '<testcase classname="a.B" name="boom"><error type="E"/></testcase>'
        '<testcase classname="a.B" name="off"><skipped/></testcase>'
        '<testcase classname="a.B" name="rerun"><flakyFailure/></testcase>'
        '<testcase classname="" name="nameless"/></testsuite>'
    )
    assert parse_report(report) == {
        "a.B#ok": "passed",
        "a.B#bad": "failed",
        "a.B#boom": "error",
        "a.B#off": "skipped",
        "a.B#rerun": "passed",
    }
    with pytest.raises(ValueError):
        parse_report('<!DOCTYPE x [<!ENTITY e "e">]><testsuite/>')
    log = "swe-mvn-test: report r.xml\n<testsuite><testcase\nswe-mvn-test: end of report\n"
    assert parse_surefire_log(log) == {}  # a malformed report is passed over


def test_a_module_that_did_not_compile_and_the_class_running_when_killed() -> None:
    output = (
        "[INFO] Running a.FirstTest\n[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, "
        "Time elapsed: 0.1 s - in a.FirstTest\n[INFO] Running a.SlowTest\n"
        "swe-mvn-test: did not compile core\n"
        "swe-mvn-test:   /testbed/core/src/test/java/A.java:[3,9] cannot find symbol\n"
        "swe-mvn-test: report x\n"
    )
    assert build_failures(output) == {
        "core": "/testbed/core/src/test/java/A.java:[3,9] cannot find symbol"
    }
    assert running_when_killed(output) == "a.SlowTest"
    assert (
        running_when_killed(output + "[INFO] Tests run: 1, Time elapsed: 1 s - in a.SlowTest\n")
        is None
    )


def test_ids_name_their_class_and_a_check_command_runs_one() -> None:
    test = "demo.TemperatureTest#toCelsius(double, double)[1]"
    assert file_of(test, "Java") == "demo.TemperatureTest"
    assert file_of("demo.TemperatureTest$Body#normal", "Java") == "demo.TemperatureTest"
    assert check_command(TESTS, "surefire", test) == (
        f"python3 {ENV_DIR}/{RUNNER_SCRIPT} 'demo.TemperatureTest#toCelsius(double, double)[1]'"
    )
    java = language_named("Java")
    assert java is not None
    for other in ("tests/test_a.py::test_b", "pkg/TestX", "a.js > works #1", "crate::lib::t"):
        assert java.file_of(other) is None


# -- the tests a test patch changes


def test_test_methods_of_a_source_with_nesting_comments_and_strings() -> None:
    source = (
        "package a.b;\n\n/* class Fake { @Test void no() {} } */\npublic class CTest {\n"
        '    String s = "}{ @Test";\n    @Test(expected = E.class)\n    public void one() {}\n'
        "    @Nested class Inner {\n        @ParameterizedTest\n        @ValueSource(ints = {1})\n"
        "        void two(int x) throws Exception {\n            if (x > 0) { }\n        }\n"
        "    }\n    private void helper() {}\n}\n"
    )
    package, methods = find_test_methods(source)
    assert package == "a.b"
    assert [(m.classes, m.name, m.start, m.end) for m in methods] == [
        (("CTest",), "one", 6, 7),
        (("CTest", "Inner"), "two", 9, 13),
    ]
    junit3 = (
        "public class OldTest extends TestCase {\n  public void testIt() {}\n  void x() {}\n}\n"
    )
    assert [m.name for m in find_test_methods(junit3)[1]] == ["testIt"]


def test_the_tests_a_test_patch_adds_or_changes(tmp_path: Path) -> None:
    import subprocess

    tree = tree_of(tmp_path / "base", JAVA_BASE)
    root = tmp_path / "base" / "repo"
    (root / JAVA_TEST).write_text(str(JAVA_FIX[JAVA_TEST]))
    patch = subprocess.run(
        ["git", "-C", str(root), "diff"], check=True, capture_output=True, text=True
    ).stdout
    assert changed_tests(tree, patch) == ["demo.TemperatureTest#toCelsius"]


def test_a_parent_pom_no_repository_has_is_the_runs_cause() -> None:
    """A real run (jackson-core's base of a 2023 PR): its parent, a -SNAPSHOT, was only ever
    in Sonatype's snapshot repository."""
    from streams.evaluation.failures import failure_cause

    output = (DATA / "snapshot-parent.log").read_text()
    assert parse_surefire_log(output) == {}
    assert failure_cause("tests_did_not_run", output) == (
        "the parent POM cannot be resolved (com.fasterxml.jackson:jackson-base:pom:"
        "2.16.2-SNAPSHOT): no reachable repository serves it, and no release of it to stand "
        "in for it"
    )


def test_the_jdk_images_dockerfile_names_its_version_and_quotes_its_variables() -> None:
    from streams.evaluation.images import toolchain_dockerfile
    from streams.evaluation.recipes.languages.java.toolchain import JAVA_IMAGES, TOOLCHAINS

    dockerfile = toolchain_dockerfile(JAVA_IMAGES, "swe-stream/base:trixie", "21")
    lines = dockerfile.splitlines()
    assert "ARG TOOLCHAIN_VERSION=21" in lines
    assert (
        'ENV MAVEN_OPTS="-Dmaven.repo.local=/opt/swe-m2/repository -Xmx1g '
        '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"'
    ) in lines
    run = next(line for line in lines if line.startswith("RUN "))
    assert "openjdk-${TOOLCHAIN_VERSION}-jdk-headless maven" in run
    # the toolchains file names the image's major, not what a JVM prints
    assert f'"$TOOLCHAIN_VERSION" "$home" > {TOOLCHAINS}' in run
    go = toolchain_dockerfile(language_named("Go").toolchain_images, "b:forky", "1.27")  # type: ignore[union-attr, arg-type]
    assert "ARG TOOLCHAIN_VERSION" not in go


def test_parents_outside_the_reactor_are_resolved_first_with_a_stand_in_where_none_is_served(
    tmp_path: Path,
) -> None:
    shared = "<parent><groupId>org.acme</groupId><artifactId>acme-base</artifactId>"
    inner = "<parent><groupId>g</groupId><artifactId>lib</artifactId><version>1</version></parent>"
    files = {
        "pom.xml": pom(
            "<packaging>pom</packaging><modules><module>core</module></modules>",
            parent=f"{shared}<version>2.15.0-SNAPSHOT</version></parent>",
        ),
        "core/pom.xml": pom(artifact="core", parent=inner),  # the reactor's own parent
        "core/src/main/java/A.java": SOURCE,
    }
    facts = read_maven_facts(tree_of(tmp_path / "facts", files))
    assert facts is not None
    assert facts.parents_outside() == ["org.acme:acme-base:2.15.0-SNAPSHOT"]
    found, _ = recipes(tmp_path / "recipes", files)
    first = found[0]
    assert "swe-mvn-parent.py" in first.dependency_files
    assert maven_steps(first)[0] == (
        f"cd {ENV_DIR} && python3 swe-mvn-parent.py {MAVEN_REPOSITORY} "
        "org.acme:acme-base:2.15.0-SNAPSHOT || true"
    )
    assert "dependency:go-offline" in maven_steps(first)[1]
    assert any("acme-base:2.15.0-SNAPSHOT" in note for note in first.notes)
    # a released parent is passed too (the registry here may not serve it), without a note
    released = {**files, "pom.xml": files["pom.xml"].replace("2.15.0-SNAPSHOT", "2.15.0")}
    found, _ = recipes(tmp_path / "released", released)
    assert maven_steps(found[0])[0].endswith(
        f"swe-mvn-parent.py {MAVEN_REPOSITORY} org.acme:acme-base:2.15.0 || true"
    )
    assert not any("acme-base" in note for note in found[0].notes)
    # no parent outside the reactor: no stand-in step
    alone = {"pom.xml": pom(), "src/main/java/A.java": SOURCE}
    found, _ = recipes(tmp_path / "alone", alone)
    assert "swe-mvn-parent.py" not in found[0].dependency_files
    assert len(maven_steps(found[0])) == 1


def test_the_stand_in_for_a_release_not_served_is_the_newest_release_below_it() -> None:
    from streams.evaluation.recipes.languages.java.swe_mvn_parent import newest_below

    served = ["1", "9", "63.10", "65.2", "67.3", "68.0", "68.2-SNAPSHOT", "7.0.13"]
    assert newest_below(served, "68.1") == "68.0"
    assert newest_below(served, "63.11") == "63.10"  # numbers compared as numbers
    assert newest_below(served, "69.0-SNAPSHOT") == "68.0"  # snapshots never stand in
    assert newest_below(served, "1") is None


def test_the_stand_in_pom_takes_the_snapshots_version_and_keeps_its_parents() -> None:
    import xml.etree.ElementTree as ElementTree

    from streams.evaluation.recipes.languages.java.swe_mvn_parent import with_version

    namespace = "{http://maven.apache.org/POM/4.0.0}"
    inherits = (
        b'<project xmlns="http://maven.apache.org/POM/4.0.0"><parent><groupId>o</groupId>'
        b"<artifactId>bom</artifactId><version>2.15.0</version></parent>"
        b"<artifactId>base</artifactId><packaging>pom</packaging></project>"
    )
    project = ElementTree.fromstring(with_version(inherits, "2.15.0-SNAPSHOT"))
    assert [c.tag.removeprefix(namespace) for c in project] == [
        "parent", "artifactId", "version", "packaging"
    ]  # fmt: skip
    assert project.findtext(f"{namespace}version") == "2.15.0-SNAPSHOT"
    assert project.findtext(f"{namespace}parent/{namespace}version") == "2.15.0"
    own = b"<project><artifactId>base</artifactId><version>7</version></project>"
    assert ElementTree.fromstring(with_version(own, "7-SNAPSHOT")).findtext("version") == (
        "7-SNAPSHOT"
    )
    with pytest.raises(ValueError):
        with_version(b"<project><packaging>pom</packaging></project>", "1-SNAPSHOT")


def test_the_poms_a_pull_request_leaves_are_resolved_in_the_env_layer_too(
    tmp_path: Path,
) -> None:
    """A PR that adds a dependency its tests need: the env layer, which has the network,
    resolves the reactor the PR leaves as well (the tests run offline)."""
    base = pom("<dependencies></dependencies>")
    files = {"pom.xml": base, "src/main/java/A.java": SOURCE}
    tree = tree_of(tmp_path, files)
    added = "<dependency><groupId>org.x</groupId><artifactId>y</artifactId></dependency>"
    lines = base.splitlines()
    changed = [line.replace("<dependencies>", f"<dependencies>{added}") for line in lines]
    diff = (
        "diff --git a/pom.xml b/pom.xml\n--- a/pom.xml\n+++ b/pom.xml\n"
        f"@@ -1,{len(lines)} +1,{len(lines)} @@\n"
        + "".join(
            f" {old}\n" if old == new else f"-{old}\n+{new}\n"
            for old, new in zip(lines, changed, strict=True)
        )
    )
    source_only = (
        "diff --git a/src/main/java/A.java b/src/main/java/A.java\n--- a/src/main/java/A.java\n"
        "+++ b/src/main/java/A.java\n@@ -1 +1 @@\n-public class A {}\n+public class A { }\n"
    )
    images = {"java": JAVA_IMAGES}
    found, _ = infer_recipes(tree, repo="o/r", images=images, diffs=(source_only, diff))
    first = found[0]
    assert added in first.dependency_files["pull-request/pom.xml"].decode()
    assert added not in first.dependency_files["pom.xml"].decode()
    assert [c.split(" && ")[0] for c in maven_steps(first)] == [
        f"cd {ENV_DIR}", f"cd {ENV_DIR}/pull-request"
    ]  # fmt: skip
    assert "poms:pull-request" in first.sources
    found, _ = infer_recipes(tree, repo="o/r", images=images, diffs=(source_only,))
    assert "pull-request/pom.xml" not in found[0].dependency_files
    assert len(maven_steps(found[0])) == 1
