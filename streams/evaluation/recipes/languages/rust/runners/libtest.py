"""``cargo test`` output: libtest's lines per test binary, read into per-test statuses.

cargo runs one binary per test target and says which before it (on stderr, read here with
stdout): ``Running unittests src/lib.rs (target/debug/deps/foo-1a2b)`` for a library's or a
binary's unit tests, ``Running tests/parse.rs (target/debug/deps/parse-3c4d)`` for an
integration test, ``Doc-tests foo`` for the doc tests of library ``foo`` (cargo before 1.59
printed the binary alone: ``Running target/debug/deps/parse-3c4d``). Each binary's libtest
prints ``running N tests`` then a line per test: ``test path::to::name ... ok`` (``FAILED``,
``ignored``, ``ignored, <reason>``, ``bench: ...``).

A test id is ``<package>::<target>::<path::to::test>``: the package as cargo names it, the
target ``lib`` (the library's unit tests, ``--lib``), ``bin/<name>`` (a binary's, ``--bin``),
the name of an integration test (``--test``) or ``doc`` (doc tests, named as rustdoc names
them: ``src/lib.rs - parse (line 12)``; their names move with their line, so they are never
FAIL_TO_PASS). Which package and target a binary is, swe-cargo-test says first
(``swe-cargo-test: executable <binary> <package> <kind> <target>``); without it (a plain
``cargo test``) the binary's name stands for both.

A target that did not compile has no test in the run (``swe-cargo-test: did not compile
<package> <kind> <target>``, or cargo's own ``could not compile `pkg` (test "t")``):
``build_failures`` says what the compiler said, for the cause of a rejection. A binary that
crashed (a test aborted the process) leaves its unfinished tests without status; a run
killed from outside, the test started last (``running_when_killed``: one test thread).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from schemas.tasks import TestStatus

RUNNER = "cargo-test"
MARK = "swe-cargo-test:"
DOC = "doc"
_RUNNING = re.compile(r"^\s*Running\s+(?:unittests\s+)?(?:(\S+)\s+)?\((\S+)\)\s*$")
_RUNNING_OLD = re.compile(r"^\s*Running\s+(?:unittests\s+)?(target/\S+|/\S+)\s*$")
_DOC_TESTS = re.compile(r"^\s*Doc-tests\s+(\S+)\s*$")
_TEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?|bench:.*)$")
_STARTED = re.compile(r"^test (.+?) \.\.\. ?$")
_COULD_NOT = re.compile(r"^error: could not compile `([^`]+)`(?: \((\w+)(?: \"([^\"]+)\")?\))?")
_STATUS: dict[str, TestStatus] = {"ok": "passed", "FAILED": "failed"}
_PACKAGE = re.compile(r"[A-Za-z0-9_-]+")  # a package's name, as cargo accepts one
_TARGET = re.compile(r"lib|doc|(?:bin|example|bench)/[A-Za-z0-9_-]+|[A-Za-z0-9_-]+")


@dataclass
class _Binary:
    package: str
    target: str  # lib, bin/<name>, <test name>, doc

    def id(self, test: str) -> str:
        return f"{self.package}::{self.target}::{test}"


def target_name(kind: str, name: str) -> str:
    """The target part of an id: ``lib``, ``bin/<name>``, the test's name, ``<kind>/<name>``."""
    if kind in ("lib", "rlib", "proc-macro", "dylib", "cdylib", "staticlib"):
        return "lib"
    if kind == "test":
        return name
    return f"{kind}/{name}"


def _stem(binary: str) -> str:
    """``target/debug/deps/parse-3c4d`` -> ``parse``."""
    base = binary.rsplit("/", 1)[-1]
    return base.rsplit("-", 1)[0] if "-" in base else base


@dataclass
class _Run:
    statuses: dict[str, TestStatus] = field(default_factory=dict)
    started: str | None = None  # a test started and not ended (one test thread)
    failed_builds: dict[str, str] = field(default_factory=dict)
    # cargo's own ``could not compile`` lines: read only where swe-cargo-test said nothing
    could_not: dict[str, str] = field(default_factory=dict)


def _read(output: str) -> _Run:
    run = _Run()
    executables: dict[str, _Binary] = {}
    libraries: dict[str, str] = {}
    current: _Binary | None = None
    compiling: str | None = None  # the target whose compiler output is being read
    for raw in output.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(MARK):
            compiling = _marked(line[len(MARK) :].split(), executables, libraries, run)
            continue
        if compiling is not None:
            if not (_RUNNING.match(line) or _RUNNING_OLD.match(line) or _DOC_TESTS.match(line)):
                run.failed_builds[compiling] += line + "\n"
                continue
            compiling = None
        header = _RUNNING.match(line) or _RUNNING_OLD.match(line)
        if header:
            binary = header.group(header.lastindex or 1)
            # by its file's name (hashed, unique): cargo prints the path relative to the
            # workspace or whole, as the target directory lies
            current = executables.get(binary.rsplit("/", 1)[-1]) or _guess(header, binary)
            continue
        doc = _DOC_TESTS.match(line)
        if doc:
            current = _Binary(libraries.get(doc.group(1), doc.group(1)), DOC)
            continue
        could_not = _COULD_NOT.match(line)
        if could_not:
            package, kind, name = could_not.groups()
            # cargo before 1.67 names no target: the package stands for it
            key = f"{package}::{target_name(kind, name or package)}" if kind else package
            run.could_not.setdefault(key, line)
            continue
        if current is None:
            continue
        test = _TEST.match(line)
        if test:
            name, word = test.groups()
            status: TestStatus = _STATUS.get(
                word, "passed" if word.startswith("bench") else "skipped"
            )
            run.statuses[current.id(name)] = status
            run.started = None
            continue
        started = _STARTED.match(line)
        if started:
            run.started = current.id(started.group(1))
    return run


def _marked(
    words: list[str],
    executables: dict[str, _Binary],
    libraries: dict[str, str],
    run: _Run,
) -> str | None:
    """Reads one swe-cargo-test line; the target whose compiler output follows, if any."""
    if words[:1] == ["executable"] and len(words) == 5:
        _, binary, package, kind, name = words
        executables[binary.rsplit("/", 1)[-1]] = _Binary(package, target_name(kind, name))
    elif words[:1] == ["library"] and len(words) == 3:
        libraries[words[1]] = words[2]
    elif words[:3] == ["did", "not", "compile"] and len(words) == 6:
        key = f"{words[3]}::{target_name(words[4], words[5])}"
        run.failed_builds[key] = ""
        return key
    return None


def _guess(header: re.Match[str], binary: str) -> _Binary:
    """A binary swe-cargo-test did not name: its file's stem stands for package and target
    (``unittests`` of a library: ``lib``)."""
    stem = _stem(binary)
    source = header.group(1) if header.re is _RUNNING else None
    if source is not None and source.startswith("src/"):
        return _Binary(stem, "lib" if source.endswith("lib.rs") else f"bin/{stem}")
    if "unittests" in header.group(0):
        return _Binary(stem, "lib")
    return _Binary(stem, stem)


def parse_cargo_test(output: str) -> dict[str, TestStatus]:
    """Per-test statuses of a ``cargo test`` (or swe-cargo-test) output."""
    return _read(output).statuses


def running_when_killed(output: str) -> str | None:
    """The test a killed run was in (printed ``test x ... `` and no status after it)."""
    return _read(output).started


def build_failures(output: str) -> dict[str, str]:
    """``<package>::<target>`` -> what the compiler said, for each target that did not build."""
    run = _read(output)
    failed = run.failed_builds or run.could_not
    return {k: v.strip() or "did not compile" for k, v in failed.items()}


def split_id(test_id: str) -> tuple[str, str, str]:
    """(package, target, test path) of an id; ValueError when it is not one."""
    parts = test_id.split("::", 2)
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not a cargo test id: {test_id!r}")
    return parts[0], parts[1], parts[2]


def selection(target: str) -> list[str]:
    """cargo's options that run one target of an id."""
    if target == "lib":
        return ["--lib"]
    if target == DOC:
        return ["--doc"]
    if "/" in target:
        kind, name = target.split("/", 1)
        return [f"--{kind}", name]
    return ["--test", target]


def check_arguments(test_id: str) -> str:
    """The arguments after a test command that run the one test ``test_id``."""
    package, target, test = split_id(test_id)
    words = ["-p", package, *selection(target), "--", "--exact", test]
    return " ".join(shlex.quote(w) for w in words)


def package_of_id(test_id: str) -> str | None:
    """The package a cargo test id names; None when ``test_id`` is none (another language's:
    ``tests/test_x.py::test_a`` names a file, ``pkg.Class::method`` a class)."""
    try:
        package, target, _ = split_id(test_id)
    except ValueError:
        return None
    if _PACKAGE.fullmatch(package) and _TARGET.fullmatch(target):
        return package
    return None
