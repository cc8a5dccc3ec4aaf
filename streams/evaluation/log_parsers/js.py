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


def record(statuses: dict[str, TestStatus], test: str, status: TestStatus) -> None:
    """Set ``test``'s status, the worse one winning when an id is seen twice."""
    previous = statuses.get(test)
    if previous is None or RANK[status] > RANK[previous]:
        statuses[test] = status


def load_json_object(data: str | bytes, what: str) -> dict[str, object]:
    """A JSON report's top-level object; ValueError when it is not JSON or not an object."""
    try:
        loaded = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"malformed {what} report: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"malformed {what} report: not a JSON object")
    return loaded
