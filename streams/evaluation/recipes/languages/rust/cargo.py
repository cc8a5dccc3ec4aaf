"""What a Cargo tree's files say: its packages (each ``Cargo.toml`` with a ``[package]``), the
workspace, the rustc they ask for, the committed ``Cargo.lock`` and the files a manifest names.

Read with ``tomllib``. The rustc a package asks for is the newest of: its ``rust-version``
(or the workspace's, ``rust-version.workspace = true``), the release that brought its
``edition``, a version its ``rust-toolchain(.toml)`` channel names (``1.70.0``; ``stable`` or
a nightly says nothing of a version), and what cargo needs to read the committed lockfile
(version 4 from 1.78) or the workspace's ``resolver = "3"`` (1.84).
"""

from __future__ import annotations

import posixpath
import tomllib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.languages import version_key
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import FactsAfterDiffs

MANIFEST = "Cargo.toml"
LOCKFILE = "Cargo.lock"
TOOLCHAIN_FILES = ("rust-toolchain.toml", "rust-toolchain")
CONFIG_FILES = (".cargo/config.toml", ".cargo/config")
MAX_MANIFEST = 1 << 20
MAX_LOCKFILE = 16 << 20
MAX_MANIFESTS = 400
# directories no package of the workspace lives in: build output and vendored copies
_SKIPPED_PARTS = frozenset({"target", "vendor", "node_modules"})
# the release that brought each edition, and what reading a lockfile or a resolver needs
EDITION_RUST = {"2015": "1.0", "2018": "1.31", "2021": "1.56", "2024": "1.85"}
LOCK_VERSION_RUST = {3: "1.53", 4: "1.78"}
RESOLVER_RUST = {"2": "1.51", "3": "1.84"}
_TARGET_TABLES = ("bin", "test", "bench", "example")
_DEFAULT_DIRS = {"bin": "src/bin", "test": "tests", "bench": "benches", "example": "examples"}


@dataclass
class CargoPackage:
    """One package of the tree: where its manifest is and what it asks for."""

    directory: str  # "." for the root
    name: str
    rust_version: str | None = None
    edition: str = "2015"
    lib_name: str | None = None  # the library target's name (``[lib] name``), if it has one
    stubs: list[str] = field(default_factory=list)  # target files cargo needs to load it


@dataclass
class CargoFacts:
    """What a Cargo tree's files say."""

    manifests: dict[str, bytes] = field(default_factory=dict)  # path -> bytes
    packages: dict[str, CargoPackage] = field(default_factory=dict)  # directory -> package
    workspace_rust_version: str | None = None
    resolver: str | None = None
    lockfile: bytes | None = None
    lock_version: int | None = None
    channel: str | None = None  # the rust-toolchain file's channel
    configs: dict[str, bytes] = field(default_factory=dict)  # .cargo/config(.toml)
    problems: list[str] = field(default_factory=list)


def _directory(path: str) -> str:
    return posixpath.dirname(path) or "."


def _in(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


def _skipped(path: str) -> bool:
    parts = path.split("/")[:-1]
    return any(part in _SKIPPED_PARTS or part.startswith(".") for part in parts)


def is_cargo_tree(tree: TreeFiles) -> bool:
    """A Cargo project: a Cargo.toml at its root."""
    return tree.has(MANIFEST)


def _toml(data: bytes, name: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        return tomllib.loads(data.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError as error:
        problems.append(f"{name}: {error}")
        return None


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _inherited(value: Any, workspace: dict[str, Any], key: str) -> Any:
    """A package field, or the workspace's where it says ``{workspace = true}``."""
    if isinstance(value, dict) and value.get("workspace") is True:
        return workspace.get(key)
    return value


def read_cargo_facts(tree: TreeFiles) -> CargoFacts | None:
    """The packages, workspace, lockfile and toolchain of ``tree``; None when it is no Cargo
    tree."""
    if not is_cargo_tree(tree):
        return None
    facts = CargoFacts()
    root = tree.read(MANIFEST, MAX_MANIFEST)
    parsed_root = _toml(root or b"", MANIFEST, facts.problems) or {}
    workspace = parsed_root.get("workspace")
    shared: dict[str, Any] = {}
    if isinstance(workspace, dict):
        package_table = workspace.get("package")
        shared = package_table if isinstance(package_table, dict) else {}
        facts.workspace_rust_version = _string(shared.get("rust-version"))
        facts.resolver = _string(workspace.get("resolver"))
    package = parsed_root.get("package")
    if facts.resolver is None and isinstance(package, dict):
        facts.resolver = _string(package.get("resolver"))
    names = [n for n in tree.names if posixpath.basename(n) == MANIFEST and not _skipped(n)]
    for name in sorted(names, key=lambda n: (n.count("/"), n))[:MAX_MANIFESTS]:
        data = root if name == MANIFEST else tree.read(name, MAX_MANIFEST)
        if data is None:
            facts.problems.append(f"{name}: {tree.why_unreadable(name) or 'not read'}")
            continue
        facts.manifests[name] = data
        parsed = parsed_root if name == MANIFEST else _toml(data, name, facts.problems)
        found = _package(tree, _directory(name), parsed or {}, shared)
        if found is not None:
            facts.packages[found.directory] = found
    _read_lock(tree, facts)
    facts.channel = _channel(tree, facts.problems)
    for name in CONFIG_FILES:
        config = tree.read(name, MAX_MANIFEST) if tree.has(name) else None
        if config is not None:
            facts.configs[name] = config
    return facts


_READ: weakref.WeakKeyDictionary[TreeFiles, CargoFacts | None] = weakref.WeakKeyDictionary()


def cargo_facts_of(tree: TreeFiles) -> CargoFacts | None:
    """``read_cargo_facts`` of ``tree``, read once per tree (each proof of a PR asks again
    which packages its files are in); not to be changed by the caller."""
    if tree not in _READ:
        _READ[tree] = read_cargo_facts(tree)
    return _READ[tree]


def _cargo_file(path: str) -> bool:
    name = posixpath.basename(path)
    return name in (MANIFEST, LOCKFILE, *TOOLCHAIN_FILES) or path in CONFIG_FILES


# What the Cargo files of the tree a PR's diffs leave say, when they change a manifest or the
# lockfile (a crate added); None when they change neither.
pull_request_facts = FactsAfterDiffs(
    read_cargo_facts, _cargo_file, lambda path: posixpath.basename(path) in (MANIFEST, LOCKFILE)
)


def _package(
    tree: TreeFiles, directory: str, parsed: dict[str, Any], shared: dict[str, Any]
) -> CargoPackage | None:
    table = parsed.get("package")
    if not isinstance(table, dict) or not _string(table.get("name")):
        return None
    rust_version = _string(_inherited(table.get("rust-version"), shared, "rust-version"))
    edition = _string(_inherited(table.get("edition"), shared, "edition")) or "2015"
    lib = parsed.get("lib")
    lib_name = None
    if isinstance(lib, dict) and _string(lib.get("name")):
        lib_name = lib["name"]
    elif isinstance(lib, dict) or tree.has(_in(directory, "src/lib.rs")):
        lib_name = str(table["name"]).replace("-", "_")
    return CargoPackage(
        directory=directory,
        name=str(table["name"]),
        rust_version=rust_version,
        edition=edition,
        lib_name=lib_name,
        stubs=_stubs(tree, directory, parsed, table),
    )


def _stubs(
    tree: TreeFiles, directory: str, parsed: dict[str, Any], table: dict[str, Any]
) -> list[str]:
    """The target files cargo looks for when it loads the package (a manifest alone, in the
    env layer, has none): the ones a manifest names and the ones it finds by convention."""
    found: list[str] = []

    def add(path: str) -> None:
        full = posixpath.normpath(_in(directory, path))
        if not full.startswith("../") and full not in found:
            found.append(full)

    for conventional in ("src/lib.rs", "src/main.rs"):
        if tree.has(_in(directory, conventional)):
            add(conventional)
    lib = parsed.get("lib")
    if isinstance(lib, dict):
        add(_string(lib.get("path")) or "src/lib.rs")
    build = table.get("build")
    if isinstance(build, str):
        add(build)
    for kind in _TARGET_TABLES:
        entries = parsed.get(kind)
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            path = _string(entry.get("path"))
            name = _string(entry.get("name"))
            if path is None and name is not None:
                single = f"{_DEFAULT_DIRS[kind]}/{name}.rs"
                nested = f"{_DEFAULT_DIRS[kind]}/{name}/main.rs"
                path = nested if tree.has(_in(directory, nested)) else single
                if kind == "bin" and not tree.has(_in(directory, path)):
                    path = "src/main.rs"
            if path is not None:
                add(path)
    if not found:  # a package whose targets are all found by convention elsewhere
        add("src/lib.rs")
    return found


def _read_lock(tree: TreeFiles, facts: CargoFacts) -> None:
    if not tree.has(LOCKFILE):
        return
    data = tree.read(LOCKFILE, MAX_LOCKFILE)
    if data is None:
        facts.problems.append(f"{LOCKFILE}: {tree.why_unreadable(LOCKFILE) or 'not read'}")
        return
    facts.lockfile = data
    parsed = _toml(data, LOCKFILE, facts.problems) or {}
    version = parsed.get("version")
    # a lockfile without a version line is version 1 or 2 (read by every cargo here)
    facts.lock_version = version if isinstance(version, int) else None


def _channel(tree: TreeFiles, problems: list[str]) -> str | None:
    """The channel a rust-toolchain file names (``1.70.0``, ``stable``, ``nightly-2023-01-01``)."""
    for name in TOOLCHAIN_FILES:
        data = tree.read(name, 64 << 10) if tree.has(name) else None
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        parsed = _toml(text.encode(), name, []) if "[" in text else None
        if parsed is not None:
            toolchain = parsed.get("toolchain")
            return _string(toolchain.get("channel")) if isinstance(toolchain, dict) else None
        line = text.strip().splitlines()[0].strip() if text.strip() else ""
        if line:
            return line
        problems.append(f"{name}: empty")
    return None


def _as_version(text: str | None) -> str | None:
    """``1.70.0`` / ``1.70`` as major.minor; None for anything else (``stable``, nightlies)."""
    if not text:
        return None
    parts = text.strip().split(".")
    if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]):
        return f"{int(parts[0])}.{int(parts[1])}"
    return None


def package_of(facts: CargoFacts, path: str) -> CargoPackage | None:
    """The package whose directory holds ``path`` (the nearest manifest above it)."""
    directory = _directory(path)
    while True:
        if directory in facts.packages:
            return facts.packages[directory]
        if directory == ".":
            return None
        directory = _directory(directory)


def tested_packages(facts: CargoFacts, changed_files: Sequence[str]) -> list[CargoPackage]:
    """The packages a recipe asks a rustc for: the root package (if any) and the ones holding
    a changed file."""
    chosen: dict[str, CargoPackage] = {}
    if "." in facts.packages:
        chosen["."] = facts.packages["."]
    for path in changed_files:
        found = package_of(facts, path)
        if found is not None:
            chosen[found.directory] = found
    if not chosen and facts.packages:  # a virtual workspace and no changed file: all of it
        chosen = dict(facts.packages)
    return [chosen[d] for d in sorted(chosen)]


@dataclass(frozen=True)
class RustNeed:
    """The oldest rustc that builds the tested packages, and what asked for it."""

    version: str | None  # major.minor; None: nothing asks
    why: tuple[str, ...] = ()


def needed_rust(facts: CargoFacts, packages: Sequence[CargoPackage]) -> RustNeed:
    """The newest of what the packages, the toolchain file, the lockfile and the resolver
    ask for (``RustNeed.why`` names each ask)."""
    asks: list[tuple[str, str]] = []
    for package in packages:
        own = _as_version(package.rust_version or facts.workspace_rust_version)
        if own:
            asks.append((own, f"{package.name}: rust-version {own}"))
        edition = EDITION_RUST.get(package.edition)
        if edition and edition != "1.0":
            asks.append((edition, f"{package.name}: edition {package.edition}"))
    channel = _as_version(facts.channel)
    if channel:
        asks.append((channel, f"rust-toolchain: {facts.channel}"))
    if facts.lockfile is not None and facts.lock_version in LOCK_VERSION_RUST:
        asks.append((LOCK_VERSION_RUST[facts.lock_version], f"Cargo.lock v{facts.lock_version}"))
    if facts.resolver in RESOLVER_RUST:
        asks.append((RESOLVER_RUST[facts.resolver], f'resolver "{facts.resolver}"'))
    if not asks:
        return RustNeed(None)
    newest = max((v for v, _ in asks), key=version_key)
    return RustNeed(newest, tuple(why for _, why in asks))
