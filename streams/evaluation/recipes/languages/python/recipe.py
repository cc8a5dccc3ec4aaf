"""A Python repository's install recipe, from the facts its files state (``facts``):
a chain of small detectors, each adding what one kind of file asks for.

The recipe installs in three steps, so that an old PR gets the libraries of its time and
still builds with a build backend that works today:

1. **env image** (per repository, Python and dependency set): a venv, uv, then in one
   resolution the test runner, the plugins the pytest configuration names, and every test
   requirement the repository declares (test extras, PEP 735 groups, poetry / pdm dev
   groups, test requirement files, tox and nox test deps) plus its runtime dependencies, all
   resolved as of the PR's date (``UV_EXCLUDE_NEWER``);
2. **instance image** (per task): the project itself, editable, without its dependencies and
   without the date limit (its build backend is today's); then whatever its installed metadata
   requires that step 1 did not install (dynamic dependencies), dated again;
3. the pre-test steps its CI runs before the tests (compiling translations, ...).

The test command is pytest's with the repository's ``addopts`` made safe
(``pytest_options``): pytest also runs unittest suites, so one runner reads every repository.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from streams.evaluation.recipes.languages.python.facts import ProjectFacts
from streams.evaluation.recipes.languages.python.pytest_options import plan_pytest_run
from streams.evaluation.recipes.languages.python.requirements import requirement_name
from streams.evaluation.recipes.model import ENV_DIR, VENV, InstallRecipe
from streams.evaluation.recipes.sources.tree import FileReader

REQUIREMENTS_FILE = "swe-stream-requirements.txt"  # the requirement strings we gathered
MINIMAL_FILE = "swe-stream-minimal.txt"  # pytest, plugins and runtime dependencies only
REST_FILE = "swe-stream-rest.txt"  # every other requirement, tried one by one at last
DECLARED_SCRIPT = "swe_stream_declared.py"  # prints what the installed project requires
UV = "uv pip install"
TEST_EXTRAS = ("test", "tests", "testing")
TEST_GROUPS = ("test", "tests", "testing", "dev")
# tools a test run never needs, dropped from dev requirement lists: they only make the
# resolution bigger and more fragile (a linter of 2021 may not build on today's Python), or
# change the run (pytest-randomly reorders, pytest-sugar rewrites the output). pytest-cov and
# pytest-xdist stay: a conftest may use their marks and fixtures (``no_cover``, ``worker_id``)
# and, without their options, they change nothing
NOT_FOR_TESTS = frozenset(
    canonicalize_name(name)
    for name in (
        "black", "blue", "isort", "flake8", "pyflakes", "pycodestyle", "pydocstyle", "pylint",
        "ruff", "mypy", "pyright", "pytype", "pre-commit", "tox", "nox", "twine", "build",
        "check-manifest", "bump2version", "bumpversion", "sphinx", "sphinx-rtd-theme",
        "furo", "mkdocs", "mkdocs-material", "codecov", "coveralls", "pyroma", "doc8",
        "restructuredtext-lint", "readme-renderer", "towncrier", "commitizen", "ipython",
        "ipdb", "pdbpp", "jupyter", "wheel", "setuptools", "pip", "uv", "poetry", "pdm",
        "hatch", "flit", "pytest-randomly",
        "pytest-sugar", "pytest-instafail", "pytest-flake8", "pytest-mypy", "pytest-black",
        "pytest-isort", "pytest-pylint", "pytest-html", "pytest-rerunfailures", "safety",
        "bandit", "vulture", "interrogate", "darglint", "autopep8", "yapf", "pyupgrade",
        "blacken-docs", "codespell", "types-setuptools",
    )
)  # fmt: skip
PYTEST = f"{VENV}/bin/python -m pytest -rA -v --tb=short -p no:cacheprovider --color=no"
# Debian packages a pre-test step needs, by the program it runs
STEP_PACKAGES = {
    "msgfmt": ("gettext",),
    "compilemessages": ("gettext",),
    "make": ("make",),
    "gcc": ("gcc", "libc6-dev"),
}
C_BUILD_PACKAGES = ("gcc", "libc6-dev", "python3-dev")
# what a pre-test step in CI may be: build steps, never deploys, uploads or the tests
PRE_TEST_PROGRAMS = ("msgfmt", "pybabel", "django-admin", "python", "make")
PRE_TEST_SCRIPT_TIMEOUT = 900  # seconds a repository's pre-test script may take

DECLARED_REQUIREMENTS = '''\
"""Print the requirements of the project installed from /testbed (editable), with the extras
named in argv[1] (comma-separated), whose markers hold here: what the install of its
dependencies still has to add."""
import importlib.metadata as metadata
import json
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # not every test environment has it; pip always does
    from pip._vendor.packaging.requirements import Requirement


def installed_from_testbed():
    for dist in metadata.distributions():
        url = dist.read_text("direct_url.json") or ""
        try:
            if json.loads(url).get("url", "").startswith("file:///testbed"):
                return dist
        except ValueError:
            continue
    return None


dist = installed_from_testbed()
extras = [e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e]
for text in (dist.requires or []) if dist else []:
    requirement = Requirement(text)
    marker = requirement.marker
    if marker is None or any(marker.evaluate({"extra": e}) for e in extras or [""]):
        requirement.marker = None
        print(requirement)
'''


@dataclass(frozen=True)
class RecipeContext:
    """What the detectors read: the tree, its facts, and the choices already made."""

    names: list[str]
    read: FileReader
    facts: ProjectFacts
    python: str | None  # None: whatever the default base image has
    base_image: str
    exclude_newer: str | None = None  # YYYY-MM-DD: dependencies as of this day
    version: str | None = None  # the latest release tag at the commit (setuptools-scm)


@dataclass
class Draft:
    """The recipe as the detectors build it up."""

    requirements: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)
    pre_test: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    addopts: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)  # of the pytest config (canonical names)
    installable: bool = False
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_requirements(self, values: list[str], project: str | None) -> int:
        added = 0
        for text in values:
            name = requirement_name(text)
            if name is None or name in NOT_FOR_TESTS or name == project:
                continue
            if text not in self.requirements:
                self.requirements.append(text)
                added += 1
        return added

    def add(self, items: list[str], *values: str) -> None:
        for value in values:
            if value not in items:
                items.append(value)


Detector = Callable[[RecipeContext, Draft], None]
_PYTHON_IN_NAME = re.compile(
    r"(?:^|[^\w.])(?:py|python)?(?P<major>[23])\.?(?P<minor>\d{1,2})(?:$|[^\w.])"
)
# the oldest pytest that runs on each Python (older ones fail at start-up there: py.path's
# apipkg on 3.11, removed ast nodes on 3.14): a repository's older pin is not kept
PYTEST_FLOOR = {"3.9": "4.6", "3.11": "7.0", "3.12": "7.3", "3.13": "8.0", "3.14": "8.3"}
# when those floors were released: a PR older than its Python's floor gets the floor's
# series of pytest, and pytest's own dependencies, from after its date (the test runner is
# ours; what the repository depends on stays dated)
FLOOR_RELEASED = {
    "4.6": "2019-06-05",
    "7.0": "2022-02-04",
    "7.3": "2023-04-09",
    "8.0": "2024-01-28",
    "8.3": "2024-07-21",
}
RUNNER_STACK = (
    "pytest", "pluggy", "py", "attrs", "atomicwrites", "more-itertools", "six", "wcwidth",
    "packaging", "pyparsing", "importlib-metadata", "zipp", "iniconfig", "tomli",
    "exceptiongroup", "colorama", "typing-extensions",
)  # fmt: skip
# build tools are never dated: today's build old sources (and atomicwrites, whose releases
# before 2022 are gone, is an sdist that needs one)
BUILD_TOOLS = ("setuptools", "wheel")
UV_CONFIG = "uv.toml"


def _project(ctx: RecipeContext) -> str | None:
    name = ctx.facts.project_name
    return canonicalize_name(name) if name else None


# -- the detectors, in order ------------------------------------------------------------------


def detect_build_system(ctx: RecipeContext, draft: Draft) -> None:
    """A project with packaging metadata is installed (editable); its static runtime
    dependencies are resolved with the test requirements."""
    facts, names = ctx.facts, set(ctx.names)
    draft.installable = bool(
        facts.build_backend or facts.project_name or {"setup.py", "setup.cfg"} & names
    )
    if draft.installable:
        backend = facts.build_backend.split(".")[0] if facts.build_backend else "setup.py"
        draft.sources.append(f"build:{backend}")
        draft.add_requirements(list(facts.dependencies), _project(ctx))
    else:
        # no metadata: the tests import the code from the checkout
        draft.environment["PYTHONPATH"] = (
            "/testbed/src:/testbed"
            if "src" in {name.split("/")[0] for name in names}
            else "/testbed"
        )
        draft.sources.append("no-build:PYTHONPATH")


def detect_test_extras(ctx: RecipeContext, draft: Draft) -> None:
    extras = ctx.facts.extras
    chosen = [name for name in TEST_EXTRAS if name in extras] or (
        ["dev"] if "dev" in extras else []
    )
    for name in chosen:
        draft.add(draft.extras, name)
        draft.add_requirements(list(extras[name]), _project(ctx))
        draft.sources.append(f"extra:{name}")
    if ctx.facts.tests_require:
        draft.add_requirements(list(ctx.facts.tests_require), _project(ctx))
        draft.sources.append("tests_require")


def detect_dependency_groups(ctx: RecipeContext, draft: Draft) -> None:
    facts = ctx.facts
    for label, groups in (
        ("group", facts.dependency_groups),
        ("poetry", facts.poetry_groups),
        ("pdm", facts.pdm_dev_groups),
    ):
        for name in TEST_GROUPS:
            if name in groups and draft.add_requirements(list(groups[name]), _project(ctx)):
                draft.sources.append(f"{label}:{name}")


def _for_another_python(path: str, python: str | None) -> bool:
    """``requirements/3.3/dev.txt``, ``requirements/py27.txt``: a file for one Python only,
    and not the one chosen."""
    for part in [*path.split("/")[:-1], path.rsplit("/", 1)[-1].rsplit(".", 1)[0]]:
        match = _PYTHON_IN_NAME.search(part)
        if match:
            named = match["major"] + "." + match["minor"]
            return named != python
    return False


def detect_requirement_files(ctx: RecipeContext, draft: Draft) -> None:
    files = [f for f in ctx.facts.requirements_files if not _for_another_python(f.path, ctx.python)]
    tests = [f for f in files if f.kind == "test"]
    chosen = tests or [f for f in files if f.kind == "dev"]
    for item in chosen:
        draft.add(draft.requirement_files, item.path)
        draft.sources.append(f"requirements:{item.path}")


def detect_tox(ctx: RecipeContext, draft: Draft) -> None:
    tox = ctx.facts.tox
    if tox is None:
        return
    added = draft.add_requirements(list(tox.deps), _project(ctx))
    for path in tox.requirement_files:
        draft.add(draft.requirement_files, path)
        added += 1
    for extra in tox.extras:
        if extra in ctx.facts.extras:
            draft.add(draft.extras, extra)
            added += draft.add_requirements(list(ctx.facts.extras[extra]), _project(ctx))
    for key, value in tox.setenv.items():
        if key.startswith(("PYTHON", "LC_", "LANG", "TZ")) and "{" not in value:
            draft.environment.setdefault(key, value)
    if added:
        draft.sources.append(f"tox:{tox.env_name or 'testenv'}")


_OPTIONS_WITH_VALUE = {"-c", "--constraint", "--python", "-i", "--index-url", "--extra-index-url"}


def _install_arguments(ctx: RecipeContext, draft: Draft, words: list[str]) -> int:
    """What the arguments of one ``pip install`` (or ``session.install``) add: ``-r FILE``
    (a file of the tree), ``.[extras]`` (also after ``-e``), package names (tools dropped);
    other options and their values are passed over. Returns how much was added."""
    names = set(ctx.names)
    added = 0
    arguments = iter(words)
    for word in arguments:
        if word in {"-r", "--requirement"}:
            path = next(arguments, "")
            if path in names:
                draft.add(draft.requirement_files, path)
                added += 1
        elif word in _OPTIONS_WITH_VALUE:
            next(arguments, None)
        elif word == "." or word.startswith(".["):
            for extra in filter(None, word.partition("[")[2].rstrip("]").split(",")):
                draft.add(draft.extras, extra.strip())
                wanted = ctx.facts.extras.get(extra.strip(), [])
                added += 1 + draft.add_requirements(list(wanted), _project(ctx))
        elif not word.startswith(("-", "/")) and requirement_name(word) is not None:
            added += draft.add_requirements([word], _project(ctx))
    return added


def detect_nox(ctx: RecipeContext, draft: Draft) -> None:
    nox = ctx.facts.nox
    if nox is None:
        return
    for session in nox.sessions:
        if "test" not in session.name:
            continue
        if sum(_install_arguments(ctx, draft, list(words)) for words in session.installs):
            draft.sources.append(f"nox:{session.name}")
        break


def detect_ci_installs(ctx: RecipeContext, draft: Draft) -> None:
    """What the CI's install lines add for its tests: the arguments of ``pip install``,
    ``pdm install -G X`` (an extra or group)."""
    added = 0
    for command in ctx.facts.ci.install_commands:
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if "pip" in words and "install" in words:
            added += _install_arguments(ctx, draft, words[words.index("install") + 1 :])
        elif words[:2] == ["pdm", "install"]:
            groups = [words[i + 1] for i, w in enumerate(words[:-1]) if w in {"-G", "--group"}]
            for group in groups:
                wanted = ctx.facts.extras.get(group) or ctx.facts.pdm_dev_groups.get(group, [])
                if group in ctx.facts.extras:
                    draft.add(draft.extras, group)
                added += draft.add_requirements(list(wanted), _project(ctx))
    if added:
        draft.sources.append("ci:install")


def tolerated_step(command: str) -> str:
    """``command`` as a pre-test step that may fail: a script of the repository may need what
    the sandbox has not (the network, a secret), so its failure (or its running longer than
    ``PRE_TEST_SCRIPT_TIMEOUT`` seconds) drops it, with a line on stderr saying so, and the
    build goes on."""
    quoted = shlex.quote(command)
    return (
        f"timeout {PRE_TEST_SCRIPT_TIMEOUT} bash -c {quoted} || "
        f'echo "swe-stream: pre-test step dropped (exit $?): "{quoted} >&2'
    )


def detect_ci_steps(ctx: RecipeContext, draft: Draft) -> None:
    """Build steps the CI runs before its tests (compiling translations, extensions), with
    the Debian packages their programs come from; and the repository's own scripts its test
    jobs run between their installs and their tests, in their order, each allowed to fail
    (``tolerated_step``; the packages the job installs are among the CI's system packages)."""
    scripts = set(ctx.facts.ci.pre_test_scripts)
    for command in ctx.facts.ci.pre_test_commands:
        if command in scripts:
            draft.add(draft.pre_test, tolerated_step(command))
            draft.add(draft.sources, "ci:pre-test-script")
            continue
        try:
            words = shlex.split(command, posix=True)
        except ValueError:
            continue
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value prefixes
        if not words or not words[0].split("/")[-1].startswith(PRE_TEST_PROGRAMS):
            continue
        draft.add(draft.pre_test, command)
        for program, packages in STEP_PACKAGES.items():
            if program in command:
                draft.add(draft.system_packages, *packages)
        if "pybabel" in command:
            draft.add_requirements(["Babel"], _project(ctx))
        draft.sources.append("ci:pre-test")


def detect_scm_version(ctx: RecipeContext, draft: Draft) -> None:
    """setuptools-scm, hatch-vcs, pdm's scm source: the instance has no git history to take
    a version from, so they are told the latest release tag (too low a version makes the
    resolver downgrade whatever requires the project's newer releases)."""
    if not ctx.facts.scm_version:
        return
    version = ctx.version or "0.0.0"
    draft.environment["SETUPTOOLS_SCM_PRETEND_VERSION"] = version
    draft.environment["PDM_BUILD_SCM_VERSION"] = version
    draft.environment["POETRY_DYNAMIC_VERSIONING_BYPASS"] = version
    draft.sources.append(f"scm-version:{version}")


def detect_c_extensions(ctx: RecipeContext, draft: Draft) -> None:
    if ctx.facts.c_extensions:
        draft.add(draft.system_packages, *C_BUILD_PACKAGES)
        draft.sources.append("c-extensions")


def detect_submodules(ctx: RecipeContext, draft: Draft) -> None:
    """A submodule's files are not in the archive of the commit: said, so that a collection
    failure can name it."""
    names = ctx.names
    for submodule in ctx.facts.submodules:
        prefix = submodule.path.rstrip("/") + "/"
        if not any(name.startswith(prefix) for name in names):
            draft.notes.append(f"submodule {submodule.path} ({submodule.url}) is not available")


def detect_pytest_config(ctx: RecipeContext, draft: Draft) -> None:
    config = ctx.facts.pytest_config
    plan = plan_pytest_run(
        config.addopts if config else [],
        config.options if config else {},
        config.required_plugins if config else [],
    )
    draft.addopts = plan.addopts
    # the plugins are wanted whatever a dev list said (NOT_FOR_TESTS is about extras)
    for plugin in plan.plugins:
        if plugin not in draft.requirements:
            draft.requirements.append(plugin)
        draft.plugins.append(requirement_name(plugin) or plugin)
    if config is not None:
        draft.sources.append(f"pytest:{config.path}")
        if plan.dropped:
            draft.notes.append("addopts dropped: " + " ".join(plan.dropped))


DETECTORS: list[Detector] = [
    detect_build_system,
    detect_test_extras,
    detect_dependency_groups,
    detect_requirement_files,
    detect_tox,
    detect_nox,
    detect_ci_installs,
    detect_ci_steps,
    detect_scm_version,
    detect_c_extensions,
    detect_submodules,
    detect_pytest_config,
]


# -- the recipe ---------------------------------------------------------------------------------


def _is_direct_reference(text: str) -> bool:
    if text.startswith(("git+", "hg+", "svn+", "bzr+", "http://", "https://")):
        return True
    try:
        return Requirement(text).url is not None
    except InvalidRequirement:
        return False


def _runs_here(requirement: str, floor: str | None) -> bool:
    """False for a pin of pytest that excludes every release able to run on this Python
    (``==3.0.7``, ``<7`` where the floor is 7.0): some release at or above the floor must
    satisfy each upper bound."""
    if floor is None or requirement_name(requirement) != "pytest":
        return True
    try:
        specifier = Requirement(requirement).specifier
    except InvalidRequirement:
        return True
    lowest = Version(floor)
    for spec in specifier:
        wildcard = spec.version.endswith(".*")
        try:
            bound = Version(spec.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        release = bound.release
        if spec.operator == "~=" and len(release) > 1:  # ~=7.1 is <8, ~=7.1.2 is <7.2
            excluded = Version(".".join(map(str, (*release[:-2], release[-2] + 1)))) <= lowest
        elif spec.operator == "==" and wildcard:
            excluded = release < lowest.release[: len(release)]
        elif spec.operator in {"<=", "==", "==="}:
            excluded = bound < lowest
        else:
            excluded = spec.operator == "<" and bound <= lowest
        if excluded:
            return False
    return True


def _copy_requirement_files(
    ctx: RecipeContext, paths: list[str], floor: str | None = None
) -> dict[str, bytes]:
    """The files (and the files they include) as the env image gets them, from what
    ``facts`` read of them: their requirements (no tools, no VCS or URL ones, no
    pytest pin too old for this Python), and their includes as absolute paths of the env."""
    parsed = {item.path: item for item in ctx.facts.requirements_files}
    out: dict[str, bytes] = {}
    queue = list(paths)
    while queue and len(out) < 50:
        path = queue.pop(0)
        item = parsed.get(path)
        if item is None or path in out:
            continue
        lines = [
            requirement
            for requirement in item.requirements
            if not _is_direct_reference(requirement)
            and requirement_name(requirement) not in NOT_FOR_TESTS
            and _runs_here(requirement, floor)
        ]
        for included in item.referenced_files:
            if included in parsed:
                option = "-c" if included in item.constraint_files else "-r"
                lines.append(f"{option} {ENV_DIR}/{included}")
                queue.append(included)
        out[path] = ("\n".join(lines) + "\n").encode()
    return out


def python_recipe(ctx: RecipeContext, detectors: list[Detector] = DETECTORS) -> InstallRecipe:
    """The recipe the detectors make of ``ctx``."""
    draft = Draft()
    for detect in detectors:
        detect(ctx, draft)
    floor = PYTEST_FLOOR.get(ctx.python or "")
    draft.requirements = [r for r in draft.requirements if _runs_here(r, floor)]
    if "pytest" not in {requirement_name(r) for r in draft.requirements}:
        draft.requirements.insert(0, f"pytest>={floor}" if floor else "pytest")
    undated = list(BUILD_TOOLS)
    runner = f"pytest>={floor}" if floor else None
    if floor and ctx.exclude_newer and ctx.exclude_newer < FLOOR_RELEASED[floor]:
        undated += RUNNER_STACK
        runner = f"pytest>={floor},<{Version(floor).major + 1}"
    files = _copy_requirement_files(ctx, draft.requirement_files, floor)
    # a package the repository's own requirement files name is theirs to pin: a looser (or
    # newer) spec of ours beside it would only make the resolution fail
    pinned = {
        requirement_name(line) for data in files.values() for line in data.decode().splitlines()
    }
    ours = [r for r in draft.requirements if requirement_name(r) not in pinned]
    if runner is not None:
        ours.append(runner)  # whatever else names pytest: one that runs here
    essential = {"pytest", *(requirement_name(r) for r in ctx.facts.dependencies), *draft.plugins}
    minimal = [r for r in draft.requirements if requirement_name(r) in essential]
    if runner is not None:
        minimal.append(runner)
    files[REQUIREMENTS_FILE] = ("\n".join(ours) + "\n").encode()
    files[MINIMAL_FILE] = ("\n".join(minimal) + "\n").encode()
    from_files = [
        line
        for path in draft.requirement_files
        for line in files.get(path, b"").decode().splitlines()
        if not line.startswith("-")
    ]
    settled = {requirement_name(r) for r in minimal}
    rest = [r for r in dict.fromkeys([*ours, *from_files]) if requirement_name(r) not in settled]
    files[REST_FILE] = "".join(f"{r}\n" for r in rest).encode()
    files[DECLARED_SCRIPT] = DECLARED_REQUIREMENTS.encode()
    files[UV_CONFIG] = (
        "[exclude-newer-package]\n"
        + "".join(f'{name} = "2100-01-01T00:00:00Z"\n' for name in undated)
    ).encode()
    env_commands = [_install_with_fallbacks(draft, files)]  # the tools layer has uv
    rebuild = _rebuild_commands(ctx, draft)
    if rebuild:
        # the build tools of a rebuild in the sandbox, which has no network (today's: they
        # build old sources fine)
        cython = any(source.endswith(".pyx") for source in ctx.facts.extension_sources)
        tools = "setuptools wheel" + (" cython" if cython else "")
        env_commands.append(f"env -u UV_EXCLUDE_NEWER {UV} {tools}")
    install: list[str] = []
    if draft.installable:
        target = f".[{','.join(draft.extras)}]" if draft.extras else "."
        # today's build backend (no date limit), the project alone; then what its installed
        # metadata still requires, dated
        install.append(f"env -u UV_EXCLUDE_NEWER {UV} --no-deps -e {shlex.quote(target)}")
        extras = ",".join(draft.extras)
        install.append(
            f"python {ENV_DIR}/{DECLARED_SCRIPT} {shlex.quote(extras or '-')} "
            "> /tmp/swe-stream-declared.txt && "
            f"{{ ! test -s /tmp/swe-stream-declared.txt || "
            f"{UV} -r /tmp/swe-stream-declared.txt; }}"
        )
    pre_test = list(draft.pre_test)
    pre_test += [command for command in rebuild if command not in pre_test]
    environment = {
        "UV_LINK_MODE": "copy",
        "UV_HTTP_TIMEOUT": "120",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_CONFIG_FILE": f"{ENV_DIR}/{UV_CONFIG}",
        **({"UV_EXCLUDE_NEWER": ctx.exclude_newer} if ctx.exclude_newer else {}),
        **draft.environment,
    }
    addopts = ["-o", f"addopts={shlex.join(draft.addopts)}"] if ctx.facts.pytest_config else []
    test_command = " ".join([PYTEST, *(shlex.quote(a) for a in addopts)])
    return InstallRecipe(
        language="Python",
        dependency_files=files,
        env_commands=tuple(env_commands),
        install_commands=tuple(install),
        test_command=test_command,
        test_runner="pytest",
        python=ctx.python,
        base_image=ctx.base_image,
        system_packages=tuple(sorted(set(draft.system_packages))),
        pre_test_commands=tuple(pre_test),
        rebuild_commands=tuple(rebuild),
        environment=tuple(sorted(environment.items())),
        sources=tuple(draft.sources),
        notes=tuple(draft.notes),
    )


def _install_with_fallbacks(draft: Draft, files: dict[str, bytes]) -> str:
    """One env step: every test requirement we gathered and the repository's files in one
    resolution; when that has no solution (a dev file naming a package with no wheel for this
    Python, two sources pinning one package differently), ours without the files; then the
    minimum (pytest, the plugins, the runtime dependencies) and every other requirement one
    by one, keeping those that install. Each retry says so in the log."""
    requirement_files = [
        f"-r {ENV_DIR}/{path}" for path in draft.requirement_files if path in files
    ]
    plans = [f"{UV} " + " ".join([f"-r {ENV_DIR}/{REQUIREMENTS_FILE}", *requirement_files])]
    if requirement_files:
        plans.append(f"{UV} -r {ENV_DIR}/{REQUIREMENTS_FILE}")
    if files[REST_FILE].strip():
        plans.append(
            f"{UV} -r {ENV_DIR}/{MINIMAL_FILE} && while read -r requirement; do "
            f'{UV} "$requirement" || echo "swe-stream: left out $requirement"; '
            f"done < {ENV_DIR}/{REST_FILE}"
        )
    steps = [plans[0]] + [
        f"{{ echo 'swe-stream: no solution; trying with fewer requirements'; {plan}; }}"
        for plan in plans[1:]
    ]
    return " || ".join(steps)


def _rebuild_commands(ctx: RecipeContext, draft: Draft) -> list[str]:
    """What rebuilds compiled extensions in place after a patch changed their sources: the
    CI's own build_ext step, else setuptools' (a C extension of a setup.py project)."""
    from_ci = [command for command in draft.pre_test if "build_ext" in command]
    if from_ci:
        return from_ci
    if ctx.facts.c_extensions and "setup.py" in ctx.names:
        return [f"{VENV}/bin/python setup.py build_ext --inplace"]
    return []
