"""tox's configuration: tox.ini, setup.cfg ``[tox:tox]``, pyproject.toml ``[tool.tox]`` (legacy INI
or native TOML) and tox.toml, read like tox does: the ``[testenv]`` fallback, factor
conditions, ``{...}`` substitutions and env-list expansion (``py3{8,9}-django{3,4}``), for the
environment that runs the tests.
"""

from __future__ import annotations

import itertools
import posixpath
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.languages.python.common import (
    dedupe,
    nonblank_lines,
    sorted_versions,
    split_list,
    truthy,
)
from streams.evaluation.recipes.languages.python.requirements import pip_option
from streams.evaluation.recipes.sources.loaders import (
    Ini,
    load_ini,
    load_toml,
    parse_ini,
    string_list,
    table_at,
)
from streams.evaluation.recipes.sources.tree import SourceTree

MAX_TOX_ENVS = 1000
_MAX_TOX_LOOKUPS = 2_000


@dataclass(frozen=True)
class ToxFacts:
    """The tox configuration and the settings of its test environment ``env_name``."""

    path: str
    envlist: list[str] = field(default_factory=list)
    pythons: list[str] = field(default_factory=list)
    env_name: str | None = None
    deps: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    constraint_files: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)
    dependency_groups: list[str] = field(default_factory=list)
    commands_pre: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    setenv: dict[str, str] = field(default_factory=dict)
    allowlist_externals: list[str] = field(default_factory=list)
    skip_install: bool = False
    usedevelop: bool = False
    changedir: str | None = None


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    index = start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


_TOX_PLAIN = {
    "toxinidir": ".",
    "tox_root": ".",
    "envpython": "python",
    "env_python": "python",
    "envbindir": "",
    "env_bin_dir": "",
    "/": "/",
    ":": ":",
}


def _substitute(text: str, lookup: Callable[[str], str | None]) -> str:
    """Replaces tox ``{...}`` substitutions; ``lookup`` returns None to keep one as written."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] in {"{", "}", "#"}:
            out.append(text[index + 1])
            index += 2
            continue
        if char != "{":
            out.append(char)
            index += 1
            continue
        end = _matching_brace(text, index)
        if end is None:
            out.append(text[index:])
            break
        replacement = lookup(text[index + 1 : end])
        if replacement is None:
            out.append(text[index : end + 1])
        else:
            following = text[end + 1 : end + 2]
            if replacement in {"", "."} and following == "/":
                end += 1  # {toxinidir}/tests -> tests
                replacement = ""
            elif replacement == "" and following == " " and (not out or out[-1] == " "):
                end += 1  # "pytest {posargs} -x" -> "pytest -x"
            out.append(replacement)
        index = end + 1
    return "".join(out)


def _split_top_level(text: str) -> list[str]:
    """Splits an env list at commas and newlines outside braces."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in ",\n" and depth == 0:
            items.append("".join(current))
            current = []
            continue
        depth += 1 if char == "{" else -1 if char == "}" and depth else 0
        current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _alternatives(inner: str) -> list[str]:
    found: list[str] = []
    for piece in inner.split(","):
        piece = piece.strip()
        low, dash, high = piece.partition("-")
        if dash and low.isdigit() and high.isdigit() and int(high) - int(low) < MAX_TOX_ENVS:
            found.extend(str(number) for number in range(int(low), int(high) + 1))
        else:
            found.append(piece)
    return found


def expand_tox_envs(text: str) -> list[str]:
    """``py3{8,9}-django{3,4}`` -> py38-django3, py38-django4, py39-django3, py39-django4
    (also ``{310-312}`` ranges and empty alternatives such as ``{,-tf}``)."""
    return _expand_tox_envs(text)[0]


def _expand_tox_envs(text: str) -> tuple[list[str], bool]:
    """The expanded env names, and False when some item had too many to expand."""
    envs: list[str] = []
    complete = True
    for item in _split_top_level(text):
        pieces: list[list[str]] = []
        index = 0
        while index < len(item):
            start = item.find("{", index)
            end = _matching_brace(item, start) if start >= 0 else None
            if start < 0 or end is None:
                pieces.append([item[index:]])
                break
            pieces.append([item[index:start]])
            pieces.append(_alternatives(item[start + 1 : end]))
            index = end + 1
        count = 1
        for options in pieces:
            count *= max(len(options), 1)
            if count > MAX_TOX_ENVS:
                break
        if count + len(envs) > MAX_TOX_ENVS:
            complete = False
            continue
        for combination in itertools.product(*pieces):
            name = "".join(combination).strip("-")
            while "--" in name:
                name = name.replace("--", "-")
            if name:
                envs.append(name)
    return dedupe(envs), complete


def _factor_python(factor: str) -> str | None:
    """``py38``/``py3.10``/``3.10`` -> the CPython version; None otherwise."""
    text = factor[2:] if factor.startswith("py") and not factor.startswith("pypy") else factor
    if "." in text:
        major, _, minor = text.partition(".")
        if major.isdigit() and minor.isdigit():
            return f"{int(major)}.{int(minor)}"
        return None
    if factor.startswith("py") and text.isdigit() and len(text) >= 2:
        return f"{text[0]}.{int(text[1:])}"
    return None


def looks_python_env(env: str) -> bool:
    for factor in env.split("-"):
        if factor in {"py", "python", "py3", "py2"} or factor.startswith("pypy"):
            return True
        if _factor_python(factor):
            return True
    return False


def _env_pythons(envs: Iterable[str]) -> list[str]:
    found = (_factor_python(factor) for env in envs for factor in env.split("-"))
    return sorted_versions(version for version in found if version)


def _representative_env(envlist: list[str]) -> str:
    for env in envlist:
        if any(_factor_python(factor) for factor in env.split("-")):
            return env
    return next((env for env in envlist if looks_python_env(env)), "py")


_CONDITION_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,!{}"
)


def _condition_end(line: str) -> int:
    """Where a factor condition ends, as tox finds it: the first ``:`` followed by whitespace
    or the end of the line (``py38: pytest``); -1 when there is none, so ``py38:pytest`` and
    ``https://...`` hold no condition."""
    index = line.find(":")
    while index >= 0 and index + 1 < len(line) and not line[index + 1].isspace():
        index = line.find(":", index + 1)
    return index


def _factor_condition(line: str) -> tuple[str, str] | None:
    index = _condition_end(line)
    if index <= 0:
        return None
    condition, rest = line[:index].strip(), line[index + 1 :]
    if not condition or condition.startswith("-"):
        return None
    if not set(condition) <= _CONDITION_CHARS or condition.count("{") != condition.count("}"):
        return None
    if condition.startswith("{") and _matching_brace(condition, 0) == len(condition) - 1:
        return None  # a whole substitution such as {env:X:y}, not a condition
    return condition, rest.strip()


def _condition_matches(condition: str, factors: set[str]) -> bool:
    for alternative in expand_tox_envs(condition):
        wanted = alternative.split("-")
        if all(
            (factor[1:] not in factors) if factor.startswith("!") else (factor in factors)
            for factor in wanted
        ):
            return True
    return False


def _strip_tox_comments(value: str) -> list[str]:
    lines = []
    for line in value.splitlines():
        index = 0
        while True:
            index = line.find("#", index)
            if index < 0:
                break
            if index > 0 and line[index - 1] == "\\":
                index += 1
                continue
            if index == 0 or line[index - 1] in " \t":
                line = line[:index]
                break
            index += 1
        lines.append(line)
    joined: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\") and not line.rstrip().endswith("\\\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        joined.append(pending + (line.strip() if pending else line))
        pending = ""
    if pending:
        joined.append(pending)
    return joined


class _ToxIni:
    """tox's INI dialect: ``[testenv]`` fallback, factor conditions, substitutions."""

    def __init__(self, parser: Ini, path: str, core: str, tree: SourceTree):
        self.parser = parser
        self.path = path
        self.core = core
        self.tree = tree
        self.setenv: dict[str, str] = {}
        self.lookups = 0

    def raw(self, section: str, key: str) -> str | None:
        for name in (section, "testenv") if section.startswith("testenv:") else (section,):
            if self.parser.has_option(name, key):
                return self.parser.get(name, key)
        return None

    def value(self, section: str, keys: tuple[str, ...], env: str, depth: int = 0) -> str | None:
        raw = next((v for v in (self.raw(section, key) for key in keys) if v is not None), None)
        if raw is None:
            return None
        factors = set(env.split("-"))
        kept: list[str] = []
        for line in _strip_tox_comments(raw):
            condition = _factor_condition(line) if env else None
            if condition is not None:
                if not _condition_matches(condition[0], factors):
                    continue
                line = condition[1]
            kept.append(line)
        text = "\n".join(kept)
        return _substitute(text, lambda inner: self._lookup(inner, env, depth))

    def _lookup(self, inner: str, env: str, depth: int) -> str | None:
        if inner == "posargs" or inner.startswith("posargs:"):
            return ""
        if inner in _TOX_PLAIN:
            return _TOX_PLAIN[inner]
        if inner.startswith("env:"):
            name, _, default = inner[4:].partition(":")
            if name in self.setenv:
                return self.setenv[name]
            return _substitute(default, lambda sub: self._lookup(sub, env, depth + 1))
        if inner.startswith("tty:"):
            return inner.rsplit(":", 1)[-1]
        if inner.startswith("[") and "]" in inner:
            section, _, key = inner[1:].partition("]")
            self.lookups += 1
            if depth > 10 or self.lookups > _MAX_TOX_LOOKUPS:
                self.tree.problem(f"{self.path}: substitution {{{inner}}} nests too deep")
                return ""
            value = self.value(section or self.core, (key,), env, depth + 1)
            if value is None:
                self.tree.problem(f"{self.path}: substitution {{{inner}}} refers to nothing")
                return ""
            return value
        return None


def _tox_from_ini(tree: SourceTree, parser: Ini, path: str, core: str) -> ToxFacts | None:
    sections = parser.sections()
    env_sections = [s for s in sections if s == "testenv" or s.startswith("testenv:")]
    if not parser.has_section(core) and not env_sections:
        return None
    tox = _ToxIni(parser, path, core, tree)
    envlist_text = tox.value(core, ("env_list", "envlist"), "") or ""
    envlist, complete = _expand_tox_envs(envlist_text)
    if not complete:
        tree.problem(f"{path}: envlist has too many environments to expand; part skipped")
    section = "testenv"
    env_name = _representative_env(envlist)
    if tox.raw("testenv", "commands") is None:
        for candidate in env_sections:
            names = expand_tox_envs(candidate.partition(":")[2])
            python_names = [name for name in names if looks_python_env(name)]
            if candidate != "testenv" and python_names:
                section, env_name = candidate, python_names[0]
                break
    if section == "testenv" and not parser.has_section("testenv"):
        return ToxFacts(path, envlist, _env_pythons(envlist))
    setenv: dict[str, str] = {}
    for line in nonblank_lines(tox.value(section, ("setenv", "set_env"), env_name) or ""):
        key, equals, value = line.partition("=")
        if equals and key.strip():
            setenv[key.strip()] = value.strip()
        elif line.startswith("file|"):
            tree.problem(f"{path}: setenv {line!r} not read")
    tox.setenv = setenv
    return _tox_facts(
        path, envlist, env_name, setenv, lambda keys: tox.value(section, keys, env_name)
    )


def _tox_facts(
    path: str,
    envlist: list[str],
    env_name: str,
    setenv: dict[str, str],
    get: Callable[[tuple[str, ...]], str | None],
) -> ToxFacts:
    deps: list[str] = []
    requirement_files: list[str] = []
    constraint_files: list[str] = []
    for line in nonblank_lines(get(("deps",)) or ""):
        if line.startswith("-"):
            option, value = pip_option(line)
            if option in {"-r", "--requirement"}:
                requirement_files.append(posixpath.normpath(value))
                continue
            if option in {"-c", "--constraint"}:
                constraint_files.append(posixpath.normpath(value))
                continue
        deps.append(line)
    return ToxFacts(
        path=path,
        envlist=envlist,
        pythons=_env_pythons(envlist),
        env_name=env_name,
        deps=deps,
        requirement_files=requirement_files,
        constraint_files=constraint_files,
        extras=split_list(get(("extras",)) or ""),
        dependency_groups=split_list(get(("dependency_groups",)) or ""),
        commands_pre=_tox_commands(get(("commands_pre",)) or ""),
        commands=_tox_commands(get(("commands",)) or ""),
        setenv=setenv,
        allowlist_externals=split_list(
            get(("allowlist_externals", "whitelist_externals")) or "", ", \t"
        ),
        skip_install=truthy(get(("skip_install",))),
        usedevelop=truthy(get(("usedevelop", "use_develop"))),
        changedir=(get(("changedir", "change_dir")) or "").strip() or None,
    )


def _tox_commands(value: str) -> list[str]:
    commands = []
    for line in nonblank_lines(value):
        if line.startswith("- "):
            line = line[2:].strip()
        if line:
            commands.append(line)
    return commands


def _toml_command(
    command: Any, lookup: Callable[[str], str | None], where: str, tree: SourceTree
) -> str:
    if isinstance(command, str):
        return _substitute(command, lookup).strip()
    if not isinstance(command, list):
        tree.problem(f"{where}: command {command!r} not understood")
        return ""
    args: list[str] = []
    for item in command:
        if isinstance(item, str):
            args.append(_substitute(item, lookup))
        elif isinstance(item, dict) and item.get("replace") == "posargs":
            continue
        elif isinstance(item, dict) and item.get("replace") == "env":
            default = item.get("default")
            args.extend(string_list(default))
        else:
            tree.problem(f"{where}: command item {item!r} not understood")
    return shlex.join(args)


def _tox_from_toml(tree: SourceTree, config: dict[str, Any], path: str) -> ToxFacts:
    envlist = dedupe(string_list(config.get("env_list", config.get("envlist"))))
    base = table_at(config, "env_run_base")
    envs = table_at(config, "env")
    table, env_name = base, _representative_env(envlist)
    if not base.get("commands"):
        for name, env_table in envs.items():
            if isinstance(env_table, dict) and looks_python_env(name):
                table, env_name = {**base, **env_table}, name
                break

    def lookup(inner: str) -> str | None:
        if inner == "posargs" or inner.startswith("posargs:"):
            return ""
        if inner.startswith("env:"):
            return inner[4:].partition(":")[2]
        return _TOX_PLAIN.get(inner)

    setenv = {
        str(k): _substitute(v, lookup)
        for k, v in table_at(table, "set_env").items()
        if isinstance(v, str)
    }

    def get(keys: tuple[str, ...]) -> str | None:
        for key in keys:
            value = table.get(key)
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, str):
                return _substitute(value, lookup)
            if isinstance(value, list) and key in {"commands", "commands_pre"}:
                lines = (_toml_command(c, lookup, f"{path} {key}", tree) for c in value)
                return "\n".join(line for line in lines if line)
            if isinstance(value, list):
                return "\n".join(_substitute(item, lookup) for item in string_list(value))
        return None

    return _tox_facts(path, envlist, env_name, setenv, get)


def read_tox(tree: SourceTree, pyproject: dict[str, Any]) -> ToxFacts | None:
    if tree.has("tox.ini"):
        parser = load_ini(tree, "tox.ini")
        facts = _tox_from_ini(tree, parser, "tox.ini", "tox") if parser else None
        if facts is not None or parser is None:
            return facts
    cfg = load_ini(tree, "setup.cfg") if tree.has("setup.cfg") else None
    if cfg is not None and cfg.has_section("tox:tox"):
        return _tox_from_ini(tree, cfg, "setup.cfg", "tox:tox")
    tool_tox = table_at(pyproject, "tool", "tox")
    legacy = tool_tox.get("legacy_tox_ini")
    if isinstance(legacy, str):
        parser = parse_ini(legacy, "pyproject.toml [tool.tox] legacy_tox_ini", tree)
        return _tox_from_ini(tree, parser, "pyproject.toml", "tox") if parser else None
    if tool_tox:
        return _tox_from_toml(tree, tool_tox, "pyproject.toml")
    if tree.has("tox.toml"):
        doc = load_toml(tree, "tox.toml")
        return _tox_from_toml(tree, doc, "tox.toml") if doc is not None else None
    return None
