"""The files a diff leaves, applied in memory: compared with what git itself makes of real
repositories the tests commit to."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import apply, file_patches, overlaid, patched_files

pytestmark = pytest.mark.unit

BASE = {
    "Cargo.toml": '[package]\nname = "a"\nversion = "0.1.0"\n\n[dependencies]\nlog = "0.4"\n',
    "crates/b/Cargo.toml": '[package]\nname = "b"\nversion = "0.1.0"\n',
    "old/Cargo.toml": '[package]\nname = "old"\nversion = "0.1.0"\n',
    "notes.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
    "tail.txt": "no newline at the end",
}
AFTER = {
    "Cargo.toml": '[package]\nname = "a"\nversion = "0.1.0"\n\n[dependencies]\nitoa = "1"\n'
    'log = "0.4"\n\n[dev-dependencies]\nserde = "1"\n',
    "crates/b/Cargo.toml": '[package]\nname = "b"\nversion = "0.2.0"\n',
    "crates/c/Cargo.toml": '[package]\nname = "c"\nversion = "0.1.0"\n',  # a new member
    "notes.txt": "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n",
    "tail.txt": "no newline at the end, still none",
}


def git(root: Path, *args: str) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def commit(root: Path, files: dict[str, str], removed: tuple[str, ...] = ()) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name in removed:
        (root / name).unlink()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, str, str]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    base = commit(root, BASE)
    head = commit(root, AFTER, removed=("old/Cargo.toml",))
    return root, base, head


def tree_at(root: Path, commit_sha: str) -> TreeFiles:
    archive = ["git", "-C", str(root), "archive", commit_sha]
    return TreeFiles(subprocess.run(archive, check=True, capture_output=True).stdout)


def test_a_diff_applied_in_memory_leaves_what_git_leaves(repository: tuple[Path, str, str]) -> None:
    root, base, head = repository
    diff = git(root, "diff", base, head)
    got = patched_files(tree_at(root, base), (diff,), lambda path: True)
    assert got.pop("old/Cargo.toml") is None  # deleted
    assert got == {name: text.encode() for name, text in AFTER.items()}
    # only what is asked for
    manifests = patched_files(tree_at(root, base), (diff,), lambda p: p.endswith("Cargo.toml"))
    assert set(manifests) == {"Cargo.toml", "crates/b/Cargo.toml", "crates/c/Cargo.toml",
                              "old/Cargo.toml"}  # fmt: skip


def test_two_diffs_apply_in_order(repository: tuple[Path, str, str]) -> None:
    root, base, head = repository
    third = commit(root, {"Cargo.toml": AFTER["Cargo.toml"].replace('itoa = "1"', 'itoa = "1.0"')})
    first, second = git(root, "diff", base, head), git(root, "diff", head, third)
    got = patched_files(tree_at(root, base), (first, second), lambda p: p == "Cargo.toml")
    assert got["Cargo.toml"] == git(root, "show", f"{third}:Cargo.toml").encode()


def test_a_hunk_that_does_not_match_leaves_its_file_out(repository: tuple[Path, str, str]) -> None:
    root, base, head = repository
    diff = git(root, "diff", base, head).replace('-log = "0.4"', '-log = "0.3"')
    diff = diff.replace(' log = "0.4"', ' log = "0.3"')
    got = patched_files(tree_at(root, base), (diff,), lambda p: p.endswith("Cargo.toml"))
    assert "Cargo.toml" not in got and "crates/b/Cargo.toml" in got


def test_the_overlaid_tree_has_the_changed_files(repository: tuple[Path, str, str]) -> None:
    root, base, head = repository
    tree = tree_at(root, base)
    changed = patched_files(tree, (git(root, "diff", base, head),), lambda p: True)
    after = overlaid(tree, changed)
    assert after.read("crates/c/Cargo.toml", 1 << 20) == AFTER["crates/c/Cargo.toml"].encode()
    assert not after.has("old/Cargo.toml") and after.has("crates/b/Cargo.toml")
    assert sorted(after.names) == sorted(tree_at(root, head).names)


def test_sections_name_their_files() -> None:
    diff = (
        "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n"
        "diff --git a/z b/z\n--- a/z\n"
    )
    assert [(p.old, p.new) for p in file_patches(diff)] == [("x", "y"), ("z", "z")]
    (deleted,) = file_patches("diff --git a/z b/z\n--- a/z\n+++ /dev/null\n")
    assert apply("a\n", deleted) is None
