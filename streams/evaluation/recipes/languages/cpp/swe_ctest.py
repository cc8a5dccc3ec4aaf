"""swe-ctest: build what compiles, then run the tests, saying what did not compile.

Copied into the env image (``/opt/swe-env/swe-ctest.py``) and run there by a C/C++ recipe's
test command, in the source tree, after a patch may have changed any source. Usage::

    python3 swe-ctest.py [--system cmake|meson|automake|make] [--target T] [--build-dir DIR]
                         [--report FILE]
                         [--tests-regex RE] [--test NAME ...] [--program DIR/RULE ...]
                         [--jobs N] [--timeout S] [FILE ...]

1. The build, going on past failures (Ninja's ``-k 0``, make's ``-k``): a target that does not
   compile (a test the test patch changed, before the fix) leaves the others to build; each one
   that failed is said as ``swe-ctest: did not compile <output>`` (then what the compiler said).
   An executable left from an earlier build that this one could not link again is removed
   (``swe-ctest: removed stale <path>``): its tests then have no result, not the old code's.
2. The tests, with ``GTEST_OUTPUT`` set so each GoogleTest binary writes its own report:
   ``ctest --test-dir DIR --output-junit FILE`` (``--tests-regex`` is CTest's ``-R``; a test
   whose executable did not build is CTest's "Not Run"); ``meson test --no-rebuild`` (its
   ``testlog.json`` written as a JUnit report; ``--test`` names one; a test whose executable is
   missing is left out); Automake's ``make -k check`` (each test's ``.trs`` as a JUnit case,
   named by its path from the tree's root; a test whose program did not build has none); a
   plain Makefile's ``--target`` run whole (one case, its output the suite's lines), after the
   rule its directory's Makefile has for each test program asked for (``test-fuzzer`` for
   ``tests/fuzzer.c``, or ``--program tests/test-fuzzer``): a case ``tests/test-fuzzer``. For
   the rest, the FILE arguments (the tests a run was asked for) are one scope: all tests run.
   A test whose output is the summary of a Catch2 or doctest binary that ran more than one
   case (CTest or Meson runs it whole) runs again, alone, with its framework's JUnit reporter
   (Catch2's ``-r junit -o``, doctest's ``--reporters=junit --out=``): its cases' results.
3. ``--report FILE``: one XML document, ``<swe-ctest>`` holding that JUnit report, each
   GoogleTest report (``<gtest binary="name">``) and each Catch2 or doctest report
   (``<cases test="name">``), for the engine's report parser.

The output is the tools' own (stderr with stdout); the exit status is the worst of both.
Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable

MARK = "swe-ctest:"
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)")
# make's line for a target that failed (``make: *** [Makefile:12: calc.o] Error 1``)
_MAKE_FAILED = re.compile(r"^make(?:\[\d+\])?: \*\*\* \[(?:[^\]:]+:\d+: )?([^\]]+)\] Error")
# a dry run's link step of an executable (Ninja's description of CMake's and Meson's rules)
_LINKING = re.compile(r"Linking (?:C |CXX )?(?:executable|target) (\S+)")
GTEST_REPORTS = "gtest-reports"
CASE_REPORTS = "case-reports"
# the summary a Catch2 (v2, v3) or doctest binary ends with, and how many cases it ran: one
# CTest or Meson runs whole runs again with its framework's JUnit reporter, so that its cases
# are known one by one (a test CTest discovered is one case already)
_CATCH2_SUMMARY = re.compile(
    r"^(?:All tests passed \(\d+ assertions? in (?P<passed>\d+) test cases?\)"
    r"|test cases:\s+(?P<ran>\d+) \|)",
    re.MULTILINE,
)
_DOCTEST_SUMMARY = re.compile(r"^\[doctest\] test cases:\s+(?P<ran>\d+) \|", re.MULTILINE)
_TERMINAL_COLOUR = re.compile(r"(?:\x1b|\[NON-XML-CHAR-0x1B\])\[[0-9;]*m")
REPORTER_ARGUMENTS = {
    "catch2": ("-r", "junit", "-o", "{report}"),
    "doctest": ("--reporters=junit", "--out={report}"),
}
# a suite that will not run as root says so (the words of failures.py's cause, which this
# script, run in the container with the standard library alone, cannot import): it runs
# again as Debian's ``nobody``, owning the build tree
_ROOT_REFUSAL = re.compile(
    r"(?:cannot|can't|must not|should not|refuses? to) (?:be )?run as root", re.IGNORECASE
)
UNPRIVILEGED = 65534
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# a rule line of make's database (``name: prerequisites``, not ``name := value``)
_MAKE_RULE = re.compile(r"^([^#\t:=%\s][^:=]*?)\s*::?(?:$|[^=])")
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_PROGRAM_SOURCES = (".c", ".cc", ".cpp", ".cxx")
_PROGRAM_RULES = ("test-{}", "test_{}", "{}-test", "{}_test", "check-{}")  # a program's rule
TREE_SEEN = ".swe-ctest-tree"  # in the build directory: the tree's status CMake last saw
MOST_RUN_AGAIN = 50  # failed tests run again alone (more: the suite fails as it is)
OUTPUT_BYTES = 4 << 20  # of each test's output kept in CTest's report


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def tree_status() -> str | None:
    """``git status --porcelain`` of the working tree: empty when it is its commit's; None
    when git cannot say."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return status.stdout if status.returncode == 0 else None


def reconfigure(directory: str) -> None:
    """Configure the CMake build again from its cache, where the tree is not as it was when
    CMake last configured (its commit's, at the image's build; a patch applied, or taken off
    again). Some projects read their sources when CMake configures (``file(STRINGS)`` of each
    test file's ``DEFINE_TEST`` lines, one CTest test per line; a ``file(GLOB)`` of the test
    sources): such a read is no dependency of the build, so a test a patch adds (or a source
    it took away) is not CTest's until CMake configures again. A failed configure leaves the
    build as it was, and the build then says what does not compile."""
    status = tree_status()
    seen = os.path.join(directory, TREE_SEEN)
    last = ""  # the image's build configured its commit's tree
    if os.path.isfile(seen):
        with open(seen, encoding="utf-8", errors="replace") as handle:
            last = handle.read()
    if status is not None and status == last:
        return
    configured = subprocess.run(
        ["cmake", directory], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace",
    )  # fmt: skip
    if configured.returncode != 0:
        sys.stdout.write(configured.stdout[-4000:])
        say(f"{MARK} configuring again failed (exit {configured.returncode}); building as it was")
    elif status is not None and os.path.isdir(directory):
        with open(seen, "w", encoding="utf-8") as handle:
            handle.write(status)


def build(command: list[str], failed: list[str] | None = None) -> int:
    """Build everything that compiles; say each output that did not (added to ``failed``).
    The build's status."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    failed = [] if failed is None else failed
    for line in process.stdout:
        sys.stdout.write(line)
        found = _FAILED.match(line) or _MAKE_FAILED.match(line)
        if found is not None and not _phony(found.group(1)):
            failed.append(found.group(1))
    status = process.wait()
    sys.stdout.flush()
    for output in dict.fromkeys(failed):
        say(f"{MARK} did not compile {output}")
    return status


def _phony(target: str) -> bool:
    """Whether a failed make target is one that only recurses (Automake's ``all-recursive``,
    ``check-am``): what failed under it is said on its own line."""
    return target in ("all", "check") or target.endswith(("-recursive", "-am"))


def remove_stale_executables(directory: str, dry_run: list[str], failed: list[str]) -> None:
    """Remove the executables an earlier build left that this one could not link again: the
    tests would run the old code. They are what a dry run of the build still has to link, and
    what Ninja's graph builds of an output that ``failed`` (``ninja -t query``): a dry run
    stops at the manifest's regeneration where CMake checks its globs on every build
    (``file(GLOB ... CONFIGURE_DEPENDS)``), and names nothing then."""
    dry = subprocess.run(dry_run, capture_output=True, text=True, errors="replace")
    linked = [found.group(1) for found in _LINKING.finditer(dry.stdout)]
    for relative in dict.fromkeys([*linked, *ninja_dependents(directory, failed)]):
        path = os.path.join(directory, relative)
        if (
            os.path.isfile(path)
            and os.access(path, os.X_OK)
            and ".so" not in os.path.basename(path)
            and not path.endswith(".a")
        ):
            os.remove(path)
            say(f"{MARK} removed stale {path}")


def ninja_dependents(directory: str, outputs: list[str], most: int = 5000) -> list[str]:
    """Every output of the Ninja build in ``directory`` built (directly or through others)
    from ``outputs``: an object's library and program, that library's programs; none where
    Ninja does not build the directory (make's)."""
    seen: set[str] = set()
    queue = list(dict.fromkeys(outputs))
    found: list[str] = []
    while queue and len(seen) < most:
        batch, queue = queue[:100], queue[100:]
        seen.update(batch)
        try:
            query = subprocess.run(
                ["ninja", "-C", directory, "-t", "query", *batch],
                capture_output=True, text=True, errors="replace", timeout=120,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return found
        for dependent in _query_outputs(query.stdout):
            if dependent not in seen and dependent not in queue:
                found.append(dependent)
                queue.append(dependent)
    return found


def _query_outputs(text: str) -> list[str]:
    """The ``outputs:`` of each target in ``ninja -t query``'s answer."""
    outputs: list[str] = []
    within = False
    for line in text.splitlines():
        if not line.startswith("    "):  # a target's line, or a section's ("  outputs:")
            within = line.strip() == "outputs:"
        elif within:
            outputs.append(line.strip())
    return outputs


def excluded_test_programs(directory: str) -> list[str]:
    """The Ninja targets of the programs CTest's tests run, by their paths in the build tree:
    a test program ``EXCLUDE_FROM_ALL`` (built by a ``check`` target of the project's) is
    not built by the default target, and an up-to-date one costs nothing to name. CTest
    names no program for a test whose program is not built: then every executable not
    built yet is named."""
    tests = _ctest_shown(directory)
    if not tests:
        return []
    listed = subprocess.run(
        ["ninja", "-C", directory, "-t", "targets", "all"],
        capture_output=True, text=True, errors="replace",
    )  # fmt: skip
    rules = dict(line.rsplit(": ", 1) for line in listed.stdout.splitlines() if ": " in line)
    root = os.path.abspath(directory)
    wanted: list[str] = []
    for test in tests:
        command = test.get("command")
        if command:
            relative = os.path.relpath(os.path.abspath(command[0]), root)
            wanted += [relative] if relative in rules else []
        else:
            wanted += [
                path
                for path, rule in rules.items()
                if "_EXECUTABLE_LINKER__" in rule and not os.path.exists(os.path.join(root, path))
            ]
    return list(dict.fromkeys(wanted))


def _ctest_shown(directory: str) -> list[dict]:
    """CTest's tests, as ``ctest --show-only=json-v1`` says them (none when it cannot)."""
    shown = subprocess.run(
        ["ctest", "--test-dir", directory, "--show-only=json-v1"],
        capture_output=True, text=True, errors="replace",
    )  # fmt: skip
    # a project's pre-test command (``CTEST_CUSTOM_PRE_TEST``) prints before the document
    for start in re.finditer(r"^\{", shown.stdout, re.MULTILINE):
        try:
            document, _ = json.JSONDecoder().raw_decode(shown.stdout, start.start())
        except ValueError:
            continue
        tests = document.get("tests", []) if isinstance(document, dict) else []
        return [test for test in tests if isinstance(test, dict)]
    return []


# a test's command: its arguments, its working directory, the environment it adds
Command = tuple[list[str], str, dict[str, str]]


def ctest_commands(directory: str) -> dict[str, Command]:
    """The command of each CTest test, by its name."""
    commands: dict[str, Command] = {}
    for test in _ctest_shown(directory):
        properties = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        added = properties.get("ENVIRONMENT") or []
        if test.get("command") and test.get("name"):
            commands[test["name"]] = (
                [str(word) for word in test["command"]],
                str(properties.get("WORKING_DIRECTORY") or os.path.abspath(directory)),
                dict(str(entry).split("=", 1) for entry in added if "=" in str(entry)),
            )
    return commands


def meson_commands(directory: str) -> dict[str, Command]:
    """The command of each Meson test, by its name (``meson introspect --tests``)."""
    shown = subprocess.run(
        ["meson", "introspect", directory, "--tests"],
        capture_output=True, text=True, errors="replace",
    )  # fmt: skip
    try:
        tests = json.loads(shown.stdout) if shown.returncode == 0 else []
    except ValueError:
        return {}
    return {
        str(test["name"]): (
            [str(word) for word in test["cmd"]],
            str(test.get("workdir") or os.path.abspath(directory)),
            {str(k): str(v) for k, v in (test.get("env") or {}).items()},
        )
        for test in tests
        if isinstance(test, dict) and test.get("name") and test.get("cmd")
    }


def framework_of(output: str) -> str | None:
    """The framework (``catch2``, ``doctest``) of a binary whose output says it ran more than
    one case (None: another's, or one case)."""
    plain = _TERMINAL_COLOUR.sub("", output)
    doctest = [int(found.group("ran")) for found in _DOCTEST_SUMMARY.finditer(plain)]
    catch2 = [
        int(found.group("passed") or found.group("ran"))
        for found in _CATCH2_SUMMARY.finditer(plain)
    ]
    for framework, counts in (("doctest", doctest), ("catch2", catch2)):
        if counts:
            return framework if max(counts) > 1 else None
    return None


def run_cases_again(
    directory: str,
    outputs: dict[str, str],
    commands: Callable[[str], dict[str, Command]],
    timeout: float,
) -> None:
    """Run each test whose output is a Catch2 or doctest binary's again with its framework's
    JUnit reporter; each report is kept as ``<cases test="name">`` in the build tree."""
    reports = os.path.join(os.path.abspath(directory), CASE_REPORTS)
    shutil.rmtree(reports, ignore_errors=True)  # an earlier run's reports are not this one's
    whole = {name: found for name, text in outputs.items() if (found := framework_of(text))}
    known = commands(directory) if whole else {}
    for index, (name, framework) in enumerate(sorted(whole.items())):
        if name not in known:
            continue
        os.makedirs(reports, exist_ok=True)
        written = os.path.join(reports, f"{index}.junit")
        arguments, cwd, added = known[name]
        again = [*arguments, *(a.format(report=written) for a in REPORTER_ARGUMENTS[framework])]
        say(f"{MARK} {name} runs {framework}'s cases whole, run again for each one's result")
        try:
            subprocess.run(
                again, cwd=cwd, env={**os.environ, **added}, timeout=timeout,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            report = ElementTree.parse(written).getroot()
        except (OSError, subprocess.SubprocessError, ElementTree.ParseError) as error:
            say(f"{MARK} no report of {name}'s cases: {error}")
            continue
        holder = ElementTree.Element("cases", test=name)
        holder.append(report)
        ElementTree.ElementTree(holder).write(os.path.join(reports, f"{index}.xml"))
        os.remove(written)


def _junit_outputs(junit: str) -> dict[str, str]:
    """Each test's output in a CTest JUnit report, of the tests that ran."""
    return {
        case.get("name", ""): case.findtext("system-out") or ""
        for case in _cases(junit)
        if case.get("status") in ("run", "fail")
    }


def _cases(junit: str) -> list[ElementTree.Element]:
    """The test cases of a CTest JUnit report (none when it is unreadable)."""
    try:
        return list(ElementTree.parse(junit).getroot().iter("testcase"))
    except (OSError, ElementTree.ParseError):
        return []


def gtest_directory(directory: str) -> str:
    return os.path.join(os.path.abspath(directory), GTEST_REPORTS)


def run_tests(directory: str, junit: str, jobs: int, timeout: float, regex: str | None) -> int:
    """CTest's run, in parallel; then the tests that failed run again one at a time (two suites
    a project never runs at once may share a port or a file: what fails only beside another
    is not the code's failure), and those that refuse to run as root (when it is root) again
    as an unprivileged user, each run's results taking the places of the one before."""
    reports = gtest_directory(directory)
    shutil.rmtree(reports, ignore_errors=True)  # an earlier run's reports are not this one's
    environment = {**os.environ, "GTEST_OUTPUT": f"xml:{reports}{os.sep}"}
    status = _ctest(directory, os.path.abspath(junit), jobs, timeout, regex, environment)
    failed = failed_tests(junit)
    if jobs > 1 and 0 < len(failed) <= MOST_RUN_AGAIN:
        say(f"{MARK} failed beside other tests, run again alone: {' '.join(failed)}")
        again = _run_again(directory, junit, failed, timeout, environment)
        status = status if again is None else again
    refused = refused_as_root(junit) if os.geteuid() == 0 else []
    if refused:
        say(f"{MARK} refused to run as root, run again as uid {UNPRIVILEGED}: {' '.join(refused)}")
        again = _run_again(directory, junit, refused, timeout, environment, UNPRIVILEGED)
        status = status if again is None else again
    run_cases_again(directory, _junit_outputs(junit), ctest_commands, timeout)
    return status


def _run_again(
    directory: str,
    junit: str,
    names: list[str],
    timeout: float,
    environment: dict[str, str],
    user: int | None = None,
) -> int | None:
    """Run the tests ``names`` again one at a time (as ``user``, who is given the build tree),
    their cases taking the places of the report's; the status of the whole (None: they could
    not be run again)."""
    holder = tempfile.mkdtemp(prefix="swe-ctest-")
    again = os.path.join(holder, "junit.xml")
    pattern = "^(" + "|".join(_cmake_escaped(name) for name in names) + ")$"
    try:
        if user is not None:
            for path in [holder, directory, *_tree_paths(directory)]:
                os.lchown(path, user, user)
            environment = {**environment, "HOME": holder}
        status = _ctest(directory, again, 1, timeout, pattern, environment, user=user)
    except OSError as error:  # a sandbox without the capabilities to change users
        say(f"{MARK} could not run again as uid {user}: {error}")
        shutil.rmtree(holder, ignore_errors=True)
        return None
    others_failed = _replace_cases(junit, again, names)
    shutil.rmtree(holder, ignore_errors=True)
    return max(status, 1 if others_failed else 0)


def _ctest(
    directory: str,
    junit: str,
    jobs: int,
    timeout: float,
    regex: str | None,
    environment: dict[str, str],
    user: int | None = None,
) -> int:
    command = [
        "ctest", "--test-dir", directory, "--output-junit", junit,
        "--parallel", str(jobs), "--timeout", str(timeout), "--no-tests=ignore",
        # a suite's own runner prints a line per case (TAP): kept whole, not CTest's 1 KiB
        "--test-output-size-passed", str(OUTPUT_BYTES), "--test-output-size-failed",
        str(OUTPUT_BYTES),
        *(["-R", regex] if regex else []),
    ]  # fmt: skip
    say(f"{MARK} running {' '.join(command)}")
    if user is None:
        return subprocess.call(command, env=environment, stderr=subprocess.STDOUT)
    return subprocess.call(
        command, env=environment, stderr=subprocess.STDOUT, user=user, group=user,
        extra_groups=[],
    )  # fmt: skip


def _failed_cases(junit: str) -> list[ElementTree.Element]:
    """The failed test cases of a CTest JUnit report (none when it is unreadable)."""
    return [case for case in _cases(junit) if case.get("status") == "fail"]


def failed_tests(junit: str) -> list[str]:
    """The failed tests of a CTest JUnit report."""
    return [case.get("name", "") for case in _failed_cases(junit)]


def refused_as_root(junit: str) -> list[str]:
    """The failed tests of a CTest JUnit report whose output says they will not run as root."""
    return [
        case.get("name", "")
        for case in _failed_cases(junit)
        if _ROOT_REFUSAL.search(case.findtext("system-out") or "")
    ]


def _replace_cases(junit: str, again: str, names: list[str]) -> bool:
    """Put the cases of the second report in the places of the first's ``names``; whether a
    test other than those failed."""
    tree = ElementTree.parse(junit)
    suite = tree.getroot()
    try:
        rerun = {c.get("name"): c for c in ElementTree.parse(again).getroot().iter("testcase")}
    except (OSError, ElementTree.ParseError):
        rerun = {}
    others_failed = False
    for index, case in enumerate(list(suite)):
        if case.tag != "testcase":
            continue
        if case.get("name") in names and case.get("name") in rerun:
            suite.remove(case)
            suite.insert(index, rerun[case.get("name")])
        elif case.get("name") not in names and case.get("status") == "fail":
            others_failed = True
    tree.write(junit, encoding="utf-8", xml_declaration=True)
    return others_failed


def _cmake_escaped(name: str) -> str:
    return "".join("\\" + c if c in "^$.[]()*+?|\\" else c for c in name)


def _tree_paths(directory: str) -> list[str]:
    found = []
    for here, subdirectories, files in os.walk(directory):
        found += [os.path.join(here, name) for name in subdirectories + files]
    return found


def binary_of(report: str) -> str:
    """The binary a GoogleTest report is of: its name without ``.xml`` and the ``_N`` GoogleTest
    adds when the name is taken (two cases of one binary run at once)."""
    stem = os.path.basename(report)[: -len(".xml")]
    base, _, number = stem.rpartition("_")
    return base if base and number.isdigit() else stem


def run_meson_tests(directory: str, junit: str, jobs: int, timeout: float, names: list[str]) -> int:
    """``meson test`` (the build is done), its ``testlog.json`` written as a JUnit report: a
    test whose executable is missing (it did not build) has no result."""
    reports = gtest_directory(directory)
    shutil.rmtree(reports, ignore_errors=True)
    log = os.path.join(directory, "meson-logs", "testlog.json")
    if os.path.exists(log):
        os.remove(log)
    environment = {**os.environ, "GTEST_OUTPUT": f"xml:{reports}{os.sep}"}
    command = [
        "meson", "test", "-C", directory, "--no-rebuild", "--print-errorlogs",
        "--num-processes", str(jobs), "--timeout-multiplier", str(max(1.0, timeout / 30)),
        *names,
    ]  # fmt: skip
    say(f"{MARK} running {' '.join(command)}")
    status = subprocess.call(command, env=environment, stderr=subprocess.STDOUT)
    suite = ElementTree.Element("testsuite", name="meson")
    lines: list[str] = []
    if os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as written:
            lines = written.readlines()
    outputs: dict[str, str] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        program = (entry.get("cmd") or [""])[0]
        if program and os.path.isabs(program) and not os.path.exists(program):
            continue  # its executable did not build: no result
        name, result = str(entry.get("name", "")), str(entry.get("result", ""))
        _junit_case(suite, name, result)
        if result.upper() not in _SKIPPED:
            outputs[name] = str(entry.get("stdout") or "")
    ElementTree.ElementTree(suite).write(junit, encoding="utf-8", xml_declaration=True)
    run_cases_again(directory, outputs, meson_commands, timeout)
    return status


# Meson's and Automake's results, as CTest's JUnit says them
_PASSED = frozenset({"OK", "PASS", "EXPECTEDFAIL", "XFAIL"})
_SKIPPED = frozenset({"SKIP"})


def _junit_case(suite: ElementTree.Element, name: str, result: str) -> None:
    if not name:
        return
    case = ElementTree.SubElement(suite, "testcase", name=name, classname=name)
    if result.upper() in _SKIPPED:
        case.set("status", "disabled")
        ElementTree.SubElement(case, "skipped")
    elif result.upper() in _PASSED:
        case.set("status", "run")
    else:
        case.set("status", "fail")
        ElementTree.SubElement(case, "failure", message=result)


def run_make_check(jobs: int, junit: str) -> int:
    """``make -k check`` in the tree (Automake's parallel harness), each test's ``.trs``
    written as a JUnit report: a test whose program did not build has no ``.trs``."""
    for found in _trs_files("."):
        os.remove(found)
    command = ["make", "-k", "-j", str(jobs), "check"]
    say(f"{MARK} running {' '.join(command)}")
    status = subprocess.call(command, stderr=subprocess.STDOUT)
    suite = ElementTree.Element("testsuite", name="make-check")
    for found in sorted(_trs_files(".")):
        results = []
        with open(found, encoding="utf-8", errors="replace") as trs:
            for line in trs:
                if line.startswith(":test-result:"):
                    results.append(line.split(":", 2)[2].strip().split(" ", 1)[0])
        name = os.path.relpath(found, ".")[: -len(".trs")]
        failing = [r for r in results if r.upper() not in _PASSED | _SKIPPED]
        worst = (
            failing[0] if failing else ("PASS" if any(r in _PASSED for r in results) else "SKIP")
        )
        _junit_case(suite, name, worst if results else "ERROR")
    ElementTree.ElementTree(suite).write(junit, encoding="utf-8", xml_declaration=True)
    return status


def run_make_target(
    target: str, jobs: int, junit: str, programs: list[tuple[str, str]] | None = None
) -> int:
    """A plain Makefile's test target run whole (``make -k``), written as one JUnit case named
    by the target with its output (the cases a suite's output says are read from it); before
    it, each of ``programs`` (``program_targets``: a directory's rule that builds and runs one
    test program), a case named ``<directory>/<rule>``."""
    suite = ElementTree.Element("testsuite", name="make")
    worst = 0
    for directory, rule in [*(programs or []), (".", target)]:  # the test target's output last
        command = ["make", "-k", "-j", str(jobs), *(["-C", directory] if directory != "." else [])]
        status, text = _run_shown([*command, rule])
        worst = max(worst, status)
        _junit_case(
            suite,
            rule if directory == "." else f"{directory}/{rule}",
            "PASS" if status == 0 else "FAIL",
        )
        case = suite.findall("testcase")[-1]
        ElementTree.SubElement(case, "system-out").text = _NOT_XML.sub(
            _marked, text[-OUTPUT_BYTES:]
        )
    ElementTree.ElementTree(suite).write(junit, encoding="utf-8", xml_declaration=True)
    return worst


def _run_shown(command: list[str]) -> tuple[int, str]:
    """``command``'s exit status and output, the output shown as it comes."""
    say(f"{MARK} running {' '.join(command)}")
    output: list[str] = []
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    for line in process.stdout:
        sys.stdout.write(line)
        output.append(line)
    status = process.wait()
    sys.stdout.flush()
    return status, "".join(output)


def make_targets(directory: str) -> set[str]:
    """The targets make's own database has for ``directory``'s Makefile, as shells complete
    them (``make -pnq .DEFAULT``: read, nothing run)."""
    database = subprocess.run(
        ["make", "-C", directory, "-pnq", ".DEFAULT"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env={**os.environ, "LC_ALL": "C"},
    ).stdout
    targets: set[str] = set()
    lines = iter(database.splitlines())
    for line in lines:
        if line.startswith("# Files"):
            break
    for line in lines:
        if line.startswith("# Not a target"):
            next(lines, None)  # an implicit rule's file, not a target
            continue
        rule = _MAKE_RULE.match(line)
        if rule:
            targets.update(rule.group(1).split())
    return targets


def program_targets(files: list[str]) -> list[tuple[str, str]]:
    """``(directory, rule)`` for each test source of ``files`` whose directory's Makefile has
    a rule named after it (``test-fuzzer`` for ``tests/fuzzer.c``): the rule that builds and
    runs that program, which a project's test target may leave out."""
    found: list[tuple[str, str]] = []
    known: dict[str, set[str]] = {}
    for path in files:
        directory = os.path.dirname(path) or "."
        if not path.lower().endswith(_PROGRAM_SOURCES) or not any(
            os.path.isfile(os.path.join(directory, name)) for name in _MAKEFILES
        ):
            continue
        if directory not in known:
            known[directory] = make_targets(directory)
        stem = os.path.splitext(os.path.basename(path))[0]
        rules = [shape.format(stem) for shape in _PROGRAM_RULES]
        rule = next((r for r in rules if r in known[directory]), None)
        if rule is not None and (directory, rule) not in found:
            found.append((directory, rule))
    return found


def _marked(found: re.Match[str]) -> str:
    """A character XML does not allow, as CTest writes one in its report."""
    return f"[NON-XML-CHAR-0x{ord(found.group()):X}]"


def _trs_files(root: str) -> list[str]:
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
        found += [os.path.join(directory, name) for name in files if name.endswith(".trs")]
    return found


def write_report(path: str, junit: str, directory: str) -> None:
    """CTest's JUnit report and every GoogleTest report, in one document."""
    root = ElementTree.Element("swe-ctest")
    if os.path.isfile(junit):
        try:
            root.append(ElementTree.parse(junit).getroot())
        except ElementTree.ParseError as error:
            say(f"{MARK} unreadable CTest report: {error}")
    cases = os.path.join(os.path.abspath(directory), CASE_REPORTS)
    for name in sorted(os.listdir(cases)) if os.path.isdir(cases) else []:
        if name.endswith(".xml"):
            root.append(ElementTree.parse(os.path.join(cases, name)).getroot())
    reports = gtest_directory(directory)
    for name in sorted(os.listdir(reports)) if os.path.isdir(reports) else []:
        if not name.endswith(".xml"):
            continue
        try:
            report = ElementTree.parse(os.path.join(reports, name)).getroot()
        except ElementTree.ParseError:  # a binary killed while writing it
            continue
        holder = ElementTree.SubElement(root, "gtest", binary=binary_of(name))
        holder.append(report)
    ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="swe-ctest", description=__doc__)
    parser.add_argument("--system", choices=("cmake", "meson", "automake", "make"), default="cmake")
    parser.add_argument("--target", default="check", help="a plain Makefile's test target")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--junit", default="ctest-junit.xml")
    parser.add_argument("--report", help="write the tests' and GoogleTest's reports here, as one")
    parser.add_argument("--tests-regex", help="CTest's -R: the tests whose names match")
    parser.add_argument("--test", action="append", default=[], help="a Meson test to run")
    parser.add_argument(
        "--program", action="append", default=[], help="a plain Makefile's DIR/RULE to run too"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test")
    parser.add_argument("files", nargs="*", help="the tests asked for: every test is run")
    args = parser.parse_args(argv)
    directory, jobs = args.build_dir, str(args.jobs)
    if args.system == "make":
        built = build(["make", "-k", "-j", jobs])
        programs = program_targets(args.files) + [
            (os.path.dirname(named) or ".", os.path.basename(named)) for named in args.program
        ]
        tested = run_make_target(args.target, args.jobs, args.junit, list(dict.fromkeys(programs)))
        directory = "."
    elif args.system == "automake":
        built = build(["make", "-k", "-j", jobs, "check", "TESTS="])
        tested = run_make_check(args.jobs, args.junit)
        directory = "."
    else:
        targets: list[str] = []
        if args.system == "meson":
            dry = ["ninja", "-C", directory]
            ninja = [*dry, "-j", jobs, "-k", "0"]
        else:
            reconfigure(directory)
            programs = excluded_test_programs(directory)
            targets = ["all", *programs] if programs else []
            dry = ["cmake", "--build", directory, "--"]
            ninja = ["cmake", "--build", directory, "--parallel", jobs, "--", "-k", "0", *targets]
        failed: list[str] = []
        built = build(ninja, failed)
        if built != 0:
            remove_stale_executables(directory, [*dry, "-n", "-k", "0", *targets], failed)
        if args.system == "meson":
            tested = run_meson_tests(directory, args.junit, args.jobs, args.timeout, args.test)
        else:
            tested = run_tests(directory, args.junit, args.jobs, args.timeout, args.tests_regex)
    if args.report:
        write_report(args.report, args.junit, directory)
    return max(built, tested)


if __name__ == "__main__":
    sys.exit(main())
