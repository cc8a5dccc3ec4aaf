"""What a package.json ``test`` script runs, as a pure reading of its words: the ``npm run x``
indirections followed (``pre``/``post`` scripts where the package manager runs them,
``npm-run-all`` / ``run-s`` lists, ``pnpm run /regex/``), then each command classified:

- **runner**: jest, vitest, mocha, node (``node --test``, better-node-test), tap, ava, uvu,
  tape, jasmine; behind a coverage wrapper (nyc, c8, istanbul) or ``cross-env`` / ``npx`` /
  ``yarn`` / ``pnpm exec``, which are unwrapped;
- **check**: lint, format, typecheck (``tsc --noEmit``), type tests, size and coverage reports:
  dropped (``xo && ava`` runs ``ava``);
- **build**: ``tsc`` that emits, bundlers, cleaners, ``npm run build``: kept aside, for the
  recipe to run before the tests when they import the build output;
- **other**: anything else (``node test.js``, ``echo``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Literal

from streams.evaluation.recipes.languages.javascript.package import Package, PackageManager
from streams.evaluation.recipes.sources.shell import split_words

Kind = Literal["runner", "check", "build", "other"]
MAX_DEPTH = 8

RUNNERS: dict[str, str] = {
    "jest": "jest", "vitest": "vitest", "mocha": "mocha", "_mocha": "mocha", "tap": "tap",
    "ava": "ava", "uvu": "uvu", "tape": "tape", "jasmine": "jasmine", "bnt": "node",
    "better-node-test": "node", "borp": "node",
}  # fmt: skip
# programs that run a runner named by the project's dependencies
RUNNER_FRONTENDS = frozenset({"ts-scripts", "react-scripts", "craco", "kcd-scripts", "tsdx"})
# the runner a project's dependencies name, when its scripts do not (most specific first)
RUNNERS_BY_DEPENDENCY = (
    ("vitest", "vitest"), ("jest", "jest"), ("ts-jest", "jest"), ("mocha", "mocha"),
    ("ava", "ava"), ("tap", "tap"), ("tape", "tape"), ("uvu", "uvu"), ("jasmine", "jasmine"),
)  # fmt: skip
CHECKS = frozenset(
    {
        "eslint", "xo", "standard", "semistandard", "ts-standard", "tslint", "prettier",
        "jshint", "jscs", "biome", "oxlint", "stylelint", "markdownlint", "markdownlint-cli2",
        "remark", "lint-staged", "size-limit", "bundlesize", "depcheck", "knip", "dprint",
        "template-oss-check", "licensee", "npmPkgJsonLint", "sort-package-json", "commitlint",
        "tsd", "check-dts", "attw", "publint", "dtslint", "vue-tsc", "flow", "codecov",
        "coveralls", "echo", "date", "true", "editorconfig-checker", "cspell", "type-coverage",
        "check-export-map", "are-the-types-wrong", "madge", "audit-ci", "clinic",
    }
)  # fmt: skip
BUILDERS = frozenset(
    {
        "rollup", "rolldown", "webpack", "babel", "esbuild", "tsup", "unbuild", "microbundle",
        "siroc", "gen-esm-wrapper", "rimraf", "del-cli", "shx", "mkdirp", "rm", "cp", "mkdir",
        "swc", "ncc", "parcel", "gulp", "grunt", "tsc-alias", "copyfiles", "cpy", "tshy",
        "pkgroll", "bunchee", "vite", "node-gyp", "cmake-js", "pegjs", "peggy", "nearleyc",
        "jison", "ts-scripts-build",
    }
)  # fmt: skip
COVERAGE = frozenset({"nyc", "c8", "istanbul", "nyc-cover"})
ENV_WRAPPERS = frozenset({"cross-env", "env", "cross-env-shell", "dotenv", "dotenv-cli"})
BUILD_SCRIPT = re.compile(r"(?:^|:)(?:build|compile|bundle|dist|prepare|pretest)(?:$|:)", re.I)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Command:
    """One simple command of a script, with what decides its kind."""

    words: tuple[str, ...]  # the program and its arguments, wrappers and variables removed
    env: tuple[tuple[str, str], ...] = ()
    kind: Kind = "other"
    runner: str | None = None
    script: str = ""  # the npm script it came from
    text: str = ""  # how to run it again (``npm run build`` for a whole build script)
    pre: bool = False  # from a ``pre`` script, or before the runner in the same chain


@dataclass
class ScriptPlan:
    commands: list[Command] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)  # the scripts read, in order
    delegates: bool = False  # runs every workspace's tests (lerna run, pnpm -r, turbo)

    @property
    def runners(self) -> list[Command]:
        return [c for c in self.commands if c.kind == "runner"]

    def builds_before(self, runner: Command | None) -> list[Command]:
        """The build commands that run before ``runner`` (all of them without one)."""
        out = []
        for command in self.commands:
            if command is runner:
                break
            if command.kind == "build":
                out.append(command)
        return out


def split_commands(script: str) -> list[list[str]]:
    """A script's simple commands (split at ``&&``, ``||``, ``;``, pipes, groups), as words
    (redirections left out), by the shared shell splitter."""
    return split_words(script)


def _strip_prefixes(words: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The command without variables, env wrappers, ``npx`` / ``pnpm exec`` / ``yarn exec``
    and coverage wrappers (with their options), and the variables it sets."""
    env: list[tuple[str, str]] = []
    for _ in range(10):
        while words and _ASSIGNMENT.match(words[0]):
            name, _, value = words[0].partition("=")
            env.append((name, value))
            words = words[1:]
        if not words:
            break
        head = words[0].rsplit("/", 1)[-1]
        if head in ENV_WRAPPERS:
            words = _skip_options(words[1:], stop_at_separator=True)
        elif head == "npx" or words[:2] in (["pnpm", "exec"], ["yarn", "exec"], ["npm", "exec"]):
            words = _skip_options(words[1:] if head == "npx" else words[2:])
        elif head in COVERAGE:
            rest = words[1:]
            if rest[:1] in (["report"], ["check-coverage"]):
                return [head, *rest], env
            rest = rest[1:] if rest[:1] == ["cover"] else rest  # istanbul cover _mocha
            words = _skip_options(rest, values=True)
        else:
            break
    return words, env


def _skip_options(words: list[str], stop_at_separator: bool = False, values: bool = False):  # type: ignore[no-untyped-def]
    """``words`` from the first one that is no option (``--`` skipped); ``values``: an option
    without ``=`` takes the next word when that word is no program we know."""
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return words[index + 1 :]
        if not word.startswith("-"):
            break
        index += 1
        takes = values and "=" not in word and index < len(words)
        if takes and not _is_program(words[index]) and not words[index].startswith("-"):
            index += 1
    return words[index:]


def _is_program(word: str) -> bool:
    name = word.rsplit("/", 1)[-1]
    return (
        name in RUNNERS or name in COVERAGE or name in CHECKS or name in BUILDERS
        or name in RUNNER_FRONTENDS or name in {"node", "npm", "yarn", "pnpm", "npx", "tsc"}
    )  # fmt: skip


def run_target(
    words: list[str], package: Package, manager: PackageManager
) -> tuple[list[str], list[str]] | None:
    """The scripts an ``npm run x`` / ``yarn x`` / ``pnpm x`` / ``run-s a b`` command runs,
    and the words it passes on after ``--``; None when it runs no script of ``package``."""
    head = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    extra: list[str] = []
    if "--" in rest:
        extra = rest[rest.index("--") + 1 :]
        rest = rest[: rest.index("--")]
    names = [w for w in rest if not w.startswith("-")]
    if head in {"npm", "pnpm", "yarn"}:
        if names[:1] in (["run"], ["run-script"]):
            names = names[1:2]
        elif names[:1] in (["test"], ["t"]):
            names = ["test"]
        elif head == "npm" or not names or names[0] not in package.scripts:
            return None
        else:
            names = names[:1]
        if head == "pnpm" and names and names[0].startswith("/") and names[0].endswith("/"):
            pattern = re.compile(names[0][1:-1])
            return [s for s in package.scripts if pattern.search(s)], extra
        return names, extra
    if head in {"run-s", "run-p", "npm-run-all", "npm-run-all2"}:
        found = []
        for name in names:
            regex = re.compile(
                "^" + re.escape(name).replace(r"\*\*", ".*").replace(r"\*", "[^:]*") + "$"
            )
            found += [s for s in package.scripts if regex.match(s) and s not in found]
        return found, extra
    return None


_DELEGATES = (
    ["lerna", "run"], ["turbo", "run"], ["turbo", "test"], ["nx", "run-many"], ["nx", "affected"],
    ["yarn", "workspaces"], ["ultra"],
)  # fmt: skip


def _delegates(words: list[str]) -> bool:
    if any(words[: len(d)] == d for d in _DELEGATES):
        return True
    flags = {"--workspaces", "-ws", "-r", "--recursive", "--filter", "-F", "--workspace"}
    return words[0] in {"npm", "pnpm", "yarn"} and bool(flags & set(words[1:]))


def classify(words: list[str], package: Package) -> tuple[Kind, str | None]:
    """A command's kind and, for a runner, its name."""
    head = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if head in RUNNERS:
        return "runner", RUNNERS[head]
    if head in {"node", "ts-node", "tsx"} and "--test" in args:
        return "runner", "node"
    if head == "vitest" or (head == "vite" and args[:1] == ["test"]):
        return "runner", "vitest"
    if head in RUNNER_FRONTENDS and "test" in args:
        return "runner", None  # the one the dependencies (or the lockfile) name
    if head == "tsc":
        emits = not ({"--noEmit", "--noemit"} & set(args)) and "--noEmit=false" not in args
        return ("build" if emits else "check"), None
    if head in CHECKS or head in COVERAGE:
        return "check", None
    if head == "vite" and args[:1] != ["build"]:
        return "other", None
    if head in BUILDERS:
        return "build", None
    if head in {"node", "ts-node", "tsx", "babel-node"} and any("build" in a for a in args):
        return "build", None
    return "other", None


def runner_from_dependencies(package: Package, lock_mentions: object = None) -> str | None:
    """The runner the package's dependencies name (``lock_mentions``: a callable telling
    whether the lockfile installs a package, for runners a frontend brings)."""
    dependencies = package.all_dependencies
    for dependency, runner in RUNNERS_BY_DEPENDENCY:
        if dependency in dependencies:
            return runner
    if callable(lock_mentions):
        for dependency, runner in RUNNERS_BY_DEPENDENCY:
            if lock_mentions(dependency):
                return runner
    return None


def plan_script(
    package: Package, manager: PackageManager, script: str = "test", hooks: bool = True
) -> ScriptPlan:
    """What ``<manager> run <script>`` runs in ``package``, command by command."""
    plan = ScriptPlan()
    _expand(plan, package, manager, script, [], hooks, 0, pre=False)
    return plan


def _expand(
    plan: ScriptPlan,
    package: Package,
    manager: PackageManager,
    script: str,
    extra: list[str],
    hooks: bool,
    depth: int,
    pre: bool,
) -> None:
    if depth > MAX_DEPTH or script not in package.scripts or script in plan.followed:
        return
    plan.followed.append(script)
    if hooks and f"pre{script}" in package.scripts:
        _expand(plan, package, manager, f"pre{script}", [], hooks, depth + 1, pre=True)
    commands = split_commands(package.scripts[script])
    for index, raw in enumerate(commands):
        words, env = _strip_prefixes(raw)
        if index == len(commands) - 1 and extra:
            words = [*words, *extra]
        if not words:
            continue
        if _delegates(words):
            plan.delegates = True
            continue
        target = run_target(words, package, manager)
        if target is not None:
            names, passed = target
            _follow(plan, package, manager, names, passed, env, hooks, depth, pre)
            continue
        if words[0] in {"yarn", "pnpm"} and len(words) > 1:  # `yarn jest`: a package's bin
            words = words[1:]
        kind, runner = classify(words, package)
        text = shlex.join([*(f"{k}={v}" for k, v in env), *words])
        plan.commands.append(Command(tuple(words), tuple(env), kind, runner, script, text, pre))
    if hooks and f"post{script}" in package.scripts:
        _expand(plan, package, manager, f"post{script}", [], hooks, depth + 1, pre=False)


def _follow(
    plan: ScriptPlan,
    package: Package,
    manager: PackageManager,
    names: list[str],
    extra: list[str],
    env: list[tuple[str, str]],
    hooks: bool,
    depth: int,
    pre: bool,
) -> None:
    """Expand the scripts a run command names; a script that runs no test and builds
    something stays one command (``npm run build``), a build step to run as it is."""
    for name in names:
        inner = ScriptPlan(followed=list(plan.followed))
        _expand(inner, package, manager, name, extra, hooks, depth + 1, pre)
        plan.followed += [s for s in inner.followed if s not in plan.followed]
        plan.delegates = plan.delegates or inner.delegates
        builds = any(c.kind == "build" for c in inner.commands) or (
            not inner.commands and BUILD_SCRIPT.search(name) is not None
        )
        if not inner.runners and builds and name in package.scripts:
            words = (manager.split("-")[0], "run", name)
            text = shlex.join([*(f"{k}={v}" for k, v in env), *words])
            plan.commands.append(Command(words, tuple(env), "build", None, name, text, pre))
            continue
        for command in inner.commands:
            merged = (*env, *command.env)
            plan.commands.append(
                Command(command.words, merged, command.kind, command.runner, command.script,
                        command.text, command.pre or pre)
            )  # fmt: skip
