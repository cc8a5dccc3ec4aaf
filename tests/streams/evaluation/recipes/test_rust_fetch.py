"""What a Rust recipe's env layer fetches beyond the base: the crates a pull request's
manifests add, and git sources that cannot be reached (swe-cargo-git with the host's real
cargo, a git host that refuses connections on 127.0.0.1); and the package a test file the
pull request adds is run in at the base."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.languages.rust import swe_cargo_git
from streams.evaluation.recipes.languages.rust.recipe import GIT_SCRIPT, INDEX_SCRIPT, PR_SIDE
from tests.streams.evaluation.recipes.test_rust_recipe import (
    LIB,
    RUST_IMAGES,
    _rustup_home,
    host_cargo,
    manifest,
)

pytestmark = pytest.mark.unit

SCRIPT = Path(swe_cargo_git.__file__)


def git(root: Path, *args: str) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def committed(root: Path, files: dict[str, str]) -> str:
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c")
    return git(root, "rev-parse", "HEAD").strip()


def test_a_pr_adding_a_crate_has_its_manifests_fetched_in_the_env_layer(tmp_path: Path) -> None:
    from streams.evaluation.recipes.model import TreeFiles

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    base = committed(root, {"Cargo.toml": manifest("units"), "src/lib.rs": LIB})
    fix = committed(root, {"Cargo.toml": manifest("units", '\n[dependencies]\nitoa = "1"\n')})
    tests = committed(root, {"tests/format.rs": "#[test]\nfn t() {}\n"})
    archive = subprocess.run(["git", "-C", str(root), "archive", base], capture_output=True)
    tree = TreeFiles(archive.stdout)
    diffs = (git(root, "diff", fix, tests), git(root, "diff", base, fix))  # tests, then fix
    day = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    found, _ = infer_recipes(
        tree, repo="o/r", images={"rust": RUST_IMAGES}, created_at=day, diffs=diffs
    )
    recipe = found[0]
    assert recipe.dependency_files[f"{PR_SIDE}/Cargo.toml"] == (
        manifest("units", '\n[dependencies]\nitoa = "1"\n').encode()
    )
    assert recipe.dependency_files["Cargo.toml"] == manifest("units").encode()  # the base's
    assert recipe.dependency_files[f"{PR_SIDE}/src/lib.rs"] == b""  # a stub of its target
    assert INDEX_SCRIPT in recipe.dependency_files and "crates:pull-request" in recipe.sources
    fetch = recipe.env_commands[1]
    assert fetch.startswith(f"cd /opt/swe-env/{PR_SIDE} && ")
    assert "--before 2024-05-01T00:00:00Z -- cargo update --workspace && cargo fetch" in fetch
    # a PR that changes no manifest: the base's recipe alone
    sources_only = (git(root, "diff", fix, tests),)
    plain, _ = infer_recipes(
        tree, repo="o/r", images={"rust": RUST_IMAGES}, created_at=day, diffs=sources_only
    )
    assert len(plain[0].env_commands) == 1
    assert not any(p.startswith(f"{PR_SIDE}/") for p in plain[0].dependency_files)


def test_a_test_file_the_pr_adds_is_run_through_its_package(tmp_path: Path) -> None:
    from tests.streams.evaluation.recipes.test_go_recipe import tree_of

    files = {
        "Cargo.toml": manifest("top", '\n[workspace]\nmembers = ["crates/*"]\n'),
        "src/lib.rs": LIB,
        "crates/inner/Cargo.toml": manifest("inner"),
        "crates/inner/src/lib.rs": LIB,
    }
    rust = language_named("Rust")
    assert rust is not None
    tree = tree_of(tmp_path, files)
    new_files = ["tests/regression/issue1.rs", "crates/inner/tests/new.rs", "tests/other.rs"]
    assert rust.tests_for(tree, new_files) == [".", "crates/inner"]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fuzz_workspace(root: Path, url: str) -> None:
    write(
        root,
        {
            "Cargo.toml": '[workspace]\nmembers = ["a", "fuzz"]\nresolver = "2"\n',
            "a/Cargo.toml": manifest("a"),
            "a/src/lib.rs": LIB + "#[cfg(test)]\nmod t {\n    #[test]\n    fn doubles() {\n"
            "        assert_eq!(super::double(2), 4);\n    }\n}\n",
            "fuzz/Cargo.toml": manifest(
                "fuzz", f'\n[dependencies]\nfuzzer = {{ git = "{url}", branch = "main" }}\n'
            ),
            "fuzz/src/lib.rs": "",
        },
    )


def run(root: Path, home: Path, *command: str) -> subprocess.CompletedProcess[str]:
    cargo = host_cargo()
    assert cargo is not None, "the host's cargo (the machines have one) runs the script here"
    environment = {
        "PATH": f"{Path(cargo).parent}:/usr/bin:/bin",
        "HOME": str(home.parent),
        "CARGO_HOME": str(home),
        "RUSTUP_HOME": _rustup_home(),
        "CARGO_TARGET_DIR": str(home.parent / "target"),
    }
    return subprocess.run(
        list(command), cwd=root, capture_output=True, text=True, check=False, env=environment
    )


@pytest.mark.parametrize("locked", [False, True])
def test_an_unreachable_git_source_becomes_an_empty_package(tmp_path: Path, locked: bool) -> None:
    url = f"https://127.0.0.1:{closed_port()}/fuzzer.git"
    root, home = tmp_path / "ws", tmp_path / "cargo-home"
    fuzz_workspace(root, url)
    home.mkdir()
    command = ["cargo", "generate-lockfile"]
    if locked:  # a committed lockfile whose git package has dependencies of its own
        (root / "Cargo.lock").write_text(
            'version = 3\n\n[[package]]\nname = "a"\nversion = "0.1.0"\n\n'
            '[[package]]\nname = "fuzz"\nversion = "0.1.0"\ndependencies = [\n "fuzzer",\n]\n\n'
            f'[[package]]\nname = "fuzzer"\nversion = "0.4.7"\nsource = "git+{url}?branch=main#'
            f'{"ab" * 20}"\ndependencies = [\n "cc",\n]\n'
        )
        command = ["cargo", "fetch", "--locked"]
    done = run(root, home, sys.executable, str(SCRIPT), "--", *command)
    assert done.returncode == 0, done.stdout + done.stderr
    version = "0.4.7" if locked else "0.0.0"
    assert f"{url} cannot be reached: fuzzer {version} is an empty package" in done.stdout
    config = (home / "config.toml").read_text()
    assert f'git = "{url}"\nbranch = "main"\nreplace-with = "swe-unreachable-git"' in config
    # what the tests run later: offline, with the image's cargo home
    tested = run(root, home, "cargo", "test", "--offline", "-p", "a")
    assert tested.returncode == 0, tested.stderr
    assert "test t::doubles ... ok" in tested.stdout
    # run again (the pull request's side of the env layer): nothing added twice
    again = run(root, home, sys.executable, str(SCRIPT), "--", "cargo", "fetch")
    assert again.returncode == 0, again.stderr
    assert (home / "config.toml").read_text() == config


def test_lock_sources_and_commands() -> None:
    source = swe_cargo_git.from_lock_source("x", "1.2.3", "git+https://host/o/x.git?rev=abc#abcdef")
    assert source == swe_cargo_git.GitSource("x", "1.2.3", "https://host/o/x.git", ("rev", "abc"))
    assert swe_cargo_git.from_lock_source("y", "1", "registry+https://x") is None
    manifest_text = (
        '[dependencies]\nz = { git = "https://h/z", version = "0.3" }\n'
        '[target.\'cfg(unix)\'.dev-dependencies]\nw = { git = "https://h/w", package = "ww" }\n'
    )
    assert [(s.name, s.version) for s in swe_cargo_git.manifest_sources(manifest_text)] == [
        ("z", "0.3.0"),
        ("ww", "0.0.0"),
    ]
    after = swe_cargo_git.command_after
    assert after(["cargo", "fetch", "--locked"], replaced=False, seeded=False) == [
        "cargo", "fetch", "--locked"
    ]  # fmt: skip
    assert after(["cargo", "fetch", "--locked"], replaced=True, seeded=False) == [
        "cargo", "fetch"
    ]  # fmt: skip
    nested = ["python3", INDEX_SCRIPT, "--", "cargo", "generate-lockfile"]
    assert after(nested, replaced=True, seeded=True)[-3:] == ["cargo", "update", "--workspace"]
    assert GIT_SCRIPT == "swe-cargo-git.py"
