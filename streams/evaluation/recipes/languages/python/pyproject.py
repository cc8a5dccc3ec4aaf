"""pyproject.toml: the build system, PEP 621 metadata, poetry's dependencies and groups (their
constraints converted to PEP 440: ``poetry_constraint``), PEP 735 dependency groups, uv's and
pdm's dev dependencies, and what the tool tables say about SCM versions and compiled
extensions.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from streams.evaluation.recipes.languages.python.common import MAX_DEPTH, Metadata
from streams.evaluation.recipes.languages.python.requirements import (
    checked_requirement,
    checked_requirements,
    requirement_name,
    requirements_from_files,
)
from streams.evaluation.recipes.sources.loaders import load_toml, string_list, table_at
from streams.evaluation.recipes.sources.tree import SourceTree

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


def _poetry_requirements(
    name: str, spec: Any, where: str, tree: SourceTree
) -> tuple[list[str], bool]:
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
    extras = string_list(spec.get("extras"))
    text = name + (f"[{','.join(extras)}]" if extras else "") + constraint
    if markers:
        joined = " and ".join(f"({m})" for m in markers) if len(markers) > 1 else markers[0]
        text += f" ; {joined}"
    req = checked_requirement(text, where, tree)
    return ([req] if req else []), optional


SCM_PACKAGES = frozenset(
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


def read_pyproject(tree: SourceTree, acc: Metadata) -> dict[str, Any]:
    doc = load_toml(tree, "pyproject.toml") or {}
    build = table_at(doc, "build-system")
    if isinstance(build.get("build-backend"), str):
        acc.build_backend = build["build-backend"]
    acc.build_requires = checked_requirements(
        string_list(build.get("requires")), "build-system", tree
    )
    if acc.build_backend and acc.build_backend.startswith(_COMPILING_BACKENDS):
        acc.c_extensions = True
    _read_pep621(tree, acc, doc)
    _read_poetry(tree, acc, doc)
    groups = _read_dependency_groups(tree, table_at(doc, "dependency-groups"))
    uv_dev = string_list(table_at(doc, "tool", "uv").get("dev-dependencies"))
    if uv_dev:  # uv's legacy dev-dependencies are part of its "dev" group
        dev = groups.setdefault("dev", [])
        dev.extend(checked_requirements(uv_dev, "tool.uv.dev-dependencies", tree))
    acc.dependency_groups = groups
    pdm = table_at(doc, "tool", "pdm")
    is_pdm = bool(pdm) or (acc.build_backend or "").startswith("pdm")
    for name, values in table_at(pdm, "dev-dependencies").items():
        where = f"tool.pdm.dev-dependencies.{name}"
        acc.pdm_dev_groups[name] = checked_requirements(string_list(values), where, tree)
    if is_pdm:
        for name, reqs in groups.items():
            acc.pdm_dev_groups.setdefault(name, reqs)
    _read_pyproject_tools(tree, acc, doc)
    return doc


def _read_pep621(tree: SourceTree, acc: Metadata, doc: dict[str, Any]) -> None:
    project = table_at(doc, "project")
    if not project:
        return
    if isinstance(project.get("name"), str):
        acc.project_name = project["name"]
    if isinstance(project.get("requires-python"), str):
        acc.requires_python = project["requires-python"]
    acc.add_classifiers(string_list(project.get("classifiers")))
    dynamic = string_list(project.get("dynamic"))
    setuptools_dynamic = table_at(doc, "tool", "setuptools", "dynamic")
    if "dependencies" in project:
        acc.set_dependencies(
            checked_requirements(string_list(project["dependencies"]), "project.dependencies", tree)
        )
    elif "dependencies" in dynamic and "dependencies" in setuptools_dynamic:
        files = string_list(table_at(setuptools_dynamic, "dependencies").get("file"))
        acc.set_dependencies(requirements_from_files(tree, files, acc.extra_requirement_refs))
    elif "dependencies" in dynamic and not tree.has("setup.py") and not tree.has("setup.cfg"):
        tree.problem("pyproject.toml: project.dependencies is dynamic; not read")
    extras: dict[str, list[str]] = {}
    for name, values in table_at(project, "optional-dependencies").items():
        where = f"project.optional-dependencies.{name}"
        extras[name] = checked_requirements(string_list(values), where, tree)
    for name, spec in table_at(setuptools_dynamic, "optional-dependencies").items():
        files = string_list(spec.get("file")) if isinstance(spec, dict) else []
        extras.setdefault(name, requirements_from_files(tree, files, acc.extra_requirement_refs))
    acc.add_extras(extras)


def _read_poetry(tree: SourceTree, acc: Metadata, doc: dict[str, Any]) -> None:
    poetry = table_at(doc, "tool", "poetry")
    if not poetry:
        return
    if acc.project_name is None and isinstance(poetry.get("name"), str):
        acc.project_name = poetry["name"]
    acc.add_classifiers(string_list(poetry.get("classifiers")))
    runtime: list[str] = []
    optional: dict[str, str] = {}
    for name, spec in table_at(poetry, "dependencies").items():
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
    for extra, names in table_at(poetry, "extras").items():
        extras[extra] = [optional.get(canonicalize_name(n), n) for n in string_list(names)]
    acc.add_extras(extras)
    sources: list[tuple[str, dict[str, Any]]] = [("dev", table_at(poetry, "dev-dependencies"))]
    for group, table in table_at(poetry, "group").items():
        sources.append((group, table_at(table, "dependencies")))
    for group, table in sources:
        if not table:
            continue
        reqs = acc.poetry_groups.setdefault(group, [])
        for name, spec in table.items():
            found, _ = _poetry_requirements(name, spec, f"tool.poetry.group.{group}", tree)
            reqs.extend(req for req in found if req not in reqs)


def _group_key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _read_dependency_groups(tree: SourceTree, raw: dict[str, Any]) -> dict[str, list[str]]:
    """PEP 735 groups with ``{include-group = ...}`` resolved; cycles become problems."""
    by_key = {_group_key(name): name for name in raw}
    resolved: dict[str, list[str]] = {}

    def expand(name: str, stack: list[str]) -> list[str]:
        if name in resolved:
            return resolved[name]
        if name in stack or len(stack) > MAX_DEPTH:
            tree.problem(f"dependency-groups: include cycle {' -> '.join([*stack, name])}")
            return []
        found: list[str] = []
        entries = raw.get(name)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str):
                req = checked_requirement(entry, f"dependency-groups.{name}", tree)
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


def _read_pyproject_tools(tree: SourceTree, acc: Metadata, doc: dict[str, Any]) -> None:
    tool = table_at(doc, "tool")
    requires = {requirement_name(req) for req in acc.build_requires}
    if requires & SCM_PACKAGES or "setuptools_scm" in tool or "setuptools-scm" in tool:
        acc.scm_version = True
    if table_at(tool, "hatch", "version").get("source") == "vcs":
        acc.scm_version = True
    if table_at(tool, "pdm", "version").get("source") == "scm":
        acc.scm_version = True
    if table_at(tool, "poetry-dynamic-versioning").get("enable") is True:
        acc.scm_version = True
    if "ext-modules" in table_at(tool, "setuptools"):
        acc.c_extensions = True
    hatch_envs = table_at(tool, "hatch", "envs")
    if hatch_envs:
        tree.problem(f"pyproject.toml: [tool.hatch.envs] ({', '.join(hatch_envs)}) not read")
    if table_at(tool, "poe", "tasks"):
        tree.problem("pyproject.toml: [tool.poe.tasks] not read")
    if table_at(tool, "pdm", "scripts"):
        tree.problem("pyproject.toml: [tool.pdm.scripts] not read")
