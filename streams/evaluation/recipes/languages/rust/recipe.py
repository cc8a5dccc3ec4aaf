"""A Cargo repository's recipes: which rustc image, how its crates are fetched, how it tests.

**Which rustc.** The images are Debian's rustc per suite (``toolchain``). The tested packages
(the root package and the ones holding a changed file) ask for a rustc (``cargo.needed_rust``):
the images whose rustc meets it are tried, first the oldest one released within a year before
the PR's date (a compiler its CI could have had: an old crate may not build on a much newer
rustc, and UI tests print what their rustc printed; the crates of that day mostly still built
on a year-old rustc, not on one two years old), else the newest; then the newer ones, then the
older ones. None meets it: no
recipe, and the rejection names what was asked and what the images have.

**Crates.** The env layer gets every ``Cargo.toml`` of the tree, the target files cargo looks
for as empty stubs (it loads each package's targets), the committed ``Cargo.lock`` and the
``.cargo`` config, and fetches every crate into the image's ``CARGO_HOME``: ``cargo fetch
--locked`` where the lockfile is committed; else a lockfile is first resolved as of the PR's
date (``swe-cargo-index``: crates.io's index without the versions published later, read from
each version's ``pubtime``). The instance layer copies that lockfile into the repository and
builds every test target once (``swe-cargo-test --no-run``): a test run compiles only what a
patch changed. Tests run offline.

**Tests.** ``swe-cargo-test`` (``runner_program``) runs ``cargo test --tests`` of the packages
that hold the given files, with the features the CI tests with (``features``): every unit and
integration test, not the doc tests. Each doc test is compiled and linked as a program of its
own on every run (a crate with many documented items spends minutes a run on them), and none
can be FAIL_TO_PASS (its name is its line); a test command that runs them (an override without
``--tests``) gets them as ``<package>::doc::<name>`` ids.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Mapping, Sequence
from importlib import resources

from streams.evaluation.recipes.languages import version_key
from streams.evaluation.recipes.languages.rust.cargo import (
    LOCKFILE,
    CargoFacts,
    RustNeed,
)
from streams.evaluation.recipes.languages.rust.toolchain import released
from streams.evaluation.recipes.model import ENV_DIR, InstallRecipe

LANGUAGE_NAME = "Rust"
RUNNER = "cargo-test"
RUNNER_SCRIPT = "swe-cargo-test.py"
INDEX_SCRIPT = "swe-cargo-index.py"
GIT_SCRIPT = "swe-cargo-git.py"
PR_SIDE = "pull-request"  # where the env layer puts the pull request's manifests
TESTS = f"python3 {ENV_DIR}/{RUNNER_SCRIPT}"
TARGETS = "--tests"  # every unit and integration test target; doc tests are left out
ENVIRONMENT = (
    ("RUST_BACKTRACE", "0"),  # a panic's message without a backtrace that differs per run
    ("CARGO_TERM_COLOR", "never"),
)


def rust_versions(
    need: RustNeed, images: Mapping[str, str], created_at: dt.datetime | None
) -> list[str]:
    """The rustc images to try, best first (see the module's docstring)."""
    ordered = sorted(images, key=version_key)
    able = [
        v for v in ordered if need.version is None or version_key(v) >= version_key(need.version)
    ]
    if not able:
        return []
    if created_at is None:
        return able
    # the oldest rustc released within a year before the PR (the compilers its CI had, whose
    # releases the crates of that day still built on), else the newest
    since = created_at.date() - dt.timedelta(days=365)
    first = next((v for v in able if released(v) >= since), able[-1])
    newer = [v for v in able if version_key(v) > version_key(first)]
    older = [v for v in reversed(able) if version_key(v) < version_key(first)]
    return [first, *newer, *older]


def _script(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


def runner_program() -> bytes:
    """The runner of cargo test per package (``RUNNER_SCRIPT``)."""
    return _script("swe_cargo_test.py")


def _utc(created_at: dt.datetime) -> str:
    moment = created_at if created_at.tzinfo else created_at.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fetch_command(facts: CargoFacts, created_at: dt.datetime | None) -> str:
    """The env layer's step that fetches every crate the workspace locks (a git source that
    cannot be reached left empty: ``swe-cargo-git``)."""
    steps = [f"cd {ENV_DIR}"]
    if facts.lockfile is None:
        resolve = "cargo generate-lockfile"
        if created_at is not None:
            resolve = f"python3 {INDEX_SCRIPT} --before {_utc(created_at)} -- {resolve}"
        steps.append(f"python3 {GIT_SCRIPT} -- {resolve}")
        steps.append("cargo fetch --locked")
    else:
        steps.append(f"python3 {GIT_SCRIPT} -- cargo fetch --locked")
    return " && ".join(steps)


def pull_request_fetch_command(created_at: dt.datetime | None) -> str:
    """The env layer's step that fetches what the pull request's manifests add (a crate its
    tests need): its lockfile, else the base's, brought up to its manifests as of its date
    (``cargo update --workspace`` keeps every other locked version). A failure leaves the
    image as the base's recipe makes it: the runs then say what they miss."""
    update = "cargo update --workspace"
    if created_at is not None:
        update = f"python3 ../{INDEX_SCRIPT} --before {_utc(created_at)} -- {update}"
    return (
        f"cd {ENV_DIR}/{PR_SIDE} && {{ [ -f {LOCKFILE} ] || cp ../{LOCKFILE} {LOCKFILE}; }} && "
        f"python3 ../{GIT_SCRIPT} -- {update} && cargo fetch || "
        "echo 'swe-stream: not every crate of the pull request manifests was fetched' >&2"
    )


def _dependency_files(facts: CargoFacts, prefix: str = "") -> dict[str, bytes]:
    """The files cargo reads to fetch ``facts``'s crates: manifests, target stubs, configs
    and the committed lockfile, under ``prefix``."""
    files: dict[str, bytes] = dict(facts.manifests)
    for package in facts.packages.values():
        for stub in package.stubs:
            files.setdefault(stub, b"")
    files.update(facts.configs)
    if facts.lockfile is not None:
        files[LOCKFILE] = facts.lockfile
    return {f"{prefix}{path}": data for path, data in files.items()}


def rust_recipe(
    facts: CargoFacts,
    version: str,
    images: Mapping[str, str],
    changed_files: Sequence[str],
    features: Sequence[str],
    created_at: dt.datetime | None,
    system_packages: Sequence[str] = (),
    pull_request: CargoFacts | None = None,
) -> InstallRecipe:
    """The recipe of ``facts`` on the image of rustc ``version`` (``pull_request``: the
    facts of the tree the PR leaves, when it changes a manifest or the lockfile)."""
    files = _dependency_files(facts)
    files[RUNNER_SCRIPT] = runner_program()
    files[GIT_SCRIPT] = _script("swe_cargo_git.py")
    env_commands = [fetch_command(facts, created_at)]
    if facts.lockfile is None or pull_request is not None:
        files[INDEX_SCRIPT] = _script("swe_cargo_index.py")
    if pull_request is not None:
        files.update(_dependency_files(pull_request, f"{PR_SIDE}/"))
        env_commands.append(pull_request_fetch_command(created_at))
    options = " ".join(shlex.quote(o) for o in features)
    test_command = f"{TESTS} {TARGETS} {options}".strip()
    touched = [p for p in changed_files if p.endswith((".rs", "Cargo.toml"))]
    warm = " ".join([f"{TESTS} --no-run {TARGETS}", options, *(shlex.quote(p) for p in touched)])
    install = [
        # the lockfile resolved in the env layer, where the repository commits none
        f"[ -f {LOCKFILE} ] || cp {ENV_DIR}/{LOCKFILE} {LOCKFILE}",
        # every test target compiled once into the image (a target that does not build at
        # the base is the tests' business, not the image's)
        f"{warm.strip()} > /dev/null 2>&1 || true",
    ]
    sources = ["Cargo.toml", f"rust:{version}"]
    if facts.lockfile is not None:
        sources.append(LOCKFILE)
    else:
        sources.append(f"lock:as-of:{_utc(created_at)}" if created_at else "lock:latest")
    if features:
        sources.append(f"features:{' '.join(features)}")
    if pull_request is not None:
        sources.append("crates:pull-request")
    return InstallRecipe(
        language=LANGUAGE_NAME,
        dependency_files=files,
        env_commands=tuple(env_commands),
        install_commands=tuple(install),
        test_command=test_command,
        test_runner=RUNNER,
        python=None,
        base_image=images.get(version),
        system_packages=tuple(system_packages),
        environment=ENVIRONMENT,
        sources=tuple(sources),
        notes=tuple(facts.problems[:5]),
    )
