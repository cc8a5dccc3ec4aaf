"""What a Python repository's own files say about how to install and test it.

``read_project(names, read)`` gets the file names of a tree and a reader (path -> bytes, or None)
and returns ``ProjectFacts``. It is pure: no I/O of its own, nothing executed. Each file is read
by its own parser: ``tomllib`` (pyproject.toml, tox.toml, pytest.toml), ``configparser``
(setup.cfg, tox.ini, pytest.ini, .gitmodules; interpolation off), ``ast`` (setup.py, noxfile.py:
literal arguments only), the YAML safe loader (CI files) and ``packaging`` (requirements,
specifiers, markers). What a file asks for that no reader here understands is written to
``problems``, never guessed; a malformed, huge or hostile file becomes a problem, never an
exception.
"""

from __future__ import annotations

import ast
import configparser
import itertools
import posixpath
import re
import shlex
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

FileReader = Callable[[str], bytes | None]

MAX_FILE_BYTES = 1 << 20
MAX_EXTENSION_SOURCES = 20
MAX_REQUIREMENTS_FILES = 100
MAX_TOX_ENVS = 1000
_MAX_DEPTH = 30
_MAX_EVAL_STEPS = 50_000
_MAX_LITERAL_SIZE = 100_000
_MAX_TOX_LOOKUPS = 2_000

REQUIREMENTS_KINDS = ("test", "dev", "docs", "lint", "typing", "runtime", "build", "other")

# -- the facts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequirementsFile:
    """A pip requirements file: what it asks for, the files it includes (``-r``/``-c``,
    relative to the tree root) and whether it installs anything editable (``-e``)."""

    path: str
    kind: str
    requirements: list[str] = field(default_factory=list)
    referenced_files: list[str] = field(default_factory=list)
    has_editable: bool = False
    constraint_files: list[str] = field(default_factory=list)  # those of -c among the above


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


@dataclass(frozen=True)
class NoxSession:
    """A ``@nox.session``; ``installs`` and ``commands`` are read for test sessions only."""

    name: str
    pythons: list[str] = field(default_factory=list)
    installs: list[list[str]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NoxFacts:
    path: str
    sessions: list[NoxSession] = field(default_factory=list)


@dataclass(frozen=True)
class CIFacts:
    """What the CI files run, taken from the jobs that run tests (all jobs when none does)."""

    files: list[str] = field(default_factory=list)
    python_versions: list[str] = field(default_factory=list)
    install_commands: list[str] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)
    pre_test_commands: list[str] = field(default_factory=list)
    test_commands: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Submodule:
    name: str
    path: str
    url: str


@dataclass(frozen=True)
class PytestConfig:
    """The one file pytest takes its configuration from, by pytest's own precedence."""

    path: str
    addopts: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    testpaths: list[str] = field(default_factory=list)
    minversion: str | None = None
    required_plugins: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TestRunnerHints:
    __test__ = False  # not a pytest test class

    pytest_used: bool = False
    unittest_only: bool = False
    test_dirs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProjectFacts:
    build_backend: str | None = None
    build_requires: list[str] = field(default_factory=list)
    project_name: str | None = None
    requires_python: str | None = None
    classifier_pythons: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    extras: dict[str, list[str]] = field(default_factory=dict)
    dependency_groups: dict[str, list[str]] = field(default_factory=dict)
    poetry_groups: dict[str, list[str]] = field(default_factory=dict)
    pdm_dev_groups: dict[str, list[str]] = field(default_factory=dict)
    tests_require: list[str] = field(default_factory=list)
    requirements_files: list[RequirementsFile] = field(default_factory=list)
    tox: ToxFacts | None = None
    nox: NoxFacts | None = None
    ci: CIFacts = field(default_factory=CIFacts)
    scm_version: bool = False
    c_extensions: bool = False
    extension_sources: list[str] = field(default_factory=list)
    submodules: list[Submodule] = field(default_factory=list)
    pytest_config: PytestConfig | None = None
    test_runner_hints: TestRunnerHints = field(default_factory=TestRunnerHints)
    config_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# -- the tree ----------------------------------------------------------------------------------


class _Tree:
    """The file names and a capped, cached, never-raising reader; collects the problems."""

    def __init__(self, names: Iterable[str], read: FileReader):
        cleaned = {name[2:] if name.startswith("./") else name for name in names}
        self.names = sorted(name for name in cleaned if name and not name.endswith("/"))
        self.name_set = set(self.names)
        self._read = read
        self._texts: dict[str, str | None] = {}
        self.problems: list[str] = []
        self.toml_cache: dict[str, dict[str, Any] | None] = {}
        self.ini_cache: dict[str, configparser.RawConfigParser | None] = {}

    def has(self, path: str) -> bool:
        return path in self.name_set

    def problem(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)

    def text(self, path: str) -> str | None:
        if path in self._texts:
            return self._texts[path]
        self._texts[path] = None
        if not self.has(path):
            return None
        try:
            data = self._read(path)
        except Exception as exc:  # a reader that fails is one unreadable file, not a crash
            self.problem(f"{path}: could not be read ({type(exc).__name__})")
            return None
        if data is None:
            self.problem(f"{path}: could not be read")
            return None
        if len(data) > MAX_FILE_BYTES:
            self.problem(f"{path}: larger than {MAX_FILE_BYTES} bytes; not read")
            return None
        text = data.decode("utf-8-sig", errors="replace")
        self._texts[path] = text
        return text


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first[:160]


def _load_toml(tree: _Tree, path: str) -> dict[str, Any] | None:
    if path in tree.toml_cache:
        return tree.toml_cache[path]
    text = tree.text(path)
    doc: dict[str, Any] | None = None
    if text is not None:
        try:
            doc = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError, MemoryError, ValueError) as exc:
            tree.problem(f"{path}: not valid TOML ({_short(exc)})")
    tree.toml_cache[path] = doc
    return doc


class _Ini(configparser.RawConfigParser):
    """configparser without interpolation, keys kept as written, duplicates tolerated."""

    def __init__(self) -> None:
        super().__init__(
            strict=False,
            default_section="\x00default",
            comment_prefixes=("#", ";"),
            inline_comment_prefixes=None,
        )

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def _parse_ini(text: str, where: str, tree: _Tree) -> _Ini | None:
    parser = _Ini()
    try:
        parser.read_string(text, source=where)
    except (configparser.Error, RecursionError, MemoryError, ValueError) as exc:
        tree.problem(f"{where}: not valid INI ({_short(exc)})")
        return None
    return parser


def _load_ini(tree: _Tree, path: str) -> _Ini | None:
    if path in tree.ini_cache:
        cached = tree.ini_cache[path]
        return cached if isinstance(cached, _Ini) else None
    text = tree.text(path)
    parser = _parse_ini(text, path, tree) if text is not None else None
    tree.ini_cache[path] = parser
    return parser


def _load_yaml(tree: _Tree, path: str) -> Any:
    text = tree.text(path)
    if text is None:
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the safe loader, in C if built
    try:
        return yaml.load(text, Loader=loader)
    except (yaml.YAMLError, RecursionError, MemoryError, ValueError) as exc:
        tree.problem(f"{path}: not valid YAML ({_short(exc)})")
        return None


def _parse_python(tree: _Tree, path: str) -> ast.Module | None:
    text = tree.text(path)
    if text is None:
        return None
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        tree.problem(f"{path}: not valid Python ({type(exc).__name__}: {_short(exc)})")
        return None


# -- small helpers -------------------------------------------------------------------------------


def _table(doc: Any, *keys: str) -> dict[str, Any]:
    value = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    """A list of strings from a TOML/YAML value: a string, or the strings of a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def _sorted_versions(versions: Iterable[str]) -> list[str]:
    return sorted(set(versions), key=_version_key)


def _requirement(text: str, where: str, tree: _Tree) -> str | None:
    text = text.strip()
    if not text:
        return None
    try:
        Requirement(text)
    except InvalidRequirement:
        tree.problem(f"{where}: {text[:120]!r} is not a PEP 508 requirement; skipped")
        return None
    return text


def _requirements(values: Iterable[str], where: str, tree: _Tree) -> list[str]:
    found = (_requirement(value, where, tree) for value in values)
    return [req for req in found if req]


def requirement_name(text: str) -> str | None:
    """The canonical name a requirement string names, or None when it is not one."""
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _classifier_python(classifier: str) -> str | None:
    parts = [part.strip() for part in classifier.split("::")]
    if len(parts) != 3 or parts[0] != "Programming Language" or parts[1] != "Python":
        return None
    pieces = parts[2].split(".")
    if len(pieces) == 2 and all(piece.isdigit() for piece in pieces):
        return parts[2]
    return None


def _lines(value: str) -> list[str]:
    stripped = (line.strip() for line in value.splitlines())
    return [line for line in stripped if line and not line.startswith("#")]


def _split_list(value: str, separators: str = ",") -> list[str]:
    items = [value]
    for separator in ["\n", *separators]:
        items = [piece for item in items for piece in item.split(separator)]
    return [item.strip() for item in items if item.strip()]


def _bool(value: str | None) -> bool:
    return value is not None and value.strip().lower() in {"1", "true", "yes", "on"}


def _split_words(text: str, where: str, tree: _Tree) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        tree.problem(f"{where}: unbalanced quotes in {text[:80]!r}; split on spaces")
        return text.split()


# -- poetry constraints ------------------------------------------------------------------------

_POETRY_OPERATORS = ("===", "==", "!=", "<=", ">=", "~=", "<", ">", "=", "^", "~")


def _release(text: str) -> list[int] | None:
    try:
        return list(Version(text).release)
    except InvalidVersion:
        return None


def _bumped(parts: list[int], index: int) -> str:
    upper = [*parts[:index], parts[index] + 1] + [0] * (len(parts) - index - 1)
    return ".".join(str(part) for part in upper)


def _poetry_clause(clause: str) -> list[str] | None:
    if clause == "*":
        return []
    if clause.startswith("~="):
        return [clause]
    if clause[0] in "^~":
        version = clause[1:].strip()
        parts = _release(version)
        if not parts:
            return None
        if clause[0] == "^":
            index = next((i for i, part in enumerate(parts) if part), len(parts) - 1)
        else:
            index = 1 if len(parts) > 1 else 0
        return [f">={version}", f"<{_bumped(parts, index)}"]
    for operator in ("===", "==", "!=", "<=", ">=", "<", ">"):
        if clause.startswith(operator):
            return [operator + clause[len(operator) :].strip()]
    if clause.startswith("="):
        return ["==" + clause[1:].strip()]
    return ["==" + clause.replace(".x", ".*")]


def poetry_constraint(text: str) -> str | None:
    """A poetry version constraint as a PEP 440 specifier ("" for any), None if not expressible
    (``||`` alternatives, malformed versions)."""
    text = text.strip()
    if text in {"", "*"}:
        return ""
    if "|" in text:
        return None
    clauses: list[str] = []
    for part in text.split(","):
        pending = ""
        for token in part.split():
            if token in _POETRY_OPERATORS:
                pending += token
                continue
            converted = _poetry_clause(pending + token)
            if converted is None:
                return None
            clauses.extend(converted)
            pending = ""
        if pending:
            return None
    result = ",".join(clauses)
    try:
        SpecifierSet(result)
    except InvalidSpecifier:
        return None
    return result


def _python_marker(constraint: str) -> str | None:
    spec = poetry_constraint(constraint)
    if spec is None:
        return None
    terms = []
    for clause in (piece for piece in spec.split(",") if piece):
        try:
            specifier = Specifier(clause)
        except InvalidSpecifier:
            return None
        release = specifier.version.removesuffix(".*").split(".")
        variable = "python_full_version" if len(release) >= 3 else "python_version"
        terms.append(f'{variable} {specifier.operator} "{specifier.version}"')
    return " and ".join(terms)


def _poetry_requirements(name: str, spec: Any, where: str, tree: _Tree) -> tuple[list[str], bool]:
    """PEP 508 strings for one poetry dependency, and whether it is optional."""
    if isinstance(spec, list):
        found: list[str] = []
        optional = False
        for item in spec:
            if isinstance(item, list):
                tree.problem(f"{where}: {name} has nested constraint lists; skipped")
                continue
            reqs, item_optional = _poetry_requirements(name, item, where, tree)
            found.extend(reqs)
            optional = optional or item_optional
        return found, optional
    if isinstance(spec, str):
        spec = {"version": spec}
    if not isinstance(spec, dict):
        tree.problem(f"{where}: {name} = {spec!r} not understood; skipped")
        return [], False
    optional = spec.get("optional") is True
    for source in ("git", "path", "url", "file"):
        if source in spec:
            tree.problem(f"{where}: {name} comes from {source} {spec[source]!r}; skipped")
            return [], optional
    constraint = poetry_constraint(str(spec.get("version", "*")))
    if constraint is None:
        tree.problem(f"{where}: {name} version {spec.get('version')!r} not convertible; skipped")
        return [], optional
    markers = []
    if isinstance(spec.get("python"), str):
        marker = _python_marker(spec["python"])
        if marker is None:
            tree.problem(f"{where}: {name} python {spec['python']!r} not convertible; skipped")
            return [], optional
        if marker:
            markers.append(marker)
    if isinstance(spec.get("platform"), str):
        markers.append(f'sys_platform == "{spec["platform"]}"')
    if isinstance(spec.get("markers"), str):
        markers.append(spec["markers"])
    extras = _strings(spec.get("extras"))
    text = name + (f"[{','.join(extras)}]" if extras else "") + constraint
    if markers:
        joined = " and ".join(f"({m})" for m in markers) if len(markers) > 1 else markers[0]
        text += f" ; {joined}"
    req = _requirement(text, where, tree)
    return ([req] if req else []), optional


# -- pyproject.toml ------------------------------------------------------------------------------


@dataclass
class _Acc:
    """What the readers found so far (mutable; frozen into ProjectFacts at the end)."""

    build_backend: str | None = None
    build_requires: list[str] = field(default_factory=list)
    project_name: str | None = None
    requires_python: str | None = None
    classifier_pythons: list[str] = field(default_factory=list)
    dependencies: list[str] | None = None
    extras: dict[str, list[str]] = field(default_factory=dict)
    dependency_groups: dict[str, list[str]] = field(default_factory=dict)
    poetry_groups: dict[str, list[str]] = field(default_factory=dict)
    pdm_dev_groups: dict[str, list[str]] = field(default_factory=dict)
    tests_require: list[str] = field(default_factory=list)
    setup_requires: list[str] = field(default_factory=list)
    scm_version: bool = False
    c_extensions: bool = False
    test_suite: bool = False
    extra_requirement_refs: list[str] = field(default_factory=list)

    def set_dependencies(self, deps: list[str]) -> None:
        if self.dependencies is None:
            self.dependencies = deps

    def add_extras(self, extras: Mapping[str, list[str]]) -> None:
        for name, reqs in extras.items():
            self.extras.setdefault(name, reqs)

    def add_classifiers(self, classifiers: Iterable[str]) -> None:
        for classifier in classifiers:
            version = _classifier_python(classifier)
            if version and version not in self.classifier_pythons:
                self.classifier_pythons.append(version)


_SCM_PACKAGES = frozenset(
    canonicalize_name(name)
    for name in (
        "setuptools_scm",
        "hatch-vcs",
        "poetry-dynamic-versioning",
        "versioneer",
        "flit_scm",
        "setuptools-git-versioning",
        "uv-dynamic-versioning",
        "pbr",
        "vcversioner",
        "dunamai",
    )
)
_COMPILING_BACKENDS = ("mesonpy", "scikit_build_core", "maturin", "setuptools_rust")


def _read_pyproject(tree: _Tree, acc: _Acc) -> dict[str, Any]:
    doc = _load_toml(tree, "pyproject.toml") or {}
    build = _table(doc, "build-system")
    if isinstance(build.get("build-backend"), str):
        acc.build_backend = build["build-backend"]
    acc.build_requires = _requirements(_strings(build.get("requires")), "build-system", tree)
    if acc.build_backend and acc.build_backend.startswith(_COMPILING_BACKENDS):
        acc.c_extensions = True
    _read_pep621(tree, acc, doc)
    _read_poetry(tree, acc, doc)
    groups = _read_dependency_groups(tree, _table(doc, "dependency-groups"))
    uv_dev = _strings(_table(doc, "tool", "uv").get("dev-dependencies"))
    if uv_dev:  # uv's legacy dev-dependencies are part of its "dev" group
        dev = groups.setdefault("dev", [])
        dev.extend(_requirements(uv_dev, "tool.uv.dev-dependencies", tree))
    acc.dependency_groups = groups
    pdm = _table(doc, "tool", "pdm")
    is_pdm = bool(pdm) or (acc.build_backend or "").startswith("pdm")
    for name, values in _table(pdm, "dev-dependencies").items():
        where = f"tool.pdm.dev-dependencies.{name}"
        acc.pdm_dev_groups[name] = _requirements(_strings(values), where, tree)
    if is_pdm:
        for name, reqs in groups.items():
            acc.pdm_dev_groups.setdefault(name, reqs)
    _read_pyproject_tools(tree, acc, doc)
    return doc


def _read_pep621(tree: _Tree, acc: _Acc, doc: dict[str, Any]) -> None:
    project = _table(doc, "project")
    if not project:
        return
    if isinstance(project.get("name"), str):
        acc.project_name = project["name"]
    if isinstance(project.get("requires-python"), str):
        acc.requires_python = project["requires-python"]
    acc.add_classifiers(_strings(project.get("classifiers")))
    dynamic = _strings(project.get("dynamic"))
    setuptools_dynamic = _table(doc, "tool", "setuptools", "dynamic")
    if "dependencies" in project:
        acc.set_dependencies(
            _requirements(_strings(project["dependencies"]), "project.dependencies", tree)
        )
    elif "dependencies" in dynamic and "dependencies" in setuptools_dynamic:
        files = _strings(_table(setuptools_dynamic, "dependencies").get("file"))
        acc.set_dependencies(_requirements_from_files(tree, files, acc))
    elif "dependencies" in dynamic and not tree.has("setup.py") and not tree.has("setup.cfg"):
        tree.problem("pyproject.toml: project.dependencies is dynamic; not read")
    extras: dict[str, list[str]] = {}
    for name, values in _table(project, "optional-dependencies").items():
        where = f"project.optional-dependencies.{name}"
        extras[name] = _requirements(_strings(values), where, tree)
    for name, spec in _table(setuptools_dynamic, "optional-dependencies").items():
        files = _strings(spec.get("file")) if isinstance(spec, dict) else []
        extras.setdefault(name, _requirements_from_files(tree, files, acc))
    acc.add_extras(extras)


def _requirements_from_files(tree: _Tree, files: list[str], acc: _Acc) -> list[str]:
    found: list[str] = []
    for path in files:
        path = posixpath.normpath(path.strip())
        acc.extra_requirement_refs.append(path)
        text = tree.text(path)
        if text is None:
            tree.problem(f"{path}: named as a requirements file but absent or unreadable")
            continue
        found.extend(_parse_requirements_text(text, path, tree).requirements)
    return found


def _read_poetry(tree: _Tree, acc: _Acc, doc: dict[str, Any]) -> None:
    poetry = _table(doc, "tool", "poetry")
    if not poetry:
        return
    if acc.project_name is None and isinstance(poetry.get("name"), str):
        acc.project_name = poetry["name"]
    acc.add_classifiers(_strings(poetry.get("classifiers")))
    runtime: list[str] = []
    optional: dict[str, str] = {}
    for name, spec in _table(poetry, "dependencies").items():
        if name.lower() == "python":
            if isinstance(spec, str) and acc.requires_python is None:
                converted = poetry_constraint(spec)
                if converted is None:
                    tree.problem(f"tool.poetry.dependencies: python {spec!r} not convertible")
                elif converted:
                    acc.requires_python = converted
            continue
        reqs, is_optional = _poetry_requirements(name, spec, "tool.poetry.dependencies", tree)
        if is_optional:
            for req in reqs:
                optional.setdefault(canonicalize_name(name), req)
        else:
            runtime.extend(reqs)
    if "dependencies" in poetry:
        acc.set_dependencies(runtime)
    extras: dict[str, list[str]] = {}
    for extra, names in _table(poetry, "extras").items():
        extras[extra] = [optional.get(canonicalize_name(n), n) for n in _strings(names)]
    acc.add_extras(extras)
    sources: list[tuple[str, dict[str, Any]]] = [("dev", _table(poetry, "dev-dependencies"))]
    for group, table in _table(poetry, "group").items():
        sources.append((group, _table(table, "dependencies")))
    for group, table in sources:
        if not table:
            continue
        reqs = acc.poetry_groups.setdefault(group, [])
        for name, spec in table.items():
            found, _ = _poetry_requirements(name, spec, f"tool.poetry.group.{group}", tree)
            reqs.extend(req for req in found if req not in reqs)


def _group_key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _read_dependency_groups(tree: _Tree, raw: dict[str, Any]) -> dict[str, list[str]]:
    """PEP 735 groups with ``{include-group = ...}`` resolved; cycles become problems."""
    by_key = {_group_key(name): name for name in raw}
    resolved: dict[str, list[str]] = {}

    def expand(name: str, stack: list[str]) -> list[str]:
        if name in resolved:
            return resolved[name]
        if name in stack or len(stack) > _MAX_DEPTH:
            tree.problem(f"dependency-groups: include cycle {' -> '.join([*stack, name])}")
            return []
        found: list[str] = []
        entries = raw.get(name)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str):
                req = _requirement(entry, f"dependency-groups.{name}", tree)
                found.extend([req] if req else [])
            elif isinstance(entry, dict) and set(entry) == {"include-group"}:
                target = by_key.get(_group_key(str(entry["include-group"])))
                if target is None:
                    tree.problem(f"dependency-groups.{name}: includes unknown group {entry}")
                    continue
                found.extend(expand(target, [*stack, name]))
            else:
                tree.problem(f"dependency-groups.{name}: entry {entry!r} not understood")
        resolved[name] = found
        return found

    return {name: expand(name, []) for name in raw}


def _read_pyproject_tools(tree: _Tree, acc: _Acc, doc: dict[str, Any]) -> None:
    tool = _table(doc, "tool")
    requires = {requirement_name(req) for req in acc.build_requires}
    if requires & _SCM_PACKAGES or "setuptools_scm" in tool or "setuptools-scm" in tool:
        acc.scm_version = True
    if _table(tool, "hatch", "version").get("source") == "vcs":
        acc.scm_version = True
    if _table(tool, "pdm", "version").get("source") == "scm":
        acc.scm_version = True
    if _table(tool, "poetry-dynamic-versioning").get("enable") is True:
        acc.scm_version = True
    if "ext-modules" in _table(tool, "setuptools"):
        acc.c_extensions = True
    hatch_envs = _table(tool, "hatch", "envs")
    if hatch_envs:
        tree.problem(f"pyproject.toml: [tool.hatch.envs] ({', '.join(hatch_envs)}) not read")
    if _table(tool, "poe", "tasks"):
        tree.problem("pyproject.toml: [tool.poe.tasks] not read")
    if _table(tool, "pdm", "scripts"):
        tree.problem("pyproject.toml: [tool.pdm.scripts] not read")


# -- setup.cfg -----------------------------------------------------------------------------------


def _cfg_list(value: str, separator: str) -> list[str]:
    """setuptools' list syntax: one item per line, or ``separator``-separated on one line."""
    value = value.strip()
    items = value.splitlines() if "\n" in value else value.split(separator)
    return [item.strip() for item in items if item.strip() and not item.strip().startswith("#")]


def _cfg_values(tree: _Tree, acc: _Acc, value: str, separator: str) -> list[str]:
    if value.strip().startswith("file:"):
        files = [f for f in value.strip()[5:].split(",") if f.strip()]
        if separator == ";":
            return _requirements_from_files(tree, files, acc)
        found = []
        for path in files:
            text = tree.text(posixpath.normpath(path.strip()))
            found.extend(_lines(text or ""))
        return found
    return _cfg_list(value, separator)


def _read_setup_cfg(tree: _Tree, acc: _Acc) -> None:
    parser = _load_ini(tree, "setup.cfg")
    if parser is None:
        return
    where = "setup.cfg"
    if parser.has_option("metadata", "name") and acc.project_name is None:
        acc.project_name = parser.get("metadata", "name").strip()
    for key in ("classifiers", "classifier"):
        if parser.has_option("metadata", key):
            acc.add_classifiers(_cfg_values(tree, acc, parser.get("metadata", key), ","))
    options = dict(parser.items("options")) if parser.has_section("options") else {}
    if "python_requires" in options and acc.requires_python is None:
        acc.requires_python = options["python_requires"].strip()
    if "install_requires" in options:
        values = _cfg_values(tree, acc, options["install_requires"], ";")
        acc.set_dependencies(_requirements(values, f"{where} install_requires", tree))
    for key, target in (
        ("setup_requires", acc.setup_requires),
        ("tests_require", acc.tests_require),
    ):
        if key in options:
            values = _cfg_values(tree, acc, options[key], ";")
            target.extend(_requirements(values, f"{where} {key}", tree))
    if parser.has_section("options.extras_require"):
        extras = {
            name: _requirements(_cfg_values(tree, acc, value, ";"), f"{where} [{name}]", tree)
            for name, value in parser.items("options.extras_require")
        }
        acc.add_extras(extras)
    if parser.has_section("versioneer"):
        acc.scm_version = True


# -- setup.py ------------------------------------------------------------------------------------


class _NotLiteral(Exception):
    pass


_Scope = dict[str, list[ast.expr]]


def _scope_assignments(body: list[ast.stmt]) -> _Scope:
    """Names assigned in these statements (and nested blocks, not nested functions/classes)."""
    scope: _Scope = {}
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    scope.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            scope.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.setdefault(node.target.id, []).append(node)  # type: ignore[arg-type]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                stack.append(child)
            elif isinstance(child, ast.ExceptHandler):
                stack.extend(child.body)
    return scope


class _Evaluator:
    """Evaluates literal expressions, following names to their single literal assignment."""

    def __init__(self, scopes: list[_Scope]):
        self.scopes = scopes
        self.steps = 0
        self.names: dict[str, Any] = {}

    def assignments(self, name: str) -> list[ast.expr]:
        for scope in self.scopes:
            if name in scope:
                return scope[name]
        return []

    def eval(self, node: ast.AST, depth: int = 0) -> Any:
        self.steps += 1
        if depth > _MAX_DEPTH or self.steps > _MAX_EVAL_STEPS:
            raise _NotLiteral
        value = self._eval(node, depth)
        if isinstance(value, list | dict | str) and len(value) > _MAX_LITERAL_SIZE:
            raise _NotLiteral
        return value

    def _eval(self, node: ast.AST, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(self._sequence(self.eval(element.value, depth + 1)))
                else:
                    items.append(self.eval(element, depth + 1))
            return items
        if isinstance(node, ast.Dict):
            result: dict[Any, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    spread = self.eval(value, depth + 1)
                    if not isinstance(spread, dict):
                        raise _NotLiteral
                    result.update(spread)
                else:
                    result[self.eval(key, depth + 1)] = self.eval(value, depth + 1)
            return result
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.eval(node.left, depth + 1), self.eval(node.right, depth + 1)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            raise _NotLiteral
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "dict" and not node.args:
                return {kw.arg: self.eval(kw.value, depth + 1) for kw in node.keywords if kw.arg}
            if node.func.id in {"list", "tuple"} and len(node.args) == 1 and not node.keywords:
                return self._sequence(self.eval(node.args[0], depth + 1))
        raise _NotLiteral

    @staticmethod
    def _sequence(value: Any) -> list[Any]:
        if isinstance(value, list):
            return value
        raise _NotLiteral

    def _name(self, name: str, depth: int) -> Any:
        if name in self.names:
            return self.names[name]
        values = self.assignments(name)
        if not values or any(not isinstance(value, ast.expr) for value in values):
            raise _NotLiteral
        results = [self.eval(value, depth + 1) for value in values]
        if any(result != results[0] for result in results[1:]):
            raise _NotLiteral
        self.names[name] = results[0]
        return results[0]

    def keyword_exprs(self, node: ast.expr, depth: int = 0) -> dict[str, ast.expr] | None:
        """The keyword expressions of a ``**kwargs`` dict, without evaluating their values."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Dict):
            found = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    return None
                found[key.value] = value
            return found
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
        ):
            if node.args:
                return None
            return {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if isinstance(node, ast.Name):
            values = self.assignments(node.id)
            if len(values) == 1:
                return self.keyword_exprs(values[0], depth + 1)
        return None


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


_EXTENSION_CALLS = frozenset(
    {
        "Extension",
        "Pybind11Extension",
        "CppExtension",
        "CUDAExtension",
        "cythonize",
        "RustExtension",
    }
)
_SETUP_KEYWORDS = (
    "name",
    "python_requires",
    "install_requires",
    "extras_require",
    "setup_requires",
    "tests_require",
    "classifiers",
    "use_scm_version",
    "ext_modules",
    "test_suite",
)
_MUST_BE_LITERAL = frozenset(
    {"install_requires", "extras_require", "python_requires", "setup_requires", "tests_require"}
)


def _setup_calls(module: ast.Module) -> Iterator[tuple[ast.Call, list[_Scope]]]:
    module_scope = _scope_assignments(module.body)
    functions = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    inside: set[int] = set()
    for function in functions:
        local = _scope_assignments(function.body)
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and _call_name(node) == "setup"
                and id(node) not in inside
            ):
                inside.add(id(node))
                yield node, [local, module_scope]
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and _call_name(node) == "setup" and id(node) not in inside:
            yield node, [module_scope]


def _read_setup_py(tree: _Tree, acc: _Acc) -> None:
    module = _parse_python(tree, "setup.py")
    if module is None:
        return
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and _call_name(node) in _EXTENSION_CALLS:
            acc.c_extensions = True
    values: dict[str, Any] = {}
    for call, scopes in _setup_calls(module):
        evaluator = _Evaluator(scopes)
        exprs: dict[str, ast.expr] = {}
        for keyword in call.keywords:
            if keyword.arg is not None:
                exprs.setdefault(keyword.arg, keyword.value)
                continue
            spread = evaluator.keyword_exprs(keyword.value)
            if spread is None:
                tree.problem("setup.py: setup(**...) arguments not literal; not read")
                continue
            for key, value in spread.items():
                exprs.setdefault(key, value)
        for key in _SETUP_KEYWORDS:
            if key not in exprs or key in values:
                continue
            try:
                values[key] = evaluator.eval(exprs[key])
            except (_NotLiteral, RecursionError):
                values[key] = _NotLiteral
                if key in _MUST_BE_LITERAL:
                    tree.problem(f"setup.py: {key}= is not a literal; not read")
                elif key == "ext_modules":
                    _ext_modules_problem(tree, evaluator, exprs[key], acc)
                elif key == "use_scm_version":
                    acc.scm_version = True
    _apply_setup_values(tree, acc, values)


def _ext_modules_problem(tree: _Tree, evaluator: _Evaluator, expr: ast.expr, acc: _Acc) -> None:
    candidates = evaluator.assignments(expr.id) if isinstance(expr, ast.Name) else [expr]
    for candidate in candidates:
        for node in ast.walk(candidate):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in _EXTENSION_CALLS:
                    acc.c_extensions = True
                elif name:
                    tree.problem(f"setup.py: ext_modules built by {name}(...); not read")
                    return


def _apply_setup_values(tree: _Tree, acc: _Acc, values: dict[str, Any]) -> None:
    def strings(key: str) -> list[str]:
        value = values.get(key)
        if isinstance(value, str):
            return _cfg_list(value, "\n")
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    if isinstance(values.get("name"), str) and acc.project_name is None:
        acc.project_name = values["name"]
    if isinstance(values.get("python_requires"), str) and acc.requires_python is None:
        acc.requires_python = values["python_requires"]
    acc.add_classifiers(strings("classifiers"))
    if isinstance(values.get("install_requires"), list | str):
        acc.set_dependencies(_requirements(strings("install_requires"), "setup.py", tree))
    acc.setup_requires.extend(_requirements(strings("setup_requires"), "setup.py", tree))
    acc.tests_require.extend(_requirements(strings("tests_require"), "setup.py", tree))
    extras = values.get("extras_require")
    if isinstance(extras, dict):
        found: dict[str, list[str]] = {}
        for name, reqs in extras.items():
            items = _cfg_list(reqs, "\n") if isinstance(reqs, str) else _strings(reqs)
            found[str(name)] = _requirements(items, f"setup.py extras_require[{name}]", tree)
        acc.add_extras(found)
    scm = values.get("use_scm_version")
    if scm is not None and scm is not _NotLiteral and scm is not False:
        acc.scm_version = True
    ext = values.get("ext_modules")
    if isinstance(ext, list) and ext:
        acc.c_extensions = True
    if values.get("test_suite") not in (None, _NotLiteral):
        acc.test_suite = True


# -- requirements files --------------------------------------------------------------------------

_REQUIREMENT_DIRS = frozenset({"requirements", "requirement", "reqs"})
_SKIP_DIRS = frozenset({"node_modules", ".tox", ".nox", "site-packages", ".venv", "venv"})
_PIP_OPTIONS_WITH_VALUE = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--trusted-host",
        "--no-binary",
        "--only-binary",
        "--use-feature",
        "--config-settings",
        "--global-option",
        "--install-option",
        "--hash",
    }
)
_PIP_FLAGS = frozenset({"--pre", "--prefer-binary", "--no-index", "--require-hashes", "--no-deps"})


def is_requirements_name(path: str) -> bool:
    parts = path.lower().split("/")
    if _SKIP_DIRS & set(parts[:-1]):
        return False
    if not parts[-1].endswith((".txt", ".in")):
        return False
    base = parts[-1].rsplit(".", 1)[0]
    return (
        "requirement" in base
        or base in {"reqs", "constraints"}
        or bool(_REQUIREMENT_DIRS & set(parts[:-1]))
    )


def _kind_from_words(tokens: list[str], base: str) -> str | None:
    words = set(tokens)
    if any(token.startswith("test") for token in tokens) or "ci" in words:
        return "test"
    if words & {"doc", "docs", "documentation", "sphinx", "rtd", "mkdocs", "readthedocs"}:
        return "docs"
    if any(mark in base for mark in ("lint", "flake8", "style", "pre-commit", "precommit")):
        return "lint"
    if words & {"pylint", "ruff", "format", "qa", "quality", "black", "isort"}:
        return "lint"
    if any(mark in base for mark in ("mypy", "typing", "typecheck", "pyright")) or "types" in words:
        return "typing"
    if words & {"dev", "devel", "develop", "development", "local"}:
        return "dev"
    if words & {"build", "packaging", "dist", "wheel", "wheels", "release"}:
        return "build"
    if words & {"base", "prod", "production", "runtime", "install", "main", "core", "common"}:
        return "runtime"
    return None


def requirements_kind(path: str) -> str:
    """What a requirements file is for, from its name and place in the tree."""
    parts = path.lower().split("/")
    base = parts[-1].rsplit(".", 1)[0]
    dirs = parts[:-1]
    stem = base
    for word in ("requirements", "requirement", "reqs"):
        stem = stem.replace(word, " ")
    tokens = [token for token in re.split(r"[^a-z0-9]+", stem) if token]
    kind = _kind_from_words(tokens, base)
    if kind:
        return kind
    if not tokens and (not dirs or dirs[-1] in _REQUIREMENT_DIRS):
        return "runtime"
    for directory in reversed(dirs):
        if directory in {"test", "tests", "testing", "ci"}:
            return "test"
        if directory in {"doc", "docs"}:
            return "docs"
    return "other"


def _strip_pip_comment(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    for marker in (" #", "\t#"):
        index = line.find(marker)
        if index >= 0:
            line = line[:index]
    return line.strip()


def _pip_option(line: str) -> tuple[str, str]:
    """``-rfile`` / ``-r file`` / ``--requirement=file`` -> (option, value)."""
    if line.startswith("--"):
        head, _, rest = line.partition("=") if "=" in line.split()[0] else line.partition(" ")
        return head.strip(), rest.strip()
    if len(line) > 2 and line[2] not in " =\t":
        return line[:2], line[2:].strip()
    return line[:2], line[2:].lstrip(" =\t").strip()


def _url_requirement(line: str) -> str | None:
    """``git+https://...#egg=name`` -> ``name @ git+https://...``."""
    url, _, fragment = line.partition("#")
    for piece in fragment.split("&"):
        key, _, value = piece.partition("=")
        if key == "egg" and value:
            return f"{value} @ {url.strip()}"
    return None


def _parse_requirements_text(text: str, path: str, tree: _Tree) -> RequirementsFile:
    base_dir = posixpath.dirname(path)
    requirements: list[str] = []
    referenced: list[str] = []
    constraints: list[str] = []
    editable = False
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        logical.append(pending + raw)
        pending = ""
    logical.append(pending)
    for raw in logical:
        line = _strip_pip_comment(raw)
        if not line:
            continue
        if line.startswith("-"):
            option, value = _pip_option(line)
            if option in {"-r", "--requirement", "-c", "--constraint"} and value:
                referenced.append(posixpath.normpath(posixpath.join(base_dir, value)))
                if option in {"-c", "--constraint"}:
                    constraints.append(referenced[-1])
            elif option in {"-e", "--editable"}:
                editable = True
            elif option not in _PIP_OPTIONS_WITH_VALUE and option not in _PIP_FLAGS:
                tree.problem(f"{path}: pip option {option} not understood")
            continue
        line = line.split(" --", 1)[0].strip()  # per-requirement options (--hash=...)
        if "://" in line and " @ " not in line and not line.startswith("file:"):
            converted = _url_requirement(line)
            if converted is None:
                tree.problem(f"{path}: {line[:120]!r} is a URL without #egg=; skipped")
                continue
            line = converted
        if line == "." or line.startswith(".["):
            continue  # the project itself
        req = _requirement(line, path, tree)
        if req:
            requirements.append(req)
    kind = requirements_kind(path)
    return RequirementsFile(path, kind, requirements, referenced, editable, constraints)


def _read_requirements_files(tree: _Tree, extra_refs: Iterable[str]) -> list[RequirementsFile]:
    named = [name for name in tree.names if is_requirements_name(name)]
    named = [
        name
        for name in named
        if not (name.endswith(".in") and tree.has(name[: -len(".in")] + ".txt"))
    ]
    queue = [*named, *(ref for ref in extra_refs if tree.has(ref))]
    seen: set[str] = set()
    found: list[RequirementsFile] = []
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        if len(found) >= MAX_REQUIREMENTS_FILES:
            tree.problem(f"more than {MAX_REQUIREMENTS_FILES} requirements files; rest not read")
            break
        text = tree.text(path)
        if text is None:
            continue
        parsed = _parse_requirements_text(text, path, tree)
        found.append(parsed)
        queue.extend(ref for ref in parsed.referenced_files if tree.has(ref) and ref not in seen)
    return sorted(found, key=lambda item: item.path)


# -- tox -----------------------------------------------------------------------------------------


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
    return _dedupe(envs), complete


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


def _looks_python_env(env: str) -> bool:
    for factor in env.split("-"):
        if factor in {"py", "python", "py3", "py2"} or factor.startswith("pypy"):
            return True
        if _factor_python(factor):
            return True
    return False


def _env_pythons(envs: Iterable[str]) -> list[str]:
    found = (_factor_python(factor) for env in envs for factor in env.split("-"))
    return _sorted_versions(version for version in found if version)


def _representative_env(envlist: list[str]) -> str:
    for env in envlist:
        if any(_factor_python(factor) for factor in env.split("-")):
            return env
    return next((env for env in envlist if _looks_python_env(env)), "py")


_CONDITION_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,!{}"
)


def _factor_condition(line: str) -> tuple[str, str] | None:
    index = line.find(":")
    if index <= 0:
        return None
    condition, rest = line[:index].strip(), line[index + 1 :]
    if not condition or rest.startswith("//") or condition.startswith("-"):
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

    def __init__(self, parser: _Ini, path: str, core: str, tree: _Tree):
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


def _tox_from_ini(tree: _Tree, parser: _Ini, path: str, core: str) -> ToxFacts | None:
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
            python_names = [name for name in names if _looks_python_env(name)]
            if candidate != "testenv" and python_names:
                section, env_name = candidate, python_names[0]
                break
    if section == "testenv" and not parser.has_section("testenv"):
        return ToxFacts(path, envlist, _env_pythons(envlist))
    setenv: dict[str, str] = {}
    for line in _lines(tox.value(section, ("setenv", "set_env"), env_name) or ""):
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
    for line in _lines(get(("deps",)) or ""):
        if line.startswith("-"):
            option, value = _pip_option(line)
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
        extras=_split_list(get(("extras",)) or ""),
        dependency_groups=_split_list(get(("dependency_groups",)) or ""),
        commands_pre=_tox_commands(get(("commands_pre",)) or ""),
        commands=_tox_commands(get(("commands",)) or ""),
        setenv=setenv,
        allowlist_externals=_split_list(
            get(("allowlist_externals", "whitelist_externals")) or "", ", \t"
        ),
        skip_install=_bool(get(("skip_install",))),
        usedevelop=_bool(get(("usedevelop", "use_develop"))),
        changedir=(get(("changedir", "change_dir")) or "").strip() or None,
    )


def _tox_commands(value: str) -> list[str]:
    commands = []
    for line in _lines(value):
        if line.startswith("- "):
            line = line[2:].strip()
        if line:
            commands.append(line)
    return commands


def _toml_command(
    command: Any, lookup: Callable[[str], str | None], where: str, tree: _Tree
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
            args.extend(_strings(default))
        else:
            tree.problem(f"{where}: command item {item!r} not understood")
    return shlex.join(args)


def _tox_from_toml(tree: _Tree, config: dict[str, Any], path: str) -> ToxFacts:
    envlist = _dedupe(_strings(config.get("env_list", config.get("envlist"))))
    base = _table(config, "env_run_base")
    envs = _table(config, "env")
    table, env_name = base, _representative_env(envlist)
    if not base.get("commands"):
        for name, env_table in envs.items():
            if isinstance(env_table, dict) and _looks_python_env(name):
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
        for k, v in _table(table, "set_env").items()
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
                return "\n".join(_substitute(item, lookup) for item in _strings(value))
        return None

    return _tox_facts(path, envlist, env_name, setenv, get)


def _read_tox(tree: _Tree, pyproject: dict[str, Any]) -> ToxFacts | None:
    if tree.has("tox.ini"):
        parser = _load_ini(tree, "tox.ini")
        facts = _tox_from_ini(tree, parser, "tox.ini", "tox") if parser else None
        if facts is not None or parser is None:
            return facts
    cfg = _load_ini(tree, "setup.cfg") if tree.has("setup.cfg") else None
    if cfg is not None and cfg.has_section("tox:tox"):
        return _tox_from_ini(tree, cfg, "setup.cfg", "tox:tox")
    tool_tox = _table(pyproject, "tool", "tox")
    legacy = tool_tox.get("legacy_tox_ini")
    if isinstance(legacy, str):
        parser = _parse_ini(legacy, "pyproject.toml [tool.tox] legacy_tox_ini", tree)
        return _tox_from_ini(tree, parser, "pyproject.toml", "tox") if parser else None
    if tool_tox:
        return _tox_from_toml(tree, tool_tox, "pyproject.toml")
    if tree.has("tox.toml"):
        doc = _load_toml(tree, "tox.toml")
        return _tox_from_toml(tree, doc, "tox.toml") if doc is not None else None
    return None


# -- nox -----------------------------------------------------------------------------------------


def _nox_decorator(node: ast.expr) -> ast.Call | bool:
    """True/the Call for ``@nox.session``/``@session(...)``; False for other decorators."""
    target = node.func if isinstance(node, ast.Call) else node
    is_session = (isinstance(target, ast.Attribute) and target.attr == "session") or (
        isinstance(target, ast.Name) and target.id == "session"
    )
    if not is_session:
        return False
    return node if isinstance(node, ast.Call) else True


def _nox_pythons(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, str | int | float)]
    return []


def _nox_args(call: ast.Call, evaluator: _Evaluator, param: str) -> tuple[list[str], bool]:
    args: list[str] = []
    complete = True
    for arg in call.args:
        node = arg.value if isinstance(arg, ast.Starred) else arg
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) == (param, "posargs")
        ):
            continue
        try:
            value = evaluator.eval(node)
        except (_NotLiteral, RecursionError):
            complete = False
            continue
        if isinstance(value, str):
            args.append(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            args.extend(value)
        else:
            complete = False
    return args, complete


def _nox_session(
    tree: _Tree,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    decorator: ast.Call | bool,
    evaluator: _Evaluator,
) -> NoxSession:
    name = function.name
    pythons: list[str] = []
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            try:
                value = evaluator.eval(keyword.value)
            except (_NotLiteral, RecursionError):
                if keyword.arg in {"python", "py"}:
                    tree.problem(f"noxfile.py: session {name}: python= not a literal")
                continue
            if keyword.arg == "name" and isinstance(value, str):
                name = value
            elif keyword.arg in {"python", "py"}:
                pythons = _nox_pythons(value)
    if "test" not in name.lower():
        return NoxSession(name, pythons)
    param = function.args.args[0].arg if function.args.args else "session"
    calls = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == param
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    installs: list[list[str]] = []
    commands: list[str] = []
    for call in calls:
        method = call.func.attr  # type: ignore[attr-defined]
        if method not in {"install", "conda_install", "run", "run_always", "run_install"}:
            continue
        args, complete = _nox_args(call, evaluator, param)
        if method in {"install", "conda_install"}:
            if not complete:
                tree.problem(f"noxfile.py: session {name}: {param}.{method}() not all literal")
            if args:
                installs.append(args)
        elif args:
            commands.append(shlex.join(args))
    return NoxSession(name, pythons, installs, commands)


def _read_nox(tree: _Tree) -> NoxFacts | None:
    if not tree.has("noxfile.py"):
        return None
    module = _parse_python(tree, "noxfile.py")
    if module is None:
        return NoxFacts("noxfile.py")
    evaluator = _Evaluator([_scope_assignments(module.body)])
    sessions = []
    for statement in module.body:
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in statement.decorator_list:
            found = _nox_decorator(decorator)
            if found is not False:
                sessions.append(_nox_session(tree, statement, found, evaluator))
                break
    return NoxFacts("noxfile.py", sessions)


# -- CI ------------------------------------------------------------------------------------------


@dataclass
class _Job:
    name: str
    non_linux: bool = False
    pythons: list[str] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)


_PYTHON_KEYS = ("python-version", "python", "python_version", "python-versions", "py", "pyver")


def _ci_python(value: Any, where: str, tree: _Tree) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip().lower()
    if isinstance(value, float) and text in {"3.1", "3.2"}:
        tree.problem(f"{where}: python version {text} is a YAML number (3.{text[2]}0 unquoted?)")
        return None
    if text.startswith(("pypy", "graalpy", "jython", "pyston", "cpython-", "${{")):
        return None
    text = text.split("-")[0]
    parts = text.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return f"{int(parts[0])}.{int(parts[1])}"


def _ci_pythons(values: Any, where: str, tree: _Tree) -> list[str]:
    if isinstance(values, str):
        values = values.splitlines()
    if not isinstance(values, list):
        values = [values]
    found = (_ci_python(value, where, tree) for value in values)
    return [version for version in found if version]


def _split_and(line: str) -> list[str]:
    """Splits a shell line at ``&&`` outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif line.startswith("&&", index):
            parts.append("".join(current))
            current = []
            index += 2
            continue
        current.append(char)
        index += 1
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def run_segments(run: str) -> list[str]:
    """The commands of a CI ``run`` block: one per line, continuations joined, split at &&."""
    logical: list[str] = []
    pending = ""
    for raw in run.splitlines():
        line = raw.strip()
        if pending:
            line = pending + " " + line
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line and not line.startswith("#"):
            logical.append(line)
    if pending:
        logical.append(pending)
    return [segment for line in logical for segment in _split_and(line)]


def _matrix_pythons(matrix: Any, where: str, tree: _Tree) -> list[str]:
    if isinstance(matrix, str):
        if "${{" in matrix:
            tree.problem(f"{where}: matrix computed by an expression; not read")
        return []
    if not isinstance(matrix, dict):
        return []
    found: list[str] = []
    for key in _PYTHON_KEYS:
        found.extend(_ci_pythons(matrix.get(key), where, tree) if key in matrix else [])
    for entry in _list(matrix.get("include")):
        if isinstance(entry, dict):
            for key in _PYTHON_KEYS:
                if key in entry:
                    found.extend(_ci_pythons(entry[key], where, tree))
    return found


def _non_linux(runs_on: Any, matrix: Any) -> bool:
    def foreign(label: str) -> bool:
        label = label.lower()
        return "windows" in label or "macos" in label or label.startswith("mac")

    if isinstance(runs_on, list):
        return any(isinstance(label, str) and foreign(label) for label in runs_on)
    if not isinstance(runs_on, str):
        return False
    if "matrix." in runs_on and isinstance(matrix, dict):
        key = runs_on.split("matrix.", 1)[1]
        key = "".join(itertools.takewhile(lambda c: c.isalnum() or c in "-_", key))
        values = _strings(matrix.get(key)) + [
            entry[key]
            for entry in _list(matrix.get("include"))
            if isinstance(entry, dict) and isinstance(entry.get(key), str)
        ]
        return bool(values) and all(foreign(value) for value in values)
    return foreign(runs_on)


def _steps_into(tree: _Tree, job: _Job, steps: Any, where: str, shell: Any, depth: int) -> None:
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        uses = step.get("uses")
        if isinstance(uses, str):
            with_ = _table(step, "with")
            if any(name in uses for name in ("setup-python", "setup-pdm", "setup-uv")):
                job.pythons.extend(_ci_pythons(with_.get("python-version"), where, tree))
            elif uses.startswith("./") and depth == 0:
                _composite_action(tree, job, uses, depth)
        step_shell = step.get("shell", shell)
        if isinstance(step_shell, str) and step_shell.split()[:1] in (
            ["pwsh"],
            ["powershell"],
            ["cmd"],
        ):
            continue
        if isinstance(step.get("run"), str):
            job.segments.extend(run_segments(step["run"]))


def _composite_action(tree: _Tree, job: _Job, uses: str, depth: int) -> None:
    base = posixpath.normpath(uses[2:].split("@")[0])
    for name in ("action.yml", "action.yaml"):
        path = f"{base}/{name}"
        if tree.has(path):
            doc = _load_yaml(tree, path)
            steps = _table(doc, "runs").get("steps")
            _steps_into(tree, job, steps, path, None, depth + 1)
            return


def _github_jobs(tree: _Tree, path: str) -> list[_Job]:
    doc = _load_yaml(tree, path)
    jobs: list[_Job] = []
    for job_id, spec in _table(doc, "jobs").items():
        if not isinstance(spec, dict):
            continue
        where = f"{path} job {job_id}"
        if isinstance(spec.get("uses"), str):
            tree.problem(f"{where}: reusable workflow {spec['uses']} not read")
            continue
        matrix = _table(spec, "strategy").get("matrix")
        job = _Job(str(job_id), _non_linux(spec.get("runs-on"), matrix))
        job.pythons.extend(_matrix_pythons(matrix, where, tree))
        shell = _table(spec, "defaults", "run").get("shell")
        _steps_into(tree, job, spec.get("steps"), where, shell, 0)
        jobs.append(job)
    return jobs


def _script_lines(value: Any) -> list[str]:
    return [segment for line in _strings(value) for segment in run_segments(line)]


def _travis_jobs(tree: _Tree, path: str) -> list[_Job]:
    doc = _load_yaml(tree, path)
    if not isinstance(doc, dict):
        return []
    job = _Job(
        "travis", non_linux=isinstance(doc.get("os"), str) and doc["os"] in {"osx", "windows"}
    )
    job.pythons.extend(_ci_pythons(doc.get("python"), path, tree) if "python" in doc else [])
    for section in ("matrix", "jobs"):
        for entry in _list(_table(doc, section).get("include")):
            if isinstance(entry, dict) and "python" in entry:
                job.pythons.extend(_ci_pythons(entry["python"], path, tree))
    packages = _strings(_table(doc, "addons", "apt").get("packages"))
    if packages:
        job.segments.append("apt-get install -y " + " ".join(packages))
    for key in ("before_install", "install", "before_script", "script"):
        job.segments.extend(_script_lines(doc.get(key)))
    return [job]


_GITLAB_RESERVED = frozenset(
    {"stages", "variables", "default", "include", "image", "services", "workflow", "cache"}
    | {"before_script", "after_script", "types", "pages"}
)


def _gitlab_python(tree: _Tree, image: Any) -> list[str]:
    name = image.get("name") if isinstance(image, dict) else image
    if isinstance(name, str) and name.split("/")[-1].startswith("python:"):
        version = _ci_python(name.split(":", 1)[1], ".gitlab-ci.yml", tree)
        return [version] if version else []
    return []


def _gitlab_jobs(tree: _Tree, path: str) -> list[_Job]:
    doc = _load_yaml(tree, path)
    if not isinstance(doc, dict):
        return []
    default = _table(doc, "default")
    global_before = doc.get("before_script", default.get("before_script"))
    global_image = doc.get("image", default.get("image"))
    jobs = []
    for name, spec in doc.items():
        if name in _GITLAB_RESERVED or str(name).startswith(".") or not isinstance(spec, dict):
            continue
        if "script" not in spec:
            continue
        job = _Job(str(name))
        job.pythons.extend(_gitlab_python(tree, spec.get("image", global_image)))
        job.segments.extend(_script_lines(spec.get("before_script", global_before)))
        job.segments.extend(_script_lines(spec.get("script")))
        jobs.append(job)
    return jobs


# -- classifying CI commands ---------------------------------------------------------------------

_WRAPPERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("pipenv", "run"),
    ("rye", "run"),
    ("pipx", "run"),
    ("conda", "run"),
    ("mamba", "run"),
    ("micromamba", "run"),
    ("coverage", "run"),
}
_VALUE_OPTIONS = frozenset(
    {"--python", "-p", "--with", "--group", "--extra", "--package", "--directory", "--project"}
    | {"--env-file", "--index", "--from", "--source", "--rcfile", "--include", "--omit"}
    | {"-n", "--name", "--context", "--data-file", "-W", "-X", "--concurrency"}
)
_TEST_RUNNERS = frozenset(
    {"pytest", "py.test", "unittest", "nosetests", "nose", "nose2", "trial", "twisted.trial"}
    | {"green", "stestr", "zope-testrunner", "ward"}
)
_NON_TEST_ENV_WORDS = frozenset(
    {"lint", "linting", "docs", "doc", "mypy", "typing", "types", "type", "style", "pre-commit"}
    | {"precommit", "build", "release", "publish", "format", "fmt", "flake8", "pylint", "ruff"}
    | {"twinecheck", "twine", "coverage", "codecov", "coveralls", "report", "spell", "spelling"}
    | {"bandit", "sast", "news", "changelog", "clean", "pypi", "readme", "manifest", "pyright"}
    | {"linkcheck", "audit", "safety", "package", "dist", "upload", "deploy", "bump", "check"}
    | {"benchmark", "bench", "perf", "isort", "black", "qa", "pep8", "pycodestyle", "checks"}
)
_PRE_TEST_MAKE_WORDS = ("compile", "build", "translation", "locale", "gettext", "messages")
_SETUP_PRE_TEST = frozenset({"build_ext", "build", "build_py", "build_src", "compile_catalog"})


def _strip_command_prefix(argv: list[str]) -> list[str]:
    while argv:
        head = argv[0]
        name, equals, _ = head.partition("=")
        if equals and name.isidentifier():
            argv = argv[1:]
        elif head in {"sudo", "time", "env", "nohup", "exec", "command", "xvfb-run"}:
            argv = argv[1:]
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
        else:
            return argv
    return argv


def _is_python(word: str) -> bool:
    base = posixpath.basename(word).lower()
    if base in {"py", "pypy", "pypy3", "$python", "${python}"}:
        return True
    return base.startswith("python") and all(c.isdigit() or c == "." for c in base[6:])


def _unwrap(argv: list[str], depth: int = 0) -> tuple[list[str], bool]:
    """The command a wrapper runs (``python -m X``, ``uv run X``, ``coverage run -m X``...);
    the flag says whether it went through a runner such as ``pdm run``."""
    argv = _strip_command_prefix(argv)
    if not argv or depth > 5:
        return argv, False
    head = posixpath.basename(argv[0]).lower()
    if head in {"bash", "sh"} and len(argv) > 1 and not argv[1].startswith("-"):
        return argv[1:], False
    python = _is_python(argv[0])
    if python or head == "uvx":
        rest = argv[1:]
    elif len(argv) > 1 and (head, argv[1]) in _WRAPPERS:
        rest = argv[2:]
    else:
        return argv, False
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option == "-m":
            break
        if option == "-c":
            return ["python-c"], False
        if option in _VALUE_OPTIONS and rest:
            rest.pop(0)
    inner, wrapped = _unwrap(rest, depth + 1)
    return inner, wrapped or not python


def _squash_expressions(segment: str) -> str:
    """``${{ matrix.python }}`` -> ``${{matrix.python}}``: one word for shlex."""
    out: list[str] = []
    index = 0
    while True:
        start = segment.find("${{", index)
        end = segment.find("}}", start + 3) if start >= 0 else -1
        if start < 0 or end < 0:
            out.append(segment[index:])
            return "".join(out)
        out.append(segment[index:start])
        out.append("${{" + "".join(segment[start + 3 : end].split()) + "}}")
        index = end + 2


def _tox_is_test(args: list[str]) -> str:
    if "--notest" in args or "-n" in args:
        return "install"
    envs: list[str] = []
    for index, arg in enumerate(args):
        if arg in {"-e", "--env", "-s", "--session", "--sessions"} and index + 1 < len(args):
            envs.extend(args[index + 1].split(","))
        elif arg.startswith(("-e=", "--env=", "-s=", "--session=")):
            envs.extend(arg.partition("=")[2].split(","))
    if envs and all(_non_test_env(env) for env in envs):
        return "other"
    return "test"


def _non_test_env(env: str) -> bool:
    env = env.strip().lower()
    if "${{" in env or _looks_python_env(env):
        return False
    return env in _NON_TEST_ENV_WORDS or any(f in _NON_TEST_ENV_WORDS for f in env.split("-"))


def _make_kind(args: list[str]) -> str:
    targets = [arg for arg in args if not arg.startswith("-") and "=" not in arg]
    if any("test" in target or target == "coverage" for target in targets):
        return "test"
    if any(word in target for target in targets for word in _PRE_TEST_MAKE_WORDS):
        return "pre_test"
    return "other"


def _install_kind(head: str, args: list[str]) -> str | None:
    first = args[0] if args else ""
    if head in {"pip", "pip3"} and first in {"install", "download"}:
        return "install"
    if head == "uv" and (
        first in {"sync", "add"} or args[:2] in (["pip", "install"], ["pip", "sync"])
    ):
        return "install"
    if head == "uv" and args[:2] == ["tool", "install"]:
        return "install"
    if head in {"poetry", "pdm", "pipenv", "rye"} and first in {"install", "sync"}:
        return "install"
    if head in {"conda", "mamba", "micromamba", "pipx", "flit"} and first == "install":
        return "install"
    if head in {"conda", "mamba", "micromamba"} and args[:2] in (
        ["env", "create"],
        ["env", "update"],
    ):
        return "install"
    if head == "hatch" and args[:2] == ["env", "create"]:
        return "install"
    return None


def classify_command(segment: str) -> tuple[str, list[str]]:
    """One shell command -> (kind, system packages): kind is install, test, pre_test, system
    or other."""
    squashed = _squash_expressions(segment)
    try:
        argv = shlex.split(squashed, comments=True)
    except ValueError:
        argv = squashed.split()
    argv, wrapped = _unwrap(argv)
    if not argv:
        return "other", []
    head = posixpath.basename(argv[0]).lower()
    args = argv[1:]
    if head in {"apt-get", "apt", "aptitude"}:
        if "install" not in args:
            return "other", []
        after = args[args.index("install") + 1 :]
        packages = [
            arg
            for i, arg in enumerate(after)
            if not arg.startswith("-") and (i == 0 or after[i - 1] != "-o")
        ]
        return "system", packages
    install = _install_kind(head, args)
    if install:
        return install, []
    if head in _TEST_RUNNERS or (head == "hatch" and args[:1] == ["test"]):
        return "test", []
    if head in {"tox", "nox"}:
        if "--install-only" in args:
            return "install", []
        return _tox_is_test(args), []
    if head == "make":
        return _make_kind(args), []
    if head in {"setup.py", "manage.py", "django-admin", "django-admin.py", "django"}:
        sub = next((arg for arg in args if not arg.startswith("-")), "")
        if sub in {"test", "pytest", "nosetests"}:
            return "test", []
        if sub in _SETUP_PRE_TEST or sub == "compilemessages":
            return "pre_test", []
        return ("install", []) if sub in {"develop", "install"} else ("other", [])
    if head in {"msgfmt", "cythonize", "protoc", "configure", "grpc_tools.protoc"}:
        return "pre_test", []
    if head == "pybabel" and "compile" in args:
        return "pre_test", []
    if head.startswith("babel.messages") and "compile" in " ".join(args):
        return "pre_test", []
    if head in {"npm", "yarn", "pnpm"} and "build" in args:
        return "pre_test", []
    if head == "poe" and any("test" in arg for arg in args[:1]):
        return "test", []
    if head == "tests" or (
        "test" in head and (wrapped or head.endswith((".py", ".sh")) or "." in head)
    ):
        return "test", []
    return "other", []


def _read_ci(tree: _Tree) -> CIFacts:
    files: list[str] = []
    jobs: list[_Job] = []
    for name in tree.names:
        directory, _, base = name.rpartition("/")
        if directory == ".github/workflows" and base.endswith((".yml", ".yaml")):
            files.append(name)
            jobs.extend(_github_jobs(tree, name))
    for name, reader in ((".travis.yml", _travis_jobs), (".gitlab-ci.yml", _gitlab_jobs)):
        if tree.has(name):
            files.append(name)
            jobs.extend(reader(tree, name))
    classified = [[(s, *classify_command(s)) for s in job.segments] for job in jobs]
    chosen = [i for i, kinds in enumerate(classified) if any(k == "test" for _, k, _ in kinds)]
    if not chosen:
        chosen = list(range(len(jobs)))
    pythons: list[str] = []
    lists: dict[str, list[str]] = {"install": [], "test": [], "pre_test": [], "system": []}
    for index in chosen:
        pythons.extend(jobs[index].pythons)
        for segment, kind, packages in classified[index]:
            if kind == "system":
                if not jobs[index].non_linux:
                    lists["system"].extend(packages)
            elif kind in lists:
                lists[kind].append(segment)
    return CIFacts(
        files=files,
        python_versions=_sorted_versions(pythons),
        install_commands=_dedupe(lists["install"]),
        system_packages=_dedupe(lists["system"]),
        pre_test_commands=_dedupe(lists["pre_test"]),
        test_commands=_dedupe(lists["test"]),
    )


# -- submodules, pytest config ---------------------------------------------------------------------


def _read_submodules(tree: _Tree) -> list[Submodule]:
    parser = _load_ini(tree, ".gitmodules") if tree.has(".gitmodules") else None
    if parser is None:
        return []
    found = []
    for section in parser.sections():
        kind, _, name = section.partition(" ")
        if kind != "submodule":
            continue
        path = parser.get(section, "path", fallback="").strip().strip('"')
        url = parser.get(section, "url", fallback="").strip().strip('"')
        if not path:
            tree.problem(f".gitmodules: [{section}] has no path")
            continue
        found.append(Submodule(name.strip().strip('"'), path, url))
    return found


def _ini_value(value: str) -> str:
    return "\n".join(line.strip() for line in value.strip().splitlines() if line.strip())


def _pytest_config(tree: _Tree, path: str, values: Mapping[str, Any], toml: bool) -> PytestConfig:
    def words(value: Any, split_shell: bool) -> list[str]:
        if isinstance(value, list):
            return [str(item) for item in value]
        if not isinstance(value, str):
            return [str(value)]
        if split_shell or toml:
            return _split_words(value, f"{path} pytest options", tree)
        return value.split()

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return _ini_value(value) if isinstance(value, str) else str(value)

    options: dict[str, str] = {}
    config: dict[str, Any] = {"path": path}
    for key, value in values.items():
        if key == "addopts":
            config["addopts"] = words(value, True)
        elif key in {"testpaths", "required_plugins"}:
            config[key] = words(value, False)
        elif key == "minversion":
            config["minversion"] = text(value)
        else:
            options[key] = text(value)
    return PytestConfig(options=options, **config)


def _read_pytest_config(tree: _Tree, pyproject: dict[str, Any]) -> PytestConfig | None:
    for path in ("pytest.toml", ".pytest.toml"):
        if tree.has(path):
            doc = _load_toml(tree, path)
            return (
                _pytest_config(tree, path, _table(doc, "pytest"), True) if doc is not None else None
            )
    for path in ("pytest.ini", ".pytest.ini"):
        if tree.has(path):
            parser = _load_ini(tree, path)
            if parser is None:
                return None
            values = dict(parser.items("pytest")) if parser.has_section("pytest") else {}
            return _pytest_config(tree, path, values, False)
    tool_pytest = _table(pyproject, "tool", "pytest")
    native = {k: v for k, v in tool_pytest.items() if k != "ini_options"}
    if native:
        if "ini_options" in tool_pytest:
            tree.problem("pyproject.toml: both [tool.pytest] and [tool.pytest.ini_options]")
        return _pytest_config(tree, "pyproject.toml", native, True)
    if "ini_options" in tool_pytest:
        ini_options = _table(tool_pytest, "ini_options")
        return _pytest_config(tree, "pyproject.toml", ini_options, False)
    for path, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = _load_ini(tree, path) if tree.has(path) else None
        if parser is not None and parser.has_section(section):
            return _pytest_config(tree, path, dict(parser.items(section)), False)
    return None


# -- hints, assembly -----------------------------------------------------------------------------


def _word_is_pytest(word: str) -> bool:
    base = posixpath.basename(word).lower()
    name = "".join(itertools.takewhile(lambda c: c.isalnum() or c in "-_.", base))
    return name in {"pytest", "py.test"} or name.startswith(("pytest-", "pytest_"))


def _mentions(commands: Iterable[str], predicate: Callable[[str], bool]) -> bool:
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if any(predicate(word) for word in words):
            return True
    return False


def _runs_unittest(command: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    bases = [posixpath.basename(word).lower() for word in words]
    scripts = {"unittest", "test.py", "tests.py", "runtests.py", "run_tests.py"}
    return bool(scripts & set(bases)) or ("setup.py" in bases and "test" in bases)


def _imports_unittest(tree: _Tree, path: str) -> bool:
    module = _parse_python(tree, path)
    if module is None:
        return False
    for node in ast.walk(module):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "unittest" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "unittest":
            return True
    return False


def _hints(
    tree: _Tree, facts: dict[str, Any], acc: _Acc, requirement_lists: list[list[str]]
) -> TestRunnerHints:
    tox: ToxFacts | None = facts["tox"]
    nox: NoxFacts | None = facts["nox"]
    ci: CIFacts = facts["ci"]
    pytest_config: PytestConfig | None = facts["pytest_config"]
    commands = list(ci.test_commands) + list(ci.install_commands)
    if tox is not None:
        commands += tox.commands + tox.commands_pre + tox.deps
    if nox is not None:
        for session in nox.sessions:
            commands += session.commands + [shlex.join(args) for args in session.installs]
    names = {requirement_name(req) for reqs in requirement_lists for req in reqs}
    pytest_used = (
        pytest_config is not None
        or any(name and _word_is_pytest(name) for name in names)
        or _mentions(commands, _word_is_pytest)
        or any(posixpath.basename(name) == "conftest.py" for name in tree.names)
    )
    root_scripts = [
        p for p in ("test.py", "tests.py", "runtests.py", "run_tests.py") if tree.has(p)
    ]
    unittest_only = not pytest_used and (
        any(_runs_unittest(command) for command in commands)
        or acc.test_suite
        or any(_imports_unittest(tree, path) for path in root_scripts)
    )
    test_dirs = sorted(
        {name.split("/", 1)[0] for name in tree.names if "/" in name} & {"test", "tests", "testing"}
    )
    for path in pytest_config.testpaths if pytest_config else []:
        path = path.strip().removeprefix("./").rstrip("/")
        if path and path not in test_dirs:
            test_dirs.append(path)
    return TestRunnerHints(pytest_used, unittest_only, test_dirs)


_CONFIG_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "tox.toml",
    "noxfile.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "conftest.py",
    ".gitmodules",
    "Makefile",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "pdm.lock",
    "uv.lock",
    "environment.yml",
    "environment.yaml",
    ".travis.yml",
    ".gitlab-ci.yml",
    "versioneer.py",
)
_UNREAD_FILES = ("Pipfile", "environment.yml", "environment.yaml")


_T = TypeVar("_T")


def _guarded(tree: _Tree, what: str, default: _T, reader: Callable[[], _T]) -> _T:
    """The last line of defence: whatever one reader trips on is a problem, not a crash."""
    try:
        return reader()
    except Exception as exc:
        tree.problem(f"{what}: not read ({type(exc).__name__}: {_short(exc)})")
        return default


def read_project(names: Iterable[str], read: FileReader) -> ProjectFacts:
    """The facts a Python project's files state about installing and testing it."""
    tree = _Tree(names, read)
    acc = _Acc()
    pyproject: dict[str, Any] = {}
    if tree.has("pyproject.toml"):
        pyproject = _guarded(tree, "pyproject.toml", {}, lambda: _read_pyproject(tree, acc))
    if tree.has("setup.cfg"):
        _guarded(tree, "setup.cfg", None, lambda: _read_setup_cfg(tree, acc))
    if tree.has("setup.py"):
        _guarded(tree, "setup.py", None, lambda: _read_setup_py(tree, acc))
    setup_names = {requirement_name(req) for req in acc.setup_requires}
    if setup_names & _SCM_PACKAGES or tree.has("versioneer.py"):
        acc.scm_version = True
    for path in _UNREAD_FILES:
        if tree.has(path):
            tree.problem(f"{path}: not read")
    tox = _guarded(tree, "tox configuration", None, lambda: _read_tox(tree, pyproject))
    nox = _guarded(tree, "noxfile.py", None, lambda: _read_nox(tree))
    ci = _guarded(tree, "CI files", CIFacts(), lambda: _read_ci(tree))
    refs = list(acc.extra_requirement_refs)
    if tox is not None:
        refs += tox.requirement_files + tox.constraint_files
    for session in nox.sessions if nox else []:
        for args in session.installs:
            refs += [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in {"-r", "-c"}]
    refs = [posixpath.normpath(ref) for ref in refs]
    no_files: list[RequirementsFile] = []
    requirements_files = _guarded(
        tree, "requirements files", no_files, lambda: _read_requirements_files(tree, refs)
    )
    sources = [name for name in tree.names if name.endswith((".c", ".pyx"))]
    if any(source.endswith(".pyx") for source in sources):
        acc.c_extensions = True
    facts: dict[str, Any] = {
        "tox": tox,
        "nox": nox,
        "ci": ci,
        "pytest_config": _guarded(
            tree, "pytest configuration", None, lambda: _read_pytest_config(tree, pyproject)
        ),
    }
    requirement_lists = [
        acc.dependencies or [],
        acc.tests_require,
        *acc.extras.values(),
        *acc.dependency_groups.values(),
        *acc.poetry_groups.values(),
        *acc.pdm_dev_groups.values(),
        *(item.requirements for item in requirements_files),
    ]
    hints = _guarded(
        tree,
        "test runner hints",
        TestRunnerHints(),
        lambda: _hints(tree, facts, acc, requirement_lists),
    )
    return ProjectFacts(
        build_backend=acc.build_backend,
        build_requires=acc.build_requires,
        project_name=acc.project_name,
        requires_python=acc.requires_python,
        classifier_pythons=_sorted_versions(acc.classifier_pythons),
        dependencies=acc.dependencies or [],
        extras=acc.extras,
        dependency_groups=acc.dependency_groups,
        poetry_groups=acc.poetry_groups,
        pdm_dev_groups=acc.pdm_dev_groups,
        tests_require=acc.tests_require,
        requirements_files=requirements_files,
        tox=tox,
        nox=nox,
        ci=ci,
        scm_version=acc.scm_version,
        c_extensions=acc.c_extensions,
        extension_sources=sources[:MAX_EXTENSION_SOURCES],
        submodules=_guarded(tree, ".gitmodules", list[Submodule](), lambda: _read_submodules(tree)),
        pytest_config=facts["pytest_config"],
        test_runner_hints=hints,
        config_files=[path for path in _CONFIG_FILES if tree.has(path)],
        problems=list(tree.problems),
    )
