"""The files a pull request's diff leaves: a unified diff (``git diff`` format) applied, in
memory, to the base tree's text of the files it is asked for.

Why: a recipe is made from the base tree, but a pull request may add a dependency (a crate to
a ``Cargo.toml``) that its tests need; the env layer, which has the network, fetches what the
pull request's own dependency files name too (a Rust recipe does), and the tests then run
offline with it. Only the few dependency files a language asks for are applied, with the
hunks' context checked line by line: a hunk that does not match leaves the file out (its
language then makes the recipe of the base alone).
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable, Mapping

from streams.evaluation.recipes.model import TreeFiles

_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_PATCHED = 16 << 20


class PatchMismatch(ValueError):
    """A hunk's context or removed lines are not the file's."""


def file_sections(diff: str) -> list[tuple[str, str, str]]:
    """Each file's section of ``diff``: (old path, new path, its text)."""
    starts = list(_FILE.finditer(diff))
    sections = []
    for at, match in enumerate(starts):
        end = starts[at + 1].start() if at + 1 < len(starts) else len(diff)
        sections.append((match.group(1), match.group(2), diff[match.start() : end]))
    return sections


def apply_section(old: str | None, section: str) -> str | None:
    """The text a file's section of a diff makes of ``old`` (None: no such file before);
    None when the section deletes the file."""
    lines = section.splitlines()
    if any(line.startswith("+++ /dev/null") for line in lines[:6]):
        return None
    source = (old or "").splitlines(keepends=True)
    result: list[str] = []
    position = 0  # the next line of ``source`` not yet copied
    at = 0
    while at < len(lines):
        header = _HUNK.match(lines[at])
        at += 1
        if header is None:
            continue
        start = int(header.group(1)) - (0 if header.group(2) == "0" else 1)
        if start < position or start > len(source):
            raise PatchMismatch(f"a hunk starts at line {start + 1}, outside the file")
        result.extend(source[position:start])
        position = start
        marker = ""
        while at < len(lines) and not lines[at].startswith(("@@", "diff --git ")):
            line = lines[at]
            at += 1
            if line.startswith("\\"):  # "\ No newline at end of file": an added line ends so
                if marker == "+" and result[-1].endswith("\n"):
                    result[-1] = result[-1][:-1]
                continue
            marker, text = line[:1], line[1:]
            if marker in (" ", "-"):
                if position >= len(source) or source[position].rstrip("\r\n") != text:
                    raise PatchMismatch(f"line {position + 1} is not the hunk's {text!r}")
                if marker == " ":
                    result.append(source[position])
                position += 1
            elif marker == "+":
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
        for old_path, new_path, section in file_sections(diff):
            if not wanted(new_path) and not wanted(old_path):
                continue
            if old_path in texts:
                before = texts[old_path]
            elif tree.has(old_path):
                data = tree.read(old_path, MAX_PATCHED)
                before = data.decode("utf-8", "replace") if data is not None else None
            else:
                before = None
            try:
                after = apply_section(before, section)
            except PatchMismatch:
                broken.update({old_path, new_path})
                continue
            if old_path != new_path:
                texts[old_path] = None
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
