"""Which Debian packages give what a C/C++ build finds, found by the files it looks for in the
suite's file lists (``SystemFiles``: ``apt-file``'s answer), not by a table of names:

* ``find_package(Name)``: CMake's package files first (``NameConfig.cmake``,
  ``name-config.cmake``, and ``name_component-config.cmake`` per component asked for); else
  the ``FindName.cmake`` module CMake would read (the tree's own, else CMake's, from the
  host's CMake) and the headers, libraries and programs its ``find_path`` / ``find_library``
  / ``find_program`` look for; else a pkg-config module or a library of that name;
* a pkg-config module (``pkg_check_modules``, ``dependency()``, ``PKG_CHECK_MODULES``):
  ``<module>.pc``;
* a library or a header (``AC_CHECK_LIB``, ``AC_CHECK_HEADERS``): ``lib<name>.so`` (a
  ``-dev`` package's link name), ``usr/include/<header>``.

A module that looks for no file (``Threads``, ``OpenMP``) needs nothing. What no package holds
is named in the recipe's notes, for a person or the set-up agent (a package Debian does not
have would fail the whole image's install).
"""

from __future__ import annotations

import functools
import glob
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from streams.clients.debian_contents import ARCH_TRIPLET, native
from streams.evaluation.recipes.languages import SystemFiles
from streams.evaluation.recipes.languages.cpp.autotools import AutotoolsFacts
from streams.evaluation.recipes.languages.cpp.cmake import CMakeFacts
from streams.evaluation.recipes.languages.cpp.listfile import read_listfile
from streams.evaluation.recipes.languages.cpp.makefile import MakefileFacts
from streams.evaluation.recipes.languages.cpp.meson import MesonFacts
from streams.evaluation.recipes.model import TreeFiles

MAX_MODULE_BYTES = 1 << 20
# what ``find_path`` / ``find_file`` look for that a compiler reads (not a Windows tool's .exe)
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tcc", ".inc")
# the find_* commands' keywords: what follows one is not a name
_FIND_KEYWORDS = frozenset(
    {"NAMES", "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "NAMES_PER_DIR", "REQUIRED", "ENV",
     "NO_CACHE", "VALIDATOR", "REGISTRY_VIEW", "CMAKE_FIND_ROOT_PATH_BOTH",
     "ONLY_CMAKE_FIND_ROOT_PATH", "OPTIONAL"}
)  # fmt: skip
_FINDERS = {"find_path": "header", "find_file": "header", "find_library": "library",
            "find_program": "program"}  # fmt: skip

Holders = Mapping[str, Sequence[tuple[str, tuple[str, ...]]]]


@dataclass(frozen=True)
class Wanted:
    """What one thing a build finds needs: groups of files (path ends), the first group of
    which Debian holds a file wins; no group at all: nothing is needed."""

    name: str
    groups: tuple[tuple[str, ...], ...]


def header_paths(header: str, suffixes: Sequence[str] = ()) -> list[str]:
    """Where a compiler finds ``header`` by default: ``usr/include`` (and its ``suffixes``),
    the architecture's include directory."""
    ends = [f"usr/include/{header}", f"usr/include/{ARCH_TRIPLET}/{header}"]
    return ends + [f"usr/include/{suffix}/{header}" for suffix in suffixes]


def library_paths(name: str) -> list[str]:
    """Where the linker finds ``-l<name>`` (``name`` may be written ``libz`` or ``libz.so``)."""
    base = name.removesuffix(".so").removeprefix("lib")
    return [f"usr/lib/{ARCH_TRIPLET}/lib{base}.so", f"usr/lib/lib{base}.so"]


def module_files(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files a CMake find module looks for, as path ends: the headers and libraries of its
    ``find_path`` / ``find_library`` calls, and the programs of its first ``find_program``
    (the tool it is about: Doxygen's later ones are its optional helpers). Names built of
    variables are left out."""
    compiled: list[str] = []
    programs: list[str] = []
    first_program_read = False
    for command in read_listfile(text).commands:
        kind = _FINDERS.get(command.name)
        words = command.words[1:]
        if kind is None or not words:
            continue
        names, suffixes = _find_arguments(words)
        for name in names:
            if kind == "header":
                if "." not in name.rsplit("/", 1)[-1] or name.lower().endswith(HEADER_SUFFIXES):
                    compiled += header_paths(name, suffixes)
            elif kind == "library":
                compiled += library_paths(name)
            elif not first_program_read:
                programs += [f"usr/bin/{name}", f"bin/{name}"]
        first_program_read = first_program_read or (kind == "program" and bool(programs))
    return tuple(dict.fromkeys(compiled)), tuple(dict.fromkeys(programs))


def _find_arguments(words: list[str]) -> tuple[list[str], list[str]]:
    """The names and the path suffixes of a ``find_*`` call's arguments (after its variable):
    ``NAMES a b`` or the short form's one name."""
    values: dict[str, list[str]] = {"NAMES": [], "PATH_SUFFIXES": []}
    current = "NAMES" if words[0] == "NAMES" else ""
    if current == "":
        values["NAMES"].append(words[0])
    for word in words[1:]:
        if word in _FIND_KEYWORDS or word.startswith("NO_"):
            current = word
        elif current in values:
            values[current].append(word)
    usable = [w for w in dict.fromkeys(values["NAMES"]) if w and "$" not in w and " " not in w]
    suffixes = [w for w in values["PATH_SUFFIXES"] if w and "$" not in w]
    return usable, suffixes


def wanted_for_package(
    name: str, components: Sequence[str], module: str | None, required: bool = True
) -> Wanted:
    """The files that give ``find_package(name COMPONENTS ...)``, its find module's text
    (``module``) read when CMake would read it (no package file of it). A module that looks
    for no file (``Threads``, ``OpenMP``) needs nothing, nor does an optional one that looks
    for a program alone (a documentation tool: the build goes on without it)."""
    lower = name.lower()
    configs = [f"{name}Config.cmake", f"{lower}-config.cmake"]
    configs += [f"{lower}_{c.lower()}-config.cmake" for c in components if "$" not in c]
    if module is not None:
        compiled, programs = module_files(module)
        if compiled:
            return Wanted(name, (tuple(configs), compiled))
        return Wanted(name, (tuple(configs), programs) if programs and required else ())
    fallback = (f"{lower}.pc", *library_paths(lower), *header_paths(f"{lower}.h"))
    return Wanted(name, (tuple(configs), fallback))


def wanted_for_module(written: str) -> Wanted | None:
    """The file of a pkg-config module as a build writes it (``glib-2.0>=2.50``)."""
    module = written.split(">", 1)[0].split("<", 1)[0].split("=", 1)[0].strip()
    if not module or "$" in module:
        return None
    return Wanted(module, ((f"{module}.pc",),))


def wanted_of_cmake(
    facts: CMakeFacts, tree: TreeFiles, cmake_module: Callable[[str], str | None]
) -> list[Wanted]:
    """What a CMake project's ``find_package`` and ``pkg_check_modules`` calls need; its own
    find modules first (``cmake/FindFoo.cmake``), then CMake's (``cmake_module``)."""
    wanted: list[Wanted] = []
    own = (facts.project or "").lower()
    for package in facts.packages:
        # the project's own package: what its examples find once it is installed
        if "$" in package.name or package.name.lower() == own:
            continue
        module = _tree_module(tree, package.name)
        if module is None:
            module = cmake_module(package.name)
        wanted.append(
            wanted_for_package(package.name, package.components, module, package.required)
        )
    for written in facts.pkg_modules:
        found = wanted_for_module(written)
        if found is not None and found.name.lower() != own:
            wanted.append(found)
    return wanted


def wanted_of_meson(facts: MesonFacts) -> list[Wanted]:
    """What a Meson project's ``dependency()`` calls need: pkg-config's module first (Meson
    asks pkg-config, then CMake), a CMake package file, then a library or header of the name."""
    wanted = []
    own = (facts.project or "").lower()
    for name in facts.dependencies:
        if "$" in name or "@" in name or name.lower() == own:
            continue
        lower = name.lower()
        fallback = (*library_paths(lower), *header_paths(f"{lower}.h"))
        wanted.append(
            Wanted(
                name, ((f"{name}.pc",), (f"{name}Config.cmake", f"{lower}-config.cmake"), fallback)
            )
        )
    return wanted


def wanted_of_autotools(facts: AutotoolsFacts | MakefileFacts) -> list[Wanted]:
    """What an Autotools project's ``PKG_CHECK_MODULES`` and ``AC_CHECK_LIB`` calls need (a
    plain Makefile's pkg-config modules and ``-l`` libraries: the same two lists)."""
    own = (facts.project or "").lower()
    wanted = [found for m in facts.modules if (found := wanted_for_module(m)) is not None]
    wanted = [w for w in wanted if w.name.lower() != own]
    wanted += [Wanted(f"-l{name}", (tuple(library_paths(name)),)) for name in facts.libraries]
    return wanted


def _tree_module(tree: TreeFiles, name: str) -> str | None:
    file = f"Find{name}.cmake"
    for path in tree.names:
        if path == file or path.endswith("/" + file):
            data = tree.read(path, MAX_MODULE_BYTES)
            if data is not None:
                return data.decode("utf-8", errors="replace")
    return None


@functools.lru_cache(maxsize=512)
def host_cmake_module(name: str) -> str | None:
    """CMake's own ``Find<name>.cmake``, from the host's CMake (None without one)."""
    program = shutil.which("cmake")
    if program is None:
        return None
    share = Path(program).resolve().parent.parent / "share"
    for directory in sorted(glob.glob(str(share / "cmake*" / "Modules")), reverse=True):
        path = Path(directory) / f"Find{name}.cmake"
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="replace")
    return None


def candidates(holders: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[str, ...]:
    """The packages that may give one path end: those of its newest version's path
    (``Boost-1.81.0`` over ``Boost-1.74.0``) of the paths a native build finds."""
    found = [holder for holder in holders if native(holder[0])]
    if not found:
        return ()
    return tuple(sorted(max(found, key=lambda holder: _natural(holder[0]))[1]))


def _natural(path: str) -> list[tuple[int, int | str]]:
    parts: list[tuple[int, int | str]] = []
    number = ""
    for char in path + "/":
        if char.isdigit():
            number += char
            continue
        if number:
            parts.append((0, int(number)))
            number = ""
        parts.append((1, char))
    return parts


def cover(options: Sequence[tuple[str, ...]]) -> list[str]:
    """Few packages that give every path end found (each end's ``candidates``): the package
    giving the most ends first, by name among equals. Alternatives conflict (a library built
    on GnuTLS or on OpenSSL): one package that gives the header and the library is the one."""
    left = [set(option) for option in options if option]
    chosen: list[str] = []
    while left:
        counts: dict[str, int] = {}
        for option in left:
            for package in option:
                counts[package] = counts.get(package, 0) + 1
        best = min(counts, key=lambda package: (-counts[package], package))
        chosen.append(best)
        left = [option for option in left if best not in option]
    return chosen


def packages_of(wanted: Sequence[Wanted], holders: Holders) -> tuple[list[str], list[str]]:
    """The packages to install for ``wanted`` (each one's first group Debian holds a file of:
    few packages giving every file of that group found) and the names nothing was found for."""
    packages: list[str] = []
    unknown: list[str] = []
    for item in wanted:
        if not item.groups:
            continue
        for group in item.groups:
            found = cover([candidates(holders.get(end, ())) for end in group])
            if found:
                packages += [p for p in found if p not in packages]
                break
        else:
            unknown.append(item.name)
    return packages, unknown


def debian_packages(
    wanted: Sequence[Wanted], suite: str | None, files: SystemFiles | None
) -> tuple[list[str], list[str]]:
    """Blocking: the Debian packages of ``suite`` that ``wanted`` needs, and the notes of what
    was not found (or why nothing was looked up)."""
    if not wanted or not any(item.groups for item in wanted):
        return [], []
    if files is None or suite is None:
        names = ", ".join(item.name for item in wanted if item.groups)
        return [], [f"no Debian file list to find packages in for: {names}"]
    ends = [end for item in wanted for group in item.groups for end in group]
    try:
        holders = files.holders(suite, list(dict.fromkeys(ends)))
    except (OSError, RuntimeError) as error:
        return [], [str(error)]
    packages, unknown = packages_of(wanted, holders)
    if not unknown:
        return packages, []
    return packages, [f"no Debian package of {suite} holds a file of: {', '.join(unknown)}"]
