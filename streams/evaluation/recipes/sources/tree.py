"""The file tree a recipe reader reads: the file names of a commit and a reader (path ->
bytes, or None), capped and cached, with the problems found while reading.

A file that cannot be read (absent, too large, a reader that raises) is a recorded problem,
never an exception: one bad file must not hide what the others say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

FileReader = Callable[[str], bytes | None]

MAX_FILE_BYTES = 1 << 20


class SourceTree:
    """The file names and a capped, cached, never-raising reader; collects the problems."""

    def __init__(
        self,
        names: Iterable[str],
        read: FileReader,
        why_unreadable: Callable[[str], str | None] | None = None,
    ) -> None:
        cleaned = {name.removeprefix("./") for name in names}
        self.names = sorted(name for name in cleaned if name and not name.endswith("/"))
        self.name_set = set(self.names)
        self._read = read
        # why a name of the tree is never read (a link out of it), said in its problem
        self._why_unreadable = why_unreadable or (lambda path: None)
        self._texts: dict[str, str | None] = {}
        self._sizes: dict[str, int] = {}  # the files found too large, by size
        self.problems: list[str] = []
        # the loaders' parsed documents, by (format, path): a file read by two readers is
        # parsed once
        self.parsed: dict[tuple[str, str], Any] = {}

    def has(self, path: str) -> bool:
        return path in self.name_set

    def problem(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)

    def text(self, path: str, limit: int = MAX_FILE_BYTES) -> str | None:
        """The file's text (UTF-8, undecodable bytes replaced), or None when it is absent,
        unreadable or larger than ``limit`` bytes (then a problem says so)."""
        if path in self._texts:
            return self._texts[path]
        if not self.has(path):
            return None
        if self._sizes.get(path, 0) > limit:
            return None
        try:
            data = self._read(path)
        except Exception as exc:  # a reader that fails is one unreadable file, not a crash
            self.problem(f"{path}: could not be read ({type(exc).__name__})")
            self._texts[path] = None
            return None
        if data is None:
            self.problem(f"{path}: {self._why_unreadable(path) or 'could not be read'}")
            self._texts[path] = None
            return None
        if len(data) > limit:
            # not cached as None: a reader with a larger limit (lockfiles) may still read it
            self._sizes[path] = len(data)
            self.problem(f"{path}: larger than {limit} bytes; not read")
            return None
        text = data.decode("utf-8-sig", errors="replace")
        self._texts[path] = text
        return text
