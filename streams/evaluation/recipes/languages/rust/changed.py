"""The tests a Rust test patch adds or changes: ``<package>::<target>::<module path>::<fn>``
of each test function a line the patch adds falls in (its attributes through its closing
brace).

A test patch that does not compile without the fix takes its whole test target out of the
run with the test patch alone (cargo builds a target or none of it); three runs then tell an
old test of the target (it passed at the base: PASS_TO_PASS) from one the patch changed (its
new body never ran before the fix). Rust's tests are items anywhere in a file (a
``#[cfg(test)] mod tests`` at the end of ``src/parser.rs``, nested modules), not found from a
hunk's header as Go's are: each changed ``.rs`` file's new text is made (the base's with the
hunks applied, or the added lines of an added file) and lexed (``inline.test_functions``).

A line the patch only removes names no test: a removed test is no test after the fix, and a
body that only lost lines asked no more of the code than before (its old self passed at the
base). Blank added lines change nothing either.

Where a file's tests run, as cargo lays targets out by convention:

- ``tests/<name>.rs`` and ``tests/<name>/main.rs``: the integration test ``<name>``, whose
  other files ``tests/<name>/a/b.rs`` are its modules ``a::b`` (a directory of ``tests/``
  without a ``main.rs``, ``tests/common/mod.rs``, is a helper other targets include);
- ``src/``: the library ``lib`` (``src/a/b.rs``: module ``a::b``, ``src/a/mod.rs``: ``a``);
  ``src/main.rs``: the binary named after the package, ``src/bin/<n>.rs`` (or
  ``src/bin/<n>/main.rs``) the binary ``<n>``; in a package with no library, the other files
  of ``src/`` are ``main.rs``'s modules;
- anything else (``benches/``, ``examples/``, ``build.rs``, a target a manifest moves):
  nothing.

Nothing raises on a malformed patch: what could be read is returned.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from streams.evaluation.recipes.languages.rust.cargo import (
    CargoFacts,
    CargoPackage,
    cargo_facts_of,
    package_of,
)
from streams.evaluation.recipes.languages.rust.inline import test_functions
from streams.evaluation.recipes.model import TreeFiles

__all__ = ["changed_tests"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# a base file larger than this is taken as empty (its hunks alone are read): generated
# tables, not hand-written tests
_MAX_SOURCE = 8 << 20
_OCTAL = re.compile(r"\\([0-7]{1,3})")
# the escapes git writes in a C-quoted path (``core.quotePath``)
_ESCAPES = dict(zip("ntabfrv", "\n\t\a\b\f\r\v", strict=True)) | {'"': '"', "\\": "\\"}


@dataclass
class _Hunk:
    old_start: int
    old_count: int
    lines: list[str] = field(default_factory=list)  # each opens with " ", "-" or "+"


@dataclass
class _FilePatch:
    old: str | None  # its path at the base; None: the patch adds it
    new: str | None  # its path after; None: the patch deletes it
    hunks: list[_Hunk] = field(default_factory=list)


def changed_tests(tree: TreeFiles, test_patch: str) -> list[str]:
    """The ids of the test functions ``test_patch`` adds or changes in the ``.rs`` files of
    ``tree``'s packages (``tree``: the base the patch applies to), sorted."""
    patches = {p.new: p for p in _file_patches(test_patch) if p.new and p.new.endswith(".rs")}
    if not patches:
        return []  # no manifest read for a patch without Rust
    facts = cargo_facts_of(tree)
    if facts is None:
        return []
    touched = set(patches)
    found: set[str] = set()
    for path, patch in patches.items():
        where = _target(tree, facts, path, touched)
        if where is None:
            continue
        prefix, modules = where
        text, added = _new_side(tree, patch)
        lines = sorted(added)
        for test in test_functions(text):
            first = bisect.bisect_left(lines, test.start)  # the first added line in its range?
            if first < len(lines) and lines[first] <= test.end:
                found.add("::".join((prefix, *modules, *test.modules, test.name)))
    return sorted(found)


# -- where a file's tests run ------------------------------------------------------------------


def _target(
    tree: TreeFiles, facts: CargoFacts, path: str, touched: set[str]
) -> tuple[str, tuple[str, ...]] | None:
    """(``<package>::<target>``, the module path of the file in its target) of a file; None
    when no test target of a package holds it."""
    package = package_of(facts, path)
    if package is None:
        return None
    relative = path if package.directory == "." else path[len(package.directory) + 1 :]
    parts = relative.split("/")
    if parts[0] == "tests" and len(parts) == 2:
        return f"{package.name}::{parts[1].removesuffix('.rs')}", ()
    if parts[0] == "tests" and len(parts) > 2:
        if not _exists(tree, package, f"tests/{parts[1]}/main.rs", touched):
            return None  # a helper directory (tests/common/mod.rs), no target of its own
        return f"{package.name}::{parts[1]}", _modules(parts[2:])
    if parts[0] != "src" or len(parts) < 2:
        return None
    if parts[1] == "bin" and len(parts) > 2:
        name = parts[2].removesuffix(".rs")
        return f"{package.name}::bin/{name}", _modules(parts[3:])
    if parts[1:] == ["main.rs"]:
        return f"{package.name}::bin/{package.name}", ()
    if package.lib_name is not None or parts[1:] == ["lib.rs"]:
        return f"{package.name}::lib", _modules(parts[1:])
    if _exists(tree, package, "src/main.rs", touched):
        return f"{package.name}::bin/{package.name}", _modules(parts[1:])
    return None


def _exists(tree: TreeFiles, package: CargoPackage, relative: str, touched: set[str]) -> bool:
    """Whether the package's file ``relative`` is in the tree or the patch makes it."""
    path = relative if package.directory == "." else f"{package.directory}/{relative}"
    return tree.has(path) or path in touched


def _modules(parts: list[str]) -> tuple[str, ...]:
    """The module path of a file below its target's root: ``a/b.rs`` -> ``a::b``,
    ``a/mod.rs`` -> ``a``, ``main.rs`` or ``lib.rs`` (the root itself) -> nothing."""
    if not parts:
        return ()
    names = [*parts[:-1], parts[-1].removesuffix(".rs")]
    if names[-1] == "mod" or (len(names) == 1 and names[0] in ("main", "lib")):
        names.pop()
    return tuple(names)


# -- the patch --------------------------------------------------------------------------------


def _file_patches(patch: str) -> list[_FilePatch]:
    """The files of a unified diff (git's or a plain one) with their hunks."""
    files: list[_FilePatch] = []
    current: _FilePatch | None = None
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        i += 1
        if line.startswith("diff --git "):
            old, new = _git_header_paths(line[len("diff --git ") :])
            current = _FilePatch(old, new)
            files.append(current)
        elif line.startswith("--- ") and (current is None or current.hunks):
            current = _FilePatch(_side_path(line[4:]), None)  # a plain diff's next file
            files.append(current)
        elif current is None:
            continue
        elif line.startswith("--- "):
            current.old = _side_path(line[4:])
        elif line.startswith("+++ "):
            current.new = _side_path(line[4:])
        elif line.startswith("rename from ") or line.startswith("copy from "):
            current.old = _unquoted(line.split(" ", 2)[2])
        elif line.startswith("rename to ") or line.startswith("copy to "):
            current.new = _unquoted(line.split(" ", 2)[2])
        elif line.startswith("new file mode"):
            current.old = None
        elif line.startswith("deleted file mode"):
            current.new = None
        elif (header := _HUNK.match(line)) is not None:
            hunk, i = _hunk(header, lines, i)
            current.hunks.append(hunk)
    return files


def _hunk(header: re.Match[str], lines: list[str], i: int) -> tuple[_Hunk, int]:
    """The hunk whose header is ``header`` and body starts at ``lines[i]``, and the index
    after it: read by the header's counts, so a body line ``--- x`` is no file's header."""
    old_start, old_count, _, new_count = (int(g) if g is not None else 1 for g in header.groups())
    hunk = _Hunk(old_start, old_count)
    old_left, new_left = old_count, new_count
    while (old_left > 0 or new_left > 0) and i < len(lines):
        line = lines[i]
        if line.startswith("\\"):  # \ No newline at end of file
            i += 1
            continue
        tag = line[:1] or " "  # an empty context line some tools strip of its space
        if tag == " ":
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-":
            old_left -= 1
        elif tag == "+":
            new_left -= 1
        else:
            break  # a hunk cut short
        hunk.lines.append(tag + line[1:])
        i += 1
    return hunk, i


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    """The paths of ``diff --git a/X b/Y`` (the ``---``/``+++`` lines, when there are, say it
    again): a path with spaces is told by both halves naming the same file."""
    if rest.startswith('"'):
        close = _closing_quote(rest)
        return _side_path(rest[: close + 1]), _side_path(rest[close + 1 :].strip())
    middle = len(rest) // 2
    if rest[middle : middle + 3] == " b/" and rest[2:middle] == rest[middle + 3 :]:
        return rest[2:middle], rest[middle + 3 :]
    old, _, new = rest.partition(" b/")
    return _side_path(old), (new or None)


def _closing_quote(text: str) -> int:
    """The index of the ``"`` closing the C-quoted string opening ``text``."""
    j = 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return min(j, len(text) - 1)


def _side_path(text: str) -> str | None:
    """The path of a ``---``/``+++`` line (None: ``/dev/null``), without its ``a/``/``b/``."""
    # a plain diff's timestamp follows a tab; a quoted name holds none (git writes it \t)
    text = _unquoted(text.split("\t", 1)[0].strip())
    if not text or text == "/dev/null":
        return None
    return text[2:] if text[:2] in ("a/", "b/") else text


def _unquoted(text: str) -> str:
    """A path as git C-quotes a name with odd characters: ``"t\\303\\251st.rs"``."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body = text[1:-1]
    out = bytearray()
    j = 0
    while j < len(body):
        octal = _OCTAL.match(body, j)
        if octal is not None:
            out.append(int(octal.group(1), 8) & 0xFF)
            j = octal.end()
        elif body[j] == "\\" and j + 1 < len(body):
            out += _ESCAPES.get(body[j + 1], body[j + 1]).encode()
            j += 2
        else:
            out += body[j].encode()
            j += 1
    return out.decode("utf-8", "replace")


def _new_side(tree: TreeFiles, patch: _FilePatch) -> tuple[str, set[int]]:
    """The file's text after the patch and the (1-based) lines of it the patch adds, blank
    ones aside; a base file the tree cannot give is taken as empty (its hunks' context and
    added lines are still read)."""
    base: list[str] = []
    if patch.old is not None:
        data = tree.read(patch.old, _MAX_SOURCE) if tree.has(patch.old) else None
        base = data.decode("utf-8", "replace").split("\n") if data is not None else []
    out: list[str] = []
    added: set[int] = set()
    cursor = 0  # the index of the next base line not yet copied or removed
    for hunk in patch.hunks:
        # a hunk that removes nothing inserts after its old start line; others begin at it
        start = hunk.old_start if hunk.old_count == 0 else max(hunk.old_start - 1, 0)
        if start > cursor:
            out.extend(base[cursor:start])
            cursor = start
        for line in hunk.lines:
            tag, text = line[0], line[1:]
            if tag != "+":
                cursor += 1
            if tag == "-":
                continue
            out.append(text)
            if tag == "+" and text.strip():
                added.add(len(out))
    out.extend(base[cursor:])
    return "\n".join(out), added
