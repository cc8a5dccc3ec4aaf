"""A JavaScript / TypeScript repository's install recipes, from the facts its files state
(``js_project``) and what its test script runs (``js_scripts``): one recipe per plausible Node
major (``node_versions``), best first.

The recipe installs in two steps, so that the download is shared by a repository's PRs and the
install sees the whole tree:

1. **env image** (per repository, Node major and dependency files): the package manager the
   lockfile names (its version pinned by ``packageManager``), then the frozen install from
   the lockfile in ``ENV_DIR`` with every script off, which fills the package manager's cache
   in the image, then ``node_modules`` dropped; without a lockfile, ``npm install`` resolved
   **as of the PR's date** (``--before``), whose lockfile the instance reuses;
2. **instance image** (per task): the same frozen install in ``/testbed`` from that cache
   (lifecycle scripts on: ``prepare`` builds), then the build steps the tests need (when they
   import the build output: ``dist/``, ``lib/``, ``build/`` missing from the tree).

The test command is the runner of the ``test`` script, its options kept but for those a run on
chosen files cannot have (test paths, coverage, watch, bail, reporters: ``RUNNER_OPTIONS``
sets the reporter each runner's log parser reads); in a workspace, from the directory of the
package the PR touches.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from streams.evaluation.recipes.languages.javascript.package import (
    MAX_LOCKFILE_BYTES,
    JsFacts,
    Package,
    read_js_project,
)
from streams.evaluation.recipes.languages.javascript.runners.commands import RUNNER_COMMANDS
from streams.evaluation.recipes.languages.javascript.runners.uvu import PASS_MARK as UVU_PASS_MARK
from streams.evaluation.recipes.languages.javascript.scripts import (
    Command,
    plan_script,
    runner_from_dependencies,
)
from streams.evaluation.recipes.languages.javascript.versions import (
    declared_majors,
    node_major,
    node_order,
)
from streams.evaluation.recipes.model import ENV_DIR, TESTBED, InstallRecipe, TreeFiles

# the options each runner gets, for its log parser: the parser side's table
# (``log_parsers.RUNNER_COMMANDS``), whose report arguments the validator appends
RUNNER_OPTIONS: dict[str, tuple[str, ...]] = {
    runner: command.options for runner, command in RUNNER_COMMANDS.items()
}
# options (space-separated form) that take a value, per runner
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "jest": frozenset({"--config", "-c", "--testNamePattern", "-t", "--maxWorkers", "-w",
                       "--testTimeout", "--rootDir", "--roots", "--reporters", "--selectProjects",
                       "--testEnvironment", "--env", "--shard", "--outputFile", "--testMatch",
                       "--testPathIgnorePatterns", "--setupFiles", "--globalSetup"}),
    "vitest": frozenset({"--config", "-c", "--root", "-r", "--dir", "--environment", "--pool",
                         "--project", "--mode", "--testNamePattern", "-t", "--maxWorkers",
                         "--outputFile", "--exclude"}),
    "mocha": frozenset({"--config", "--require", "-r", "--ui", "-u", "--timeout", "-t",
                        "--slow", "-s", "--extension", "--file", "--grep", "-g", "--fgrep",
                        "-f", "--ignore", "--package", "--jobs", "-j", "--retries",
                        "--node-option", "-n", "--loader", "--reporter-option", "-O"}),
    "node": frozenset({"--require", "-r", "--import", "--loader", "--experimental-loader",
                       "--test-name-pattern", "--test-reporter-destination", "--conditions",
                       "-C"}),
    "tap": frozenset({"--timeout", "-t", "--node-arg", "--jobs", "-j", "--grep", "-g",
                      "--nyc-arg", "--test-env", "--test-arg", "--before", "--after"}),
    "ava": frozenset({"--match", "-m", "--config", "--concurrency", "-c", "--timeout", "-T",
                      "--node-arguments"}),
}  # fmt: skip
# options dropped (with their value when they take one): a run on chosen files, once, whole
DROPPED_OPTIONS = re.compile(
    r"^(?:--coverage\S*|--collectCoverage\S*|--coverageThreshold|--coverage-\S+|--watch\S*|"
    r"-w|--bail|-b|--reporter|-R|--test-reporter|--reporters|--typecheck|-u|--updateSnapshot|"
    r"--onlyChanged|-o|--changedSince|--findRelatedTests|--spec|--forbid-only|--test-only|"
    r"--check-coverage|--100|--no-coverage)(?:=.*)?$"
)
DROPPED_WITH_VALUE = frozenset({"--reporter", "-R", "--coverageThreshold", "--test-reporter",
                                "--changedSince", "--spec", "--reporters"})  # fmt: skip
# set while installing and testing: no prompts, no colours, no downloads of browsers or
# binaries outside a registry, no telemetry, git hooks off
ENVIRONMENT: dict[str, str] = {
    "CI": "true",
    "FORCE_COLOR": "0",
    "NO_COLOR": "1",
    "HUSKY": "0",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "ADBLOCK": "1",
    "DISABLE_OPENCOLLECTIVE": "1",
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "CYPRESS_INSTALL_BINARY": "0",
    "ELECTRON_SKIP_BINARY_DOWNLOAD": "1",
    "COREPACK_ENABLE_DOWNLOAD_PROMPT": "0",
    "YARN_ENABLE_TELEMETRY": "0",
    "YARN_ENABLE_GLOBAL_CACHE": "true",  # berry: the env image's cache serves the instance
    "NEXT_TELEMETRY_DISABLED": "1",
}
# the pnpm major that writes each lockfileVersion (when ``packageManager`` pins none)
PNPM_FOR_LOCKFILE = {"5.3": "6", "5.4": "7", "6.0": "8", "6.1": "8", "9.0": "9"}
# pnpm 10 writes lockfileVersion 9.0 too: the PRs after its release get it (settings such as
# allowBuilds in a pnpm-workspace.yaml without ``packages``, which pnpm 9 refuses)
PNPM_10_SINCE = "2025-01-07"
# a dependency not from a registry: a git host, a URL, a local path (sandboxes reach registries)
NOT_FROM_REGISTRY = re.compile(r"^(?:github:|gitlab:|bitbucket:|git[+:]|https?://|file:|link:|"
                               r"[\w.-]+/[\w.-]+(?:#.*)?$)")  # fmt: skip
NATIVE_BUILD = ("node-gyp", "prebuild-install", "node-addon-api", "nan")
NATIVE_PACKAGES = ("g++", "make")
BUILD_OUTPUT_DIRS = ("dist", "build", "lib", "out", "esm", "cjs", "es", "umd", "types")
MAX_TEST_FILES_READ = 30
_IMPORT = re.compile(r"""(?:from\s+|require\(\s*|import\(\s*|import\s+)['"]([^'"\n]+)['"]""")
_JS_EXTENSIONS = ("", ".js", ".ts", ".mjs", ".cjs", ".mts", ".cts", ".jsx", ".tsx", ".json")
_TEST_NAME = re.compile(r"(?:^|/)(?:__tests__|tests?|spec)/|\.(?:test|spec)\.[cm]?[jt]sx?$")
_RUNNERS_WITHOUT_FILE_LISTS = frozenset({"uvu"})
# uvu has no reporter and names passing tests nowhere: its installed copies (ESM and CommonJS
# builds) are made to print a line per passing test (``log_parsers.uvu.PASS_MARK``), in the
# instance image, before the tests
UVU_PASS_LINES = (
    "find . -path '*/node_modules/uvu/dist/index.*js' -exec sed -i "
    "'s/write(PASS);/write(PASS); process.stdout.write(\"\\\\n" + UVU_PASS_MARK + ' " + '
    'JSON.stringify([name || "", test.name]) + "\\\\n");/\' {} +'
)


@dataclass(frozen=True)
class JsContext:
    names: list[str]
    read: Callable[[str], bytes | None]
    facts: JsFacts
    node: str | None  # the Node major; None: whatever the default base image has
    base_image: str
    before: str | None = None  # YYYY-MM-DD: dependencies as of this day (no lockfile)
    changed_files: tuple[str, ...] = ()


def is_js_tree(tree: TreeFiles) -> bool:
    return tree.has("package.json")


def package_of(facts: JsFacts, changed_files: Iterable[str]) -> Package:
    """The workspace package the PR touches (most of its test files, else of its files);
    the root when it touches none or the repository has no workspaces."""
    if not facts.packages:
        return facts.root
    counts: dict[str, list[int]] = {}
    for path in changed_files:
        owners = [d for d in facts.packages if path.startswith(d + "/")]
        if owners:
            owner = max(owners, key=len)
            count = counts.setdefault(owner, [0, 0])
            count[0] += bool(_TEST_NAME.search(path))
            count[1] += 1
    if not counts:
        return facts.root
    best = max(sorted(counts), key=lambda d: (counts[d][0], counts[d][1]))
    return facts.packages[best]


def _manager_word(facts: JsFacts) -> str:
    if facts.manager == "yarn-berry" and facts.yarn_path:
        return f"node {shlex.quote(facts.yarn_path)}"
    return facts.manager.split("-")[0]


def _manager_tool(facts: JsFacts, before: str | None = None) -> str | None:
    """The env step that installs the package manager (npm comes with Node); ``before``: the
    PR's day, for the pnpm major a lockfile's version leaves open."""
    version = facts.manager_version
    # --force: the Node images' corepack already put pnpm / yarn shims where npm installs
    # them (EEXIST otherwise); the pinned release replaces the shim
    install = "npm install -g --force --no-audit --no-fund"
    if facts.manager == "pnpm":
        lock = facts.lockfile.version if facts.lockfile else None
        wanted = version or PNPM_FOR_LOCKFILE.get(lock or "", "9")
        settings_only = (
            "pnpm-workspace.yaml" in facts.dependency_files
            and facts.workspace_source != "pnpm-workspace.yaml"
        )
        if not version and wanted == "9" and (settings_only or (before or "") >= PNPM_10_SINCE):
            wanted = "10"
        return f"{install} pnpm@{wanted}"
    if facts.manager == "yarn":
        return f"{install} yarn@{version or '1'}"
    if facts.manager == "yarn-berry" and not facts.yarn_path:
        return f"{install} @yarnpkg/cli-dist@{version or '4'}"
    return None


def install_steps(
    facts: JsFacts, before: str | None, unused: tuple[str, ...] = ()
) -> tuple[list[str], list[str], list[str]]:
    """(env commands, instance commands, notes) of the package manager's frozen install;
    ``unused``: devDependencies from outside a registry that no test imports, left out of an
    npm install without a lockfile (``npm pkg delete``, package.json restored after it)."""
    notes: list[str] = []
    tool = _manager_tool(facts, before)
    env = [tool] if tool else []
    pm = _manager_word(facts)
    clean = "find . -name node_modules -prune -exec rm -rf {} +"
    if facts.manager == "npm" and facts.lockfile is not None:
        fetch = "npm ci --ignore-scripts --no-audit --no-fund"
        install = "npm ci --prefer-offline --no-audit --no-fund"
    elif facts.manager == "npm":
        flags = "--package-lock=true --ignore-scripts --no-audit --no-fund"
        # a registry (or mirror) whose metadata has no publish times refuses --before
        # (ETARGET / ENOVERSIONS): then the newest versions the ranges allow
        fetch = (
            f"(npm install --before={before} {flags} || npm install {flags})"
            if before
            else f"npm install {flags}"
        )
        # npm install, not npm ci: a lockfile npm wrote under --before can miss entries
        # npm ci wants (EUSAGE "not in sync"); install completes it
        install = "npm install --prefer-offline --package-lock=true --no-audit --no-fund"
        notes.append(f"no lockfile: dependencies as of {before or 'today'} (npm --before)")
    elif facts.manager == "yarn":
        flags = "--frozen-lockfile --ignore-engines --non-interactive"
        fetch = f"{pm} install {flags} --ignore-scripts"
        install = f"{pm} install {flags} --prefer-offline"
    elif facts.manager == "yarn-berry":
        fetch = f"{pm} install --immutable --mode=skip-build"
        install = f"{pm} install --immutable"
    else:
        fetch = f"{pm} install --frozen-lockfile --ignore-scripts"
        install = f"{pm} install --frozen-lockfile --prefer-offline"
    if facts.manager_version and facts.manager == "npm":
        notes.append(f"packageManager pins npm {facts.manager_version}: the image's npm is used")
    env.append(f"cd {ENV_DIR} && {fetch} && {clean}")
    no_lock = facts.manager == "npm" and facts.lockfile is None
    commands = [f"cp {ENV_DIR}/package-lock.json {TESTBED}/package-lock.json"] * no_lock
    install = _scripts_fallback(facts, pm, install)
    if no_lock and unused:
        delete = "npm pkg delete " + " ".join(f"devDependencies.{shlex.quote(n)}" for n in unused)
        env[-1] = env[-1].replace(f"cd {ENV_DIR} && ", f"cd {ENV_DIR} && {delete} && ", 1)
        saved = "/tmp/swe-stream-package.json"
        # in a subshell: one command, whatever a reader of the task chains it with
        install = (
            f"(cp package.json {saved} && {delete} && {{ {install}; }}; s=$?; "
            f"cp {saved} package.json; exit $s)"
        )
        notes.append(
            "left out of the install (not from a registry, imported by no test): "
            + ", ".join(unused)
        )
    return env, [*commands, install], notes


def _scripts_fallback(facts: JsFacts, pm: str, install: str) -> str:
    """``install``, and when it fails, the same install with the dependencies' lifecycle
    scripts off and then the repository's own ``prepare``: a dependency's postinstall that
    reaches a host other than a registry (a package fetching a web page) fails here,
    and the tests rarely need what it made."""
    if facts.manager == "yarn-berry":
        off = install.replace("--immutable", "--immutable --mode=skip-build")
    else:
        off = f"{install} --ignore-scripts"
    prepare = f"{pm} run prepare" if "prepare" in facts.root.scripts else None
    fallback = f"{off} && {prepare}" if prepare else off
    return f"{install} || {{ echo 'install scripts failed: again without them'; {fallback}; }}"


MAX_HELPER_IMPORTERS_READ = 2000  # test files read to find who imports a helper
_DEFINES_TESTS = re.compile(r"\b(?:it|test|describe|suite|context|specify)(?:\.\w+)?\s*\(")
_HELPER_STEM = re.compile(r"\.[cm]?[jt]sx?$")


def tests_of_helpers(
    names: list[str], read: Callable[[str], bytes | None], files: list[str]
) -> list[str]:
    """``files`` (a PR's test files) with each that defines no test (a fixture or a table of
    cases named like a test: ``src/cases.spec.ts``) replaced by the test files
    of the tree that import it, which a runner given it alone finds nothing in ("No test
    suite found"). A file that is not in the tree (added by the PR) is kept."""
    present = set(names)
    out: list[str] = []
    for path in files:
        data = read(path) if path in present else None
        if data is None or _DEFINES_TESTS.search(data.decode(errors="replace")):
            out.append(path)
            continue
        stem = _HELPER_STEM.sub("", posixpath.basename(path))
        importers = []
        candidates = [o for o in names if o != path and "node_modules/" not in o
                      and _TEST_NAME.search(o) and _HELPER_STEM.search(o)]  # fmt: skip
        for other in candidates[:MAX_HELPER_IMPORTERS_READ]:
            text = read(other)
            if text is None:
                continue
            for target in _IMPORT.findall(text.decode(errors="replace")):
                if not target.startswith("."):
                    continue
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(other), target))
                if _HELPER_STEM.sub("", resolved) == posixpath.join(posixpath.dirname(path), stem):
                    importers.append(other)
                    break
        out += importers or [path]
    return list(dict.fromkeys(out))


def _unused_outside_registry(ctx: JsContext, package: Package) -> tuple[str, ...]:
    """The root's devDependencies from outside a registry (a benchmark
    helper from ``github:owner/name``) that no test file of ``package`` imports."""
    outside = [n for n, spec in ctx.facts.root.dev_dependencies.items()
               if NOT_FROM_REGISTRY.match(spec.strip())]  # fmt: skip
    if not outside:
        return ()
    imported = {t for _, t in _imports(ctx, package)}
    used = {t.split("/")[0] if not t.startswith("@") else "/".join(t.split("/")[:2])
            for t in imported}  # fmt: skip
    return tuple(sorted(n for n in outside if n not in used))


def _resolves(names: set[str], dirs: set[str], path: str) -> bool:
    """Whether an import of ``path`` (repository-relative) finds a file of the tree, as
    Node and TypeScript resolve it (extensions, index files, ``.js`` written for ``.ts``)."""
    if path in dirs:
        return True
    stem = re.sub(r"\.([cm]?)js$", "", path)
    candidates = [path + ext for ext in _JS_EXTENSIONS]
    candidates += [stem + ext for ext in (".ts", ".tsx", ".mts", ".cts")]
    return any(c in names for c in candidates)


def _test_files(ctx: JsContext, package: Package) -> list[str]:
    """The test files the PR touches in ``package``, else its first test files."""
    prefix = f"{package.directory}/" if package.directory else ""
    touched = [f for f in ctx.changed_files if f.startswith(prefix) and _TEST_NAME.search(f)]
    files = [f for f in touched if f in set(ctx.names)] or [
        n for n in ctx.names
        if n.startswith(prefix) and "node_modules/" not in n and _TEST_NAME.search(n)
        and n.endswith((".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx", ".mts", ".cts"))
    ]  # fmt: skip
    return files[:MAX_TEST_FILES_READ]


def _imports(ctx: JsContext, package: Package) -> list[tuple[str, str]]:
    """(test file, imported path) of ``_test_files``."""
    out = []
    for path in _test_files(ctx, package):
        data = ctx.read(path)
        if data is not None and len(data) < 1 << 20:
            out += [(path, target) for target in _IMPORT.findall(data.decode(errors="replace"))]
    return out


def build_needed(ctx: JsContext, package: Package) -> str | None:
    """Why the tests need a build first (what they import that the tree lacks), or None."""
    names = set(ctx.names)
    dirs = {posixpath.dirname(n) for n in ctx.names}
    dirs |= {d for n in dirs for d in _parents(n)}
    root = package.directory or "."
    entry = next(iter(package.entry_points), "index.js")
    entry_missing = not _resolves(names, dirs, package.path(entry))
    configs = [n for n in ctx.names if re.search(r"(?:jest|vitest|vite)\.config\.", n)]
    name = re.escape(package.name or "")
    alias = re.compile(rf"['\"]\^?{name}\$?['\"]|^\s*{name}\s*:", re.MULTILINE)
    mapped = package.name is not None and any(alias.search(_text(ctx, n)) for n in configs)
    for test_file, target in _imports(ctx, package):
        if target.startswith("."):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(test_file), target))
            if resolved == root and entry_missing:
                return f"{test_file} imports the package, whose entry {entry} is built"
            if resolved != root and not _resolves(names, dirs, resolved):
                return f"{test_file} imports {target}, which the tree lacks"
        elif target == package.name and entry_missing and not mapped:
            return f"{test_file} imports {target}, whose entry {entry} is built"
    return None


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _text(ctx: JsContext, path: str) -> str:
    data = ctx.read(path)
    return data.decode(errors="replace") if data is not None and len(data) < 1 << 20 else ""


def _is_test_path(ctx: JsContext, package: Package, word: str) -> bool:
    """Whether a word of a runner command names test files (a path, a directory, a glob)."""
    if any(c in word for c in "*?{") or "/" in word or word.endswith("/"):
        return True
    if re.search(r"\.[cm]?[jt]sx?$", word):
        return True
    path = package.path(word)
    return path in set(ctx.names) or any(n.startswith(path + "/") for n in ctx.names)


def runner_words(ctx: JsContext, package: Package, command: Command) -> list[str]:
    """The runner's program and the options of ``command`` a run on chosen files keeps."""
    runner = command.runner or "node"
    head = command.words[0].rsplit("/", 1)[-1]
    if runner == "node" or head not in {"jest", "vitest", "mocha", "_mocha", "tap", "ava",
                                        "tape", "jasmine", "uvu"}:  # fmt: skip
        program = _program(runner)
        args = [a for a in command.words[1:] if a.startswith("--") and runner == "node"
                and head == "node" and a != "--test" and not DROPPED_OPTIONS.match(a)]  # fmt: skip
        # a frontend (ts-scripts, react-scripts) ran the runner with a config of its own
        args += _runner_defaults(ctx, package, runner, args)
        return [*program, *args, *RUNNER_OPTIONS.get(runner, ())]
    kept: list[str] = []
    values = VALUE_OPTIONS.get(runner, frozenset())
    words = iter(command.words[1:])
    for word in words:
        if word.startswith("-"):
            takes_value = "=" not in word and (word in values or word in DROPPED_WITH_VALUE)
            value = next(words, None) if takes_value else None
            if DROPPED_OPTIONS.match(word):
                continue
            kept += [word] if value is None else [word, value]
        elif runner == "vitest" and word in {"run", "watch", "dev", "related"} and not kept:
            continue
        elif not _is_test_path(ctx, package, word):
            kept.append(word)  # a value of an option we do not know
    ours = RUNNER_OPTIONS.get(runner, ())
    ours = tuple(o for o in ours if o not in kept)  # single-word options: once
    kept += _runner_defaults(ctx, package, runner, kept)
    return [*_program(runner), *kept, *ours]


def _runner_defaults(ctx: JsContext, package: Package, runner: str, kept: list[str]) -> list[str]:
    """Options the tests need that the command does not give: mocha's interface, jest's
    TypeScript preset."""
    if runner == "mocha":
        return _mocha_ui(ctx, package, kept)
    if runner == "jest":
        return _jest_preset(ctx, package, kept)
    return []


_JEST_CONFIG = re.compile(r"(?:^|/)(?:jest\.config\.[cm]?[jt]s|jest\.config\.json)$")
_BABEL_CONFIG = re.compile(r"(?:^|/)(?:\.babelrc(?:\.\w+)?|babel\.config\.[cm]?[jt]s(?:on)?)$")


def _jest_preset(ctx: JsContext, package: Package, kept: list[str]) -> list[str]:
    """``--preset=ts-jest`` for TypeScript tests that jest would read with babel, which does
    not parse TypeScript without a preset: no jest or babel config in the repository, ts-jest
    installed (a frontend such as ``ts-scripts test`` runs jest with a config of its own
    setting ts-jest)."""
    if package.has_jest_config or any(w.startswith(("--config", "-c", "--preset")) for w in kept):
        return []
    if any(_JEST_CONFIG.search(n) or _BABEL_CONFIG.search(n) for n in ctx.names
           if "node_modules/" not in n):  # fmt: skip
        return []
    if not any(f.endswith((".ts", ".tsx", ".mts", ".cts")) for f in _test_files(ctx, package)):
        return []
    mentions = _lock_mentions(ctx.facts)
    installed = "ts-jest" in package.all_dependencies or (
        mentions is not None and mentions("ts-jest")
    )
    return ["--preset=ts-jest"] if installed else []


_MOCHA_UI_OPTION = re.compile(r"^(?:--ui|-u)(?:=|\s+)(\S+)", re.MULTILINE)
_TDD_CALL = re.compile(r"^\s*suite\(", re.MULTILINE)
_BDD_CALL = re.compile(r"^\s*describe\(", re.MULTILINE)


def _mocha_ui(ctx: JsContext, package: Package, kept: list[str]) -> list[str]:
    """``--ui X`` when the command sets none and the tests need one: the interface
    ``test/mocha.opts`` names (mocha >= 8 no longer reads that file; a build tool may pass
    ``--u tdd`` from a file inference does not read), else ``tdd`` when the test files
    call ``suite(`` and never ``describe(``."""
    if any(w in {"--ui", "-u"} or w.startswith(("--ui=", "-u=")) for w in kept):
        return []
    if any(posixpath.basename(n).startswith(".mocharc") for n in ctx.names):
        return []  # the config file's interface, which every mocha reads
    opts = _text(ctx, package.path("test/mocha.opts"))
    if match := _MOCHA_UI_OPTION.search(opts):
        return ["--ui", match[1]]
    texts = [_text(ctx, path) for path in _test_files(ctx, package)]
    if any(_TDD_CALL.search(t) for t in texts) and not any(_BDD_CALL.search(t) for t in texts):
        return ["--ui", "tdd"]
    return []


def _program(runner: str) -> list[str]:
    return {"node": ["node", "--test"], "vitest": ["vitest", "run"]}.get(runner, [runner])


def test_command(ctx: JsContext, package: Package, words: list[str], env: dict[str, str]) -> str:
    """The shell command the test files are appended to: the runner from the package's
    directory with its ``node_modules/.bin`` (Plug'n'Play: through yarn); in a workspace
    package, the appended repository paths made relative to it."""
    facts = ctx.facts
    program = words[0]
    if facts.pnp and program != "node":
        words = [*_manager_word(facts).split(), *words]
    assignments = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    bins = f"{TESTBED}/node_modules/.bin"
    if package.directory:
        bins = f"{TESTBED}/{package.directory}/node_modules/.bin:{bins}"
    path = f'PATH="{bins}:$PATH"'
    each_file = words[0] == "uvu" or words == ["node"]
    if not package.directory and not each_file:
        return " ".join([path, *assignments, shlex.join(words)])
    prefix = f"{package.directory}/" if package.directory else ""
    files = f'"${{@#{prefix}}}"' if prefix else '"$@"'
    cd = f"cd {shlex.quote(package.directory)} && " if package.directory else ""
    if each_file:  # uvu and plain node scripts run one file each, its path printed first
        inner = (f"{cd}{path}; s=0; for f in {files}; do echo \"{prefix}$f\"; "
                 f"{' '.join(assignments)} node \"$f\" || s=1; done; exit $s")  # fmt: skip
    else:
        inner = f"{cd}{path} {' '.join(assignments)} exec {shlex.join(words)} {files}"
    return f"bash -c {shlex.quote(' '.join(inner.split(' ')))} swe-stream"


def _choose_runner(ctx: JsContext, package: Package) -> tuple[Command | None, list[Command]]:
    """The runner command of the package's test script (the last one: a suite's variants run
    first) and the build commands before it."""
    hooks = ctx.facts.manager in {"npm", "yarn"}
    plan = plan_script(package, ctx.facts.manager, "test", hooks)
    runners = plan.runners
    runner = runners[-1] if runners else None
    if runner is not None and runner.runner is None:  # a frontend: ts-scripts, react-scripts
        named = runner_from_dependencies(package, _lock_mentions(ctx.facts)) or "jest"
        return dataclasses.replace(runner, runner=named), plan.builds_before(runners[-1])
    if runner is None:
        found = runner_from_dependencies(package, _lock_mentions(ctx.facts))
        if found is not None:
            runner = Command((found,), kind="runner", runner=found, script="test", text=found)
    return runner, plan.builds_before(runner if runner in plan.commands else None)


def _lock_mentions(facts: JsFacts) -> Callable[[str], bool] | None:
    return facts.lockfile.mentions if facts.lockfile else None


def _build_commands(ctx: JsContext, package: Package, builds: list[Command]) -> list[str]:
    pm = _manager_word(ctx.facts)
    own = ctx.facts.manager.split("-")[0]
    commands = [re.sub(rf"^((?:\S+=\S* )*){own} run ", rf"\g<1>{pm} run ", c.text) for c in builds]
    if not commands:
        for script in ("build", "compile", "prepare", "prepublishOnly"):
            if script in package.scripts:
                commands = [f"{pm} run {script}"]
                break
    bins = f"{TESTBED}/node_modules/.bin"
    cd = f"cd {shlex.quote(package.directory)} && " if package.directory else ""
    return [f'{cd}PATH="{bins}:$PATH" {c}' if not c.startswith(pm) else f"{cd}{c}"
            for c in commands]  # fmt: skip


def js_recipe(ctx: JsContext) -> InstallRecipe:
    """The recipe of ``ctx`` (see the module's docstring)."""
    facts = ctx.facts
    package = package_of(facts, ctx.changed_files)
    if package.directory and "test" not in package.scripts:
        package = facts.root
    sources = [f"package-manager:{facts.manager}", f"node:{ctx.node or 'default'}"]
    if facts.lockfile is not None:
        sources.append(f"lockfile:{facts.lockfile.path}")
    if package.directory:
        sources.append(f"workspace:{package.directory}")
    env, install, notes = install_steps(facts, ctx.before, _unused_outside_registry(ctx, package))
    notes += facts.problems
    runner, builds = _choose_runner(ctx, package)
    environment = dict(ENVIRONMENT)
    pre_test: list[str] = []
    build: list[str] = []
    if runner is None:
        test = f"{_manager_word(facts)} test --"
        test_runner = "unknown"
        notes.append("no test runner recognised in the test script or the dependencies")
    else:
        sources.append(f"runner:{runner.runner}:{runner.script}")
        words = runner_words(ctx, package, runner)
        test = test_command(ctx, package, words, dict(runner.env))
        test_runner = runner.runner or "node"
        if test_runner == "uvu":
            pre_test.append(UVU_PASS_LINES)
        why = build_needed(ctx, package)
        if why is not None:
            build = _build_commands(ctx, package, builds)
            pre_test += build
            notes.append(f"build before the tests: {why}")
            if not build:
                notes.append("the tests need a build but no build script was found")
        elif builds:
            notes.append("build steps of the test script left out: " +
                         "; ".join(c.text for c in builds))  # fmt: skip
    lock = facts.lockfile.text if facts.lockfile else ""
    # yarn berry locks ``node-gyp@npm:latest`` for any package with install scripts (fsevents,
    # macOS only): not a native build of its own
    native = [p for p in NATIVE_BUILD
              if re.search(rf"node_modules/{p}\"|^\"?{p}@(?!npm:latest\b)|/{p}@", lock,
                           re.MULTILINE)]  # fmt: skip
    files = {p: ctx.read(p) for p in facts.dependency_files}
    return InstallRecipe(
        language="TypeScript" if facts.typescript else "JavaScript",
        dependency_files={p: data for p, data in files.items() if data is not None},
        env_commands=tuple(env),
        install_commands=tuple(install),
        test_command=test,
        test_runner=test_runner,
        python=None,
        base_image=ctx.base_image,
        system_packages=NATIVE_PACKAGES if native else (),
        pre_test_commands=tuple(pre_test),
        rebuild_commands=tuple(build),
        environment=tuple(sorted(environment.items())),
        sources=tuple(sources),
        notes=tuple(notes),
    )


def node_candidates(facts: JsFacts, package: Package, node_images: dict[str, str],
                    created_at: datetime | None) -> list[str]:  # fmt: skip
    """The Node majors to try for ``package`` (its engines, else the root's)."""
    engines = package.engines_node or facts.root.engines_node
    declared = declared_majors(facts.ci_node_versions, created_at)
    pinned = node_major(facts.nvmrc, created_at)
    return node_order(node_images, engines, declared, pinned, created_at)


def read_js_facts(tree: TreeFiles) -> JsFacts | None:
    """What the tree's package.json files, lockfiles and CI say; None without a package.json."""
    if not is_js_tree(tree):
        return None
    return read_js_project(
        tree.names, lambda path: tree.read(path, MAX_LOCKFILE_BYTES), tree.why_unreadable
    )


def js_versions(
    facts: JsFacts,
    node_images: dict[str, str],
    created_at: datetime | None = None,
    changed_files: Iterable[str] = (),
    pinned: list[str | None] | None = None,
) -> list[str | None]:
    """The Node majors to try, best first (``node_candidates`` for the PR's package); None
    alone: the default base image. The ones an override pins (``Language.pinned_versions``)
    are the only ones tried (``engines.node`` notwithstanding)."""
    if pinned is not None:
        return pinned
    if not node_images:
        return [None]
    package = package_of(facts, tuple(changed_files))
    return list(node_candidates(facts, package, node_images, created_at))


def infer_js_recipes(
    tree: TreeFiles,
    *,
    node_images: dict[str, str],
    created_at: datetime | None = None,
    changed_files: Iterable[str] = (),
    pinned: list[str | None] | None = None,
) -> tuple[list[InstallRecipe], JsFacts | None]:
    """The recipes to try (best first) and the facts they were made of; none when the tree
    has no package.json, or ``engines.node`` excludes every Node there is an image of.
    ``node_images``: Node major -> base image (``versions.node_images_by_suite``); empty: one
    recipe on the default base image. ``pinned``: the Node majors an override pins, the only
    ones tried (the override itself is applied by ``infer_for``)."""
    facts = read_js_facts(tree)
    if facts is None:
        return [], None
    changed = tuple(changed_files)
    nodes = js_versions(facts, node_images, created_at, changed, pinned)
    before = created_at.strftime("%Y-%m-%d") if created_at else None
    recipes = []
    for node in nodes:
        ctx = JsContext(
            names=tree.names, read=lambda path: tree.read(path, MAX_LOCKFILE_BYTES),
            facts=facts, node=node, base_image=node_images.get(node, "") if node else "",
            before=before, changed_files=changed,
        )  # fmt: skip
        recipes.append(js_recipe(ctx))
    return recipes, facts
