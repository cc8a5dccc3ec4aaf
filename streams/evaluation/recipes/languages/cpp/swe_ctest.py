"""swe-ctest: build what compiles, then run CTest, saying what did not compile.

Copied into the env image (``/opt/swe-env/swe-ctest.py``) and run there by a C/C++ recipe's
test command, in the source tree, after a patch may have changed any source. Usage::

    python3 swe-ctest.py [--build-dir DIR] [--report FILE] [--tests-regex RE] [--jobs N]
                         [--timeout S] [FILE ...]

1. ``cmake --build DIR`` with Ninja's ``-k 0``: a target that does not compile (a test the test
   patch changed, before the fix) leaves the others to build; each one that failed is said as
   ``swe-ctest: did not compile <output>`` (then what the compiler said). An executable left
   from an earlier build that this one could not link again is removed (``swe-ctest: removed
   stale <path>``): its tests are then CTest's "Not Run", not the old code's results.
2. ``ctest --test-dir DIR --output-junit FILE``: every test of the build (the FILE arguments,
   the tests a run was asked for, are the same scope: CTest knows no files; ``--tests-regex``
   is CTest's ``-R``), with ``GTEST_OUTPUT`` set so each GoogleTest binary writes its own
   report. A test whose executable did not build is CTest's "Not Run".
3. ``--report FILE``: one XML document, ``<swe-ctest>`` holding CTest's JUnit report and each
   GoogleTest report (``<gtest binary="name">``), for the engine's report parser.

The output is the tools' own (stderr with stdout); the exit status is the worst of both.
Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

MARK = "swe-ctest:"
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)")
# a dry run's link step of an executable (Ninja's description of CMake's link rule)
_LINKING = re.compile(r"Linking (?:C|CXX) executable (\S+)")
GTEST_REPORTS = "gtest-reports"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def build(directory: str, jobs: int) -> int:
    """Build everything that compiles; say each output that did not. The build's status."""
    command = ["cmake", "--build", directory, "--parallel", str(jobs), "--", "-k", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    failed: list[str] = []
    for line in process.stdout:
        sys.stdout.write(line)
        found = _FAILED.match(line)
        if found is not None:
            failed.append(found.group(1))
    status = process.wait()
    sys.stdout.flush()
    for output in failed:
        say(f"{MARK} did not compile {output}")
    return status


def remove_stale_executables(directory: str) -> None:
    """Remove the executables an earlier build left that this one could not link again (what
    a dry run of the build still has to link): CTest would run the old code's tests."""
    command = ["cmake", "--build", directory, "--", "-n", "-k", "0"]
    dry = subprocess.run(command, capture_output=True, text=True, errors="replace")
    for found in _LINKING.finditer(dry.stdout):
        path = os.path.join(directory, found.group(1))
        if os.path.isfile(path):
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
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--junit", default="ctest-junit.xml")
    parser.add_argument("--report", help="write CTest's and GoogleTest's reports here, as one")
    parser.add_argument("--tests-regex", help="CTest's -R: the tests whose names match")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test")
    parser.add_argument("files", nargs="*", help="the tests asked for: every test is run")
    args = parser.parse_args(argv)
    built = build(args.build_dir, args.jobs)
    if built != 0:
        remove_stale_executables(args.build_dir)
    tested = run_tests(args.build_dir, args.junit, args.jobs, args.timeout, args.tests_regex)
    if args.report:
        write_report(args.report, args.junit, args.build_dir)
    return max(built, tested)


if __name__ == "__main__":
    sys.exit(main())
