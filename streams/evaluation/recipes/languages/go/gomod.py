"""What a Go repository's ``go.mod`` and ``go.work`` say, and which toolchain runs it.

Both files are go's own line format (no Python parser exists): directives of one line, or a
block ``directive (`` ... ``)`` of them; ``//`` comments; arguments bare, ``"interpreted"`` or
`` `raw` ``. Read here are what installing and testing need: ``module``, ``go``,
``toolchain``, ``require`` (and which are ``// indirect``), ``replace`` (a local directory
replacement makes the repository a multi-module one), and ``go.work``'s ``use`` directories.
A line that does not read is a problem, never an exception.

Since go 1.21 the ``go`` line is a minimum (an older toolchain refuses the module, or fetches
a newer one through the module proxy with ``GOTOOLCHAIN``), and ``toolchain`` names the one the
module prefers. ``toolchain_plan`` picks the Debian suite whose packaged go is new enough, or
else the exact toolchain to fetch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

_GO_VERSION = re.compile(r"1(\.\d+){0,2}((rc|beta)\d+)?")
_MOD_VERBS = frozenset(
    {"module", "go", "toolchain", "require", "replace", "exclude", "retract", "godebug",
     "tool", "ignore"}
)  # fmt: skip
_WORK_VERBS = frozenset({"go", "toolchain", "use", "replace", "godebug"})
_BLOCK = "("  # the argument of a block's own line
_TOOLCHAIN = re.compile(r"go(1(\.\d+){1,2}((rc|beta)\d+)?)(-\S+)?")


@dataclass
class Requirement:
    path: str
    version: str
    indirect: bool = False


@dataclass
class GoModule:
    """One ``go.mod``."""

    path: str = ""  # the file's path in the tree
    module: str | None = None
    go: str | None = None  # the ``go`` line: 1.21, 1.22.3
    toolchain: str | None = None  # go1.22.3 (the name as written)
    requires: list[Requirement] = field(default_factory=list)
    local_replacements: dict[str, str] = field(default_factory=dict)  # module -> directory
    problems: list[str] = field(default_factory=list)


@dataclass
class GoWork:
    """A ``go.work``: the module directories of the workspace."""

    go: str | None = None
    toolchain: str | None = None
    uses: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _words(line: str, where: str, problems: list[str]) -> list[str]:
    """The arguments of a directive line, quotes read, its ``//`` comment cut."""
    words: list[str] = []
    at = 0
    while at < len(line):
        char = line[at]
        if char.isspace():
            at += 1
        elif line.startswith("//", at):
            break
        elif char == '"':
            end = at + 1
            while end < len(line) and line[end] != '"':
                end += 2 if line[end] == "\\" else 1
            if end >= len(line):
                problems.append(f"{where}: an unterminated string")
                return words
            try:
                words.append(json.loads(line[at : end + 1]))
            except ValueError:
                problems.append(f"{where}: a string go would not read")
                return words
            at = end + 1
        elif char == "`":
            end = line.find("`", at + 1)
            if end < 0:
                problems.append(f"{where}: an unterminated raw string")
                return words
            words.append(line[at + 1 : end])
            at = end + 1
        else:
            end = at
            while end < len(line) and not line[end].isspace() and not line.startswith("//", end):
                end += 1
            words.append(line[at:end])
            at = end
    return words


def _directives(text: str, where: str, problems: list[str]) -> list[tuple[str, list[str], str]]:
    """(verb, arguments, the line's comment) of every directive, blocks unfolded."""
    found = []
    block: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        place = f"{where}:{number}"
        comment = line.split("//", 1)[1].strip() if "//" in line else ""
        if block is not None:
            if line.startswith(")"):
                block = None
                continue
            words = _words(line, place, problems)
            if words:
                found.append((block, words, comment))
            continue
        words = _words(line, place, problems)
        if not words:
            continue
        if words[-1] == "(" and len(words) == 2:
            block = words[0]
            found.append((block, [_BLOCK], ""))  # the block itself: its verb is checked
            continue
        found.append((words[0], words[1:], comment))
    if block is not None:
        problems.append(f"{where}: the {block} block is not closed")
    return found


def read_go_mod(text: str, path: str = "go.mod") -> GoModule:
    """The facts of a ``go.mod``."""
    module = GoModule(path=path)
    problems = module.problems
    for verb, args, comment in _directives(text, path, problems):
        if args == [_BLOCK]:
            if verb not in _MOD_VERBS:
                problems.append(f"{path}: unknown directive {verb[:40]!r}")
        elif verb == "module" and len(args) == 1:
            module.module = args[0]
        elif verb == "go" and len(args) == 1:
            if _GO_VERSION.fullmatch(args[0]):
                module.go = args[0]
            else:
                problems.append(f"{path}: go {args[0]!r} is no Go version")
        elif verb == "toolchain" and len(args) == 1:
            if _TOOLCHAIN.fullmatch(args[0]) or args[0] == "default":
                module.toolchain = args[0]
            else:
                problems.append(f"{path}: toolchain {args[0]!r} is no toolchain name")
        elif verb == "require" and len(args) == 2:
            indirect = comment == "indirect" or comment.startswith("indirect;")
            module.requires.append(Requirement(args[0], args[1], indirect))
        elif verb == "replace" and "=>" in args:
            left, right = args[: args.index("=>")], args[args.index("=>") + 1 :]
            if left and len(right) == 1 and right[0].startswith(("./", "../", "/")):
                module.local_replacements[left[0]] = right[0]
        elif verb in ("module", "go", "toolchain", "require"):
            problems.append(f"{path}: {verb} with {len(args)} arguments")
        elif verb not in _MOD_VERBS:
            problems.append(f"{path}: unknown directive {verb[:40]!r}")
    return module


def read_go_work(text: str, path: str = "go.work") -> GoWork:
    """The facts of a ``go.work``."""
    work = GoWork()
    for verb, args, _ in _directives(text, path, work.problems):
        if args == [_BLOCK]:
            if verb not in _WORK_VERBS:
                work.problems.append(f"{path}: unknown directive {verb[:40]!r}")
        elif verb == "go" and len(args) == 1:
            work.go = args[0]
        elif verb == "toolchain" and len(args) == 1:
            work.toolchain = args[0]
        elif verb == "use" and len(args) == 1:
            work.uses.append(args[0].removeprefix("./").rstrip("/") or ".")
        elif verb not in _WORK_VERBS:
            work.problems.append(f"{path}: unknown directive {verb[:40]!r}")
    return work


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class ToolchainPlan:
    """Which Debian suite's go runs the module, and the toolchain to fetch over it (the
    ``GOTOOLCHAIN`` value; None: the suite's own go is new enough)."""

    suite: str
    fetch: str | None


def toolchain_plan(
    go: str | None, toolchain: str | None, suites: dict[str, str]
) -> ToolchainPlan | None:
    """The oldest suite whose packaged go (``suites``: suite -> go version, oldest first) is
    at least what the module needs: its ``toolchain`` when named, else its ``go`` line. When
    none is, the newest suite and the exact toolchain to fetch through the module proxy
    (go 1.21 and later fetch one; an older packaged go cannot, so it must be 1.21 or newer).
    None when no suite is given."""
    if not suites:
        return None
    wanted_name = toolchain if toolchain and toolchain != "default" else None
    match = _TOOLCHAIN.fullmatch(wanted_name) if wanted_name else None
    needed = _version(match.group(1)) if match else _version(go) if go else None
    if needed is None:
        return ToolchainPlan(next(iter(suites)), None)
    for suite, packaged in suites.items():
        version = _version(packaged)
        if version is not None and version >= needed:
            return ToolchainPlan(suite, None)
    newest = list(suites)[-1]
    if wanted_name:
        return ToolchainPlan(newest, wanted_name)
    # from 1.21 on, a go line of two parts is a language version whose first release is
    # 1.N.0 (there is no toolchain go1.N to fetch)
    text = go or ""
    name = f"go{text}.0" if needed >= Version("1.21") and text.count(".") == 1 else f"go{text}"
    return ToolchainPlan(newest, name)
