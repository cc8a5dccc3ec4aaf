"""What a shell command of a CI file, tox or nox does for a Python project: ``classify_command``
tells an install, a test run, a pre-test build step, a system package install or something
else, through wrappers (``python -m``, ``uv run``, ``coverage run``...); ``run_segments`` cuts a
CI ``run`` block into its simple commands (the shared shell splitter).
"""

from __future__ import annotations

import posixpath
import shlex

from streams.evaluation.recipes.languages.python.tox import looks_python_env
from streams.evaluation.recipes.sources.shell import APT_PROGRAMS, apt_installed, split_commands

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
    if head in {"bash", "sh"}:
        rest = argv[1:]
        # the shell's own options (``bash -ex x.sh``, ``-o pipefail``); ``-c`` runs a string
        while rest and rest[0][:1] in "-+" and rest[0] not in {"-c", "-", "--"}:
            rest = rest[2:] if rest[0] in {"-o", "+o"} else rest[1:]
        return (rest, False) if rest and rest[0][:1] not in "-+" else (argv, False)
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
    if "${{" in env or looks_python_env(env):
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


# what a line of several commands is taken for: the kind of the one that matters most
_KIND_ORDER = ("test", "pre_test", "install", "system", "other")


def classify_command(segment: str) -> tuple[str, list[str]]:
    """A shell command -> (kind, system packages): kind is install, test, pre_test, system
    or other. A line of several commands (``pip install -e . ; pytest``, cut by the shell
    splitter) is of the kind of the one that matters most (``_KIND_ORDER``: a line that runs
    the tests is a test command), with the system packages of all."""
    squashed = _squash_expressions(segment)
    commands = split_commands(_mask_expressions(squashed))
    if len(commands) <= 1:
        return _classify_simple(squashed)
    results = [_classify_simple(squashed[c.start : c.end]) for c in commands]
    kind = min((kind for kind, _ in results), key=_KIND_ORDER.index)
    return kind, [package for _, packages in results for package in packages]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def script_path(segment: str) -> str | None:
    """The file a command runs as a script, relative to where it runs: ``./scripts/x.sh``,
    ``sh tools/compile.sh``, ``python scripts/gen.py`` (through wrappers such as ``uv run``);
    None for a program, ``python -m``/``-c``, an absolute path or one out of the tree, or a
    path computed when the job runs (``$DIR/x.sh``, ``${{ ... }}``)."""
    if "${{" in segment:
        return None
    argv, _ = _unwrap(_words(segment))
    if not argv:
        return None
    head = argv[0]
    if "/" not in head and not head.endswith((".sh", ".bash", ".py")):
        return None  # a program found on the PATH
    path = posixpath.normpath(head)
    if "$" in path or path.startswith(("/", "../", "~")) or path == "..":
        return None
    return path


def _classify_simple(segment: str) -> tuple[str, list[str]]:
    argv, wrapped = _unwrap(_words(segment))
    if not argv:
        return "other", []
    head = posixpath.basename(argv[0]).lower()
    args = argv[1:]
    if head in APT_PROGRAMS:
        packages = apt_installed([head, *args])
        return ("other", []) if packages is None else ("system", packages)
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


def _mask_expressions(line: str) -> str:
    """``${{ a || 'b' }}`` with its operators and quotes blanked (same length): GitHub
    replaces an expression before the shell runs, so none of it separates commands."""
    out = list(line)
    index = 0
    while (start := line.find("${{", index)) >= 0:
        end = line.find("}}", start + 3)
        if end < 0:
            break
        for position in range(start + 3, end):
            if out[position] in ";&|()<>'\"`#\\\n":
                out[position] = "_"
        index = end + 2
    return "".join(out)


def run_segments(run: str) -> list[str]:
    """The simple commands of a CI ``run`` block, as written: one line after another
    (continuations joined, comment lines dropped), each split at ``;``, ``&&``, ``||``,
    pipes and groups by the shell splitter."""
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
    segments: list[str] = []
    for line in logical:
        # cut from the line itself: the mask only hides the expressions from the splitter
        segments.extend(line[c.start : c.end] for c in split_commands(_mask_expressions(line)))
    return segments
