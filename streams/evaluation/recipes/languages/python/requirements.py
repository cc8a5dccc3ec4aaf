"""pip requirements files: which files of a tree are ones (``is_requirements_name``), what each is
for (``requirements_kind``), and what each asks for, the files it includes (``-r``/``-c``) and
whether it installs the project editable; also the PEP 508 check every reader's requirement
strings go through (``checked_requirement``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from streams.evaluation.recipes.sources.tree import SourceTree

MAX_REQUIREMENTS_FILES = 100

REQUIREMENTS_KINDS = ("test", "dev", "docs", "lint", "typing", "runtime", "build", "other")


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


def checked_requirement(text: str, where: str, tree: SourceTree) -> str | None:
    text = text.strip()
    if not text:
        return None
    try:
        Requirement(text)
    except InvalidRequirement:
        tree.problem(f"{where}: {text[:120]!r} is not a PEP 508 requirement; skipped")
        return None
    return text


def checked_requirements(values: Iterable[str], where: str, tree: SourceTree) -> list[str]:
    found = (checked_requirement(value, where, tree) for value in values)
    return [req for req in found if req]


def requirement_name(text: str) -> str | None:
    """The canonical name a requirement string names, or None when it is not one."""
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def requirements_from_files(tree: SourceTree, files: list[str], refs: list[str]) -> list[str]:
    """The requirements of the files a configuration names (setuptools' ``file:``); each is
    also noted in ``refs``, to be read as a requirements file of its own."""
    found: list[str] = []
    for path in files:
        path = posixpath.normpath(path.strip())
        refs.append(path)
        text = tree.text(path)
        if text is None:
            tree.problem(f"{path}: named as a requirements file but absent or unreadable")
            continue
        found.extend(parse_requirements_text(text, path, tree).requirements)
    return found


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
# pip's own pattern for the variables it expands (req_file.ENV_VAR_RE): a token, not structure
_PIP_VARIABLE = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)\}")
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


def pip_option(line: str) -> tuple[str, str]:
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


def _pip_logical_lines(text: str) -> list[str]:
    """The lines of a requirements file with pip's continuations joined, as pip's
    ``req_file.join_lines`` does: a line ending in a backslash goes on with the next one, but
    a comment line never does (even ending in one: it ends a continuation instead), and the
    backslash is dropped without a blank in its place. Comments are stripped afterwards, so a
    requirement followed by a comment ending in a backslash does take the next line in (and
    its comment then drops it), as in pip."""
    logical: list[str] = []
    pending: list[str] = []
    for line in text.splitlines():
        comment = line.lstrip().startswith("#")
        if line.endswith("\\") and not comment:
            pending.append(line.strip("\\"))
            continue
        # pip adds a blank before a comment line, so that it stays a comment once joined
        logical.append("".join([*pending, " " + line if comment else line]))
        pending = []
    if pending:
        logical.append("".join(pending))
    return logical


def _expand_pip_variables(
    line: str, variables: Mapping[str, str], path: str, tree: SourceTree
) -> str:
    """``${NAME}`` replaced as pip does (``req_file.expand_env_variables``: only this form,
    names of capitals, digits and ``_``), from ``variables`` instead of pip's environment; a
    name not there is left as written (pip leaves an unset one too) and said."""

    def value(match: re.Match[str]) -> str:
        name = match["name"]
        if variables.get(name):
            return variables[name]
        tree.problem(f"{path}: ${{{name}}} is set by no CI test job nor tox; left unexpanded")
        return match[0]

    return _PIP_VARIABLE.sub(value, line)


def parse_requirements_text(
    text: str, path: str, tree: SourceTree, variables: Mapping[str, str] | None = None
) -> RequirementsFile:
    """What a requirements file asks for. ``variables``: the environment pip would expand
    ``${NAME}`` from (None: no expansion, for the files setuptools reads, which are not pip's)."""
    base_dir = posixpath.dirname(path)
    requirements: list[str] = []
    referenced: list[str] = []
    constraints: list[str] = []
    editable = False
    for raw in _pip_logical_lines(text):
        line = _strip_pip_comment(raw)
        if variables is not None:
            line = _expand_pip_variables(line, variables, path, tree)
        if not line:
            continue
        if line.startswith("-"):
            option, value = pip_option(line)
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
        req = checked_requirement(line, path, tree)
        if req:
            requirements.append(req)
    kind = requirements_kind(path)
    return RequirementsFile(path, kind, requirements, referenced, editable, constraints)


def read_requirements_files(
    tree: SourceTree, extra_refs: Iterable[str], variables: Mapping[str, str] | None = None
) -> list[RequirementsFile]:
    """Every requirements file of the tree (by name, or named by a configuration in
    ``extra_refs``) and those they include; ``variables`` as in ``parse_requirements_text``:
    pip expands them in every line, ``-r ${DIR}/test.txt`` included."""
    variables = {} if variables is None else variables
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
        parsed = parse_requirements_text(text, path, tree, variables)
        found.append(parsed)
        queue.extend(ref for ref in parsed.referenced_files if tree.has(ref) and ref not in seen)
    return sorted(found, key=lambda item: item.path)
