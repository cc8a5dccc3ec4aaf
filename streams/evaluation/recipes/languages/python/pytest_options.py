"""A repository's pytest configuration, made safe to run and to read: a pure decision.

Real configurations carry options that break a validation run without telling the tests
anything: coverage (``--cov=pkg --cov-fail-under=99``: a usage error when pytest-cov is not
installed, a failed run when it is), parallelism (``-n auto``: per-test lines interleaved, no
``-v`` order), colour (``--color=yes``: escape codes around every status), verbosity and report
flags (we set our own), ``-x`` (the run stops at the first failure, before the tests we need).
They are dropped from ``addopts`` (``-o addopts=...`` replaces the configured value on the
command line). What the tests need stays: ``-W error`` filters, ``--import-mode``, doctest
options, ``--strict-markers``, ``-p no:...``, options of the plugins we install.

Plugins the configuration names (``timeout = 10`` needs pytest-timeout, ``asyncio_mode``
pytest-asyncio, ``required_plugins``, ``--timeout`` in addopts...) are installed instead of
dropped: without them an unknown ini key is a warning, and a warning is an error under
``-W error``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

# options dropped with the value they take ("--opt VALUE" or "--opt=VALUE"; short ones also
# "-nVALUE"); ``None``: the option takes no value
_DROPPED_WITH_VALUE = {
    "--cov-report",
    "--cov-config",
    "--cov-fail-under",
    "--cov-context",
    "-n",
    "--numprocesses",
    "--maxprocesses",
    "--dist",
    "--tx",
    "--color",
    "--code-highlight",
    "-r",
    "--tb",
    "--maxfail",
    "--junitxml",
    "--junit-xml",
    "--junit-prefix",
    "--html",
    "--reruns",
    "--reruns-delay",
    "--only-rerun",
    "--random-order-bucket",
    "--random-order-seed",
    "--splits",
    "--group",
    "--report-log",
    "--json-report-file",
    "--alluredir",
    "--result-log",
    "--capture",
}
_DROPPED_FLAGS = {
    "--cov-branch",
    "--cov-append",
    "--no-cov",
    "--no-cov-on-fail",
    "-v",
    "-vv",
    "-vvv",
    "--verbose",
    "-q",
    "-qq",
    "--quiet",
    "-x",
    "--exitfirst",
    "--pdb",
    "--trace",
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--nf",
    "--new-first",
    "--sw",
    "--stepwise",
    "--stepwise-skip",
    "--looponfail",
    "-f",
    "--instafail",
    "--self-contained-html",
    "--random-order",
    "--json-report",
    "--forked",
    "--boxed",
    "--flake8",
    "--pylint",
    "--mypy",
    "--black",
    "--isort",
    "--pycodestyle",
    "--pydocstyle",
    "--codestyle",
    "--ruff",
    "--ruff-format",
    "--doctest-rst",
    "--benchmark-skip",
    "--benchmark-disable",
    "--benchmark-only",
    "-s",
}
# "--cov" takes an optional value: "--cov", "--cov=pkg" and "--cov pkg" are all coverage
_OPTIONAL_VALUE = {"--cov"}
_DROPPED_PREFIXES = ("--cov-", "--benchmark-", "--html=", "--reruns", "--random-order")

# ini keys (and addopts options) of plugins: installed when the configuration uses them
INI_PLUGINS = {
    "timeout": "pytest-timeout",
    "timeout_method": "pytest-timeout",
    "timeout_func_only": "pytest-timeout",
    "asyncio_mode": "pytest-asyncio",
    "asyncio_default_fixture_loop_scope": "pytest-asyncio",
    "mock_use_standalone_module": "pytest-mock",
    "mock_traceback_monkeypatch": "pytest-mock",
    "env": "pytest-env",
    "env_files": "pytest-dotenv",
    "DJANGO_SETTINGS_MODULE": "pytest-django",
    "django_find_project": "pytest-django",
    "trio_mode": "pytest-trio",
    "anyio_mode": "anyio",
    "httpx_non_mocked_hosts": "pytest-httpx",
    "datadir": "pytest-datadir",
    "mypy-testing": "pytest-mypy-testing",
}
OPTION_PLUGINS = {
    "--timeout": "pytest-timeout",
    "--asyncio-mode": "pytest-asyncio",
    "--ds": "pytest-django",
    "--reuse-db": "pytest-django",
    "--hypothesis-profile": "hypothesis",
    "--hypothesis-show-statistics": "hypothesis",
    "--doctest-plus": "pytest-doctestplus",
    "--remote-data": "pytest-remotedata",
    "--mpl": "pytest-mpl",
    "--snapshot-update": "syrupy",
}


@dataclass(frozen=True)
class PytestRun:
    """What the configuration becomes: the addopts kept, what was dropped and why, and the
    plugins to install."""

    addopts: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)

    def override(self) -> list[str]:
        """The command-line arguments that replace the configured addopts."""
        return ["-o", f"addopts={shlex.join(self.addopts)}"]


def _option_name(token: str) -> str:
    return token.split("=", 1)[0]


def _takes_value(name: str) -> bool:
    return name in _DROPPED_WITH_VALUE


def _short_with_value(token: str) -> bool:
    # "-nauto", "-n4", "-rA", "-rfEs": a short option glued to its value
    return len(token) > 2 and token[:2] in {"-n", "-r"} and not token.startswith("--")


def plan_pytest_run(
    addopts: Iterable[str],
    ini: dict[str, str] | None = None,
    required_plugins: Iterable[str] = (),
) -> PytestRun:
    """Split ``addopts`` into what stays and what is dropped; the plugins the configuration
    (ini keys, kept options, ``required_plugins``) needs installed."""
    tokens = list(addopts)
    kept: list[str] = []
    dropped: list[str] = []
    plugins: set[str] = set()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name = _option_name(token)
        if token == "-p" and index + 1 < len(tokens):
            plugin = tokens[index + 1]
            if plugin in {"xdist", "pytest_cov", "cov", "randomly", "pytest_randomly"}:
                dropped += [token, plugin]
            else:
                kept += [token, plugin]
            index += 2
            continue
        if name in _OPTIONAL_VALUE:
            dropped.append(token)
            has_value = "=" not in token and index + 1 < len(tokens)
            if has_value and not tokens[index + 1].startswith("-"):
                dropped.append(tokens[index + 1])
                index += 1
        elif _short_with_value(token):
            dropped.append(token)
        elif _takes_value(name):
            dropped.append(token)
            if "=" not in token and index + 1 < len(tokens):
                dropped.append(tokens[index + 1])
                index += 1
        elif name in _DROPPED_FLAGS or token.startswith(_DROPPED_PREFIXES):
            dropped.append(token)
        else:
            kept.append(token)
            if name in OPTION_PLUGINS:
                plugins.add(OPTION_PLUGINS[name])
        index += 1
    for key in ini or {}:
        if key in INI_PLUGINS:
            plugins.add(INI_PLUGINS[key])
    for requirement in required_plugins:
        if requirement.strip():
            plugins.add(requirement.strip())
    return PytestRun(kept, dropped, sorted(plugins))
