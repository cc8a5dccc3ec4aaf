"""swe-go-test: ``go test`` of packages that lie in several modules of one repository.

Copied into the env image (``/opt/swe-env/swe-go-test.py``) and run there by a Go recipe's test
command when the packages a task tests are in more than one module and no ``go.work`` holds
them all (go runs the packages of one module, or one workspace, at a time). Usage::

    python3 swe-go-test.py [go test options ...] TARGET ...

Options (words that start with ``-``; a value joined with ``=``) go to every ``go test``.
A TARGET is a package directory of the repository (``.``, ``./pkg``) or an import path
(``example.com/mod/pkg``, as a test id names it). Each module's targets run in one
``go test`` from the module's directory; the output is go's own (``-json`` events name each
test's package by import path, whichever directory ran it). The exit status is the worst.
A module the repository's ``go.work`` does not use (a plugin module of its own, or one a pull
request adds) runs with ``GOWORK=off``: in the workspace go refuses to run it at all.

Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SKIPPED = {"vendor", "testdata", "node_modules"}


def modules(root: str) -> dict[str, str]:
    """Module path -> its directory (relative to ``root``), read by ``go mod edit -json``."""
    found: dict[str, str] = {}
    for directory, names, files in os.walk(root):
        names[:] = [n for n in names if n not in SKIPPED and not n.startswith(".")]
        if "go.mod" not in files:
            continue
        result = subprocess.run(
            ["go", "mod", "edit", "-json", os.path.join(directory, "go.mod")],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            continue
        path = (json.loads(result.stdout).get("Module") or {}).get("Path")
        if path:
            found[path] = os.path.relpath(directory, root)
    return found


def workspace_uses(root: str) -> set[str] | None:
    """The module directories ``root``'s ``go.work`` uses (relative, normalised), read by
    ``go work edit -json``; None without a workspace (or one go cannot read)."""
    if os.environ.get("GOWORK") == "off" or not os.path.isfile(os.path.join(root, "go.work")):
        return None
    result = subprocess.run(
        ["go", "work", "edit", "-json", os.path.join(root, "go.work")],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    uses = json.loads(result.stdout).get("Use") or []
    return {os.path.normpath(use.get("DiskPath", "")) for use in uses if use.get("DiskPath")}


def module_dir_of(directory: str, directories: set[str]) -> str:
    """The nearest module directory at or above ``directory`` ("." at the top)."""
    while directory not in directories and directory not in ("", "."):
        directory = os.path.dirname(directory)
    return directory or "."


def place(target: str, by_path: dict[str, str]) -> tuple[str, str]:
    """(module directory, the target relative to it as ``./x``) of one target."""
    if target == "." or target.startswith(("./", "../")):
        directory = os.path.normpath(target)
        home = module_dir_of(directory, set(by_path.values()))
        relative = os.path.relpath(directory, home)
        return home, "./" + relative if relative != "." else "."
    best = max(
        (p for p in by_path if target == p or target.startswith(p + "/")), key=len, default=None
    )
    if best is None:
        return ".", target
    rest = target[len(best) :].lstrip("/")
    return by_path[best], "./" + rest if rest else "."


def main(argv: list[str]) -> int:
    options = [a for a in argv if a.startswith("-")]
    targets = [a for a in argv if not a.startswith("-")] or ["./..."]
    by_path = modules(".")
    groups: dict[str, list[str]] = {}
    for target in targets:
        home, relative = place(target, by_path)
        groups.setdefault(home, []).append(relative)
    uses = workspace_uses(".")
    worst = 0
    for home, packages in groups.items():
        sys.stdout.flush()
        outside = uses is not None and home in by_path.values() and home not in uses
        environment = {**os.environ, "GOWORK": "off"} if outside else None
        code = subprocess.call(["go", "test", *options, *packages], cwd=home, env=environment)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
