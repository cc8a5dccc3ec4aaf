"""What a Python project's CI files state: the Python versions its jobs run, and the install,
system package, pre-test and test commands of the jobs that run tests (of every job when none
does), and the variables those jobs set. Jobs and steps come from the shared CI walker
(``sources.ci``: local composite actions and reusable workflows followed); commands are told
apart by ``commands.classify_command``.

A pre-test step is a build command ``classify_command`` knows (``msgfmt``, ``setup.py
build_ext``, ...), or a script of the repository itself (``./scripts/build-translations.sh``,
``bash ci/prepare.sh``, ``python tools/gen.py``: a file of the tree) that a Linux test job runs
after one of its install steps and before its first test step: what the job builds for its
tests (``pre_test_scripts``; the recipe lets them fail, as they may need what the sandbox has
not).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.languages.python.commands import (
    classify_command,
    run_segments,
    script_path,
)
from streams.evaluation.recipes.languages.python.common import dedupe, sorted_versions
from streams.evaluation.recipes.sources.ci import CIJob, read_ci
from streams.evaluation.recipes.sources.loaders import list_value, string_list, table_at
from streams.evaluation.recipes.sources.tree import SourceTree


@dataclass(frozen=True)
class CIFacts:
    """What the CI files run, taken from the jobs that run tests (all jobs when none does)."""

    files: list[str] = field(default_factory=list)
    python_versions: list[str] = field(default_factory=list)
    install_commands: list[str] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)
    pre_test_commands: list[str] = field(default_factory=list)
    test_commands: list[str] = field(default_factory=list)
    # those of pre_test_commands that run a script of the repository (in the same order)
    pre_test_scripts: list[str] = field(default_factory=list)
    # the variables the jobs and their steps set (literal values only; the first one wins)
    environment: dict[str, str] = field(default_factory=dict)


@dataclass
class _Job:
    name: str
    non_linux: bool = False
    pythons: list[str] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def add_env(self, values: dict[str, Any]) -> None:
        """The literal values of an ``env:`` table (GitLab's ``{value: ...}`` too): one with a
        ``${{ }}`` expression is only known when the job runs."""
        for key, value in values.items():
            if isinstance(value, dict):
                value = value.get("value")
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                continue
            if "${{" not in str(value):
                self.env.setdefault(str(key), str(value))


_PYTHON_KEYS = ("python-version", "python", "python_version", "python-versions", "py", "pyver")


def _ci_python(value: Any, where: str, tree: SourceTree) -> str | None:
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


def _ci_pythons(values: Any, where: str, tree: SourceTree) -> list[str]:
    if isinstance(values, str):
        values = values.splitlines()
    if not isinstance(values, list):
        values = [values]
    found = (_ci_python(value, where, tree) for value in values)
    return [version for version in found if version]


def _matrix_pythons(matrix: Any, where: str, tree: SourceTree) -> list[str]:
    if isinstance(matrix, str):
        if "${{" in matrix:
            tree.problem(f"{where}: matrix computed by an expression; not read")
        return []
    if not isinstance(matrix, dict):
        return []
    found: list[str] = []
    for key in _PYTHON_KEYS:
        found.extend(_ci_pythons(matrix.get(key), where, tree) if key in matrix else [])
    for entry in list_value(matrix.get("include")):
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
        values = string_list(matrix.get(key)) + [
            entry[key]
            for entry in list_value(matrix.get("include"))
            if isinstance(entry, dict) and isinstance(entry.get(key), str)
        ]
        return bool(values) and all(foreign(value) for value in values)
    return foreign(runs_on)


def _gitlab_python(tree: SourceTree, image: Any) -> list[str]:
    name = image.get("name") if isinstance(image, dict) else image
    if isinstance(name, str) and name.split("/")[-1].startswith("python:"):
        version = _ci_python(name.split(":", 1)[1], ".gitlab-ci.yml", tree)
        return [version] if version else []
    return []


_FOREIGN_SHELLS = (["pwsh"], ["powershell"], ["cmd"])  # run lines in them are not Linux's


def _github_job(tree: SourceTree, job: CIJob) -> _Job:
    facts = _Job(job.name, _non_linux(job.runs_on, job.matrix))
    facts.add_env(job.env)
    for matrix in (job.matrix, *job.caller_matrices):
        facts.pythons.extend(_matrix_pythons(matrix, job.where, tree))
    for step in job.steps:
        if step.uses is not None and any(
            name in step.uses for name in ("setup-python", "setup-pdm", "setup-uv")
        ):
            facts.pythons.extend(_ci_pythons(step.with_.get("python-version"), step.where, tree))
        if step.shell is not None and step.shell.split()[:1] in _FOREIGN_SHELLS:
            continue
        if step.run is not None:
            facts.add_env(step.env)
            facts.segments.extend(run_segments(step.run))
    return facts


def _travis_job(tree: SourceTree, job: CIJob) -> _Job:
    doc = job.spec
    facts = _Job(
        "travis", non_linux=isinstance(doc.get("os"), str) and doc["os"] in {"osx", "windows"}
    )
    facts.pythons.extend(_ci_pythons(doc.get("python"), job.path, tree) if "python" in doc else [])
    for section in ("matrix", "jobs"):
        for entry in list_value(table_at(doc, section).get("include")):
            if isinstance(entry, dict) and "python" in entry:
                facts.pythons.extend(_ci_pythons(entry["python"], job.path, tree))
    packages = string_list(table_at(doc, "addons", "apt").get("packages"))
    if packages:
        facts.segments.append("apt-get install -y " + " ".join(packages))
    return facts


def _job_facts(tree: SourceTree, job: CIJob) -> _Job:
    if job.system == "github":
        return _github_job(tree, job)
    facts = _travis_job(tree, job) if job.system == "travis" else _Job(job.name)
    if job.system == "gitlab":
        facts.pythons.extend(_gitlab_python(tree, job.image))
        facts.add_env(job.env)
    for step in job.steps:
        facts.segments.extend(run_segments(step.run or ""))
    return facts


_NOT_PRE_TEST_WORDS = ("lint", "deploy", "publish", "upload", "release", "docs", "coverage")


def _pre_test_scripts(tree: SourceTree, kinds: list[tuple[str, str, list[str]]]) -> list[int]:
    """Where a job runs a script of the repository after an install step and before its
    first test step (see the module's docstring), by index in ``kinds``; never a script
    named for linting, docs or publishing (a build for the tests is what is wanted)."""
    installs = [i for i, (_, kind, _) in enumerate(kinds) if kind == "install"]
    tests = [i for i, (_, kind, _) in enumerate(kinds) if kind == "test"]
    if not installs or not tests:
        return []
    found = []
    for index in range(installs[0] + 1, tests[0]):
        segment, kind, _ = kinds[index]
        path = script_path(segment) if kind == "other" else None
        if path is None or not tree.has(path):
            continue
        if not any(word in path.rsplit("/", 1)[-1].lower() for word in _NOT_PRE_TEST_WORDS):
            found.append(index)
    return found


def read_ci_facts(tree: SourceTree) -> CIFacts:
    """The CI facts, from the jobs that run tests (every job when none does)."""
    config = read_ci(tree)
    jobs = [_job_facts(tree, job) for job in config.jobs]
    classified = [[(s, *classify_command(s)) for s in job.segments] for job in jobs]
    chosen = [i for i, kinds in enumerate(classified) if any(k == "test" for _, k, _ in kinds)]
    if not chosen:
        chosen = list(range(len(jobs)))
    pythons: list[str] = []
    environment: dict[str, str] = {}
    lists: dict[str, list[str]] = {
        "install": [],
        "test": [],
        "pre_test": [],
        "system": [],
        "script": [],
    }
    for index in chosen:
        job = jobs[index]
        pythons.extend(job.pythons)
        for key, value in job.env.items():
            environment.setdefault(key, value)
        scripts = set() if job.non_linux else set(_pre_test_scripts(tree, classified[index]))
        for position, (segment, kind, packages) in enumerate(classified[index]):
            if kind == "system":
                if not job.non_linux:
                    lists["system"].extend(packages)
            elif position in scripts:
                lists["pre_test"].append(segment)
                lists["script"].append(segment)
            elif kind in lists:
                lists[kind].append(segment)
    return CIFacts(
        files=config.files,
        python_versions=sorted_versions(pythons),
        install_commands=dedupe(lists["install"]),
        system_packages=dedupe(lists["system"]),
        pre_test_commands=dedupe(lists["pre_test"]),
        test_commands=dedupe(lists["test"]),
        pre_test_scripts=dedupe(lists["script"]),
        environment=environment,
    )
