"""What a recipe is, as pure data: how to install and test one repository at one commit
(``InstallRecipe``), who made it (``RecipeOrigin``), and the files of the tree it was read from
(``TreeFiles``). No Docker here: the recipe readers (``recipes/``, ``recipes/languages/``) and
the engine that builds images of recipes (``environments``) both import it.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import tarfile
from dataclasses import dataclass, field
from typing import Any

# where the images put things: the recipes' commands name them
VENV = "/opt/venv"  # the Python venv of the tools layer
TESTBED = "/testbed"  # the repository in the instance image
ENV_DIR = "/opt/swe-env"  # where the env layer gets the recipe's dependency files


@dataclass(frozen=True)
class RecipeOrigin:
    """Who made a recipe, for the recipe memory: ``source`` (heuristic, override, agent, or a
    remembered entry's), the fields it sets beyond inference (``change``, override-shaped),
    and whether it came from the memory (``remembered``) written by another pipeline
    version (``trusted`` False: verified before use)."""

    source: str = "heuristic"
    change: dict[str, Any] = field(default_factory=dict)
    remembered: bool = False
    trusted: bool = True


@dataclass(frozen=True)
class InstallRecipe:
    """How to install and test one repository at one commit (``streams.evaluation.recipes``
    infers it; a per-repository override may set any part)."""

    language: str
    dependency_files: dict[str, bytes] = field(default_factory=dict)  # copied into the env
    env_commands: tuple[str, ...] = ()  # run in the env image (dependencies), one RUN each
    install_commands: tuple[str, ...] = ()  # run in the instance image, in /testbed
    test_command: str = ""  # the test files are appended
    # whose log parser reads the test command's output (``streams.evaluation.log_parsers``);
    # every language's inference names it
    test_runner: str = ""
    # the Python (major.minor) of a recipe of the Python toolchain; None: whatever the base
    # image has (another toolchain's version is named in ``sources``, as ``node:20``)
    python: str | None = None
    base_image: str | None = None  # None: the builder's default
    system_packages: tuple[str, ...] = ()  # Debian packages of the env image
    pre_test_commands: tuple[str, ...] = ()  # build steps after the install (instance image)
    # run again in the sandbox after a patch that changes compiled sources (C extensions)
    rebuild_commands: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()  # variables of both images and of the tests
    sources: tuple[str, ...] = ()  # what it was inferred from (for people reading a task)
    notes: tuple[str, ...] = ()  # what inference saw but could not do (missing submodules, ...)
    origin: RecipeOrigin = field(default_factory=RecipeOrigin, compare=False)

    def key(self, base_image_id: str) -> str:
        """What decides the env image: base image, system packages, dependency files,
        variables and commands."""
        digest = hashlib.sha256()
        digest.update(base_image_id.encode())
        digest.update(self.language.encode())
        for path in sorted(self.dependency_files):
            digest.update(path.encode() + b"\0" + self.dependency_files[path] + b"\0")
        digest.update(json.dumps(self.env_commands).encode())
        if self.system_packages or self.environment:
            digest.update(json.dumps([self.system_packages, self.environment]).encode())
        return digest.hexdigest()[:16]

    @property
    def variables(self) -> dict[str, str]:
        return dict(self.environment)


class TreeFiles:
    """The files of a ``git archive`` tar: names and (small) contents. A symbolic link is
    followed when it stays in the tree (``setup.cfg -> config/setup.cfg``) and never read when
    it leads out of it (an absolute target, or ``..`` past the root): the content of whatever
    it names (a host file, were the tree checked out) is no file of the repository."""

    def __init__(self, tar_bytes: bytes):
        self.tar_bytes = tar_bytes
        self._members: dict[str, tarfile.TarInfo] = {}
        links: dict[str, str] = {}
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            for member in tar.getmembers():
                name = member.name.removeprefix("./")
                if member.isfile():
                    self._members[name] = member
                elif member.issym():
                    links[name] = member.linkname
        self._links: dict[str, str] = {}  # a link in the tree -> the file it names
        self.escaping: dict[str, str] = {}  # a link out of the tree -> where it points
        self._container_tar: bytes | None = None
        # a submodule's path -> why its files are not in the tree (not fetched, unreachable)
        self.missing_submodules: dict[str, str] = {}
        for name, target in links.items():
            resolved = _resolve_link(name, links, set(self._members))
            if resolved is None:
                self.escaping[name] = target
            elif resolved:
                self._links[name] = resolved

    @property
    def names(self) -> list[str]:
        return sorted([*self._members, *self._links, *self.escaping])

    def has(self, path: str) -> bool:
        return path in self._members or path in self._links or path in self.escaping

    def why_unreadable(self, path: str) -> str | None:
        """Why ``read`` gave no content for ``path``, a name of the tree: a link out of it, or
        a file larger than the reader's limit; None when neither."""
        if path in self.escaping:
            return "a symbolic link out of the repository; not read"
        member = self._members.get(self._links.get(path, path))
        if member is not None:
            return f"{member.size} bytes, larger than the reader takes; not read"
        return None

    def container_tar(self) -> bytes:
        """The tar to extract at ``TESTBED``: the archive, but each relative link that climbs
        out of the tree points at the absolute path it resolves to there (the same file: ``..``
        stops at ``/``), as Docker refuses to extract a link that climbs out."""
        climbing = {
            name: target for name, target in self.escaping.items() if not target.startswith("/")
        }
        if not climbing:
            return self.tar_bytes
        if self._container_tar is None:
            out = io.BytesIO()
            with (
                tarfile.open(fileobj=io.BytesIO(self.tar_bytes)) as tar,
                tarfile.open(fileobj=out, mode="w", format=tar.format) as rewritten,
            ):
                for member in tar.getmembers():
                    name = member.name.removeprefix("./")
                    if member.issym() and name in climbing:
                        where = posixpath.join(TESTBED, posixpath.dirname(name), member.linkname)
                        member.linkname = posixpath.normpath(where)
                        # a long target's own header would win over the new one
                        member.pax_headers = {
                            k: v for k, v in member.pax_headers.items() if k != "linkpath"
                        }
                    data = tar.extractfile(member) if member.isfile() else None
                    rewritten.addfile(member, data)
            self._container_tar = out.getvalue()
        return self._container_tar

    def size(self, path: str) -> int | None:
        """The size of a file of the tree in bytes (None: no such file)."""
        member = self._members.get(self._links.get(path, path))
        return member.size if member is not None else None

    def read(self, path: str, limit: int = 1 << 20) -> bytes | None:
        member = self._members.get(self._links.get(path, path))
        if member is None or member.size > limit:
            return None
        # by the member read at the start, not its name: a name is found by reading every
        # header again, once per file read (a test directory's sources are read one by one)
        with tarfile.open(fileobj=io.BytesIO(self.tar_bytes)) as tar:
            handle = tar.extractfile(member)
            return handle.read() if handle else None


def _resolve_link(name: str, links: dict[str, str], files: set[str]) -> str | None:
    """The file of the tree the link ``name`` leads to ("" when it names none: a directory, a
    missing file, a loop), or None when it leads out of the tree."""
    seen: set[str] = set()
    while name in links and name not in seen:
        seen.add(name)
        target = links[name]
        if target.startswith("/"):
            return None
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
        if joined == ".." or joined.startswith("../"):
            return None
        name = joined
    return name if name in files else ""
