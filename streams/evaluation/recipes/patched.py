"""Unified diffs (``git diff`` format) read and applied in memory: the files a pull request's
diff leaves, made from the base tree's text of the files asked for.

Why: a recipe is made from the base tree, but a pull request may add a dependency (a crate to
a ``Cargo.toml``) that its tests need; the env layer, which has the network, fetches what the
pull request's own dependency files name too (a Rust recipe does), and the tests then run
offline with it. Only the few dependency files a language asks for are applied, with the
hunks' context checked line by line: a hunk that does not match leaves the file out (its
language then makes the recipe of the base alone). ``file_patches`` is also what a language
reads a test patch's changed lines with.
"""

from __future__ import annotations

import bisect
import io
import re
import tarfile
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from streams.evaluation.recipes.model import TreeFiles

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_OCTAL = re.compile(r"\\([0-7]{1,3})")
# the escapes git writes in a C-quoted path (``core.quotePath``)
_ESCAPES = dict(zip("ntabfrv", "\n\t\a\b\f\r\v", strict=True)) | {'"': '"', "\\": "\\"}
MAX_PATCHED = 16 << 20


@dataclass
class Hunk:
    old_start: int
    old_count: int
    lines: list[str] = field(default_factory=list)  # each opens with " ", "-", "+" or "\\"


@dataclass
class FilePatch:
    old: str | None  # its path at the base; None: the patch adds it
    new: str | None  # its path after; None: the patch deletes it
    hunks: list[Hunk] = field(default_factory=list)


# -- reading a diff --------------------------------------------------------------------------


def file_patches(patch: str) -> list[FilePatch]:
    """The files of a unified diff (git's or a plain one) with their hunks."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        i += 1
        if line.startswith("diff --git "):
            old, new = _git_header_paths(line[len("diff --git ") :])
            current = FilePatch(old, new)
            files.append(current)
        elif line.startswith("--- ") and (current is None or current.hunks):
            current = FilePatch(_side_path(line[4:]), None)  # a plain diff's next file
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


def _hunk(header: re.Match[str], lines: list[str], i: int) -> tuple[Hunk, int]:
    """The hunk whose header is ``header`` and body starts at ``lines[i]``, and the index
    after it: read by the header's counts, so a body line ``--- x`` is no file's header."""
    old_start, old_count, _, new_count = (int(g) if g is not None else 1 for g in header.groups())
    hunk = Hunk(old_start, old_count)
    old_left, new_left = old_count, new_count
    while (old_left > 0 or new_left > 0) and i < len(lines):
        line = lines[i]
        if line.startswith("\\"):  # \ No newline at end of file: the line before ends so
            hunk.lines.append("\\")
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
    if i < len(lines) and lines[i].startswith("\\"):  # the last line's, after the counts
        hunk.lines.append("\\")
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


class PatchMismatch(ValueError):
    """A hunk's context or removed lines are not the file's."""


def apply(old: str | None, patch: FilePatch) -> str | None:
    """The text ``patch`` makes of ``old`` (None: no such file before); None when it deletes
    the file. PatchMismatch when a hunk's context or removed lines are not the file's."""
    if patch.new is None:
        return None
    source = (old or "").splitlines(keepends=True)
    result: list[str] = []
    position = 0  # the next line of ``source`` not yet copied
    for hunk in patch.hunks:
        # a hunk that removes nothing inserts after its old start line; others begin at it
        start = hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1
        if start < position or start > len(source):
            raise PatchMismatch(f"a hunk starts at line {start + 1}, outside the file")
        result.extend(source[position:start])
        position = start
        marker = ""
        for line in hunk.lines:
            tag, text = line[:1], line[1:]
            if tag == "\\":  # "\ No newline at end of file": an added line ends so
                if marker == "+" and result[-1].endswith("\n"):
                    result[-1] = result[-1][:-1]
                continue
            marker = tag
            if tag in (" ", "-"):
                if position >= len(source) or source[position].removesuffix("\n") != text:
                    raise PatchMismatch(f"line {position + 1} is not the hunk's {text!r}")
                if tag == " ":
                    result.append(source[position])
                position += 1
            else:
                result.append(text + "\n")
    result.extend(source[position:])
    return "".join(result)


def patched_files(
    tree: TreeFiles, diffs: tuple[str, ...], wanted: Callable[[str], bool]
) -> dict[str, bytes | None]:
    """The files ``wanted`` picks among those ``diffs`` change (applied in order, each to
    what the ones before made), as the diffs leave them: path -> bytes, or None for a
    deleted file. A file whose hunks do not match is left out."""
    texts: dict[str, str | None] = {}
    broken: set[str] = set()
    for diff in diffs:
        for patch in file_patches(diff):
            old_path, new_path = patch.old, patch.new
            if not any(p is not None and wanted(p) for p in (old_path, new_path)):
                continue
            before: str | None = None
            if old_path is not None and old_path in texts:
                before = texts[old_path]
            elif old_path is not None and tree.has(old_path):
                data = tree.read(old_path, MAX_PATCHED)
                before = data.decode("utf-8", "replace") if data is not None else None
            try:
                after = apply(before, patch)
            except PatchMismatch:
                broken.update(p for p in (old_path, new_path) if p is not None)
                continue
            if old_path is not None and old_path != new_path:
                texts[old_path] = None
            if new_path is not None:
                texts[new_path] = after
    return {
        path: None if text is None else text.encode("utf-8")
        for path, text in texts.items()
        if path not in broken
    }


def overlaid(tree: TreeFiles, files: Mapping[str, bytes | None]) -> TreeFiles:
    """``tree`` with ``files`` written over it (None: removed), as a tree of its own."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(tree.tar_bytes)) as source,
        tarfile.open(fileobj=out, mode="w") as target,
    ):
        for member in source.getmembers():
            if member.name.removeprefix("./") in files:
                continue
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
        for name, content in files.items():
            if content is not None:
                info = tarfile.TarInfo(name)
                info.size = len(content)
                target.addfile(info, io.BytesIO(content))
    return TreeFiles(out.getvalue())


Facts = TypeVar("Facts")


class FactsAfterDiffs(Generic[Facts]):
    """What a language reads of the tree a pull request's diffs leave, when they change one of
    its dependency files: ``read`` of the base tree with the files ``wanted`` picks applied
    over it, when one of them is one ``reread`` asks for (a manifest, not only a config);
    None when they change none. Read once per tree and diffs: a recipe is made per
    toolchain, and again per remembered recipe."""

    def __init__(
        self,
        read: Callable[[TreeFiles], Facts],
        wanted: Callable[[str], bool],
        reread: Callable[[str], bool],
    ) -> None:
        self._read = read
        self._wanted = wanted
        self._reread = reread
        self._known: weakref.WeakKeyDictionary[TreeFiles, tuple[tuple[str, ...], Facts | None]] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, tree: TreeFiles, diffs: tuple[str, ...]) -> Facts | None:
        known = self._known.get(tree)
        if known is not None and known[0] == diffs:
            return known[1]
        changed = patched_files(tree, diffs, self._wanted)
        facts = None
        if any(self._reread(path) for path in changed):
            facts = self._read(overlaid(tree, changed))
        self._known[tree] = (diffs, facts)
        return facts


def new_side(tree: TreeFiles, patch: FilePatch, max_source: int) -> tuple[str, set[int]]:
    """The file's text after the patch and the (1-based) lines of it the patch adds, blank
    ones aside, for the tests a patch changes; a base file the tree cannot give (or larger
    than ``max_source``) is taken as empty (its hunks' context and added lines are still
    read). Unlike ``apply`` it never refuses a hunk."""
    base: list[str] = []
    if patch.old is not None:
        data = tree.read(patch.old, max_source) if tree.has(patch.old) else None
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
            if tag == "\\":  # \ No newline at end of file
                continue
            if tag != "+":
                cursor += 1
            if tag == "-":
                continue
            out.append(text)
            if tag == "+" and text.strip():
                added.add(len(out))
    out.extend(base[cursor:])
    return "\n".join(out), added


Spanned = TypeVar("Spanned")


def touched_by(
    items: Iterable[Spanned], added: Iterable[int], span: Callable[[Spanned], tuple[int, int]]
) -> list[Spanned]:
    """The ``items`` (tests found in a file as a patch leaves it) whose line range (``span``:
    1-based, inclusive) holds a line the patch adds (``added``: ``new_side``'s)."""
    lines = sorted(added)
    found = []
    for item in items:
        start, end = span(item)
        first = bisect.bisect_left(lines, start)  # the first added line at or past its start
        if first < len(lines) and lines[first] <= end:
            found.append(item)
    return found
