"""swe-cargo-test: ``cargo test`` of the packages that hold some files, telling which package
and target each test binary is.

Copied into the env image (``/opt/swe-env/swe-cargo-test.py``) and run there by a Rust
recipe's test command. Usage::

    python3 swe-cargo-test.py [--no-run] [cargo test options] [TARGET ...] [-- test options]

A TARGET (a word that is no option nor an option's value) is a path, which names the package
whose directory holds it, or a package's name: each becomes ``-p <package>`` (a changed
``tests/x.rs`` runs its whole package, as ``go test`` runs a package). First every test
target is built (``cargo build --tests --keep-going``, JSON messages), so one that does not
compile leaves the others to run; then

* ``swe-cargo-test: executable <binary> <package> <kind> <target>`` says what each test
  binary is, ``swe-cargo-test: library <lib name> <package>`` whose doc tests
  ``Doc-tests <lib name>`` are, and ``swe-cargo-test: did not compile <package> <kind>
  <target>`` (then what the compiler said) each target that did not build;
* the tests run: ``cargo test --no-fail-fast`` when everything built, else each binary that
  built is run as cargo runs it (its package's directory, cargo's variables) after the same
  ``Running`` line, and the doc tests only of packages whose library built.

The output is cargo's and libtest's own (stderr with stdout); the exit status is the worst.
Runs without network (``CARGO_NET_OFFLINE``): the env image fetched every crate.

Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

MARK = "swe-cargo-test:"
# cargo options that take a value (the next word when not joined with ``=``)
VALUED = {
    "-p", "--package", "--exclude", "--test", "--bin", "--bench", "--example", "--features",
    "-F", "--manifest-path", "--target", "--target-dir", "-j", "--jobs", "--profile",
    "--color", "--message-format", "--config", "-Z", "--lockfile-path",
}  # fmt: skip
# target selections ``cargo build`` does not take (doc tests are built by ``cargo test``)
DOC_ONLY = {"--doc"}
# the options that choose targets: without any, every test target is built (``--tests``)
SELECTIONS = ("--lib", "--bin", "--bins", "--test", "--tests", "--bench", "--example")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def split_arguments(arguments: list[str]) -> tuple[list[str], list[str], list[str], bool]:
    """(cargo options, paths, test options, --no-run) of the command line."""
    options: list[str] = []
    paths: list[str] = []
    tests: list[str] = []
    no_run = False
    at = 0
    while at < len(arguments):
        word = arguments[at]
        if word == "--":
            tests = arguments[at + 1 :]
            break
        if word == "--no-run":
            no_run = True
        elif word in VALUED and at + 1 < len(arguments):
            options += [word, arguments[at + 1]]
            at += 1
        elif word.startswith("-"):
            options.append(word)
        else:
            paths.append(word)
        at += 1
    return options, paths, tests, no_run


def cargo_version() -> tuple[int, int]:
    out = subprocess.run(["cargo", "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"(\d+)\.(\d+)", out.stdout)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def metadata(environment: dict[str, str]) -> list[dict]:
    """The workspace's packages (``cargo metadata --no-deps``)."""
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        return []
    return json.loads(out.stdout).get("packages", [])


def package_of(packages: list[dict], path: str) -> dict | None:
    """The package whose directory is the deepest one holding ``path``."""
    full = os.path.abspath(path)
    best: dict | None = None
    depth = -1
    for package in packages:
        directory = os.path.dirname(package["manifest_path"])
        if (full == directory or full.startswith(directory + os.sep)) and len(directory) > depth:
            best, depth = package, len(directory)
    return best


@dataclass
class Built:
    """What building every test target learnt."""

    # (binary, package, kind, target, source file) of each test binary
    executables: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    libraries: dict[str, str] = field(default_factory=dict)  # library name -> package
    failed: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    status: int = 0


def spec(package: dict) -> str:
    """A package id spec only this package of the workspace matches: a dependency may be a
    crates.io release of the same crate (a dev-dependency that depends on the crate itself),
    which makes ``-p <name>`` ambiguous."""
    directory = os.path.dirname(package["manifest_path"])
    return f"file://{directory}#{package['name']}@{package['version']}"


def qualified(options: list[str], names: dict[str, dict]) -> list[str]:
    """``options`` with each ``-p <name>`` of a workspace package made its ``spec``."""
    found: list[str] = []
    for at, word in enumerate(options):
        before = options[at - 1] if at else ""
        found.append(spec(names[word]) if before in ("-p", "--package") and word in names else word)
    return found


def build(options: list[str], environment: dict[str, str], packages: list[dict]) -> Built:
    """Every test target built, and what was learnt: executables, libraries, failures."""
    by_manifest = {p["manifest_path"]: p for p in packages}
    keep_going = (
        ["--keep-going"] if cargo_version() >= (1, 74) else ["-Zunstable-options", "--keep-going"]
    )
    chosen = [] if any(o in SELECTIONS for o in options) else ["--tests"]
    command = ["cargo", "build", *chosen, *keep_going, "--message-format=json", *options]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=environment, errors="replace"
    )
    found = Built()
    assert process.stdout is not None
    for line in process.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            sys.stdout.write(line)
            continue
        package = by_manifest.get(message.get("manifest_path", ""), {}).get("name") or (
            name_of(message.get("package_id", ""))
        )
        target = message.get("target") or {}
        kind = (target.get("kind") or ["?"])[0]
        if message.get("reason") == "compiler-artifact":
            if kind in ("lib", "rlib", "proc-macro") and not message["profile"]["test"]:
                found.libraries[target["name"]] = package
            if message.get("executable") and message["profile"]["test"]:
                found.executables.append(
                    (message["executable"], package, kind, target["name"], target["src_path"])
                )
        elif message.get("reason") == "compiler-message":
            said = message["message"]
            if said.get("level") in ("error", "error: internal compiler error"):
                key = (package, kind, target.get("name", "?"))
                found.failed.setdefault(key, []).append(said.get("rendered") or said["message"])
    found.status = process.wait()
    return found


def name_of(package_id: str) -> str:
    """A package's name from its id: ``name 0.1.0 (path+file://...)`` (cargo before 1.77) or
    ``path+file:///dir#name@0.1.0`` / ``registry+...#name@1.0`` / ``path+file:///dir/name#0.1.0``."""
    if " " in package_id:
        return package_id.split(" ", 1)[0]
    fragment = package_id.rsplit("#", 1)[-1]
    if "@" in fragment:
        return fragment.split("@", 1)[0]
    return package_id.rsplit("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def run_binary(entry: tuple, packages: list[dict], tests: list[str], environment: dict) -> int:
    """One test binary run as cargo runs it: from its package's directory, with cargo's
    variables, after cargo's ``Running`` line."""
    executable, package_name, kind, target, source = entry
    package = next((p for p in packages if p["name"] == package_name), None)
    directory = os.path.dirname(package["manifest_path"]) if package else os.getcwd()
    shown = os.path.relpath(source, directory)
    say(f"     Running {'unittests ' if kind in ('lib', 'bin', 'proc-macro') else ''}"
        f"{shown} ({os.path.relpath(executable)})")  # fmt: skip
    variables = dict(environment)
    if package is not None:
        version = package.get("version", "0.0.0")
        major, minor, patch = [*re.split(r"[.+-]", version), "0", "0"][:3]
        variables.update(
            CARGO_MANIFEST_DIR=directory,
            CARGO_PKG_NAME=package["name"],
            CARGO_PKG_VERSION=version,
            CARGO_PKG_VERSION_MAJOR=major,
            CARGO_PKG_VERSION_MINOR=minor,
            CARGO_PKG_VERSION_PATCH=patch,
            CARGO_CRATE_NAME=target.replace("-", "_"),
        )
    sys.stdout.flush()
    return subprocess.run(
        [executable, *tests], cwd=directory, env=variables, check=False
    ).returncode


def main(arguments: list[str]) -> int:
    options, paths, tests, no_run = split_arguments(arguments)
    environment = dict(os.environ, CARGO_NET_OFFLINE="true", CARGO_TERM_COLOR="never")
    packages = metadata(environment)
    selected: list[str] = []
    names = {p["name"]: p for p in packages}
    for path in paths:
        # a package's name, else the package whose directory holds the path (a test file the
        # test patch adds need not exist yet)
        package = names.get(path) or package_of(packages, path)
        if package is None:
            say(f"{MARK} no package holds {path}")
        elif package["name"] not in selected:
            selected.append(package["name"])
    if paths and not selected:
        return 4  # nothing to run: the paths are outside every package
    for name in selected:
        options += ["-p", name]
    options = qualified(options, names)
    doc_only = any(o in DOC_ONLY for o in options)
    built = Built()
    if not doc_only:
        built = build(options, environment, packages)
        for executable, owner, kind, target, _ in built.executables:
            say(f"{MARK} executable {os.path.relpath(executable)} {owner} {kind} {target}")
        for library, owner in sorted(built.libraries.items()):
            if owner in names:  # a dependency's library has no doc tests run
                say(f"{MARK} library {library} {owner}")
        for (owner, kind, target), said in sorted(built.failed.items()):
            say(f"{MARK} did not compile {owner} {kind} {target}")
            for text in said:
                sys.stdout.write(text.rstrip("\n") + "\n")
    if no_run:
        return built.status
    if not built.failed:
        command = ["cargo", "test", "--no-fail-fast", *options, *(["--", *tests] if tests else [])]
        sys.stdout.flush()
        return subprocess.run(
            command, env=environment, stderr=subprocess.STDOUT, check=False
        ).returncode
    worst = built.status
    for entry in built.executables:
        worst = max(worst, run_binary(entry, packages, tests, environment))
    broken_libraries = {
        p for (p, kind, _), _ in built.failed.items() if kind in ("lib", "proc-macro")
    }
    if not broken_libraries and not any(o in SELECTIONS for o in options):
        command = [
            "cargo",
            "test",
            "--doc",
            "--no-fail-fast",
            *options,
            *(["--", *tests] if tests else []),
        ]
        sys.stdout.flush()
        done = subprocess.run(command, env=environment, stderr=subprocess.STDOUT, check=False)
        worst = max(worst, done.returncode)
    return worst or 101


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
