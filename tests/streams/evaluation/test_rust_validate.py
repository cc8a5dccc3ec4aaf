"""Rust end to end: repositories the tests make with git in the set-up styles of real Rust
projects, each with a PR that fixes a bug and adds the tests that show it, through extract and
the validate stage (real Docker, Debian's rustc images, crates from the real crates.io),
validated with three runs; exported as task directories, the harness resolves each with the
gold patch (the other gradings are ``test_go_validate.py``'s: the same harness in every
language).

The styles: a crate with unit tests in ``src/`` (a ``#[cfg(test)]`` module the PR adds a test
to), an integration test and a doc test; a workspace of two members, one depending on the other
and on a crates.io crate (its lockfile resolved as of the PR's day); a test patch that does not
compile without the fix (the target's old tests are PASS_TO_PASS, not FAIL_TO_PASS); a PR whose
fix adds a crates.io crate and whose test patch only adds a test file; a crate
whose ``rust-version`` no Debian rustc meets (rejected, saying what was asked)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet, ValidatedTask
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.validator import Validator
from streams.offline.local_repo import make_pull_request_repo
from streams.offline.world import RUST_BASE, RUST_FIX
from tests.agents.repo_tasks import classified_for
from tests.streams.evaluation import test_go_validate

pytestmark = pytest.mark.docker


def validate_and_grade(
    tmp_path: Path,
    repo: str,
    base: dict[str, str],
    fix: dict[str, str | None],
    docker_client: Any,
    base_image: str,
    rust_images: dict[str, str],
) -> ValidatedTask:
    """Go's end-to-end path (validated, exported, graded by the harness and by the check) with
    the rust images."""
    return test_go_validate.validate_and_grade(
        tmp_path, repo, base, fix, docker_client, base_image, rust_images, "rust"
    )


def test_unit_integration_and_doc_tests(
    tmp_path: Path, docker_client: Any, base_image: str, rust_images: dict[str, str]
) -> None:
    task = validate_and_grade(
        tmp_path, "swe-stream-test/units-rs", RUST_BASE, RUST_FIX, docker_client, base_image,
        rust_images,
    )  # fmt: skip
    assert task.FAIL_TO_PASS == [
        "units::lib::tests::fahrenheit_freezing_point",
        "units::temperature::fahrenheit_boiling_point",
    ]
    # the doc test is not run (each would be compiled on every run)
    assert task.PASS_TO_PASS == [
        "units::lib::tests::freezing_point",
        "units::temperature::boiling_point",
    ]
    assert task.install_config is not None
    assert task.install_config.base_image == rust_images["1.97"]  # a rustc of the PR's day
    assert task.checks[1] == (
        "python3 /opt/swe-env/swe-cargo-test.py --tests -p units --test temperature -- --exact "
        "fahrenheit_boiling_point"
    )
    # the unit test the PR added next to the fix went to the test patch, the fix to the patch
    assert "fn fahrenheit_freezing_point" in task.test_patch
    assert "fahrenheit_freezing_point" not in task.patch and "(f - 32.0)" in task.patch


CORE_TOML = '[package]\nname = "core-lib"\nversion = "0.3.0"\nedition = "2021"\n'
APP_TOML = (
    '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
    'core-lib = { path = "../core" }\nitoa = "1"\n'
)
CORE = (
    '/// The label of a count.\npub fn label(n: u32) -> String {\n    format!("{} items", n)\n}\n'
)
APP = (
    "/// The label of a count, formatted with itoa.\npub fn shown(n: u32) -> String {\n"
    "    let mut buffer = itoa::Buffer::new();\n"
    '    format!("[{}] {}", buffer.format(n), core_lib::label(n))\n}\n'
)
APP_TEST = '#[test]\nfn shows_many() {\n    assert_eq!(app::shown(3), "[3] 3 items");\n}\n'
ONE_TEST = '\n#[test]\nfn shows_one() {\n    assert_eq!(app::shown(1), "[1] 1 item");\n}\n'


def test_a_workspace_of_two_members_with_a_crates_io_dependency(
    tmp_path: Path, docker_client: Any, base_image: str, rust_images: dict[str, str]
) -> None:
    base = {
        "Cargo.toml": '[workspace]\nmembers = ["core", "app"]\nresolver = "2"\n',
        "core/Cargo.toml": CORE_TOML,
        "core/src/lib.rs": CORE,
        "app/Cargo.toml": APP_TOML,
        "app/src/lib.rs": APP,
        "app/tests/shown.rs": APP_TEST,
    }
    fix = {
        "core/src/lib.rs": CORE.replace(
            'format!("{} items", n)',
            'if n == 1 { "1 item".into() } else { format!("{} items", n) }',
        ),
        "app/tests/shown.rs": APP_TEST + ONE_TEST,
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/workspace-rs", base, fix, docker_client, base_image,
        rust_images,
    )  # fmt: skip
    assert task.FAIL_TO_PASS == ["app::shown::shows_one"]
    assert task.PASS_TO_PASS == ["app::shown::shows_many"]
    assert task.install_config is not None
    assert any(s.startswith("lock:as-of:") for s in task.install_config.recipe)


SHAPES = (
    "pub struct Square {\n    pub side: f64,\n}\n\nimpl Square {\n"
    "    pub fn area(&self) -> f64 {\n        self.side * self.side\n    }\n}\n"
)
SHAPES_TEST = (
    "use shapes::Square;\n\n#[test]\nfn area() {\n"
    "    assert_eq!(Square { side: 3.0 }.area(), 9.0);\n}\n"
)
PERIMETER_TEST = (
    "\n#[test]\nfn perimeter() {\n    assert_eq!(Square { side: 3.0 }.perimeter(), 12.0);\n}\n"
)


def test_a_test_patch_that_does_not_compile_without_the_fix(
    tmp_path: Path, docker_client: Any, base_image: str, rust_images: dict[str, str]
) -> None:
    base = {
        "Cargo.toml": '[package]\nname = "shapes"\nversion = "0.1.0"\nedition = "2018"\n',
        "src/lib.rs": SHAPES,
        "tests/square.rs": SHAPES_TEST,
    }
    fix = {
        "src/lib.rs": SHAPES.replace(
            "    }\n}\n",
            "    }\n\n    pub fn perimeter(&self) -> f64 {\n        4.0 * self.side\n    }\n}\n",
        ),
        "tests/square.rs": SHAPES_TEST + PERIMETER_TEST,
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/shapes-rs", base, fix, docker_client, base_image, rust_images
    )
    # `area` is missing from the test patch's run (its target did not compile) and passed at
    # the base: PASS_TO_PASS, not FAIL_TO_PASS
    assert task.FAIL_TO_PASS == ["shapes::square::perimeter"]
    assert task.PASS_TO_PASS == ["shapes::square::area"]
    assert task.validation is not None and task.validation.base is not None
    assert task.validation.base == {"shapes::square::area": "passed"}
    assert "shapes::square::area" not in task.validation.before


LABELS_TOML = '[package]\nname = "labels"\nversion = "0.1.0"\nedition = "2021"\n'
LABELS = 'pub fn label(n: u32) -> String {\n    format!("{} items", n)\n}\n'
PADDED_TEST = '#[test]\nfn padded() {\n    assert_eq!(labels::padded(42), "  42");\n}\n'
LABELS_TEST = '#[test]\nfn many() {\n    assert_eq!(labels::label(3), "3 items");\n}\n'


def test_a_pr_that_adds_a_crate_and_a_test_file(
    tmp_path: Path, docker_client: Any, base_image: str, rust_images: dict[str, str]
) -> None:
    """The fix takes in a crates.io crate its new test needs (fetched in the env layer from
    the PR's manifest; the runs are offline), and the test patch only adds a file: the run at
    the base is of its package, whose old test is PASS_TO_PASS."""
    base = {"Cargo.toml": LABELS_TOML, "src/lib.rs": LABELS, "tests/many.rs": LABELS_TEST}
    fix = {
        "Cargo.toml": LABELS_TOML + '\n[dependencies]\nitoa = "1"\n',
        "src/lib.rs": LABELS
        + "\npub fn padded(n: u32) -> String {\n    let mut buffer = itoa::Buffer::new();\n"
        '    format!("{:>4}", buffer.format(n))\n}\n',
        "tests/padded.rs": PADDED_TEST,
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/labels-rs", base, fix, docker_client, base_image, rust_images
    )
    assert task.FAIL_TO_PASS == ["labels::padded::padded"]
    assert task.PASS_TO_PASS == ["labels::many::many"]
    assert task.install_config is not None
    assert "crates:pull-request" in task.install_config.recipe
    assert task.validation is not None and task.validation.base == {"labels::many::many": "passed"}


def test_a_rust_version_no_debian_rustc_meets_is_rejected_saying_so(
    tmp_path: Path, docker_client: Any, base_image: str, rust_images: dict[str, str]
) -> None:
    toml = '[package]\nname = "far"\nversion = "0.1.0"\nedition = "2021"\nrust-version = "1.99"\n'
    base = {"Cargo.toml": toml, "src/lib.rs": "pub fn one() -> u8 {\n    2\n}\n"}
    fix = {
        "src/lib.rs": "pub fn one() -> u8 {\n    1\n}\n",
        "tests/one.rs": "#[test]\nfn one() {\n    assert_eq!(far::one(), 1);\n}\n",
    }
    pr = make_pull_request_repo(
        tmp_path / "git", repo="swe-stream-test/far-rs", base_files=base, pr_files=fix
    )
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    docker = DockerSettings(base_image=base_image, rust_images=rust_images, cache_level="env")
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=1), 1)

    async def rejected() -> tuple[str | None, str]:
        (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
        assert isinstance(patches, PatchSet)
        outcome = await ValidateStage(validator)(patches)
        return outcome.reason, outcome.detail or ""

    reason, detail = asyncio.run(rejected())
    assert reason == "no_rustc_for_rust_version"
    assert "asked for rustc 1.99 (far: rust-version 1.99" in detail
    assert "rustc 1.63, rustc 1.85, rustc 1.97" in detail
