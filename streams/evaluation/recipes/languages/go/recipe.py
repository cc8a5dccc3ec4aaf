"""A Go repository's facts (its modules, its workspace, whether it needs cgo) and its recipes.

Which modules a recipe installs and tests: the root module (or the workspace's), every module
a ``go.work`` uses, and each module that holds a file the PR changes (a repository of several
modules without a workspace, such as a root module with nested ``tools/`` or ``_examples/``
modules). Their ``go.mod`` and ``go.sum`` go to the env layer, where ``go mod download``
fetches what they require through the module proxy (a module cache of the image: the tests
run without network); the host's package cache keeps every download, so the next env build
takes them from there.

Tests run as ``go test -json`` per package directory (``./pkg``, ``runners.gotest``), from the
repository's root where one module or a workspace holds them all, else through ``swe-go-test``
(``runner_program``), which runs each package from the module that holds it.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources

from streams.evaluation.recipes.languages import version_key
from streams.evaluation.recipes.languages.go.gomod import (
    GoModule,
    GoWork,
    read_go_mod,
    read_go_work,
    toolchain_plan,
)
from streams.evaluation.recipes.languages.go.toolchain import PATCH_OF
from streams.evaluation.recipes.model import ENV_DIR, InstallRecipe, TreeFiles
from streams.evaluation.recipes.patched import FactsAfterDiffs

LANGUAGE_NAME = "Go"
RUNNER = "go-test"
# directories go never builds a package of (``./...`` passes them by), and vendored copies
_SKIPPED_PARTS = frozenset({"vendor", "testdata", "node_modules"})
CACHE = "/var/cache/swe-stream"  # the host's package cache, where a build step mounts it
RUNNER_SCRIPT = "swe-go-test.py"  # the runner of packages across modules, in ENV_DIR
# -count=1: never a cached result; -vet=off: a newer go's vet checks fail no package the
# repository's CI passed
TEST_OPTIONS = ("-count=1", "-json", "-vet=off")
WARM_OPTIONS = "-count=1 -vet=off '-run=^$'"  # compiles every test binary, runs no test
MAX_CGO_FILES = 4000  # .go files searched for `import "C"`
MAX_GO_FILE = 1 << 20


@dataclass
class GoFacts:
    """What a Go tree's files say."""

    modules: dict[str, GoModule] = field(default_factory=dict)  # directory ("." root) -> go.mod
    texts: dict[str, bytes] = field(default_factory=dict)  # directory -> its go.mod's bytes
    sums: dict[str, bytes] = field(default_factory=dict)  # directory -> its go.sum
    work: GoWork | None = None
    work_text: bytes | None = None
    cgo: bool = False  # a non-test file imports "C"
    added: tuple[str, ...] = ()  # module directories the PR adds (not in the base tree)
    problems: list[str] = field(default_factory=list)

    @property
    def workspace_modules(self) -> list[str]:
        if self.work is None:
            return []
        return [
            posixpath.normpath(d) for d in self.work.uses if posixpath.normpath(d) in self.modules
        ]


def _directory(path: str) -> str:
    return posixpath.dirname(path) or "."


def _in(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


def _skipped(path: str) -> bool:
    parts = path.split("/")
    return any(part in _SKIPPED_PARTS or part.startswith(".") for part in parts[:-1])


def is_go_tree(tree: TreeFiles) -> bool:
    """A Go project: a go.mod (or go.work) at its root."""
    return tree.has("go.mod") or tree.has("go.work")


def read_go_facts(tree: TreeFiles, cgo: bool = True) -> GoFacts | None:
    """The modules of ``tree`` (every go.mod go would build, vendored and test data ones
    aside), its go.work, and whether it needs cgo (not searched without ``cgo``: a caller
    after the modules alone reads no source file); None when it is no Go tree."""
    if not is_go_tree(tree):
        return None
    facts = GoFacts()
    for name in tree.names:
        if posixpath.basename(name) != "go.mod" or _skipped(name):
            continue
        data = tree.read(name, MAX_GO_FILE)
        if data is None:
            facts.problems.append(f"{name}: {tree.why_unreadable(name) or 'not read'}")
            continue
        module = read_go_mod(data.decode("utf-8", "replace"), name)
        facts.problems += module.problems
        directory = _directory(name)
        facts.modules[directory] = module
        facts.texts[directory] = data
        sums = tree.read(_in(directory, "go.sum"), 64 << 20)
        if sums is not None:
            facts.sums[directory] = sums
    work = tree.read("go.work", MAX_GO_FILE)
    if work is not None:
        facts.work = read_go_work(work.decode("utf-8", "replace"))
        facts.work_text = work
        facts.problems += facts.work.problems
    facts.cgo = cgo and _needs_cgo(tree)
    return facts


# The modules of the tree a PR's diffs leave, when they change a go.mod or the go.work (None
# when they change neither): a module the PR adds is installed and tested as a module of its own
pull_request_go_facts = FactsAfterDiffs(
    lambda tree: read_go_facts(tree, cgo=False),
    lambda path: posixpath.basename(path) in ("go.mod", "go.sum", "go.work"),
    lambda path: posixpath.basename(path) in ("go.mod", "go.work"),
)


def with_added_modules(facts: GoFacts, after: GoFacts | None) -> GoFacts:
    """``facts`` with the modules ``after`` (the PR's tree) has and the base has not: their
    go.mod and go.sum are downloaded in the env layer like the others', and their packages
    run from their own directory (a workspace does not use them). The base's own modules and
    workspace stay as the base has them: the base's tests run with those."""
    if after is None:
        return facts
    added = {d: m for d, m in after.modules.items() if d not in facts.modules}
    if not added:
        return facts
    return replace(
        facts,
        modules={**facts.modules, **added},
        texts={**facts.texts, **{d: after.texts[d] for d in added}},
        sums={**facts.sums, **{d: after.sums[d] for d in added if d in after.sums}},
        added=tuple(sorted(added)),
    )


def _needs_cgo(tree: TreeFiles) -> bool:
    """Whether a non-test Go file of the tree imports "C" (searched in the first files)."""
    sources = [
        n
        for n in tree.names
        if n.endswith(".go") and not n.endswith("_test.go") and not _skipped(n)
    ]
    for name in sources[:MAX_CGO_FILES]:
        data = tree.read(name, MAX_GO_FILE) or b""
        if b'import "C"' in data:
            return True
    return False


def module_of(facts: GoFacts, path: str) -> str | None:
    """The directory of the module holding ``path`` (the nearest go.mod above it)."""
    directory = _directory(path)
    while True:
        if directory in facts.modules:
            return directory
        if directory == ".":
            return None
        directory = _directory(directory)


def tested_modules(facts: GoFacts, changed_files: Sequence[str]) -> list[str]:
    """The module directories a recipe installs: the root module (a workspace without one:
    its first module) and each module holding a changed file. A workspace's other modules
    are not downloaded ahead: ``go list -deps -test`` of these, in workspace mode, fetches
    what their packages need of them in the instance layer."""
    chosen: dict[str, None] = {}
    if "." in facts.modules:
        chosen["."] = None
    elif facts.workspace_modules:  # a workspace without a root module: its first
        chosen[facts.workspace_modules[0]] = None
    for path in changed_files:
        if (
            path.endswith(".go")
            or "/testdata/" in f"/{path}"
            or path.endswith(("go.mod", "go.sum"))
        ):
            module = module_of(facts, path)
            if module is not None:
                chosen[module] = None
    return sorted(chosen)


def needed_go(facts: GoFacts, modules: Sequence[str]) -> tuple[str | None, str | None]:
    """The newest ``go`` line and ``toolchain`` line of ``modules`` and the workspace."""
    lines = [facts.modules[m] for m in modules if m in facts.modules]
    gos = [m.go for m in lines if m.go]
    toolchains = [m.toolchain for m in lines if m.toolchain and m.toolchain != "default"]
    if facts.work is not None:
        gos += [facts.work.go] if facts.work.go else []
        toolchains += [facts.work.toolchain] if facts.work.toolchain else []
    go = max(gos, key=version_key) if gos else None
    toolchain = (
        max(toolchains, key=lambda t: version_key(t.removeprefix("go"))) if toolchains else None
    )
    return go, toolchain


def go_versions(
    facts: GoFacts, images: Mapping[str, str], modules: Sequence[str]
) -> list[str | None]:
    """The go images to try, best first: the oldest whose go the modules accept, then the
    newer ones (none built: the base image, which has no go)."""
    if not images:
        return []
    ordered = sorted(images, key=version_key)
    go, toolchain = needed_go(facts, modules)
    plan = toolchain_plan(go, toolchain, {v: PATCH_OF.get(v, v) for v in ordered})
    if plan is None:
        return []
    at = ordered.index(plan.suite)
    return list(ordered[at:])


def toolchain_to_fetch(facts: GoFacts, version: str, modules: Sequence[str]) -> str | None:
    """The toolchain ``GOTOOLCHAIN`` names on the image of go ``version``: None when its go
    is new enough for the modules."""
    go, toolchain = needed_go(facts, modules)
    plan = toolchain_plan(go, toolchain, {version: PATCH_OF.get(version, version)})
    return plan.fetch if plan is not None else None


def runner_program() -> bytes:
    """The script that runs ``go test`` per module (``RUNNER_SCRIPT``)."""
    return resources.files(__package__).joinpath("swe_go_test.py").read_bytes()


def _download_command(directories: Sequence[str]) -> str:
    """One shell step: ``go mod download`` in each module directory copied to ENV_DIR, first
    into the host's package cache (when a build mounts it), then from there into the image's
    module cache, without network."""
    loop = " ".join(shlex.quote(f"{ENV_DIR}/{d}") for d in directories)
    shared = f"{CACHE}/go/mod"
    return (
        f'for d in {loop}; do cd "$d" || exit 1; '
        f"if [ -d {CACHE} ]; then "
        f"GOMODCACHE={shared} GOWORK=off go mod download || exit 1; "
        f"GOPROXY=file://{shared}/cache/download GOSUMDB=off GOWORK=off go mod download || exit 1; "
        "else GOWORK=off go mod download || exit 1; fi; done"
    )


def go_recipe(
    facts: GoFacts,
    version: str | None,
    images: Mapping[str, str],
    changed_files: Sequence[str],
    tags: Sequence[str] = (),
) -> InstallRecipe:
    """The recipe of ``facts`` on the image of go ``version``, testing with build ``tags``."""
    modules = tested_modules(facts, changed_files)
    files: dict[str, bytes] = {}
    for directory in modules:
        files[_in(directory, "go.mod")] = facts.texts[directory]
        if directory in facts.sums:
            files[_in(directory, "go.sum")] = facts.sums[directory]
    # a local replacement's go.mod is read by the download of the module replacing with it
    for directory in modules:
        for target in facts.modules[directory].local_replacements.values():
            other = posixpath.normpath(posixpath.join(directory, target))
            if other in facts.modules and _in(other, "go.mod") not in files:
                files[_in(other, "go.mod")] = facts.texts[other]
    environment = {"CGO_ENABLED": "1" if facts.cgo else "0"}
    sources = [*(_in(d, "go.mod") for d in modules)]
    fetch = toolchain_to_fetch(facts, version, modules) if version else None
    if fetch:
        environment["GOTOOLCHAIN"] = fetch
        sources.append(f"toolchain:{fetch}")
    if version:
        sources.append(f"go:{version}")
    if facts.work is not None:
        sources.append("go.work")
    if tags:
        sources.append(f"tags:{','.join(tags)}")
    several = len(modules) > 1 and not (
        facts.work is not None and set(modules) <= set(facts.workspace_modules)
    )
    options = " ".join([*TEST_OPTIONS, *([f"-tags={','.join(tags)}"] if tags else [])])
    if several:
        files[RUNNER_SCRIPT] = runner_program()
        test_command = f"python3 {ENV_DIR}/{RUNNER_SCRIPT} {options}"
    else:
        test_command = f"go test {options}"
    # what a workspace needs beyond the modules' own downloads, then the packages and their
    # tests compiled once into the image's build cache: each test run compiles only what a
    # patch changed (a run of a go without precompiled std would compile it every time)
    listing = [
        f"(cd {shlex.quote(d)} && go list -e -deps -test ./... > /dev/null && "
        f"(go test {WARM_OPTIONS}{' -tags=' + ','.join(tags) if tags else ''} ./... "
        "> /dev/null 2>&1 || true))"
        for d in modules
        if d not in facts.added  # the base has no such directory yet
    ]
    return InstallRecipe(
        language=LANGUAGE_NAME,
        dependency_files=files,
        env_commands=(
            *((_download_command(modules),) if modules else ()),
            # the toolchain image's build cache holds std for its own go, cgo off: a fetched
            # toolchain or cgo compiles it here once, not in every test build
            *(("cd / && (go build std || true)",) if fetch or facts.cgo else ()),
        ),
        install_commands=tuple(listing),
        test_command=test_command,
        test_runner=RUNNER,
        python=None,
        base_image=images.get(version) if version else None,
        system_packages=("gcc", "libc6-dev") if facts.cgo else (),
        environment=tuple(sorted(environment.items())),
        sources=tuple(sources),
        notes=tuple(facts.problems[:5]),
    )
