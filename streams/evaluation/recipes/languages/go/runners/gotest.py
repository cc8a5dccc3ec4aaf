"""``go test -json``: the events of test2json, read into per-test statuses.

One JSON object a line: ``{"Action", "Package", "Test", "Output", ...}``. A test's status is
its last end event: ``pass`` -> passed, ``fail`` -> failed, ``skip`` -> skipped. Subtests are
tests of their own, and so is a test that holds subtests (go reports it, and ``-run`` selects
it). Ids are ``<package import path>/<test name>``, the name as go prints it (``TestTable/
with_space``: go writes a subtest's spaces as ``_``), so an id names its package and ``-run``
pattern without anything else (``check_command``).

What the events say beyond the tests:

* a package that did not build (go 1.24 and later: ``build-fail`` of its import path and a
  package ``fail`` with ``FailedBuild``; before: a package ``fail`` whose output says
  ``[build failed]`` or ``[setup failed]``) has no test in the run: its tests are missing, not
  failed. ``build_failures`` gives each such package and what the compiler said, for the cause
  of a rejection;
* a package that ends (``fail``) while some of its tests are running (go's own ``-timeout``
  panics the test binary, or a test panicked in another goroutine): those tests failed, but
  the parallel ones still paused, which never ran (they have no status);
* a run killed from outside ends without any of that: ``running_when_killed`` is the test
  started last and not ended (a parallel test paused is not running).

Lines that are not JSON events (a compiler's stderr when the run was not ``-json``, a shell's
message) are passed over.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from schemas.tasks import TestStatus

RUNNER = "go-test"
_END: dict[str, TestStatus] = {"pass": "passed", "fail": "failed", "skip": "skipped"}
# a top-level test function's name: Test, Example, Fuzz or Benchmark, then no lower-case letter
_TOP_LEVEL = re.compile(r"(?:Test|Example|Fuzz|Benchmark)(?:[^a-z].*)?")
_BUILD_FAILED = re.compile(r"\[(?:build|setup) failed\]")
_FAILED_PACKAGE = re.compile(r"FAIL\s+(\S+)\s+\[(?:build|setup) failed\]")


def events(output: str) -> Iterator[dict[str, Any]]:
    """The test2json events of ``output``, in order. Before go 1.24 a package that did not
    build has no event: go prints ``FAIL <package> [build failed]`` and the compiler's lines
    (``# <package>`` then its errors) as text; those become the events go 1.24 writes
    (``build-output``, ``build-fail``, the package's ``fail``). Other lines are passed over."""
    compiling: str | None = None  # the package whose compiler output is being read
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("{"):
            compiling = None
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("Action"), str):
                yield event
            continue
        failed = _FAILED_PACKAGE.fullmatch(text)
        if failed:
            compiling = None
            package = failed.group(1)
            yield {"Action": "build-fail", "ImportPath": package}
            yield {"Action": "fail", "Package": package, "FailedBuild": package}
        elif text.startswith("# "):
            compiling = text[2:].split(" ")[0]
            yield {"Action": "build-output", "ImportPath": compiling, "Output": line + "\n"}
        elif compiling is not None and text:
            yield {"Action": "build-output", "ImportPath": compiling, "Output": line + "\n"}


def go_test_id(package: str, test: str) -> str:
    return f"{package}/{test}"


@dataclass
class _Run:
    statuses: dict[str, TestStatus] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)  # id -> package, in start order
    paused: set[str] = field(default_factory=set)
    build_output: dict[str, list[str]] = field(default_factory=dict)  # by build import path
    failed_builds: dict[str, str] = field(default_factory=dict)  # package -> its build's path
    package_output: dict[str, list[str]] = field(default_factory=dict)


def _read(output: str) -> _Run:
    run = _Run()
    for event in events(output):
        action, package = event["Action"], event.get("Package")
        if action in ("build-output", "build-fail"):
            path = str(event.get("ImportPath") or "")
            lines = run.build_output.setdefault(path, [])
            if action == "build-output":
                lines.append(str(event.get("Output") or ""))
            continue
        if not isinstance(package, str):
            continue
        test = event.get("Test")
        if not isinstance(test, str) or not test:
            _package_event(run, event, package)
            continue
        key = go_test_id(package, test)
        if action == "run":
            run.running.pop(key, None)
            run.running[key] = package
        elif action == "pause":
            run.paused.add(key)
        elif action == "cont":
            run.paused.discard(key)
        elif action in _END:
            run.statuses[key] = _END[action]
            run.running.pop(key, None)
            run.paused.discard(key)
    return run


def _package_event(run: _Run, event: dict[str, Any], package: str) -> None:
    action = event["Action"]
    if action == "output":
        run.package_output.setdefault(package, []).append(str(event.get("Output") or ""))
        return
    if action != "fail":
        return
    failed_build = event.get("FailedBuild")
    said = "".join(run.package_output.get(package, []))
    if isinstance(failed_build, str) and failed_build:
        run.failed_builds[package] = failed_build
    elif _BUILD_FAILED.search(said):
        run.failed_builds[package] = package
    # the package's binary ended with tests still in it (go's -timeout, or a panic elsewhere):
    # the ones running failed; a parallel test still paused at t.Parallel() never ran its body,
    # and has no status (a panic in one test says nothing of the tests waiting beside it)
    for key in [k for k, p in run.running.items() if p == package]:
        if key not in run.paused:
            run.statuses[key] = "failed"
        del run.running[key]
        run.paused.discard(key)


def parse_go_test_json(output: str) -> dict[str, TestStatus]:
    """Per-test statuses of a ``go test -json`` run."""
    return _read(output).statuses


def running_when_killed(output: str) -> str | None:
    """The test a killed run was in: the last one started, not ended, and not paused."""
    run = _read(output)
    live = [key for key in run.running if key not in run.paused]
    return live[-1] if live else None


def build_failures(output: str) -> dict[str, str]:
    """The packages of the run that did not build, each with what the build said (its
    ``build-output``; before go 1.24, the package's own output)."""
    run = _read(output)
    found = {}
    for package, build in run.failed_builds.items():
        said = run.build_output.get(build) or run.package_output.get(package, [])
        found[package] = "".join(said).strip()
    return found


def split_id(test_id: str) -> tuple[str, str]:
    """(package import path, test name) of an id: the test begins at the first path segment
    after the first that is a top-level test function's name (``TestX``, ``ExampleX``,
    ``FuzzX``, ``BenchmarkX``); ValueError when none is."""
    parts = test_id.split("/")
    for index in range(1, len(parts)):
        if _TOP_LEVEL.fullmatch(parts[index]):
            return "/".join(parts[:index]), "/".join(parts[index:])
    raise ValueError(f"not a Go test id (<package>/<TestName>[/<subtest>]): {test_id!r}")


def run_pattern(test: str) -> str:
    """The ``-run`` pattern selecting exactly ``test`` (a name with its subtests' levels): each
    level anchored and its punctuation escaped, as go's regexp reads it."""
    return "/".join(f"^{_literal(level)}$" for level in test.split("/"))


def _literal(text: str) -> str:
    return "".join(f"\\{c}" if not c.isalnum() and c != "_" and c.isascii() else c for c in text)


def check_command(test_id: str, options: Iterable[str] = ()) -> str:
    """The command that runs the one test of ``test_id`` with the JSON events this module
    reads (``-count=1``: never a cached result)."""
    package, test = split_id(test_id)
    words = ["go", "test", *options, "-count=1", "-json", "-run", run_pattern(test), package]
    return " ".join(shlex.quote(word) for word in words)


def packages_of(files: Iterable[str]) -> list[str]:
    """The package directories (``./dir``, ``.`` for the root) of the PR's test files and
    test data (a file under ``testdata/`` belongs to the package above it)."""
    found: dict[str, None] = {}
    for path in files:
        parts = path.split("/")
        if "testdata" in parts[:-1]:
            parts = parts[: parts.index("testdata")]
        elif path.endswith("_test.go"):
            parts = parts[:-1]
        else:
            continue
        found["./" + "/".join(parts) if parts else "."] = None
    return list(found)
