"""pyproject.toml: the build system, PEP 621 metadata, poetry's dependencies and groups (their
constraints converted to PEP 440: ``poetry_constraint``), PEP 735 dependency groups, uv's and
pdm's dev dependencies, and what the tool tables say about SCM versions and compiled
extensions.
"""

from __future__ import annotations

from typing import Any

from dependency_groups import CyclicDependencyError, DependencyGroupResolver
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from poetry.core.constraints import version as poetry_version
from poetry.core.constraints.version import parse_constraint

from streams.evaluation.recipes.languages.python.common import Metadata
from streams.evaluation.recipes.languages.python.requirements import (
    checked_requirement,
    checked_requirements,
    requirement_name,
    requirements_from_files,
)
from streams.evaluation.recipes.sources.loaders import load_toml, string_list, table_at
from streams.evaluation.recipes.sources.tree import SourceTree


def _has_gaps(constraint: poetry_version.VersionConstraint) -> bool:
    """A union of disjoint ranges that is not one range with holes (``!=1.5``, ``!=3.0.*``)."""
    return isinstance(constraint, poetry_version.VersionUnion) and not (
        constraint.excludes_single_version or constraint.excludes_single_wildcard_range
    )


def _pep440(constraint: poetry_version.VersionConstraint) -> str:
    """One poetry-core constraint as a PEP 440 specifier. A union of disjoint ranges (``^1.2 ||
    ^3.0``) has none: it becomes the smallest range that holds it (``>=1.2,<4.0``), a superset
    that lets the resolver pick a version in the gap rather than leave the dependency out."""
    if isinstance(constraint, poetry_version.Version):
        return f"=={constraint.text}"
    if isinstance(constraint, poetry_version.VersionUnion) and _has_gaps(constraint):
        first, last = constraint.ranges[0], constraint.ranges[-1]
        constraint = poetry_version.VersionRange(
            first.min, last.max, first.include_min, last.include_max
        )
    return "" if constraint.is_any() else str(constraint).replace(" ", "")


def poetry_constraint(text: str) -> str | None:
    """A poetry version constraint as a PEP 440 specifier ("" for any), None when poetry
    cannot read it (``^banana``) or it allows no version at all.

    Read by poetry-core, and written as poetry-core's own PEP 508 conversion writes it
    (``Dependency.base_pep_508_name``): a union is written clause by clause, each clause read
    alone (``>=2.7,!=3.0.*,!=3.1.*`` stays so); where a clause is itself a union of disjoint
    ranges (``^1.2 || ^3.0``), for which poetry-core writes a ``||`` no PEP 440 tool reads,
    the whole constraint becomes the smallest range that holds it (``_pep440``)."""
    text = text.strip()
    if text in {"", "*"}:
        return ""
    try:
        constraint = parse_constraint(text)
        clauses = [constraint]
        if _has_gaps(constraint):
            clauses = [parse_constraint(part) for part in text.split(",") if part.strip()]
            if any(_has_gaps(clause) for clause in clauses):
                clauses = [constraint]
    except (ValueError, RecursionError):  # poetry-core's parse errors are ValueErrors
        return None
    if constraint.is_empty():
        return None
    result = ",".join(filter(None, (_pep440(clause) for clause in clauses)))
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
        try:
            release = Version(specifier.version.removesuffix(".*")).release
        except InvalidVersion:
            return None
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


# far more than any project has: the resolver walks includes recursively, once per group
# when they form a cycle, so more would only make a hostile file slow
MAX_DEPENDENCY_GROUPS = 200


def _group_key(name: str) -> str:
    """PEP 735's normalised group name (the one ``include-group`` is looked up by)."""
    return canonicalize_name(name)


def _checked_groups(tree: SourceTree, raw: dict[str, Any]) -> dict[str, list[Any]]:
    """The table as the resolver gets it: each group's valid requirements and its includes of
    groups that exist, in order; anything else is a problem and left out (the resolver would
    fail the whole group on it)."""
    by_key: dict[str, str] = {}
    if len(raw) > MAX_DEPENDENCY_GROUPS:
        tree.problem(f"dependency-groups: more than {MAX_DEPENDENCY_GROUPS} groups; rest not read")
    for name in list(raw)[:MAX_DEPENDENCY_GROUPS]:
        first = by_key.setdefault(_group_key(name), name)
        if first != name:
            tree.problem(f"dependency-groups: {name} is {first} again (names are normalised)")
    checked: dict[str, list[Any]] = {}
    for name in by_key.values():
        where = f"dependency-groups.{name}"
        entries = raw[name]
        if not isinstance(entries, list):
            tree.problem(f"{where}: not a list; skipped")
            entries = []
        kept: list[Any] = []
        for entry in entries:
            if isinstance(entry, str):
                kept.extend(filter(None, [checked_requirement(entry, where, tree)]))
            elif isinstance(entry, dict) and list(entry) == ["include-group"]:
                target = entry["include-group"]
                if isinstance(target, str) and _group_key(target) in by_key:
                    kept.append(entry)
                else:
                    tree.problem(f"{where}: includes unknown group {entry}")
            else:
                tree.problem(f"{where}: entry {entry!r} not understood")
        checked[name] = kept
    return checked


def _read_dependency_groups(tree: SourceTree, raw: dict[str, Any]) -> dict[str, list[str]]:
    """PEP 735 groups with ``{include-group = ...}`` resolved by the ``dependency-groups``
    library (PyPA's reference implementation); a group in an include cycle (or nested beyond
    what the resolver's recursion takes) is a problem and resolves to nothing."""
    checked = _checked_groups(tree, raw)
    # one resolver for all: it keeps each group it resolved, so a group included by many is
    # walked once (what a walk that raised left behind only names real ancestors)
    resolver = DependencyGroupResolver(checked)
    groups: dict[str, list[str]] = {}
    for name in checked:
        try:
            groups[name] = [str(requirement) for requirement in resolver.resolve(name)]
        except CyclicDependencyError as exc:
            tree.problem(f"dependency-groups.{name}: include cycle ({exc})")
            groups[name] = []
        except (ValueError, TypeError, LookupError, RecursionError) as exc:
            tree.problem(f"dependency-groups.{name}: not resolved ({type(exc).__name__}: {exc})")
            groups[name] = []
    return groups


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
