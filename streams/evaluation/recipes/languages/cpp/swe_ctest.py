"""swe-ctest: build what compiles, then run CTest, saying what did not compile.

Copied into the env image (``/opt/swe-env/swe-ctest.py``) and run there by a C/C++ recipe's
test command, in the source tree, after a patch may have changed any source. Usage::

    python3 swe-ctest.py [--build-dir DIR] [--junit FILE] [--jobs N] [--timeout S] [FILE ...]

1. ``cmake --build DIR`` with Ninja's ``-k 0``: a target that does not compile (a test the test
   patch changed, before the fix) leaves the others to build; each one that failed is said as
   ``swe-ctest: did not compile <output>`` (then what the compiler said).
2. ``ctest --test-dir DIR --output-junit FILE``: every test of the build (the FILE arguments,
   the tests a run was asked for, are the same scope: CTest knows no files), with
   ``GTEST_OUTPUT`` set so each GoogleTest binary writes its own report beside it. A test whose
   executable did not build is CTest's "Not Run".

The output is the tools' own (stderr with stdout); the exit status is the worst of both.
Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

MARK = "swe-ctest:"
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)")


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


def run_tests(directory: str, junit: str, jobs: int, timeout: float) -> int:
    reports = os.path.join(os.path.abspath(directory), "gtest-reports") + os.sep
    environment = {**os.environ, "GTEST_OUTPUT": f"xml:{reports}"}
    command = [
        "ctest", "--test-dir", directory, "--output-junit", os.path.abspath(junit),
        "--parallel", str(jobs), "--timeout", str(timeout), "--no-tests=ignore",
    ]  # fmt: skip
    say(f"{MARK} running {' '.join(command)}")
    return subprocess.call(command, env=environment, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="swe-ctest", description=__doc__)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--junit", default="ctest-junit.xml")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test")
    parser.add_argument("files", nargs="*", help="the tests asked for: every test is run")
    args = parser.parse_args(argv)
    built = build(args.build_dir, args.jobs)
    tested = run_tests(args.build_dir, args.junit, args.jobs, args.timeout)
    return max(built, tested)


if __name__ == "__main__":
    sys.exit(main())
