"""Debian packages a crate's build needs, as its CI installs them.

A ``-sys`` crate links a system library (``openssl-sys``: libssl, ``libz-sys``: zlib) found
through pkg-config, or builds one from C sources with cmake; bindgen needs libclang. The CI of
a repository that needs one installs it (``sudo apt-get install -y libssl-dev``); a recipe
takes, of the packages its CI installs with apt, the libraries' development packages
(``-dev``) and the build tools such crates use. Other packages a CI installs (a cross
linker, valgrind, a browser) are left out: the tests run natively on the image.
"""

from __future__ import annotations

import re

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.ci import read_ci
from streams.evaluation.recipes.sources.shell import apt_installed, split_commands
from streams.evaluation.recipes.sources.tree import SourceTree

BUILD_TOOLS = frozenset({"cmake", "clang", "nasm", "protobuf-compiler", "pkg-config", "pkgconf"})
_DEBIAN_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")
MAX_PACKAGES = 20


def ci_system_packages(tree: TreeFiles) -> tuple[str, ...]:
    """The libraries and build tools the tree's CI installs with apt (see the docstring)."""
    source = SourceTree(tree.names, tree.read, tree.why_unreadable)
    found: dict[str, None] = {}
    for job in read_ci(source).jobs:
        for step in job.steps:
            for command in split_commands(step.run or ""):
                for package in apt_installed(command.words) or ():
                    name = package.split("=", 1)[0].split(":", 1)[0]
                    if _DEBIAN_NAME.fullmatch(name) and (
                        name.endswith("-dev") or name in BUILD_TOOLS
                    ):
                        found[name] = None
    return tuple(sorted(found))[:MAX_PACKAGES]
