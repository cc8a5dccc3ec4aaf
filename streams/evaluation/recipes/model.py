"""What a recipe is, as pure data: how to install and test one repository at one commit
(``InstallRecipe``), who made it (``RecipeOrigin``), and the files of the tree it was read from
(``TreeFiles``). No Docker here: the recipe readers (``recipes/``, ``recipes/languages/``) and
the engine that builds images of recipes (``environments``) both import it.
"""

from __future__ import annotations

import hashlib
import io
import json
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
    """The files of a ``git archive`` tar: names and (small) contents."""

    def __init__(self, tar_bytes: bytes):
        self.tar_bytes = tar_bytes
        self._members: dict[str, tarfile.TarInfo] = {}
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    self._members[member.name.removeprefix("./")] = member

    @property
    def names(self) -> list[str]:
        return sorted(self._members)

    def has(self, path: str) -> bool:
        return path in self._members

    def read(self, path: str, limit: int = 1 << 20) -> bytes | None:
        member = self._members.get(path)
        if member is None or member.size > limit:
            return None
        with tarfile.open(fileobj=io.BytesIO(self.tar_bytes)) as tar:
            handle = tar.extractfile(member.name)
            return handle.read() if handle else None
