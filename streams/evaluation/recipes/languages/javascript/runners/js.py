"""What the JavaScript/TypeScript runners' parsers share: the test id, paths, statuses.

A JS test id is ``<file path relative to the repository root> > <name>``, where the name is
the test's title path (its describe blocks / suites, then its title) joined by `` > ``:
``test/math.test.js > math > nested > multiplies``. Where a runner's output names no file
(node's built-in reporters, ava, mocha's spec reporter) the id is the name alone; where it
names no title path but one string (mocha's ``fullTitle``, suites and title joined by a
space) that string is the name. A file that failed to load (no test ran) is the file path
alone, ``error``.

Report paths are absolute in jest's, vitest's and mocha's reports: a path under the
repository root (``REPO_ROOT``, the sandbox's ``/testbed``, or the ``root`` a parser is given)
is made relative to it; any other path is kept as written.
"""

from __future__ import annotations

import json
import posixpath
import re

from schemas.tasks import TestStatus

SEPARATOR = " > "
REPO_ROOT = "/testbed"

RANK: dict[TestStatus, int] = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}


def test_id(file: str | None, names: list[str]) -> str:
    """``file > a > b``; the names alone without a file, the file alone without names."""
    parts = ([file] if file else []) + [name for name in names if name]
    return SEPARATOR.join(parts)


def relative_path(path: str, root: str = REPO_ROOT) -> str:
    """``path`` relative to ``root`` when it lies under it (``file://`` URLs too)."""
    path = path.removeprefix("file://").replace("\\", "/")
    root = root.rstrip("/") or "/"
    if path.startswith(root + "/"):
        return posixpath.normpath(path[len(root) + 1 :])
    return path.removeprefix("./")


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def printable(test: str) -> str:
    """``test`` with each lone UTF-16 surrogate (a JS title may hold one: tests of string
    handling titled ``'\\udead'``, read from a JSON report) written as its ``\\uXXXX``
    escape: an id must encode as UTF-8 to be stored."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", test)


def record(statuses: dict[str, TestStatus], test: str, status: TestStatus) -> None:
    """Set ``test``'s status, the worse one winning when an id is seen twice."""
    test = printable(test)
    previous = statuses.get(test)
    if previous is None or RANK[status] > RANK[previous]:
        statuses[test] = status


_JS_FILE = re.compile(r"\.[cm]?[jt]sx?$")


def names_file(test: str) -> bool:
    """Whether a JS test id opens with its file's path."""
    return bool(_JS_FILE.search(test.split(SEPARATOR, 1)[0]))


def _titles(path: str) -> list[str]:
    """The names a runner may give ``path`` in its ids (ava's file titles): its path, then
    without its leading directories, each without its extension or extensions."""
    parts = path.split("/")
    titles = []
    for i in range(len(parts)):
        *dirs, name = parts[i:]
        for stem in (re.sub(r"\.[^.]+$", "", name), name.split(".")[0]):
            titles.append(SEPARATOR.join([*dirs, stem]))
    return titles


def with_files(statuses: dict[str, TestStatus], files: list[str]) -> dict[str, TestStatus]:
    """``statuses`` with the file of the run's ``files`` put at the head of each id that
    names none (ava, mocha's console): the one file of a run of one; else the file whose
    title (``_titles``) the id opens with, which it then replaces. Ids it cannot place are
    kept as they are."""
    if not files:
        return statuses
    titles = sorted(((t, f) for f in files for t in _titles(f)), key=lambda tf: -len(tf[0]))
    out: dict[str, TestStatus] = {}
    for test, status in statuses.items():
        placed = test
        if not names_file(test):
            if len(files) == 1:
                placed = test_id(files[0], [test])
            else:
                for title, file in titles:
                    if test.startswith(title + SEPARATOR):
                        placed = test_id(file, [test[len(title) + len(SEPARATOR) :]])
                        break
        record(out, placed, status)
    return out


def load_json_object(data: str | bytes, what: str) -> dict[str, object]:
    """A JSON report's top-level object; ValueError when it is not JSON or not an object."""
    try:
        loaded = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"malformed {what} report: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"malformed {what} report: not a JSON object")
    return loaded
