"""Rust's recipes from trees the tests make (git archives of real git repositories): which rustc
image, what the env layer fetches with, features as the CI tests with them, test ids and check
commands; libtest's output as real cargos printed it (``tests/data/rust``); swe-cargo-test with
the host's real cargo; and swe-cargo-index serving a recorded crates.io index as of a day to
the host's cargo."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import check_command, file_of
from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import language_named, language_of
from streams.evaluation.recipes.languages.rust import swe_cargo_index
from streams.evaluation.recipes.languages.rust.recipe import (
    GIT_SCRIPT,
    INDEX_SCRIPT,
    RUNNER_SCRIPT,
)
from streams.evaluation.recipes.languages.rust.runners.libtest import (
    build_failures,
    parse_cargo_test,
)
from tests.streams.evaluation.recipes.test_go_recipe import tree_of

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "rust"
RUST_IMAGES = {
    "1.63": "swe-stream/rust:bookworm",
    "1.85": "swe-stream/rust:trixie",
    "1.97": "swe-stream/rust:forky",
}
LIB = "pub fn double(x: i32) -> i32 {\n    x * 2\n}\n"


def manifest(name: str, extra: str = "", edition: str = "2021") -> str:
    return f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "{edition}"\n{extra}'


def recipes(tmp_path: Path, files: dict[str, str], **inputs: object) -> list:
    tree = tree_of(tmp_path, files)
    return infer_recipes(tree, repo="o/r", images={"rust": RUST_IMAGES}, **inputs)[0]  # type: ignore[arg-type]


def test_a_crate_is_rust_and_its_rustc_is_the_one_of_its_prs_day(tmp_path: Path) -> None:
    files = {"Cargo.toml": manifest("units", 'rust-version = "1.56"\n'), "src/lib.rs": LIB}
    tree = tree_of(tmp_path, {**files, "pyproject.toml": "[project]\nname='x'\n"})
    language = language_of(tree)
    assert language is not None and language.name == "Rust"
    on = {
        dt.datetime(2023, 3, 1, tzinfo=dt.UTC): ["1.63", "1.85", "1.97"],  # 1.63 was out then
        dt.datetime(2024, 8, 1, tzinfo=dt.UTC): ["1.85", "1.97", "1.63"],  # 1.63: 2 years old
        dt.datetime(2025, 6, 1, tzinfo=dt.UTC): ["1.85", "1.97", "1.63"],
        dt.datetime(2021, 1, 1, tzinfo=dt.UTC): ["1.63", "1.85", "1.97"],  # none yet: oldest
        dt.datetime(2027, 9, 1, tzinfo=dt.UTC): ["1.97", "1.85", "1.63"],  # none that recent
    }
    for day, expected in on.items():
        found = recipes(tmp_path / day.isoformat(), files, created_at=day)
        assert [language.version_of(r) for r in found] == expected
        assert found[0].base_image == RUST_IMAGES[expected[0]]


def test_an_edition_or_a_rust_version_excludes_older_rustcs(tmp_path: Path) -> None:
    edition = {"Cargo.toml": manifest("e", edition="2024"), "src/lib.rs": LIB}
    found = recipes(tmp_path / "e", edition)
    assert [r.sources[1] for r in found] == ["rust:1.85", "rust:1.97"]
    toolchain = {**edition, "rust-toolchain.toml": '[toolchain]\nchannel = "1.90.0"\n'}
    assert [r.sources[1] for r in recipes(tmp_path / "t", toolchain)] == ["rust:1.97"]


def test_no_rustc_meets_the_rust_version_the_rejection_says_what_was_asked(tmp_path: Path) -> None:
    from streams.evaluation.recipes.infer import infer_for
    from streams.evaluation.recipes.languages import Inputs

    files = {"Cargo.toml": manifest("far", 'rust-version = "1.99"\n'), "src/lib.rs": LIB}
    tree = tree_of(tmp_path, files)
    inputs = Inputs(repo="o/r", images={"rust": RUST_IMAGES})
    found, facts, _ = infer_for(tree, inputs)
    assert found == []
    language = language_named("Rust")
    assert language is not None
    reason, detail = language.no_recipe(facts, inputs)
    assert reason == "no_rustc_for_rust_version"
    assert "rustc 1.99" in detail and "far: rust-version 1.99" in detail
    assert "rustc 1.63, rustc 1.85, rustc 1.97" in detail


def test_a_workspace_without_a_lockfile_is_resolved_as_of_the_prs_day(tmp_path: Path) -> None:
    files = {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n',
        "crates/core/Cargo.toml": manifest("core", '\n[[test]]\nname = "api"\n'),
        "crates/core/src/lib.rs": LIB,
        "crates/core/tests/api.rs": "#[test]\nfn t() {}\n",
        "crates/cli/Cargo.toml": manifest("cli", '\n[dependencies]\ncore = { path = "../core" }\n'),
        "crates/cli/src/main.rs": "fn main() {}\n",
        "README.md": "x\n",
    }
    day = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    recipe = recipes(tmp_path, files, created_at=day, changed_files=["crates/cli/src/main.rs"])[0]
    stubs = {"crates/core/src/lib.rs", "crates/core/tests/api.rs", "crates/cli/src/main.rs"}
    assert stubs <= set(recipe.dependency_files)
    assert all(recipe.dependency_files[s] == b"" for s in stubs)  # empty: the tree comes later
    assert {"Cargo.toml", "crates/core/Cargo.toml", "crates/cli/Cargo.toml"} <= set(
        recipe.dependency_files
    )
    assert {RUNNER_SCRIPT, INDEX_SCRIPT, GIT_SCRIPT} <= set(recipe.dependency_files)
    assert recipe.env_commands == (
        f"cd /opt/swe-env && python3 {GIT_SCRIPT} -- python3 {INDEX_SCRIPT} --before "
        "2024-05-01T12:30:00Z -- cargo generate-lockfile && cargo fetch --locked",
    )
    assert "lock:as-of:2024-05-01T12:30:00Z" in recipe.sources
    assert (
        recipe.install_commands[0] == "[ -f Cargo.lock ] || cp /opt/swe-env/Cargo.lock Cargo.lock"
    )
    assert "crates/cli/src/main.rs" in recipe.install_commands[1]  # its package is built first


def test_a_committed_lockfile_is_fetched_locked(tmp_path: Path) -> None:
    files = {
        "Cargo.toml": manifest("units"),
        "src/lib.rs": LIB,
        "Cargo.lock": 'version = 4\n\n[[package]]\nname = "units"\nversion = "0.1.0"\n',
    }
    found = recipes(tmp_path, files)
    assert [r.sources[1] for r in found] == ["rust:1.85", "rust:1.97"]  # lockfile v4: 1.78+
    assert found[0].env_commands == (
        f"cd /opt/swe-env && python3 {GIT_SCRIPT} -- cargo fetch --locked",
    )
    assert INDEX_SCRIPT not in found[0].dependency_files


def workflow(*runs: str) -> str:
    steps = "".join(f"      - run: {run}\n" for run in runs)
    return f"on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        (("cargo test", "cargo test --all-features"), "--all-features"),
        (
            ("cargo test", "cargo test --features serde,std", "cargo test -F std"),
            "--features serde,std",
        ),
        (("cargo +nightly test --all-features", "cargo test"), ""),
        (
            ("cargo test --no-default-features --features alloc",),
            "--no-default-features --features alloc",
        ),
        # cargo hack's powerset: every declared feature but the excluded ones, in one run
        (
            ("cargo hack test --feature-powerset --exclude-features max_off,max_on",),
            "--features kv,serde,std",
        ),
    ],
)
def test_features_as_the_ci_tests_with_them(
    tmp_path: Path, runs: tuple[str, ...], expected: str
) -> None:
    features = (
        "\n[features]\ndefault = []\nmax_off = []\nmax_on = []\nstd = []\nkv = []\nserde = []\n"
    )
    files = {
        "Cargo.toml": manifest("units", features),
        "src/lib.rs": LIB,
        ".github/workflows/ci.yml": workflow(*runs),
    }
    found = recipes(tmp_path, files)
    recipe = found[0]
    assert recipe.test_command == f"python3 /opt/swe-env/{RUNNER_SCRIPT} --tests {expected}".strip()
    if expected:  # second, the first rustc without the features (a dependency may not build)
        assert found[1].test_command == f"python3 /opt/swe-env/{RUNNER_SCRIPT} --tests"
        assert found[1].base_image == recipe.base_image and len(found) == 4


def test_the_libraries_the_ci_installs_are_debian_packages_of_the_env(tmp_path: Path) -> None:
    files = {
        "Cargo.toml": manifest("units", '\n[dependencies]\nopenssl-sys = "0.9"\n'),
        "src/lib.rs": LIB,
        ".github/workflows/ci.yml": workflow(
            "sudo apt-get update && sudo apt-get install -y libssl-dev valgrind cmake",
            "cargo test",
        ),
    }
    assert recipes(tmp_path, files)[0].system_packages == ("cmake", "libssl-dev")


def test_ids_name_package_and_target_and_run_alone() -> None:
    base = "python3 /opt/swe-env/swe-cargo-test.py --all-features"
    assert check_command(base, "cargo-test", "ws-core::api::nested::deeper") == (
        f"{base} -p ws-core --test api -- --exact nested::deeper"
    )
    assert check_command(base, "cargo-test", "ws-core::lib::tests::wrong") == (
        f"{base} -p ws-core --lib -- --exact tests::wrong"
    )
    assert check_command(base, "cargo-test", "ws-cli::bin/ws-cli::tests::answer") == (
        f"{base} -p ws-cli --bin ws-cli -- --exact tests::answer"
    )
    assert file_of("ws-core::api::nested::deeper", "Rust") == "ws-core"
    assert file_of("tests/test_x.py::TestA::test_b", "Python") == "tests/test_x.py"
    language = language_named("Rust")
    assert language is not None
    assert not language.may_fail_to_pass("ws-core::doc::src/lib.rs - double (line 3)")
    assert language.may_fail_to_pass("ws-core::api::from_outside")


def test_the_fingerprint_reads_manifests_lockfile_and_toolchain() -> None:
    language = language_named("Rust")
    assert language is not None
    names = ["Cargo.toml", "Cargo.lock", "a/Cargo.toml", "target/x/Cargo.toml", "src/lib.rs",
             "rust-toolchain.toml", ".cargo/config.toml"]  # fmt: skip
    assert language.fingerprint_files(names) == [
        ".cargo/config.toml", "Cargo.lock", "Cargo.toml", "a/Cargo.toml", "rust-toolchain.toml",
    ]  # fmt: skip


EXPECTED_WORKSPACE = {
    "ws-core::lib::tests::doubles": "passed",
    "ws-core::lib::tests::wrong": "failed",
    "ws-core::lib::tests::slow": "skipped",
    "ws-core::api::from_outside": "passed",
    "ws-core::api::nested::deeper": "passed",
    "ws-cli::bin/ws-cli::tests::answer": "passed",
}


@pytest.mark.parametrize(("cargo", "doc"), [("1.65", "src/lib.rs"), ("1.85", "core/src/lib.rs")])
def test_a_recorded_workspace_run_with_a_target_that_did_not_compile(cargo: str, doc: str) -> None:
    """swe-cargo-test in the rust images (bookworm's cargo 1.65, trixie's 1.85): a two-member
    workspace, one integration test that does not compile; the rest ran."""
    output = (DATA / f"workspace-cargo{cargo}.txt").read_text()
    assert parse_cargo_test(output) == {
        **EXPECTED_WORKSPACE,
        f"ws-core::doc::{doc} - double (line 3)": "passed",
    }
    failures = build_failures(output)
    assert list(failures) == ["ws-core::broken"]
    assert "cannot find function `triple`" in failures["ws-core::broken"]


def test_a_plain_cargo_test_output_is_read_without_swe_cargo_test() -> None:
    output = (DATA / "workspace-cargo1.85.txt").read_text()
    plain = "\n".join(
        line for line in output.splitlines() if not line.startswith("swe-cargo-test:")
    )
    statuses = parse_cargo_test(plain)
    # the binary's name stands for package and target
    assert statuses["api::api::from_outside"] == "passed"
    assert statuses["wscore::lib::tests::wrong"] == "failed"
    said = 'error: could not compile `ws-core` (test "broken") due to 1 previous error'
    assert build_failures(plain) == {"ws-core::broken": said}


def test_a_feature_list_from_the_jobs_matrix_is_every_value_it_gives(tmp_path: Path) -> None:
    ci = (
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n"
        "      matrix:\n        include:\n          - rust: 1.61.0\n            features:\n"
        "          - rust: stable\n            features: serde\n"
        "          - rust: stable\n            features: rayon\n"
        "    steps:\n"
        '      - run: cargo test --verbose --features "${{ matrix.features }}"\n'
    )
    files = {"Cargo.toml": manifest("m"), "src/lib.rs": LIB, ".github/workflows/ci.yml": ci}
    recipe = recipes(tmp_path, files)[0]
    assert recipe.test_command.endswith("--tests --features rayon,serde")


def test_swe_cargo_test_runs_the_packages_of_paths_and_one_test(tmp_path: Path) -> None:
    """The runner script with the host's cargo, offline: paths to packages, a package name,
    a check command of one id; a test target that does not compile leaves the rest to run."""
    cargo = host_cargo()
    assert cargo is not None, "the host's cargo (the machines have one) runs the script here"
    root = tmp_path / "ws"
    shutil.copytree(DATA / "workspace", root)
    script = (
        Path(__file__).parents[4] / "streams/evaluation/recipes/languages/rust/swe_cargo_test.py"
    )

    def run(*args: str) -> tuple[int, dict[str, TestStatus], str]:
        done = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=root, capture_output=True, text=True, check=False,
            env={"PATH": f"{Path(cargo).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
                 "CARGO_HOME": str(tmp_path / "cargo-home"), "RUSTUP_HOME": _rustup_home(),
                 "CARGO_TARGET_DIR": str(tmp_path / "target")},
        )  # fmt: skip
        return done.returncode, parse_cargo_test(done.stdout), done.stdout

    code, statuses, output = run("core/tests/api.rs", "ws-cli")
    assert code != 0  # tests::wrong fails
    assert EXPECTED_WORKSPACE.items() <= statuses.items()
    assert list(build_failures(output)) == ["ws-core::broken"]
    code, statuses, _ = run("-p", "ws-core", "--test", "api", "--", "--exact", "nested::deeper")
    assert code == 0 and statuses == {"ws-core::api::nested::deeper": "passed"}
    # a test file a test patch will add (not there yet): the package whose directory holds it
    code, statuses, _ = run("--tests", "core/tests/added_later.rs")
    assert {k for k in EXPECTED_WORKSPACE if k.startswith("ws-core::")} == set(statuses)


def host_cargo() -> str | None:
    """The host's cargo (rustup's, on the PATH or in ~/.cargo/bin where a shell did not add it)."""
    found = shutil.which("cargo")
    rustup = Path.home() / ".cargo" / "bin" / "cargo"
    return found or (str(rustup) if rustup.exists() else None)


def _rustup_home() -> str:
    home = Path.home() / ".rustup"
    return str(home) if home.exists() else ""


class _Recorded(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorded_index() -> Iterator[str]:
    """crates.io's index files as recorded (``tests/data/rust/index``), served on 127.0.0.1."""
    handler = partial(_Recorded, directory=str(DATA / "index"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_swe_cargo_index_resolves_a_lockfile_as_of_a_day(
    tmp_path: Path, recorded_index: str
) -> None:
    cargo = host_cargo()
    assert cargo is not None
    crate = tmp_path / "c"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(manifest("c", '\n[dependencies]\nitoa = "1"\n'))
    (crate / "src/lib.rs").write_text(LIB)
    script = Path(swe_cargo_index.__file__)
    done = subprocess.run(
        [sys.executable, str(script), "--before", "2022-09-01T00:00:00Z",
         "--upstream", recorded_index, "--", "cargo", "generate-lockfile"],
        cwd=crate, capture_output=True, text=True, check=False,
        env={"PATH": f"{Path(cargo).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
             "CARGO_HOME": str(tmp_path / "cargo-home"), "RUSTUP_HOME": _rustup_home()},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lock = (crate / "Cargo.lock").read_text()
    # 1.0.3 (2022-08-03) was the newest itoa then; the lockfile names crates.io itself
    assert (
        'name = "itoa"\nversion = "1.0.3"\nsource = "registry+https://github.com/rust-lang/crates.io-index"'
        in lock
    )


def test_yanked_versions_are_served_as_not_yanked_on_the_second_try() -> None:
    lines = (DATA / "index-futures-util.jsonl").read_bytes()
    before = swe_cargo_index.filtered(lines, "2021-11-28T01:56:24Z")
    kept = [json.loads(line) for line in before.splitlines()]
    assert kept and all(v["pubtime"] <= "2021-11-28T01:56:24Z" for v in kept)
    assert any(v["yanked"] for v in kept)
    again = [
        json.loads(x)
        for x in swe_cargo_index.filtered(lines, "2021-11-28T01:56:24Z", True).splitlines()
    ]
    assert [v["vers"] for v in again] == [v["vers"] for v in kept]
    assert not any(v["yanked"] for v in again)


def test_versions_needing_a_newer_rustc_than_the_images_are_left_out() -> None:
    recorded = (DATA / "index" / "it" / "oa" / "itoa").read_bytes()
    served = [
        json.loads(x)
        for x in swe_cargo_index.filtered(
            recorded, "2026-12-01T00:00:00Z", rustc=(1, 63, 0)
        ).splitlines()
    ]
    assert served and all(
        swe_cargo_index.version_tuple(v.get("rust_version") or "0") <= (1, 63) for v in served
    )
    newest = max(swe_cargo_index.version_tuple(v["vers"]) for v in served)
    everything = [json.loads(x) for x in recorded.splitlines()]
    assert newest < max(swe_cargo_index.version_tuple(v["vers"]) for v in everything)


def test_the_recipe_memory_leaves_the_rustc_to_each_prs_inference(tmp_path: Path) -> None:
    """One PR's rustc (its day's) is no guess for the next: the memory keeps none."""
    from streams.evaluation.recipes.memory import remembered_entry

    files = {"Cargo.toml": manifest("units"), "src/lib.rs": LIB}
    recipe = recipes(tmp_path, files, created_at=dt.datetime(2023, 3, 1, tzinfo=dt.UTC))[0]
    assert recipe.sources[1] == "rust:1.63"
    entry = remembered_entry(
        recipe, tree_of(tmp_path / "again", files), repo="o/r", instance_id="o__r-1",
        base_commit="c" * 40, tests=2, pipeline_version=1,
    )  # fmt: skip
    assert entry.model_extra == {"rust": None}  # named, its version picked per PR
