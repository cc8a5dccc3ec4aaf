"""swe-cargo-git: a cargo command run with the git dependencies it cannot reach left empty.

Copied into the env image (``/opt/swe-env/swe-cargo-git.py``) and run there around the step
that fetches a Rust recipe's crates::

    python3 swe-cargo-git.py -- cargo fetch --locked

Why: cargo loads every package of the workspace, so one git dependency of a member the pull
request never tests (a fuzzing or a system-test member's dependency on a git host) that
cannot be cloned fails the fetch and every later test run of the whole
workspace. Each git source the lockfile (or, without one, a manifest) names is tried with a
TCP connection to its host; one that cannot be reached is replaced (cargo's source
replacement, in ``$CARGO_HOME/config.toml``, which every later cargo command of the image
reads) by an empty package of its name and locked version in a local directory source. A
package that does use it then fails to compile, naming what is missing; the others build.

A directory source stands only for a locked git source: without a committed lockfile, a
lockfile holding the replaced packages is written first (at a revision of zeros), and
``generate-lockfile`` becomes ``update --workspace``, which keeps them. Where a package was
replaced, ``--locked`` is dropped: its lockfile entry loses the dependencies it had.

Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCKFILE = "Cargo.lock"
MANIFEST = "Cargo.toml"
STUBS = "swe-unreachable-git"
_REFERENCES = ("branch", "tag", "rev")
_DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
_SKIPPED = frozenset({"target", "vendor", "node_modules"})
ZERO_REVISION = "0" * 40


@dataclass(frozen=True)
class GitSource:
    """One package cargo takes from a git repository: its name, version (``0.0.0`` when no
    lockfile says), the repository and the branch, tag or rev it follows."""

    name: str
    version: str
    url: str
    reference: tuple[str, str] | None = None  # ("branch", "main")

    def lock_source(self, revision: str = ZERO_REVISION) -> str:
        query = f"?{self.reference[0]}={self.reference[1]}" if self.reference else ""
        return f"git+{self.url}{query}#{revision}"


def from_lock_source(name: str, version: str, source: str) -> GitSource | None:
    """The git source of a lockfile entry (``git+URL?branch=x#sha``); None for any other."""
    if not source.startswith("git+"):
        return None
    location = source[len("git+") :].split("#", 1)[0]
    parsed = urllib.parse.urlsplit(location)
    reference = None
    for key, value in urllib.parse.parse_qsl(parsed.query):
        if key in _REFERENCES:
            reference = (key, value)
    url = urllib.parse.urlunsplit(parsed._replace(query=""))
    return GitSource(name, version, url, reference)


def locked_sources(lock_text: str) -> list[GitSource]:
    """The git packages a lockfile holds."""
    found = []
    for entry in tomllib.loads(lock_text).get("package", []):
        if isinstance(entry, dict) and isinstance(entry.get("source"), str):
            source = from_lock_source(
                str(entry.get("name")), str(entry.get("version")), entry["source"]
            )
            if source is not None:
                found.append(source)
    return found


def _dependency_tables(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    tables = [manifest.get(name) for name in _DEPENDENCY_TABLES]
    workspace = manifest.get("workspace")
    if isinstance(workspace, dict):
        tables.append(workspace.get("dependencies"))
    targets = manifest.get("target")
    for target in targets.values() if isinstance(targets, dict) else []:
        if isinstance(target, dict):
            tables.extend(target.get(name) for name in _DEPENDENCY_TABLES)
    return [t for t in tables if isinstance(t, dict)]


def _least_version(requirement: Any) -> str:
    """The lowest version a requirement (``"0.3"``, ``"^1.2"``) accepts; ``0.0.0`` for none."""
    text = requirement.strip().lstrip("^~=>").strip() if isinstance(requirement, str) else ""
    parts = [p for p in text.split(",")[0].split(".")[:3] if p.isdigit()]
    return ".".join([*parts, "0", "0", "0"][:3]) if parts else "0.0.0"


def manifest_sources(manifest_text: str) -> list[GitSource]:
    """The git dependencies a manifest declares, each at the lowest version it accepts (no
    lockfile says which)."""
    found = []
    for table in _dependency_tables(tomllib.loads(manifest_text)):
        for key, spec in table.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("git"), str):
                continue
            reference = next(((r, str(spec[r])) for r in _REFERENCES if r in spec), None)
            name = str(spec.get("package") or key)
            found.append(
                GitSource(name, _least_version(spec.get("version")), spec["git"], reference)
            )
    return found


def reachable(url: str, timeout: float = 15.0) -> bool:
    """Whether a TCP connection to the repository's host opens (a host cargo cannot reach
    fails its fetch however it asks)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "file" or not parsed.hostname:
        return True
    default = {"http": 80, "git": 9418, "ssh": 22}.get(parsed.scheme, 443)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or default), timeout):
            return True
    except OSError:
        return False


def _manifests(root: Path) -> list[Path]:
    found = []
    for directory, names, files in os.walk(root):
        names[:] = [n for n in names if n not in _SKIPPED and not n.startswith(".")]
        if MANIFEST in files:
            found.append(Path(directory) / MANIFEST)
    return sorted(found)


def git_sources(root: Path) -> list[GitSource]:
    """The git packages of the workspace at ``root``: its lockfile's, else its manifests'."""
    lock = root / LOCKFILE
    if lock.is_file():
        return locked_sources(lock.read_text(encoding="utf-8"))
    found: dict[tuple[str, str], GitSource] = {}
    for manifest in _manifests(root):
        try:
            for source in manifest_sources(manifest.read_text(encoding="utf-8")):
                found.setdefault((source.name, source.url), source)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # cargo itself reports a manifest it cannot read
    return list(found.values())


def replaced_sources(config_text: str) -> list[tuple[str, tuple[str, str] | None]]:
    """The git sources (url, reference) a ``config.toml`` already replaces by the stubs."""
    sources = tomllib.loads(config_text).get("source", {})
    found = []
    for name, table in sources.items() if isinstance(sources, dict) else []:
        if name.startswith(f"{STUBS}-") and isinstance(table, dict) and "git" in table:
            reference = next(((r, str(table[r])) for r in _REFERENCES if r in table), None)
            found.append((str(table["git"]), reference))
    return found


def replacement_config(sources: list[GitSource], stubs: Path, config_text: str = "") -> str:
    """The ``config.toml`` lines to add to ``config_text`` that replace each of ``sources``
    by the directory ``stubs`` (those it replaces already are not added again)."""
    done = replaced_sources(config_text)
    lines = []
    if f"[source.{STUBS}]" not in config_text:
        lines += [f"[source.{STUBS}]", f"directory = {json.dumps(str(stubs))}", ""]
    repositories = [
        r for r in dict.fromkeys((s.url, s.reference) for s in sources) if r not in done
    ]
    for number, (url, reference) in enumerate(repositories, start=len(done)):
        lines.append(f"[source.{STUBS}-{number}]")
        lines.append(f"git = {json.dumps(url)}")
        if reference is not None:
            lines.append(f"{reference[0]} = {json.dumps(reference[1])}")
        lines.extend([f'replace-with = "{STUBS}"', ""])
    return "\n".join(lines)


def write_stub(source: GitSource, stubs: Path) -> None:
    """An empty package of the source's name and version in the directory source."""
    package = stubs / f"{source.name}-{source.version}"
    (package / "src").mkdir(parents=True, exist_ok=True)
    (package / MANIFEST).write_text(
        f"[package]\nname = {json.dumps(source.name)}\nversion = {json.dumps(source.version)}\n"
        'edition = "2015"\n\n[lib]\npath = "src/lib.rs"\n',
        encoding="utf-8",
    )
    (package / "src" / "lib.rs").write_text("", encoding="utf-8")
    # a directory source checks its packages' files against this; none listed, none checked
    (package / ".cargo-checksum.json").write_text('{"files":{},"package":null}', "utf-8")


def seed_lock(sources: list[GitSource]) -> str:
    """A lockfile holding only the replaced packages (cargo keeps them when it resolves)."""
    entries = [
        f"[[package]]\nname = {json.dumps(s.name)}\nversion = {json.dumps(s.version)}\n"
        f"source = {json.dumps(s.lock_source())}\n"
        for s in sources
    ]
    return "version = 3\n\n" + "\n".join(entries)


def command_after(command: list[str], replaced: bool, seeded: bool) -> list[str]:
    """``command`` as it runs once packages were replaced (see the module's docstring)."""
    if not replaced:
        return command
    changed = [a for a in command if a != "--locked"]
    if seeded and "generate-lockfile" in changed:
        at = changed.index("generate-lockfile")
        changed[at : at + 1] = ["update", "--workspace"]
    return changed


def main(arguments: list[str]) -> int:
    command = arguments[1:] if arguments[:1] == ["--"] else arguments
    if not command:
        print("usage: swe-cargo-git.py -- COMMAND...", file=sys.stderr)
        return 2
    root = Path.cwd()
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    try:
        sources = git_sources(root)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        print(f"swe-cargo-git: the lockfile is not read ({error})", flush=True)
        sources = []
    checked: dict[str, bool] = {}
    unreachable = []
    for source in sources:
        if source.url not in checked:
            checked[source.url] = reachable(source.url)
        if not checked[source.url]:
            unreachable.append(source)
    seeded = False
    if unreachable:
        stubs = home / STUBS
        for source in unreachable:
            write_stub(source, stubs)
            print(
                f"swe-cargo-git: {source.url} cannot be reached: {source.name} "
                f"{source.version} is an empty package",
                flush=True,
            )
        config = home / "config.toml"
        existing = config.read_text(encoding="utf-8") if config.exists() else ""
        added = replacement_config(unreachable, stubs, existing)
        if added:
            config.write_text(f"{existing}\n{added}\n", encoding="utf-8")
        if not (root / LOCKFILE).exists():
            (root / LOCKFILE).write_text(seed_lock(unreachable), encoding="utf-8")
            seeded = True
    run = command_after(command, bool(unreachable), seeded)
    return subprocess.run(run, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
