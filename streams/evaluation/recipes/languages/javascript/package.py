"""What a JavaScript / TypeScript repository's files say about installing and testing it, read
without running anything: package.json (scripts, dependencies, engines, ``packageManager``,
workspaces, entry points), the lockfile, ``.nvmrc`` / ``.node-version``, yarn's and npm's rc
files, ``pnpm-workspace.yaml`` / ``lerna.json``, and the Node versions of the CI workflows
(GitHub Actions matrices and setup-node, composite actions and local reusable workflows
followed; Travis ``node_js``). Read on the shared ``recipes.sources`` (tree, loaders, CI
walker), like Python's facts: pure, every file capped, nothing raises on bad input (what could
not be read is a ``problem``)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal

from streams.evaluation.recipes.sources.ci import read_ci
from streams.evaluation.recipes.sources.loaders import load_json, load_yaml
from streams.evaluation.recipes.sources.tree import FileReader, SourceTree

MAX_LOCKFILE_BYTES = 64 << 20  # lockfiles of big repositories pass 1 MiB
MAX_WORKSPACE_PACKAGES = 500
PackageManager = Literal["npm", "yarn", "yarn-berry", "pnpm"]
LOCKFILES: tuple[tuple[str, PackageManager], ...] = (
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
)
# directories that are never the repository's own sources
_VENDORED = ("node_modules/", "dist/", "build/", "vendor/", "coverage/", ".yarn/")
_TS = (".ts", ".tsx", ".mts", ".cts")
_JS = (".js", ".jsx", ".mjs", ".cjs")
_NODE_KEYS = ("node", "node-version", "node_version", "node-versions", "nodejs", "node_js")


@dataclass(frozen=True)
class Package:
    """One package.json: the root's or a workspace package's (``directory`` "" = root)."""

    directory: str
    name: str | None = None
    scripts: dict[str, str] = field(default_factory=dict)
    dependencies: dict[str, str] = field(default_factory=dict)
    dev_dependencies: dict[str, str] = field(default_factory=dict)
    engines_node: str | None = None
    package_manager: str | None = None  # corepack's "pnpm@8.10.2+sha..."
    workspaces: tuple[str, ...] = ()
    # where the package's code is loaded from: main, module, exports, bin targets
    entry_points: tuple[str, ...] = ()
    module_type: str | None = None  # "module" / "commonjs"
    has_jest_config: bool = False  # a "jest" key

    @property
    def all_dependencies(self) -> dict[str, str]:
        return {**self.dependencies, **self.dev_dependencies}

    def path(self, relative: str) -> str:
        return posixpath.normpath(posixpath.join(self.directory, relative))


@dataclass(frozen=True)
class Lockfile:
    path: str
    manager: PackageManager
    version: str | None = None  # lockfileVersion (npm, pnpm); "1" for yarn classic
    text: str = ""  # for the runner lookup (names of installed packages)

    def mentions(self, package: str) -> bool:
        """Whether the lockfile installs ``package`` (any version)."""
        quoted = re.escape(package)
        pattern = (
            rf"(?:node_modules/{quoted}\"|^\"?{quoted}@|^\s+/?{quoted}[@/:]|\s'?/?{quoted}@"
            rf"|\"{quoted}\":\s*\{{)"
        )
        return bool(re.search(pattern, self.text, re.MULTILINE))


@dataclass
class JsFacts:
    root: Package
    packages: dict[str, Package] = field(default_factory=dict)  # workspace dir -> package
    lockfile: Lockfile | None = None
    manager: PackageManager = "npm"
    manager_version: str | None = None  # pinned by packageManager
    workspace_source: str | None = None  # package.json / pnpm-workspace.yaml / lerna.json
    nvmrc: str | None = None  # .nvmrc or .node-version, as written
    ci_node_versions: list[str] = field(default_factory=list)
    yarn_path: str | None = None  # .yarnrc.yml yarnPath (a committed yarn release)
    pnp: bool = False  # yarn berry's Plug'n'Play (no node_modules)
    npmrc: dict[str, str] = field(default_factory=dict)
    typescript: bool = False
    dependency_files: list[str] = field(default_factory=list)  # what the env layer needs
    problems: list[str] = field(default_factory=list)

    def package_for(self, directory: str) -> Package:
        return self.packages.get(directory, self.root)


def _json_object(tree: SourceTree, path: str) -> dict[str, Any] | None:
    """A JSON file holding an object (package.json, lerna.json); None for anything else."""
    doc = load_json(tree, path)
    return doc if isinstance(doc, dict) else None


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float)}


def _export_targets(value: Any, depth: int = 0) -> list[str]:
    """Every path an ``exports`` (or ``bin``) value points at."""
    if depth > 10:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in _export_targets(item, depth + 1)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _export_targets(item, depth + 1)]
    return []


def _workspace_globs(value: Any) -> list[str]:
    if isinstance(value, dict):  # yarn's {"packages": [...], "nohoist": [...]}
        value = value.get("packages")
    return [str(v) for v in value] if isinstance(value, list) else []


def read_package(tree: SourceTree, directory: str) -> Package | None:
    path = posixpath.join(directory, "package.json") if directory else "package.json"
    doc = _json_object(tree, path)
    if doc is None:
        return None
    engines = doc.get("engines")
    node = engines.get("node") if isinstance(engines, dict) else None
    entries = [doc[k] for k in ("main", "module") if isinstance(doc.get(k), str)]
    entries += _export_targets(doc.get("exports")) + _export_targets(doc.get("bin"))
    manager = doc.get("packageManager")
    return Package(
        directory=directory,
        name=doc["name"] if isinstance(doc.get("name"), str) else None,
        scripts=_strings(doc.get("scripts")),
        dependencies=_strings(doc.get("dependencies")),
        dev_dependencies=_strings(doc.get("devDependencies")),
        engines_node=str(node) if isinstance(node, str | int) else None,
        package_manager=manager if isinstance(manager, str) else None,
        workspaces=tuple(_workspace_globs(doc.get("workspaces"))),
        entry_points=tuple(dict.fromkeys(e for e in entries if "*" not in e)),
        module_type=doc.get("type") if isinstance(doc.get("type"), str) else None,
        has_jest_config=isinstance(doc.get("jest"), dict),
    )


def _lockfile(tree: SourceTree) -> Lockfile | None:
    for path, manager in LOCKFILES:
        if path not in tree.name_set:
            continue
        text = tree.text(path, MAX_LOCKFILE_BYTES) or ""
        version: str | None = None
        if manager == "npm":
            match = re.search(r'"lockfileVersion"\s*:\s*(\d+)', text)
            version = match.group(1) if match else None
        elif manager == "pnpm":
            match = re.search(r"^lockfileVersion:\s*['\"]?([\d.]+)", text, re.MULTILINE)
            version = match.group(1) if match else None
        elif re.search(r"^__metadata:", text, re.MULTILINE):
            manager, version = "yarn-berry", None
        else:
            version = "1"
        return Lockfile(path, manager, version, text)
    return None


def _workspace_dirs(tree: SourceTree, globs: list[str]) -> list[str]:
    """The directories with a package.json that the workspace globs take (``!`` excludes)."""
    include = [g.strip().rstrip("/").removeprefix("./") for g in globs if not g.startswith("!")]
    exclude = [g[1:].strip().rstrip("/").removeprefix("./") for g in globs if g.startswith("!")]
    dirs = []
    for name in tree.names:
        if not name.endswith("/package.json") or "node_modules/" in name:
            continue
        directory = name[: -len("/package.json")]
        wanted = any(_glob_match(directory, g) for g in include)
        if wanted and not any(_glob_match(directory, g) for g in exclude):
            dirs.append(directory)
    return dirs[:MAX_WORKSPACE_PACKAGES]


def _glob_match(path: str, pattern: str) -> bool:
    """Whether a workspace glob takes a directory, as npm's and pnpm's globs do: ``*`` (and
    ``?``, ``[...]``) within one path segment, ``**`` any number of segments (none too), every
    other segment literally; a wildcard does not take a hidden segment (``.github``)."""
    parts = path.split("/")
    segments = [segment for segment in pattern.split("/") if segment and segment != "."]
    # matched[j]: the path's first i parts match the pattern's first j segments (i growing)
    matched = [True] + [False] * len(segments)
    for j, segment in enumerate(segments):
        matched[j + 1] = matched[j] and segment == "**"
    for part in parts:
        row = [False] * (len(segments) + 1)
        for j, segment in enumerate(segments):
            if segment == "**":
                # none of the path (row[j]), or this part after none or more of the others
                consumes = (matched[j] or matched[j + 1]) and not _hidden(part, segment)
                row[j + 1] = row[j] or consumes
            else:
                row[j + 1] = matched[j] and _segment_match(part, segment)
        matched = row
    return matched[-1]


def _hidden(part: str, segment: str) -> bool:
    return part.startswith(".") and not segment.startswith(".")


def _segment_match(part: str, segment: str) -> bool:
    return fnmatchcase(part, segment) and not _hidden(part, segment)


def _workspaces(tree: SourceTree, root: Package) -> tuple[list[str], str | None]:
    if root.workspaces:
        return list(root.workspaces), "package.json"
    pnpm = load_yaml(tree, "pnpm-workspace.yaml")
    if isinstance(pnpm, dict) and isinstance(pnpm.get("packages"), list):
        return [str(p) for p in pnpm["packages"]], "pnpm-workspace.yaml"
    lerna = _json_object(tree, "lerna.json")
    if lerna is not None:
        packages = lerna.get("packages")
        return (_workspace_globs(packages) or ["packages/*"]), "lerna.json"
    return [], None


def _ci_node_versions(tree: SourceTree) -> list[str]:
    """The Node versions the CI runs: GitHub Actions matrices (a called workflow's and its
    callers') and setup-node inputs (in composite actions too), Travis ``node_js``."""
    versions: list[str] = []
    for job in read_ci(tree).jobs:
        if job.system == "travis":
            node_js = job.spec.get("node_js")
            versions += [str(v) for v in (node_js if isinstance(node_js, list) else [node_js]) if v]
        if job.system != "github":
            continue
        for matrix in (job.matrix, *job.caller_matrices):
            if isinstance(matrix, dict):
                versions += _matrix_versions(matrix)
        for step in job.steps:
            if step.uses is not None and "setup-node" in step.uses:
                given = step.with_.get("node-version")
                if given is not None and "${{" not in str(given):
                    versions += _as_strings(given)
    return list(dict.fromkeys(versions))


def _as_strings(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value]) if v is not None]


def _matrix_versions(matrix: dict[str, Any]) -> list[str]:
    out: list[str] = []
    rows = [matrix, *(i for i in matrix.get("include") or [] if isinstance(i, dict))]
    for row in rows:
        for key in _NODE_KEYS:
            value = row.get(key)
            if value is None:
                continue
            out += _as_strings(value)
    return out


def _typescript(tree: SourceTree) -> bool:
    ts = js = 0
    for name in tree.names:
        if name.startswith(_VENDORED) or "/node_modules/" in name or name.endswith(".d.ts"):
            continue
        ts += name.endswith(_TS)
        js += name.endswith(_JS)
    return ts > 0 and (ts >= js or ("tsconfig.json" in tree.name_set and ts * 2 >= js))


def _dependency_files(tree: SourceTree, facts: JsFacts) -> list[str]:
    """The files the install reads: every package.json of the workspace, the lockfile, the
    package managers' configuration and a committed yarn release or patches."""
    files = ["package.json", *(f"{d}/package.json" for d in facts.packages)]
    names = (".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml", "lerna.json")
    files += [n for n in names if n in tree.name_set]
    if facts.lockfile is not None:
        files.append(facts.lockfile.path)
    files += [
        n
        for n in tree.names
        if n.startswith((".yarn/releases/", ".yarn/plugins/", ".yarn/patches/", "patches/"))
    ][:200]
    return list(dict.fromkeys(files))


def read_js_project(
    names: Iterable[str],
    read: FileReader,
    why_unreadable: Callable[[str], str | None] | None = None,
) -> JsFacts | None:
    """The facts of a tree with a root package.json (None without one)."""
    tree = SourceTree(names, read, why_unreadable)
    root = read_package(tree, "")
    if root is None:
        return None
    facts = JsFacts(root=root, lockfile=_lockfile(tree))
    globs, facts.workspace_source = _workspaces(tree, root)
    for directory in _workspace_dirs(tree, globs) if globs else []:
        package = read_package(tree, directory)
        if package is not None:
            facts.packages[directory] = package
    _package_manager(tree, facts)
    for path in (".nvmrc", ".node-version"):
        text = tree.text(path)
        if text and text.strip():
            facts.nvmrc = text.strip().splitlines()[0].strip()
            break
    facts.ci_node_versions = _ci_node_versions(tree)
    facts.typescript = _typescript(tree)
    facts.dependency_files = _dependency_files(tree, facts)
    facts.problems = tree.problems
    return facts


def _package_manager(tree: SourceTree, facts: JsFacts) -> None:
    """The package manager: the lockfile's, ``packageManager`` pinning its version (and
    naming it where there is no lockfile); yarn berry also from ``.yarnrc.yml``."""
    pinned = facts.root.package_manager or ""
    name, _, version = pinned.partition("@")
    facts.manager_version = version.split("+", 1)[0] or None
    berry_rc = load_yaml(tree, ".yarnrc.yml")
    linker: Any = None
    if isinstance(berry_rc, dict):
        path = berry_rc.get("yarnPath")
        facts.yarn_path = path if isinstance(path, str) and path in tree.name_set else None
        linker = berry_rc.get("nodeLinker")
    classic = version.startswith("1.")
    if facts.lockfile is not None:
        facts.manager = facts.lockfile.manager
    elif name == "pnpm":
        facts.manager = "pnpm"
    elif name == "yarn":
        facts.manager = "yarn" if classic else "yarn-berry"
    berry_pinned = name == "yarn" and bool(version) and not classic
    if facts.manager == "yarn" and (".yarnrc.yml" in tree.name_set or berry_pinned):
        facts.manager = "yarn-berry"
    facts.pnp = facts.manager == "yarn-berry" and linker in {None, "pnp"}
    npmrc = tree.text(".npmrc") or ""
    for line in npmrc.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith(("#", ";")):
            facts.npmrc[key.strip()] = value.strip()
