"""swe-ctest: build what compiles, then run the tests, saying what did not compile.

Copied into the env image (``/opt/swe-env/swe-ctest.py``) and run there by a C/C++ recipe's
test command, in the source tree, after a patch may have changed any source. Usage::

    python3 swe-ctest.py [--system cmake|meson|automake] [--build-dir DIR] [--report FILE]
                         [--tests-regex RE] [--test NAME ...] [--jobs N] [--timeout S] [FILE ...]

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
   named by its path from the tree's root; a test whose program did not build has none). The
   FILE arguments, the tests a run was asked for, are the same scope: every test is run.
3. ``--report FILE``: one XML document, ``<swe-ctest>`` holding that JUnit report and each
   GoogleTest report (``<gtest binary="name">``), for the engine's report parser.

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
import xml.etree.ElementTree as ElementTree

MARK = "swe-ctest:"
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)")
# make's line for a target that failed (``make: *** [Makefile:12: calc.o] Error 1``)
_MAKE_FAILED = re.compile(r"^make(?:\[\d+\])?: \*\*\* \[(?:[^\]:]+:\d+: )?([^\]]+)\] Error")
# a dry run's link step of an executable (Ninja's description of CMake's and Meson's rules)
_LINKING = re.compile(r"Linking (?:C |CXX )?(?:executable|target) (\S+)")
GTEST_REPORTS = "gtest-reports"
OUTPUT_BYTES = 4 << 20  # of each test's output kept in CTest's report


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def build(command: list[str]) -> int:
    """Build everything that compiles; say each output that did not. The build's status."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    failed: list[str] = []
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


def remove_stale_executables(directory: str, dry_run: list[str]) -> None:
    """Remove the executables an earlier build left that this one could not link again (what
    a dry run of the build still has to link): the tests would run the old code."""
    dry = subprocess.run(dry_run, capture_output=True, text=True, errors="replace")
    for found in _LINKING.finditer(dry.stdout):
        path = os.path.join(directory, found.group(1))
        if os.path.isfile(path) and ".so" not in os.path.basename(path) and not path.endswith(".a"):
            os.remove(path)
            say(f"{MARK} removed stale {path}")


def gtest_directory(directory: str) -> str:
    return os.path.join(os.path.abspath(directory), GTEST_REPORTS)


def run_tests(directory: str, junit: str, jobs: int, timeout: float, regex: str | None) -> int:
    reports = gtest_directory(directory)
    shutil.rmtree(reports, ignore_errors=True)  # an earlier run's reports are not this one's
    environment = {**os.environ, "GTEST_OUTPUT": f"xml:{reports}{os.sep}"}
    command = [
        "ctest", "--test-dir", directory, "--output-junit", os.path.abspath(junit),
        "--parallel", str(jobs), "--timeout", str(timeout), "--no-tests=ignore",
        # a suite's own runner prints a line per case (TAP): kept whole, not CTest's 1 KiB
        "--test-output-size-passed", str(OUTPUT_BYTES), "--test-output-size-failed",
        str(OUTPUT_BYTES),
        *(["-R", regex] if regex else []),
    ]  # fmt: skip
    say(f"{MARK} running {' '.join(command)}")
    return subprocess.call(command, env=environment, stderr=subprocess.STDOUT)


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
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        program = (entry.get("cmd") or [""])[0]
        if program and os.path.isabs(program) and not os.path.exists(program):
            continue  # its executable did not build: no result
        _junit_case(suite, str(entry.get("name", "")), str(entry.get("result", "")))
    ElementTree.ElementTree(suite).write(junit, encoding="utf-8", xml_declaration=True)
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
    parser.add_argument("--system", choices=("cmake", "meson", "automake"), default="cmake")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--junit", default="ctest-junit.xml")
    parser.add_argument("--report", help="write the tests' and GoogleTest's reports here, as one")
    parser.add_argument("--tests-regex", help="CTest's -R: the tests whose names match")
    parser.add_argument("--test", action="append", default=[], help="a Meson test to run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test")
    parser.add_argument("files", nargs="*", help="the tests asked for: every test is run")
    args = parser.parse_args(argv)
    directory, jobs = args.build_dir, str(args.jobs)
    if args.system == "automake":
        built = build(["make", "-k", "-j", jobs, "check", "TESTS="])
        tested = run_make_check(args.jobs, args.junit)
        directory = "."
    else:
        if args.system == "meson":
            ninja = ["ninja", "-C", directory, "-j", jobs, "-k", "0"]
        else:
            ninja = ["cmake", "--build", directory, "--parallel", jobs, "--", "-k", "0"]
        built = build(ninja)
        if built != 0:
            dry = ninja[:1] + (["-C", directory] if args.system == "meson" else ninja[1:3])
            remove_stale_executables(directory, [*dry, *(["--"] if args.system == "cmake" else []),
                                                 "-n", "-k", "0"])  # fmt: skip
        if args.system == "meson":
            tested = run_meson_tests(directory, args.junit, args.jobs, args.timeout, args.test)
        else:
            tested = run_tests(directory, args.junit, args.jobs, args.timeout, args.tests_regex)
    if args.report:
        write_report(args.report, args.junit, directory)
    return max(built, tested)


if __name__ == "__main__":
    sys.exit(main())
