"""swe-mvn-test: run a Maven project's tests for the given files, classes or modules, offline,
and print Surefire's XML reports into the log.

Usage: ``python3 swe-mvn-test.py [MAVEN OPTIONS] TARGET...``, where a target is
- a test source (``core/src/test/java/org/demo/ParserTest.java``): its class, in its module;
- another file of a module (a test resource): the module's every test;
- a module's directory: its every test;
- a test id (``org.demo.ParserTest#parses`` or ``org.demo.ParserTest#converts(int)[2]``) or a
  class (``org.demo.ParserTest``): found among the modules' test sources.

It runs ``mvn -o -B -fae test -pl <modules> -am -Dtest=<classes>`` (the module list and the
class filter only where they narrow the run), with test failures not failing the build and the
build's own checks (enforcer, checkstyle, license and coverage plugins) skipped, then prints
each ``TEST-*.xml`` report Surefire wrote in the run, between ``swe-mvn-test: report <path>``
and ``swe-mvn-test: end of report`` lines, without the JVM's properties and the passing tests'
output. A module whose sources do not compile is named on a line
``swe-mvn-test: did not compile <artifactId>`` followed by what the compiler said. It exits
with Maven's status, else 1 where a test failed or errored, else 0.

Run in the container (python3 of the image); the standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator

TEST_SOURCES = "src/test/java/"
SKIPPED_DIRECTORIES = {".git", "target", "node_modules", ".mvn", ".idea"}
# the build's own checks, which the tests do not need (and some of which need the network)
SKIP_CHECKS = (
    "-Denforcer.skip=true",
    "-Dcheckstyle.skip=true",
    "-Dspotless.skip=true",
    "-Dspotless.check.skip=true",
    "-Dspotless.apply.skip=true",
    "-Dprettier.skip=true",
    "-Drat.skip=true",
    "-Dlicense.skip=true",
    "-Djacoco.skip=true",
    "-Danimal.sniffer.skip=true",
    "-Dmaven.javadoc.skip=true",
    "-Dgpg.skip=true",
    "-Dspotbugs.skip=true",
    "-Dpmd.skip=true",
    "-Dcpd.skip=true",
    "-Djapicmp.skip=true",
    "-Drevapi.skip=true",
    "-Dmdep.analyze.skip=true",
    "-Dbasepom.check.skip-all=true",
    "-Dbasepom.check.skip-spotless=true",
    "-Dbasepom.check.skip-prettier=true",
    "-Dmaven.gitcommitid.skip=true",
    "-Dformatter.skip=true",
    "-Dimpsort.skip=true",
    "-Dsort.skip=true",
    "-Dbuildplan.skip=true",
)
TEST_OPTIONS = (
    "-Dmaven.test.failure.ignore=true",
    "-DfailIfNoTests=false",
    "-Dsurefire.failIfNoSpecifiedTests=false",
    "-DtrimStackTrace=true",
)
MAX_TEXT = 4000  # characters of a failure's message and trace kept in a printed report
_COMPILE_FAILED = re.compile(
    r"Failed to execute goal \S*maven-compiler-plugin\S* \((\S+)\) on project ([^:\s]+)"
)
_ID = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:#.*)?$")


def module_of(path: str) -> str | None:
    """The directory (relative, "." the root) of the nearest pom.xml above ``path``."""
    directory = os.path.dirname(path) or "."
    while True:
        if os.path.isfile(os.path.join(directory, "pom.xml")):
            return os.path.normpath(directory)
        if directory in (".", "", "/"):
            return None
        directory = os.path.dirname(directory) or "."


def class_of(path: str) -> tuple[str, str] | None:
    """(module directory, class name) of a test source path, or None."""
    marker = path.find(TEST_SOURCES)
    if marker < 0 or not path.endswith(".java"):
        return None
    module = os.path.normpath(path[:marker] or ".")
    return module, path[marker + len(TEST_SOURCES) : -len(".java")].replace("/", ".")


def find_class(name: str) -> tuple[str, str] | None:
    """(module, class) of a test class named by its fully qualified name."""
    relative = name.replace(".", "/") + ".java"
    for root, directories, _ in os.walk("."):
        directories[:] = [d for d in directories if d not in SKIPPED_DIRECTORIES]
        if root.endswith("src/test/java") and os.path.isfile(os.path.join(root, relative)):
            return class_of(os.path.normpath(os.path.join(root, relative)))
    return None


def selector(class_name: str, method: str | None = None) -> list[str]:
    """Surefire's ``-Dtest`` entries for one class (and its nested classes), or a method of
    it (its parameterized cases and JUnit 4's ``method[0]`` too)."""
    simple = class_name.rsplit(".", 1)[-1]
    if method:
        return [f"{simple}#{method}*"]
    return [simple, f"{simple}$*"]


def plan(targets: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """{module: [-Dtest entries]} (an empty list: all its tests), and the targets not found."""
    modules: dict[str, list[str]] = {}
    unknown: list[str] = []
    for target in targets:
        target = target[2:] if target.startswith("./") else target
        found = class_of(target)
        if found is not None:
            modules.setdefault(found[0], []).extend(selector(found[1]))
            continue
        if os.path.isdir(target) and os.path.isfile(os.path.join(target, "pom.xml")):
            modules[os.path.normpath(target)] = []
            continue
        if os.path.exists(target):
            module = module_of(target)
            if module is not None:
                modules[module] = []
                continue
        if "/" not in target and _ID.match(target):
            class_name, _, test = target.partition("#")
            method = re.split(r"[(\[]", test, maxsplit=1)[0] if test else None
            found = find_class(class_name)
            if found is not None:
                modules.setdefault(found[0], []).extend(selector(found[1], method))
                continue
        unknown.append(target)
    return modules, unknown


def command(modules: dict[str, list[str]], options: list[str]) -> list[str]:
    """The mvn command line of a run of ``modules``."""
    line = ["mvn", "-o", "-B", "-fae", "-Dstyle.color=never", *SKIP_CHECKS, *TEST_OPTIONS, *options]
    whole = [m for m, tests in modules.items() if not tests]
    if modules and not whole:
        tests = sorted({t for entries in modules.values() for t in entries})
        line.append("-Dtest=" + ",".join(tests))
    if modules and set(modules) != {"."}:
        line += ["-pl", ",".join(sorted(modules)), "-am"]
    return [*line, "test"]


def report_directories() -> Iterator[str]:
    for root, directories, _ in os.walk("."):
        directories[:] = [d for d in directories if d not in SKIPPED_DIRECTORIES or d == "target"]
        if os.path.basename(root) == "target":
            directories[:] = [d for d in directories if d == "surefire-reports"]
        if root.endswith("target/surefire-reports"):
            directories[:] = []
            yield root


def clear_reports() -> None:
    for directory in list(report_directories()):
        for name in os.listdir(directory):
            if name.startswith("TEST-") and name.endswith(".xml"):
                os.remove(os.path.join(directory, name))


def condensed(path: str) -> tuple[str | None, str | None, bool]:
    """A report without what no status needs (the JVM's properties, passing tests' output),
    or why it cannot be read; and whether a test of it failed or errored."""
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as exc:
        return None, str(exc), False
    failed = any(True for tag in ("failure", "error") for _ in root.iter(tag))
    for parent in root.iter():
        for child in list(parent):
            if child.tag == "properties" or (
                child.tag in ("system-out", "system-err")
                and parent.tag in ("testcase", "testsuite")
                and not any(c.tag in ("failure", "error") for c in parent)
            ):
                parent.remove(child)
            elif child.text and len(child.text) > MAX_TEXT:
                child.text = child.text[:MAX_TEXT] + "\n[...]"
    return ElementTree.tostring(root, encoding="unicode"), None, failed


def print_reports() -> bool:
    """Print every report; whether a test failed or errored in one."""
    failed = False
    for directory in sorted(report_directories()):
        for name in sorted(os.listdir(directory)):
            if not (name.startswith("TEST-") and name.endswith(".xml")):
                continue
            path = os.path.normpath(os.path.join(directory, name))
            text, problem, failures = condensed(path)
            if text is None:
                print(f"swe-mvn-test: unreadable report {path}: {problem}", flush=True)
                continue
            print(f"swe-mvn-test: report {path}", flush=True)
            print(text, flush=True)
            print("swe-mvn-test: end of report", flush=True)
            failed = failed or failures
    return failed


def run(line: list[str]) -> tuple[int, dict[str, list[str]]]:
    """Run mvn, its output passed through; (exit code, {project: what the compiler said})."""
    print("swe-mvn-test: " + " ".join(line), flush=True)
    process = subprocess.Popen(
        line, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    failed: dict[str, list[str]] = {}
    errors: list[str] = []
    assert process.stdout is not None
    for output in process.stdout:
        sys.stdout.write(output)
        text = output.rstrip("\n")
        if text.startswith("[ERROR] ") and (".java:[" in text or "error:" in text):
            errors.append(text[len("[ERROR] ") :])
        found = _COMPILE_FAILED.search(text)
        if found is not None:
            failed.setdefault(found.group(2), errors[-20:])
            errors = []
    sys.stdout.flush()
    return process.wait(), failed


def main(argv: list[str]) -> int:
    options = [a for a in argv if a.startswith("-")]
    targets = [a for a in argv if not a.startswith("-")]
    modules, unknown = plan(targets)
    for target in unknown:
        print(f"swe-mvn-test: no test found for {target}", flush=True)
    if targets and not modules:
        return 0  # nothing there yet (a test file the patch adds): no test ran
    clear_reports()
    code, failed = run(command(modules, options))
    print(flush=True)  # Maven may leave its last line unended (a colour reset)
    for project, said in sorted(failed.items()):
        print(f"swe-mvn-test: did not compile {project}", flush=True)
        for line in said or ["(no compiler message)"]:
            print(f"swe-mvn-test:   {line}", flush=True)
    failed_tests = print_reports()
    # the tests' outcome as the exit status (test failures do not fail the build itself)
    return code or (1 if failed_tests else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
