"""extract: Rust tests inside source files (``#[cfg(test)] mod tests`` in ``src/lib.rs``) go to
the test patch hunk by hunk, on a real merged PR (real git, served over file://); both halves
apply with ``git apply`` on the base, alone and in either order."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.extract import TESTS_ONLY, Extract, check_diff, inline_test_candidates, split_diff
from schemas import ClassifiedPullRequest, PatchSet, RepositoryInfo
from streams.clients.git import RepoCache
from streams.core.settings import ExtractSettings
from tests.agents.repo_tasks import classified_for
from tests.git_repos import PullRequestRepo, git_env, make_pull_request_repo, run_git

REPO = "swe-stream-test/rcalc"
CARGO = '[package]\nname = "rcalc"\nversion = "0.1.0"\nedition = "2021"\n'
FILLER = "".join(
    f"\n/// Filler {i}.\npub fn filler_{i}() -> u8 {{\n    {i}\n}}\n" for i in range(3)
)

LIB = (
    "//! A calculator.\n"
    "\n"
    "/// The sum of a and b.\n"
    "pub fn add(a: i32, b: i32) -> i32 {\n"
    "    a - b\n"
    "}\n"
    "\n"
    "/// A closing brace in a string, \"}\", and an opening one in a char, '{'.\n"
    "pub fn brace() -> &'static str {\n"
    "    let _open = '{';\n"
    '    "}"\n'
    "}\n"
    f"{FILLER}"
    "\n"
    "#[cfg(test)]\n"
    "mod tests {\n"
    "    use super::*;\n"
    "\n"
    "    #[test]\n"
    "    fn brace_is_closing() {\n"
    '        assert_eq!(brace(), "}");\n'
    "    }\n"
    "}\n"
    f"{FILLER.replace('filler_', 'more_')}"
    "\n"
    "/// The difference of a and b.\n"
    "pub fn sub(a: i32, b: i32) -> i32 {\n"
    "    a + b\n"
    "}\n"
    f"{FILLER.replace('filler_', 'tail_')}"
)
ADD_TEST = "    }\n\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n}\n"
NEW_MODULE = (
    "\n"
    "#[cfg(all(test, not(miri)))]\n"
    "mod sub_tests {\n"
    "    #[test]\n"
    "    fn subtracts() {\n"
    "        assert_eq!(super::sub(3, 1), 2);\n"
    "    }\n"
    "}\n"
)
FIX_ADD = ("    a - b\n}\n\n/// A closing", "    a + b\n}\n\n/// A closing")
FIX_SUB = (
    "pub fn sub(a: i32, b: i32) -> i32 {\n    a + b",
    "pub fn sub(a: i32, b: i32) -> i32 {\n    a - b",
)
# the fix at the top and in the middle, a test added to the module between them, and a new
# test module (after a blank line) at the end
FIXED = LIB.replace(*FIX_ADD).replace(*FIX_SUB).replace("    }\n}\n", ADD_TEST, 1) + NEW_MODULE


def rust_pr(root: Path, lib: str, extra: dict[str, str | None] | None = None) -> PullRequestRepo:
    return make_pull_request_repo(
        root,
        repo=REPO,
        base_files={"Cargo.toml": CARGO, "src/lib.rs": LIB},
        pr_files={"src/lib.rs": lib, **(extra or {})},
    )


def rust_classified(pr: PullRequestRepo) -> ClassifiedPullRequest:
    record = classified_for(pr)
    info = RepositoryInfo(stars=100, language="Rust", default_branch="main")
    pull = record.pull_request.model_copy(update={"repo_info": info})
    return record.model_copy(update={"pull_request": pull})


def git_apply(work: Path, patch: str, name: str) -> str:
    """``git apply --verbose`` of ``patch`` in ``work``; what it says (fails the test if it
    does not apply)."""
    path = work.parent / f"{name}.diff"
    path.write_text(patch)
    result = subprocess.run(
        ["git", "apply", "--verbose", str(path)],
        cwd=work,
        env=git_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, f"{name} does not apply: {result.stderr}"
    return result.stderr


async def extract(tmp_path: Path, pr: PullRequestRepo) -> PatchSet | str:
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(rust_classified(pr))
    if outcome.status == "rejected":
        return outcome.reason or ""
    (patches,) = outcome.outputs
    assert isinstance(patches, PatchSet)
    return patches


@pytest.mark.integration
async def test_test_hunks_of_a_source_file_go_to_the_test_patch(tmp_path: Path) -> None:
    pr = rust_pr(tmp_path / "git", FIXED)
    patches = await extract(tmp_path, pr)
    assert isinstance(patches, PatchSet)
    assert patches.source_files == ["src/lib.rs"] and patches.test_files == ["src/lib.rs"]
    assert patches.language == "Rust"
    assert patches.patch.count("\n@@ ") == 2 and patches.test_patch.count("\n@@ ") == 2
    assert "+    a + b\n" in patches.patch and "+    a - b\n" in patches.patch
    assert "#[test]" not in patches.patch and "assert_eq" not in patches.patch
    assert "+    fn adds() {\n" in patches.test_patch
    assert "+mod sub_tests {\n" in patches.test_patch
    assert "a + b" not in patches.test_patch and "a - b" not in patches.test_patch

    work = tmp_path / "checkout"
    run_git(tmp_path, "clone", "-q", str(pr.remote), str(work))
    run_git(work, "checkout", "-q", patches.base_commit)
    lib = work / "src" / "lib.rs"
    for first, second in (
        (patches.patch, patches.test_patch),
        (patches.test_patch, patches.patch),
    ):
        run_git(work, "reset", "-q", "--hard", patches.base_commit)
        # alone on the base, each half's hunks are exactly where their headers say
        said = git_apply(work, first, "first")
        assert "offset" not in said, said
        assert lib.read_text() != FIXED
        git_apply(work, second, "second")  # after the other half: found by its context
        assert lib.read_text() == FIXED
    run_git(work, "reset", "-q", "--hard", patches.base_commit)
    git_apply(work, patches.patch + patches.test_patch, "both")
    assert lib.read_text() == FIXED


@pytest.mark.integration
async def test_a_pr_changing_only_tests_inside_a_source_file_is_tests_only(
    tmp_path: Path,
) -> None:
    # a test added and an existing assertion changed (removed lines: the base's ranges)
    only_tests = LIB.replace("    }\n}\n", ADD_TEST, 1).replace(
        'assert_eq!(brace(), "}");', 'assert_eq!(brace(), "}", "a closing brace");'
    )
    pr = rust_pr(tmp_path / "git", only_tests + NEW_MODULE)
    assert await extract(tmp_path, pr) == TESTS_ONLY

    # by path alone the diff was a source change: the texts make it tests only
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    files = repos.diff(pr.repo, pr.base_sha, pr.merge_sha)
    assert [f.path for f in inline_test_candidates(files)] == ["src/lib.rs"]
    texts = {"src/lib.rs": (LIB, only_tests + NEW_MODULE)}
    assert check_diff(files, 10**6) is None
    assert check_diff(files, 10**6, texts) == TESTS_ONLY
    split = split_diff(files, texts)
    assert split.patch == "" and split.test_patch == files[0].text
    assert split.test_files == ["src/lib.rs"] and split.source_files == []


@pytest.mark.integration
async def test_a_hunk_mixing_a_fix_and_a_test_is_source(tmp_path: Path) -> None:
    # the test module right after the fixed function: one hunk holds both changes
    close = LIB.replace(
        "    a + b\n}\n", "    a - b\n}\n#[cfg(test)]\nmod near {\n    #[test]\n    fn t() {}\n}\n"
    )
    base_to_pr = close.replace("    a - b\n}\n#[cfg(test)]", "    a + b\n}\n#[cfg(test)]").replace(
        "    fn t() {}\n", "    fn t() {}\n    #[test]\n    fn u() {}\n"
    )
    pr = make_pull_request_repo(
        tmp_path / "git",
        repo=REPO,
        base_files={"Cargo.toml": CARGO, "src/lib.rs": close},
        pr_files={"src/lib.rs": base_to_pr, "tests/sub.rs": "#[test]\nfn sub() {}\n"},
    )
    patches = await extract(tmp_path, pr)
    assert isinstance(patches, PatchSet)
    assert patches.source_files == ["src/lib.rs"] and patches.test_files == ["tests/sub.rs"]
    assert "fn u()" in patches.patch and "src/lib.rs" not in patches.test_patch
