"""The CI files of a tree read into jobs and their steps, for every language's reader to take
its facts from (Python versions and install and test commands, Node versions...).

- GitHub Actions (``.github/workflows/*.yml``): each job's steps (``run``, ``uses``/``with``,
  ``env``, ``shell``), matrix and ``runs-on``. A step using a local composite action
  (``uses: ./.github/actions/setup``) is followed by the action's own steps; a job calling a
  local reusable workflow (``uses: ./.github/workflows/test.yml``) becomes that workflow's
  jobs, with the calling job's matrix and ``with:`` inputs. Both nest (GitHub allows ten
  levels); a cycle or a deeper nesting is a problem, as is a workflow of another repository.
- Travis (``.travis.yml``): one job, its script sections as steps.
- GitLab CI (``.gitlab-ci.yml``): its jobs (keys with a ``script``), ``before_script`` and
  ``script`` as steps, the ``image``.

Pure and never raising, like the loaders it reads with; the document of each job is kept
(``spec``) for the keys only one language reads (Travis ``python``/``node_js``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Literal

from streams.evaluation.recipes.sources.loaders import load_yaml, string_list, table_at
from streams.evaluation.recipes.sources.tree import SourceTree

MAX_NESTING = 10  # GitHub's own limit for reusable workflows and composite actions
MAX_ITEMS = 20_000  # jobs and steps in all: a workflow calling another in each of its jobs
CISystem = Literal["github", "travis", "gitlab"]
_TRAVIS_SECTIONS = ("before_install", "install", "before_script", "script")
_GITLAB_RESERVED = frozenset(
    {"stages", "variables", "default", "include", "image", "services", "workflow", "cache"}
    | {"before_script", "after_script", "types", "pages"}
)


@dataclass(frozen=True)
class CIStep:
    """One step: a ``run`` script, or an action it ``uses`` with its ``with:`` inputs."""

    where: str  # the file (and job) it is written in, for problems
    run: str | None = None
    uses: str | None = None
    with_: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    shell: str | None = None  # its own, else its job's or workflow's default (GitHub)


@dataclass(frozen=True)
class CIJob:
    system: CISystem
    path: str  # the file defining it (the called workflow's, for a reusable one)
    name: str  # "test", or "caller/test" for a job of a called workflow
    where: str  # "<path> job <id>", for problems
    spec: dict[str, Any]  # the job's document (Travis: the whole file)
    steps: tuple[CIStep, ...] = ()
    runs_on: Any = None  # GitHub ``runs-on``, Travis ``os``
    matrix: Any = None  # GitHub ``strategy.matrix``
    env: dict[str, Any] = field(default_factory=dict)  # workflow and job env, GitLab variables
    image: Any = None  # GitLab
    caller_matrices: tuple[Any, ...] = ()  # the calling jobs' matrices, the nearest first
    inputs: dict[str, Any] = field(default_factory=dict)  # the calling job's ``with:``


@dataclass(frozen=True)
class CIConfig:
    files: list[str] = field(default_factory=list)  # the CI files of the tree, as read
    jobs: list[CIJob] = field(default_factory=list)


@dataclass(frozen=True)
class _Call:
    """The job calling a reusable workflow."""

    name: str
    matrices: tuple[Any, ...]
    inputs: dict[str, Any]


def _shell(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) else default


def _local_path(uses: str) -> str:
    """``./.github/actions/setup`` -> ``.github/actions/setup`` (``./`` -> ``.``)."""
    return posixpath.normpath(uses[2:].split("@")[0])


class _GitHub:
    """Walks the workflows, following local composite actions and reusable workflows."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.jobs: list[CIJob] = []
        self.items = 0

    def room(self, where: str) -> bool:
        self.items += 1
        if self.items > MAX_ITEMS:
            self.tree.problem(f"{where}: more than {MAX_ITEMS} CI jobs and steps; rest not read")
            return False
        return True

    def workflow(self, path: str, call: _Call | None, stack: tuple[str, ...]) -> None:
        doc = load_yaml(self.tree, path)
        shell = _shell(table_at(doc, "defaults", "run").get("shell"), None)
        env = table_at(doc, "env")
        for job_id, spec in table_at(doc, "jobs").items():
            if not isinstance(spec, dict):
                continue
            where = f"{path} job {job_id}"
            if not self.room(where):
                return
            name = f"{call.name}/{job_id}" if call else str(job_id)
            matrix = table_at(spec, "strategy").get("matrix")
            uses = spec.get("uses")
            if isinstance(uses, str):
                matrices = (matrix, *(call.matrices if call else ()))
                self.call(uses, where, _Call(name, matrices, table_at(spec, "with")), stack)
                continue
            job_shell = _shell(table_at(spec, "defaults", "run").get("shell"), shell)
            steps = self.steps(spec.get("steps"), where, job_shell, stack)
            self.jobs.append(
                CIJob(
                    system="github",
                    path=path,
                    name=name,
                    where=where,
                    spec=spec,
                    steps=tuple(steps),
                    runs_on=spec.get("runs-on"),
                    matrix=matrix,
                    env={**env, **table_at(spec, "env")},
                    caller_matrices=call.matrices if call else (),
                    inputs=call.inputs if call else {},
                )
            )

    def call(self, uses: str, where: str, call: _Call, stack: tuple[str, ...]) -> None:
        if not uses.startswith("./"):
            self.tree.problem(f"{where}: reusable workflow {uses} not read")
            return
        path = _local_path(uses)
        if not self.tree.has(path):
            self.tree.problem(f"{where}: reusable workflow {uses} not found")
        elif path in stack or len(stack) > MAX_NESTING:
            self.tree.problem(f"{where}: reusable workflow {uses} calls itself or nests too deep")
        else:
            self.workflow(path, call, (*stack, path))

    def steps(
        self, steps: Any, where: str, shell: str | None, stack: tuple[str, ...]
    ) -> list[CIStep]:
        found: list[CIStep] = []
        for step in steps if isinstance(steps, list) else []:
            if not isinstance(step, dict):
                continue
            if not self.room(where):
                break
            uses = step.get("uses") if isinstance(step.get("uses"), str) else None
            found.append(
                CIStep(
                    where=where,
                    run=step["run"] if isinstance(step.get("run"), str) else None,
                    uses=uses,
                    with_=table_at(step, "with"),
                    env=table_at(step, "env"),
                    shell=_shell(step.get("shell"), shell),
                )
            )
            if uses is not None and uses.startswith("./"):
                found.extend(self.action(uses, where, stack))
        return found

    def action(self, uses: str, where: str, stack: tuple[str, ...]) -> list[CIStep]:
        """The steps of a local composite action (none for a JavaScript or Docker action, or
        an action not in the tree)."""
        base = _local_path(uses)
        for name in ("action.yml", "action.yaml"):
            path = name if base == "." else f"{base}/{name}"
            if not self.tree.has(path):
                continue
            if path in stack or len(stack) > MAX_NESTING:
                self.tree.problem(f"{where}: action {uses} uses itself or nests too deep")
                return []
            doc = load_yaml(self.tree, path)
            # a composite action's steps name their shell: no default reaches them
            return self.steps(table_at(doc, "runs").get("steps"), path, None, (*stack, path))
        return []


def _travis(tree: SourceTree, path: str) -> list[CIJob]:
    doc = load_yaml(tree, path)
    if not isinstance(doc, dict):
        return []
    steps = [
        CIStep(path, run=line) for key in _TRAVIS_SECTIONS for line in string_list(doc.get(key))
    ]
    return [CIJob("travis", path, "travis", path, doc, tuple(steps), runs_on=doc.get("os"))]


def _gitlab(tree: SourceTree, path: str) -> list[CIJob]:
    doc = load_yaml(tree, path)
    if not isinstance(doc, dict):
        return []
    default = table_at(doc, "default")
    before = doc.get("before_script", default.get("before_script"))
    image = doc.get("image", default.get("image"))
    variables = table_at(doc, "variables")
    jobs = []
    for name, spec in doc.items():
        if name in _GITLAB_RESERVED or str(name).startswith(".") or not isinstance(spec, dict):
            continue
        if "script" not in spec:
            continue  # a template or a setting, not a job
        lines = string_list(spec.get("before_script", before)) + string_list(spec.get("script"))
        jobs.append(
            CIJob(
                system="gitlab",
                path=path,
                name=str(name),
                where=f"{path} job {name}",
                spec=spec,
                steps=tuple(CIStep(path, run=line) for line in lines),
                env={**variables, **table_at(spec, "variables")},
                image=spec.get("image", image),
            )
        )
    return jobs


def read_ci(tree: SourceTree) -> CIConfig:
    """The jobs of every CI file of the tree: workflows (by name), Travis, GitLab."""
    files: list[str] = []
    github = _GitHub(tree)
    for name in tree.names:
        directory, _, base = name.rpartition("/")
        if directory == ".github/workflows" and base.endswith((".yml", ".yaml")):
            files.append(name)
            github.workflow(name, None, (name,))
    jobs = list(github.jobs)
    for name, reader in ((".travis.yml", _travis), (".gitlab-ci.yml", _gitlab)):
        if tree.has(name):
            files.append(name)
            jobs.extend(reader(tree, name))
    return CIConfig(files, jobs)


def matrix_values(matrix: Any, key: str) -> list[str]:
    """Every value a GitHub matrix gives ``key`` (its list and its ``include`` entries')."""
    if not isinstance(matrix, dict):
        return []
    given = matrix.get(key)
    values = list(given) if isinstance(given, list) else []
    for entry in matrix.get("include") or []:
        if isinstance(entry, dict) and key in entry:
            values.append(entry[key])
    return [str(v) for v in values if v not in (None, "")]
