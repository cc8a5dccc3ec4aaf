"""RepoCache against real repositories served by real git over ``file://`` (no mocks)."""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from streams.clients.git import (
    CloneError,
    CommitNotFound,
    FileDiff,
    GitError,
    RepoCache,
    submodule_repository,
)
from tests.git_repos import (
    PullRequestRepo,
    add_pull_request,
    commit_files,
    make_pull_request_repo,
    publish,
    run_git,
)

pytestmark = pytest.mark.integration

OPS = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
HELPERS = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(20))
BASE_FILES = {
    "README.md": "# calc\n",
    "calc/__init__.py": "",
    "calc/ops.py": OPS,
    "calc/helpers.py": HELPERS,
    "calc/version.py": "COMMIT = '$Format:%H$'\n",
    "tests/test_ops.py": TESTS,
    "tests/test_gone.py": "def test_gone():\n    pass\n",
    ".gitattributes": "tests/ export-ignore\n*.py export-subst\n",
}
FIXED_OPS = OPS.replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub")
PR_FILES: dict[str, str | None] = {
    "calc/ops.py": FIXED_OPS,
    "calc/helpers.py": None,
    "calc/helpers_renamed.py": HELPERS.replace("x + 3", "x + 33"),
    "tests/test_ops.py": TESTS + "\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "tests/test_new.py": "def test_new():\n    assert True\n",
    "tests/test_gone.py": None,
}


class CountingCache(RepoCache):
    """A RepoCache that records every git command it runs (the commands still run)."""

    def __init__(self, root: Path, url_template: str, *, timeout_seconds: float = 60) -> None:
        super().__init__(root, url_template, timeout_seconds=timeout_seconds)
        self.commands: list[list[str]] = []
        self._commands_lock = threading.Lock()

    def _run(
        self,
        args: list[str],
        *,
        git_dir: Path | None = None,
        input: bytes | None = None,
        check: bool = True,
        error: type[GitError] = GitError,
    ) -> subprocess.CompletedProcess[bytes]:
        with self._commands_lock:
            self.commands.append(list(args))
        return super()._run(args, git_dir=git_dir, input=input, check=check, error=error)

    def count(self, subcommand: str) -> int:
        return sum(1 for args in self.commands if subcommand in args[:2])


@pytest.fixture
def pr(tmp_path: Path) -> PullRequestRepo:
    return make_pull_request_repo(
        tmp_path,
        base_files=BASE_FILES,
        pr_files=PR_FILES,
        extra_pr_commits=[{"tests/test_new.py": "def test_new():\n    assert 1 + 1 == 2\n"}],
        main_files_after_branch={"README.md": "# calc\n\nMIT licensed.\n"},
    )


@pytest.fixture
def cache(tmp_path: Path, pr: PullRequestRepo) -> CountingCache:
    return CountingCache(tmp_path / "cache", pr.url_template, timeout_seconds=60)


def git_out(git_dir: Path, *args: str) -> str:
    return run_git(git_dir, *args)


def missing_objects(git_dir: Path, commit: str) -> list[str]:
    listing = run_git(git_dir, "rev-list", "--objects", "--missing=print", commit)
    return [line[1:] for line in listing.splitlines() if line.startswith("?")]


def tar_files(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {
            member.name: extracted.read()
            for member in tar.getmembers()
            if member.isfile() and (extracted := tar.extractfile(member)) is not None
        }


def by_path(files: list[FileDiff]) -> dict[str, FileDiff]:
    return {f.path: f for f in files}


# -- the test repository ---------------------------------------------------------------------


def test_builder_is_deterministic_and_looks_like_github(tmp_path: Path) -> None:
    one = make_pull_request_repo(tmp_path / "a", base_files=BASE_FILES, pr_files=PR_FILES)
    two = make_pull_request_repo(tmp_path / "b", base_files=BASE_FILES, pr_files=PR_FILES)
    assert (one.base_sha, one.head_sha, one.merge_sha) == (
        two.base_sha,
        two.head_sha,
        two.merge_sha,
    )
    assert run_git(one.remote, "rev-parse", "refs/pull/1/head") == one.head_sha
    assert run_git(one.remote, "rev-parse", "refs/heads/main") == one.merge_sha
    # no main_files_after_branch: the merge's first parent is the base
    assert run_git(one.remote, "rev-parse", f"{one.merge_sha}^1") == one.base_sha
    assert run_git(one.remote, "config", "uploadpack.allowAnySHA1InWant") == "true"
    assert one.url_template == f"file://{tmp_path / 'a'}/remote/{{owner}}/{{repo}}.git"


# -- clone and fetch -------------------------------------------------------------------------


def test_clones_once_and_reuses_the_clone(cache: CountingCache, pr: PullRequestRepo) -> None:
    path = cache.ensure(pr.repo, pr.merge_sha)
    assert path == cache.path(pr.repo) == cache.root / "swe-stream-test" / "calc.git"
    inode, mtime = path.stat().st_ino, path.stat().st_mtime_ns

    assert cache.ensure(pr.repo, pr.merge_sha, pr.base_sha, pr.head_sha) == path
    assert cache.ensure(pr.repo) == path
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (inode, mtime)
    assert cache.count("clone") == 1
    assert cache.count("fetch") == 0  # all three are in the clone already (main has them)
    assert [p.name for p in path.parent.iterdir()] == ["calc.git"]  # no temp dir left over


def test_clone_is_a_bare_blobless_partial_clone(cache: CountingCache, pr: PullRequestRepo) -> None:
    path = cache.ensure(pr.repo)
    assert git_out(path, "rev-parse", "--is-bare-repository") == "true"
    assert git_out(path, "config", "--bool", "remote.origin.promisor") == "true"
    assert git_out(path, "config", "remote.origin.partialclonefilter") == "blob:none"
    assert not (path / "hooks").exists()  # empty template: no hooks, not even samples
    # commits and trees are here, blobs are not
    assert git_out(path, "cat-file", "-t", f"{pr.merge_sha}^{{tree}}") == "tree"
    missing = missing_objects(path, pr.merge_sha)
    assert missing
    assert {git_out(pr.remote, "cat-file", "-t", sha) for sha in missing} == {"blob"}


def test_fetches_by_sha_a_commit_only_a_pull_ref_reaches(
    cache: CountingCache, pr: PullRequestRepo
) -> None:
    cache.ensure(pr.repo)
    first, tip = add_pull_request(
        pr, 2, [{"calc/extra.py": "X = 1\n"}, {"calc/extra.py": "X = 2\n"}], start=pr.merge_sha
    )
    path = cache.ensure(pr.repo, first)
    assert git_out(path, "cat-file", "-t", first) == "commit"
    assert cache.count("fetch") == 1  # by sha: no fallback fetch of every ref
    assert git_out(path, "for-each-ref", "refs/remotes") == ""
    assert cache.parents(pr.repo, first) == [pr.merge_sha]
    with pytest.raises(CommitNotFound, match="ensure"):
        cache.parents(pr.repo, tip)  # fetched up to `first` only


def test_falls_back_to_pull_refs_when_the_server_refuses_unadvertised_objects(
    cache: CountingCache, pr: PullRequestRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Protocol v2 serves any object the server has; a v0 server without allowAnySHA1InWant
    # (or allowReachableSHA1InWant) only serves the tips of its refs.
    cache.ensure(pr.repo)
    first, tip = add_pull_request(
        pr, 7, [{"calc/extra.py": "X = 1\n"}, {"calc/extra.py": "X = 2\n"}], start=pr.merge_sha
    )
    run_git(pr.remote, "config", "uploadpack.allowAnySHA1InWant", "false")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")

    path = cache.ensure(pr.repo, first)
    assert git_out(path, "cat-file", "-t", first) == "commit"
    assert cache.count("fetch") == 2  # by sha (refused), then the refs
    assert git_out(path, "rev-parse", "refs/remotes/origin/pull/7") == tip
    assert git_out(path, "rev-parse", "refs/remotes/origin/heads/main") == pr.merge_sha


def test_unknown_commit_is_commit_not_found(cache: CountingCache, pr: PullRequestRepo) -> None:
    unknown = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(CommitNotFound) as caught:
        cache.ensure(pr.repo, pr.merge_sha, unknown)
    assert unknown in str(caught.value)
    assert caught.value.stderr  # git's own words: "not our ref" and the like
    assert caught.value.command[:1] == ["git"]
    assert isinstance(caught.value, GitError)
    with pytest.raises(ValueError, match="full commit sha"):
        cache.ensure(pr.repo, "main")


def test_bad_url_is_clone_error_and_leaves_nothing(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path / "cache", f"file://{tmp_path}/nowhere/{{owner}}/{{repo}}.git")
    with pytest.raises(CloneError) as caught:
        cache.ensure("swe-stream-test/missing")
    assert "does not appear to be a git repository" in caught.value.stderr
    assert caught.value.stderr.strip() in str(caught.value)
    assert "clone" in caught.value.command
    assert list((tmp_path / "cache" / "swe-stream-test").iterdir()) == []
    with pytest.raises(GitError, match="not cloned"):
        cache.parents("swe-stream-test/missing", "0" * 40)


def test_timeout_kills_git_and_says_so(tmp_path: Path, pr: PullRequestRepo) -> None:
    cache = RepoCache(tmp_path / "cache", pr.url_template, timeout_seconds=0.001)
    with pytest.raises(CloneError, match=r"timed out after 0\.001s"):
        cache.ensure(pr.repo)
    assert not cache.path(pr.repo).exists()


@pytest.mark.parametrize(
    "name",
    ["../x", "a/..", "a/.", "..", "x", "a/b/c", "-a/b", "a/b c", "/etc/passwd", "a/b\0"],
)
def test_repository_names_that_could_escape_are_refused_before_git_runs(
    cache: CountingCache, pr: PullRequestRepo, name: str
) -> None:
    for call in (
        lambda: cache.path(name),
        lambda: cache.ensure(name),
        lambda: cache.ensure(name, pr.merge_sha),
        lambda: cache.diff(name, pr.base_sha, pr.merge_sha),
        lambda: cache.archive(name, pr.base_sha),
        lambda: cache.file_at(name, pr.base_sha, "README.md"),
    ):
        with pytest.raises(ValueError):
            call()
    assert cache.commands == []
    assert not cache.root.exists()


def test_four_threads_ensuring_at_once_make_one_clone(
    cache: CountingCache, pr: PullRequestRepo
) -> None:
    start = threading.Barrier(4)
    paths: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        start.wait()
        try:
            paths.append(cache.ensure(pr.repo, pr.merge_sha))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert paths == [cache.path(pr.repo)] * 4
    assert cache.count("clone") == 1
    assert [p.name for p in cache.path(pr.repo).parent.iterdir()] == ["calc.git"]


# -- reading ---------------------------------------------------------------------------------


def test_parents_of_the_merge(cache: CountingCache, pr: PullRequestRepo) -> None:
    cache.ensure(pr.repo, pr.merge_sha)
    first = run_git(pr.remote, "rev-parse", f"{pr.merge_sha}^1")
    assert first != pr.base_sha  # main moved on after the PR branched
    assert cache.parents(pr.repo, pr.merge_sha) == [first, pr.head_sha]
    assert cache.parents(pr.repo, first) == [pr.base_sha]
    assert cache.parents(pr.repo, pr.base_sha) == []


def test_diff_splits_per_file_with_statuses_and_counts(
    cache: CountingCache, pr: PullRequestRepo
) -> None:
    path = cache.ensure(pr.repo, pr.merge_sha)
    assert missing_objects(path, pr.merge_sha)
    first = cache.parents(pr.repo, pr.merge_sha)[0]
    files = cache.diff(pr.repo, first, pr.merge_sha)  # blobs are fetched lazily by git

    assert [f.path for f in files] == [
        "calc/helpers_renamed.py",
        "calc/ops.py",
        "tests/test_gone.py",
        "tests/test_new.py",
        "tests/test_ops.py",
    ]
    diffs = by_path(files)
    renamed = diffs["calc/helpers_renamed.py"]
    assert (renamed.status, renamed.old_path) == ("renamed", "calc/helpers.py")
    assert (renamed.additions, renamed.deletions) == (1, 1)
    assert "rename from calc/helpers.py\nrename to calc/helpers_renamed.py\n" in renamed.text
    ops = diffs["calc/ops.py"]
    assert (ops.status, ops.old_path, ops.additions, ops.deletions) == ("modified", None, 1, 1)
    gone = diffs["tests/test_gone.py"]
    assert (gone.status, gone.additions, gone.deletions) == ("deleted", 0, 2)
    new = diffs["tests/test_new.py"]
    assert (new.status, new.additions, new.deletions) == ("added", 2, 0)
    assert diffs["tests/test_ops.py"].additions == 4
    for f in files:
        assert f.text.startswith("diff --git ") and f.text.endswith("\n")
        assert f.text.count("diff --git ") == 1
        assert not f.binary and not f.submodule
    full_index = ops.text.splitlines()[1]
    assert len(full_index.split()[1].split("..")[1]) == 40  # --full-index

    # The same split as `git diff` prints it, and identical with another base.
    whole = run_git(pr.remote, "diff", "-M", "--full-index", first, pr.merge_sha)
    assert "".join(f.text for f in files) == whole + "\n"
    against_base = by_path(cache.diff(pr.repo, pr.base_sha, pr.merge_sha))
    assert against_base["README.md"].status == "modified"


HOSTILE_CONFIG = """\
[diff]
    noprefix = true
    mnemonicPrefix = true
    context = 10
    interHunkContext = 10
    algorithm = patience
    submodule = log
    renames = copies
    relative = true
    external = false
    suppressBlankEmpty = true
    ignoreSubmodules = all
[color]
    ui = always
[core]
    abbrev = 12
"""


def test_user_config_cannot_change_the_diff(
    cache: CountingCache, pr: PullRequestRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.ensure(pr.repo, pr.merge_sha)
    clean = cache.diff(pr.repo, pr.base_sha, pr.merge_sha)
    order = tmp_path / "order"
    order.write_text("tests/*\n")
    config = tmp_path / "gitconfig"
    config.write_text(HOSTILE_CONFIG + f"[diff]\n    orderFile = {order}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    plain = subprocess.run(
        ["git", "--no-pager", "diff", "--no-ext-diff", pr.base_sha, pr.merge_sha],
        cwd=pr.remote,
        capture_output=True,
        check=True,
    ).stdout
    assert plain.startswith(b"\x1b[1mdiff --git tests/test_gone.py tests/test_gone.py")  # it bites
    assert cache.diff(pr.repo, pr.base_sha, pr.merge_sha) == clean


def worktree(pr: PullRequestRepo, where: Path, commit: str) -> Path:
    run_git(pr.remote.parents[2] / "work", "worktree", "add", "-q", "--detach", str(where), commit)
    return where


def test_joined_test_file_texts_apply_to_a_checkout_of_the_base(
    cache: CountingCache, pr: PullRequestRepo, tmp_path: Path
) -> None:
    cache.ensure(pr.repo, pr.merge_sha)
    first = cache.parents(pr.repo, pr.merge_sha)[0]
    files = cache.diff(pr.repo, first, pr.merge_sha)
    tests = [f for f in files if f.path.startswith("tests/")]
    others = [f for f in files if not f.path.startswith("tests/")]
    checkout = worktree(pr, tmp_path / "checkout", first)

    test_patch = "".join(f.text for f in tests).encode()
    run_git(checkout, "apply", "--check", input=test_patch)
    patch = "".join(f.text for f in others).encode()
    run_git(checkout, "apply", "--check", input=patch)

    # Both applied, in either order, give the merge's tree.
    run_git(checkout, "apply", "--index", input=test_patch)
    run_git(checkout, "apply", "--index", input=patch)
    assert run_git(checkout, "write-tree") == run_git(
        pr.remote, "rev-parse", f"{pr.merge_sha}^{{tree}}"
    )


def test_binary_submodule_symlink_and_mode_changes_are_flagged(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_git(work, "init", "-q", "-b", "main")
    base = commit_files(
        work, {"app.py": "print('hi')\n", "run.sh": "echo hi\n", "link": "target\n"}, "base", tick=0
    )
    (work / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    run_git(work, "add", "logo.png")
    run_git(work, "update-index", "--add", "--cacheinfo", f"160000,{base},vendor/lib")
    run_git(work, "update-index", "--chmod=+x", "run.sh")
    target = run_git(work, "hash-object", "-w", "--stdin", input=b"app.py")
    run_git(work, "update-index", "--cacheinfo", f"120000,{target},link")  # file -> symlink
    head = commit_files(work, {"app.py": "print('hello')\n"}, "change", tick=1)
    _, url_template = publish(work, tmp_path, "swe-stream-test/mixed")

    cache = RepoCache(tmp_path / "cache", url_template, timeout_seconds=60)
    cache.ensure("swe-stream-test/mixed", head)
    diffs = by_path(cache.diff("swe-stream-test/mixed", base, head))
    assert sorted(diffs) == ["app.py", "link", "logo.png", "run.sh", "vendor/lib"]

    logo = diffs["logo.png"]
    assert (logo.status, logo.binary, logo.submodule) == ("added", True, False)
    assert (logo.additions, logo.deletions) == (0, 0)
    assert "Binary files /dev/null and b/logo.png differ" in logo.text
    lib = diffs["vendor/lib"]
    assert (lib.status, lib.binary, lib.submodule) == ("added", False, True)
    assert "new file mode 160000" in lib.text and f"+Subproject commit {base}" in lib.text
    link = diffs["link"]  # a file became a symlink: git prints a deletion and a creation
    assert (link.status, link.submodule) == ("type_changed", False)
    assert link.text.count("diff --git a/link b/link") == 2
    assert "new file mode 120000" in link.text and (link.additions, link.deletions) == (1, 1)
    run = diffs["run.sh"]
    assert (run.status, run.additions, run.deletions) == ("modified", 0, 0)
    assert "old mode 100644\nnew mode 100755\n" in run.text
    assert not diffs["app.py"].binary and not diffs["app.py"].submodule
    # everything but the binary applies (git apply needs --binary patches for binaries)
    checkout = tmp_path / "checkout"
    run_git(work, "worktree", "add", "-q", "--detach", str(checkout), base)
    text = "".join(f.text for f in diffs.values() if not f.binary)
    run_git(checkout, "apply", "--check", input=text.encode())


def test_archive_is_the_tree_at_the_commit_ignoring_export_attributes(
    cache: CountingCache, pr: PullRequestRepo
) -> None:
    cache.ensure(pr.repo, pr.merge_sha)
    contents = {
        name: data.decode() for name, data in tar_files(cache.archive(pr.repo, pr.base_sha)).items()
    }
    # .gitattributes says `tests/ export-ignore` and `*.py export-subst`: both ignored
    assert contents == BASE_FILES

    names = set(tar_files(cache.archive(pr.repo, pr.merge_sha)))
    assert "calc/helpers_renamed.py" in names and "calc/helpers.py" not in names


def test_file_at(cache: CountingCache, pr: PullRequestRepo) -> None:
    cache.ensure(pr.repo, pr.merge_sha)
    assert cache.file_at(pr.repo, pr.base_sha, "calc/ops.py") == OPS.encode()
    assert cache.file_at(pr.repo, pr.merge_sha, "calc/ops.py") == FIXED_OPS.encode()
    assert cache.file_at(pr.repo, pr.base_sha, "calc/helpers_renamed.py") is None
    assert cache.file_at(pr.repo, pr.merge_sha, "calc/helpers.py") is None
    assert cache.file_at(pr.repo, pr.base_sha, "calc") is None  # a directory is no file
    assert cache.file_at(pr.repo, pr.base_sha, "calc/ops") is None  # no prefix matching
    assert cache.file_at(pr.repo, pr.base_sha, "*.md") is None  # no globbing
    assert cache.file_at(pr.repo, pr.base_sha, "calc/__init__.py") == b""
    for bad in ("../etc/passwd", "/etc/passwd", "calc/../README.md", ""):
        with pytest.raises(ValueError):
            cache.file_at(pr.repo, pr.base_sha, bad)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/BurntSushi/toml-test.git", "BurntSushi/toml-test"),
        ("https://github.com/iarna/toml-spec-tests", "iarna/toml-spec-tests"),
        ("git@github.com:owner/data.git", "owner/data"),
        ("../sibling.git", "parent/sibling"),
        ("https://gitlab.com/a/b.git", None),
        ("../../escape/x.git", None),
    ],
)
def test_submodule_urls_name_repositories(url: str, expected: str | None) -> None:
    assert submodule_repository(url, "parent/repo") == expected


def test_submodules_are_archived_at_their_pinned_commit_under_their_path(tmp_path: Path) -> None:
    data = tmp_path / "data-work"
    data.mkdir()
    run_git(data, "init", "-q", "-b", "main")
    pinned = commit_files(data, {"cases/a.toml": "a = 1\n"}, "cases", tick=0)
    commit_files(data, {"cases/b.toml": "b = 2\n"}, "more cases", tick=1)  # after the pin
    publish(data, tmp_path, "swe-stream-test/data")
    app = tmp_path / "app-work"
    app.mkdir()
    run_git(app, "init", "-q", "-b", "main")
    gitmodules = (
        '[submodule "data"]\n\tpath = tests/data\n'
        "\turl = https://github.com/swe-stream-test/data.git\n"
        '[submodule "gone"]\n\tpath = tests/gone\n\turl = https://example.org/gone.git\n'
    )
    commit_files(app, {".gitmodules": gitmodules, "app.py": ""}, "base", tick=2)
    run_git(app, "update-index", "--add", "--cacheinfo", f"160000,{pinned},tests/data")
    run_git(app, "update-index", "--add", "--cacheinfo", f"160000,{pinned},tests/gone")
    head = commit_files(app, {"app.py": "x = 1\n"}, "with submodules", tick=3)
    _, url_template = publish(app, tmp_path, "swe-stream-test/app")

    cache = RepoCache(tmp_path / "cache", url_template, timeout_seconds=60)
    cache.ensure("swe-stream-test/app", head)
    assert cache.submodules("swe-stream-test/app", head) == [
        ("tests/data", "https://github.com/swe-stream-test/data.git", pinned),
        ("tests/gone", "https://example.org/gone.git", pinned),
    ]
    archive, problems = cache.archive_with_submodules("swe-stream-test/app", head)
    files = tar_files(archive)
    assert files["tests/data/cases/a.toml"] == b"a = 1\n"
    assert "tests/data/cases/b.toml" not in files  # the pinned commit, not the branch
    assert files["app.py"] == b"x = 1\n"
    assert problems == {"tests/gone": "submodule tests/gone: 'https://example.org/gone.git' is "
                        "not a repository we can clone"}  # fmt: skip
