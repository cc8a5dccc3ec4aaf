"""A Maven project's recipe: which JDK image, what the env and instance layers resolve, how
the tests run.

The JDK: the newest Java level the reactor's POMs name (``release``/``source``/``target``,
test levels included, and the lowest JDK a toolchains plugin accepts), else the lowest the
CI's ``setup-java`` installs; the oldest image whose JDK compiles it is tried first (a level
below 11 is compiled by JDK 11: Debian has no 8), then the newer ones. Nothing known: JDK 17
first, then the others.

The env layer holds every POM of the reactor and ``.mvn/``'s configuration, and resolves
what they need into the image's local repository (``dependency:go-offline``, best effort: a
module's siblings are not in any repository yet), reading the host's package cache first and
keeping there what it downloaded (``swe-mvn-cache``: the next build of any repository takes
those artifacts from the cache, not the network). The instance layer compiles the main and
test sources of every module and lets Surefire resolve its test framework's provider,
running no test; the tests then run offline (``mvn -o``) through ``swe-mvn-test``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from importlib import resources

from streams.evaluation.recipes.languages.java.pom import MavenFacts
from streams.evaluation.recipes.languages.java.swe_mvn_test import SKIP_CHECKS, TEST_OPTIONS
from streams.evaluation.recipes.languages.java.toolchain import MAVEN_REPOSITORY
from streams.evaluation.recipes.model import ENV_DIR, InstallRecipe, TreeFiles

LANGUAGE_NAME = "Java"
RUNNER = "surefire"
RUNNER_SCRIPT = "swe-mvn-test.py"
PARENT_SCRIPT = "swe-mvn-parent.py"
CACHE_SCRIPT = "swe-mvn-cache.py"  # the host's package cache as Maven's first repository
USE_CACHE = f"python3 {ENV_DIR}/{CACHE_SCRIPT} use"
# best effort: a cache that cannot be written costs the next build its downloads, nothing more
KEEP_IN_CACHE = f"(python3 {ENV_DIR}/{CACHE_SCRIPT} publish {MAVEN_REPOSITORY} || true)"
PR_SIDE = "pull-request"  # where the env layer puts the POMs the pull request leaves
TESTS = f"python3 {ENV_DIR}/{RUNNER_SCRIPT}"
OLDEST_JDK = 11  # Debian's oldest: compiles the 7 and 8 levels (``--release 8``)
DEFAULT_JDK = "17"  # nothing says which: the JDK most builds of the last years accept
TEST_SOURCES = "src/test/java/"


def warm_up_classes(facts: MavenFacts, tree: TreeFiles) -> list[str]:
    """One test class per module with tests (its smallest ``*Test.java``), for the instance
    layer's run: Surefire resolves its test framework's provider only for a run with a test
    to run, and the tests run offline."""
    smallest: dict[str, tuple[int, str]] = {}
    for name in tree.names:
        if not name.endswith("Test.java") or TEST_SOURCES not in name:
            continue
        module = name[: name.index(TEST_SOURCES)].rstrip("/") or "."
        if module not in facts.modules:
            continue
        size = tree.size(name) or 0
        simple = name.rsplit("/", 1)[-1].removesuffix(".java")
        if module not in smallest or (size, simple) < smallest[module]:
            smallest[module] = (size, simple)
    return sorted({simple for _, simple in smallest.values()})


def needed_java(facts: MavenFacts, ci_versions: Sequence[int]) -> tuple[int | None, list[str]]:
    """The Java level the build needs and why (None: nothing says)."""
    levels = {
        **facts.java_levels(),
        **{f"{k} toolchain": v for k, v in facts.toolchain_jdks().items()},
    }
    if levels:
        where, level = max(levels.items(), key=lambda item: item[1])
        return level, [f"{where}: {level}"]
    if ci_versions:
        return min(ci_versions), [f"CI setup-java: {', '.join(map(str, ci_versions))}"]
    return None, []


def java_versions(need: int | None, images: Mapping[str, str]) -> list[str]:
    """The JDK images to try, best first: the oldest that compiles level ``need``, then the
    newer ones; ``need`` unknown: ``DEFAULT_JDK`` first, then the newer, then the older ones."""
    ordered = sorted(images, key=int)
    if need is None:
        first = DEFAULT_JDK if DEFAULT_JDK in images else (ordered[-1] if ordered else None)
        if first is None:
            return []
        newer = [v for v in ordered if int(v) > int(first)]
        older = [v for v in reversed(ordered) if int(v) < int(first)]
        return [first, *newer, *older]
    wanted = max(need, OLDEST_JDK)
    return [v for v in ordered if int(v) >= wanted]


def runner_program(name: str = "swe_mvn_test.py") -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


def _go_offline(directory: str, checks: str, log: str) -> str:
    # best effort: a module's siblings are not in any repository (the instance layer builds
    # them), and a plugin resolved later is fetched there
    return (
        f"cd {directory} && (mvn -B -q -fae {checks} dependency:go-offline > /tmp/{log}.log "
        f"2>&1 || tail -n 30 /tmp/{log}.log)"
    )


def java_recipe(
    facts: MavenFacts,
    version: str,
    images: Mapping[str, str],
    need: int | None,
    why: Sequence[str],
    warm_up: Sequence[str] = (),
    pull_request: MavenFacts | None = None,
) -> InstallRecipe:
    """The recipe of ``facts`` on the image of JDK ``version`` (``pull_request``: the
    reactor the PR leaves, when it changes a POM: what it adds is resolved too)."""
    files: dict[str, bytes] = {**facts.poms, **facts.config}
    files[RUNNER_SCRIPT] = runner_program()
    files[CACHE_SCRIPT] = runner_program("swe_mvn_cache.py")
    checks = " ".join(SKIP_CHECKS)
    stand_ins: tuple[str, ...] = ()
    parents = facts.parents_outside()
    pull_request_steps: tuple[str, ...] = ()
    if pull_request is not None:
        files.update(
            {f"{PR_SIDE}/{p}": d for p, d in {**pull_request.poms, **pull_request.config}.items()}
        )
        parents += [p for p in pull_request.parents_outside() if p not in parents]
        pull_request_steps = (_go_offline(f"{ENV_DIR}/{PR_SIDE}", checks, "go-offline-pr"),)
    if parents:
        # a parent no reachable repository serves (a snapshot repository's snapshot, a
        # release the registry here lacks): a release of it stands in for it
        files[PARENT_SCRIPT] = runner_program("swe_mvn_parent.py")
        stand_ins = (
            f"cd {ENV_DIR} && python3 {PARENT_SCRIPT} {MAVEN_REPOSITORY} "
            f"{' '.join(shlex.quote(p) for p in parents)}"
            " || true",
        )
    env_commands = (
        USE_CACHE,
        *stand_ins,
        _go_offline(ENV_DIR, checks, "go-offline"),
        *pull_request_steps,
        KEEP_IN_CACHE,
    )
    # every module's main and test sources compiled, Surefire's provider resolved by one
    # test class of each module (none: no test runs, the sources are still compiled)
    selection = ",".join(warm_up) or "SweStreamWarmUpRunsNoTest"
    install = (
        f"mvn -B -fae {checks} {' '.join(TEST_OPTIONS)} -Dtest={selection} test "
        "> /tmp/swe-mvn-warm-up.log 2>&1 || tail -n 60 /tmp/swe-mvn-warm-up.log",
        KEEP_IN_CACHE,  # the test framework's provider, resolved by the warm-up
    )
    sources = ["pom.xml", f"java:{version}"]
    notes = list(facts.problems[:5])
    if pull_request is not None:
        sources.append("poms:pull-request")
    snapshots = [p for p in parents if p.endswith("-SNAPSHOT")]
    if snapshots:
        notes.append(f"snapshot parents stood in for by their releases: {', '.join(snapshots)}")
    if need is not None:
        sources.append(f"java-level:{need}")
        if need < int(version):
            notes.append(f"JDK {version} compiles the Java {need} sources ({'; '.join(why)})")
    return InstallRecipe(
        language=LANGUAGE_NAME,
        dependency_files=files,
        env_commands=env_commands,
        install_commands=install,
        test_command=TESTS,
        test_runner=RUNNER,
        python=None,
        base_image=images.get(version),
        sources=tuple(sources),
        notes=tuple(notes),
    )
