"""What a Python repository's own files say about how to install and test it.

``read_project(names, read)`` gets the file names of a tree and a reader (path -> bytes, or
None) and returns ``ProjectFacts``. It is pure: no I/O of its own, nothing executed. Each file
is read by its own parser, one module each: ``pyproject`` (tomllib), ``setup_cfg``
(configparser, interpolation off), ``setup_py`` and ``nox`` (ast: literal arguments only),
``requirements`` and ``tox``, ``pytest_config``, and ``ci`` on the shared CI walker, with
``commands`` telling what each command does. What a file asks for that no reader here
understands is written to ``problems``, never guessed; a malformed, huge or hostile file becomes
a problem, never an exception.
"""

from __future__ import annotations

import ast
import itertools
import posixpath
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from streams.evaluation.recipes.languages.python.ci import CIFacts, read_ci_facts
from streams.evaluation.recipes.languages.python.common import (
    Metadata,
    parse_python,
    sorted_versions,
)
from streams.evaluation.recipes.languages.python.nox import NoxFacts, NoxSession, read_nox
from streams.evaluation.recipes.languages.python.pyproject import SCM_PACKAGES, read_pyproject
from streams.evaluation.recipes.languages.python.pytest_config import (
    PytestConfig,
    read_pytest_config,
)
from streams.evaluation.recipes.languages.python.requirements import (
    RequirementsFile,
    read_requirements_files,
    requirement_name,
)
from streams.evaluation.recipes.languages.python.setup_cfg import read_setup_cfg
from streams.evaluation.recipes.languages.python.setup_py import read_setup_py
from streams.evaluation.recipes.languages.python.tox import ToxFacts, read_tox
from streams.evaluation.recipes.sources.loaders import load_ini, short_error
from streams.evaluation.recipes.sources.tree import FileReader, SourceTree

# the facts of each source, defined beside their reader, are part of this module's API
__all__ = [
    "CIFacts",
    "NoxFacts",
    "NoxSession",
    "ProjectFacts",
    "PytestConfig",
    "RequirementsFile",
    "Submodule",
    "TestRunnerHints",
    "ToxFacts",
    "read_project",
]


MAX_EXTENSION_SOURCES = 20


@dataclass(frozen=True)
class Submodule:
    name: str
    path: str
    url: str


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


def _read_submodules(tree: SourceTree) -> list[Submodule]:
    parser = load_ini(tree, ".gitmodules") if tree.has(".gitmodules") else None
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


def _imports_unittest(tree: SourceTree, path: str) -> bool:
    module = parse_python(tree, path)
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
    tree: SourceTree, facts: dict[str, Any], acc: Metadata, requirement_lists: list[list[str]]
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


def _guarded(tree: SourceTree, what: str, default: _T, reader: Callable[[], _T]) -> _T:
    """The last line of defence: whatever one reader trips on is a problem, not a crash."""
    try:
        return reader()
    except Exception as exc:
        tree.problem(f"{what}: not read ({type(exc).__name__}: {short_error(exc)})")
        return default


def read_project(
    names: Iterable[str],
    read: FileReader,
    why_unreadable: Callable[[str], str | None] | None = None,
) -> ProjectFacts:
    """The facts a Python project's files state about installing and testing it."""
    tree = SourceTree(names, read, why_unreadable)
    acc = Metadata()
    pyproject: dict[str, Any] = {}
    if tree.has("pyproject.toml"):
        pyproject = _guarded(tree, "pyproject.toml", {}, lambda: read_pyproject(tree, acc))
    if tree.has("setup.cfg"):
        _guarded(tree, "setup.cfg", None, lambda: read_setup_cfg(tree, acc))
    if tree.has("setup.py"):
        _guarded(tree, "setup.py", None, lambda: read_setup_py(tree, acc))
    setup_names = {requirement_name(req) for req in acc.setup_requires}
    if setup_names & SCM_PACKAGES or tree.has("versioneer.py"):
        acc.scm_version = True
    for path in _UNREAD_FILES:
        if tree.has(path):
            tree.problem(f"{path}: not read")
    tox = _guarded(tree, "tox configuration", None, lambda: read_tox(tree, pyproject))
    nox = _guarded(tree, "noxfile.py", None, lambda: read_nox(tree))
    ci = _guarded(tree, "CI files", CIFacts(), lambda: read_ci_facts(tree))
    refs = list(acc.extra_requirement_refs)
    if tox is not None:
        refs += tox.requirement_files + tox.constraint_files
    for session in nox.sessions if nox else []:
        for args in session.installs:
            refs += [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in {"-r", "-c"}]
    refs = [posixpath.normpath(ref) for ref in refs]
    # what pip would expand ``${NAME}`` in a requirements file from: the variables the CI's
    # test jobs set (where pip runs), then tox's setenv (its deps are installed with it)
    variables = {**(tox.setenv if tox is not None else {}), **ci.environment}
    no_files: list[RequirementsFile] = []
    requirements_files = _guarded(
        tree,
        "requirements files",
        no_files,
        lambda: read_requirements_files(tree, refs, variables),
    )
    sources = [name for name in tree.names if name.endswith((".c", ".pyx"))]
    if any(source.endswith(".pyx") for source in sources):
        acc.c_extensions = True
    facts: dict[str, Any] = {
        "tox": tox,
        "nox": nox,
        "ci": ci,
        "pytest_config": _guarded(
            tree, "pytest configuration", None, lambda: read_pytest_config(tree, pyproject)
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
        classifier_pythons=sorted_versions(acc.classifier_pythons),
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
