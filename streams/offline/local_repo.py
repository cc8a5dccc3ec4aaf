"""Real git repositories made locally, served as remotes over ``file://``: the demo's
repository and the tests'.

A merged pull request as GitHub keeps it: ``main`` with the base commit, the PR's commits on a
branch, optionally a later commit on ``main`` (so the merge's first parent differs from the
PR's base), a ``--no-ff`` merge, and ``refs/pull/<n>/head`` on the bare remote. The remote
allows partial clones and fetching by sha, as GitHub does. Identity and dates are fixed, so
the same inputs always give the same shas; the user's and the system's git config are ignored.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from schemas.base import validate_repo_name

__all__ = [
    "EPOCH",
    "PullRequestRepo",
    "commit_files",
    "git_env",
    "make_pull_request_repo",
    "publish",
    "run_git",
    "write_files",
]

EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z


def git_env(tick: int = 0) -> dict[str, str]:
    """A fixed identity and a fixed date ``EPOCH + tick`` minutes; no user or system config."""
    date = f"@{EPOCH + 60 * tick} +0000"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
        GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_DATE=date,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def run_git(cwd: Path, *args: str, tick: int = 0, input: bytes | None = None) -> str:
    """``git <args>`` in ``cwd``; its stdout, stripped. Raises CalledProcessError with stderr."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=git_env(tick),
        input=input,
        capture_output=True,
        check=False,
        timeout=60,
    )
    if result.returncode != 0:
        raise subprocess.CalledProcessError(
            result.returncode, result.args, result.stdout, result.stderr
        )
    return result.stdout.decode().strip()


@dataclass(frozen=True)
class SymbolicLink:
    """A file of a made repository that is a symbolic link to ``target`` (as written)."""

    target: str


FileContent = str | SymbolicLink | None


def write_files(work: Path, files: Mapping[str, FileContent]) -> None:
    """Write (UTF-8, newlines as given), link (``SymbolicLink``) or delete (None) files and
    stage the changes."""
    for name, content in files.items():
        target = work / name
        if content is None:
            run_git(work, "rm", "-q", "--", name)
            continue
        if isinstance(content, SymbolicLink):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            target.symlink_to(content.target)
            run_git(work, "add", "--", name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode())
        run_git(work, "add", "--", name)


def commit_files(work: Path, files: Mapping[str, FileContent], message: str, *, tick: int) -> str:
    """Write ``files``, commit them (at ``tick``) and return the commit's sha."""
    write_files(work, files)
    run_git(work, "commit", "-q", "--allow-empty", "-m", message, tick=tick)
    return run_git(work, "rev-parse", "HEAD")


@dataclass
class PullRequestRepo:
    """A published repository with one merged pull request (``refs/pull/1/head``)."""

    repo: str
    url_template: str
    base_sha: str
    head_sha: str
    merge_sha: str
    remote: Path  # the bare repository the url_template points at


def publish(work: Path, root: Path, repo: str) -> tuple[Path, str]:
    """Bare-clone ``work`` to ``root/remote/<owner>/<name>.git`` as a fetch-by-sha remote.

    Returns the remote's path and the url template (``file://``, so clones really are partial).
    """
    owner, name = validate_repo_name(repo).split("/")
    remote = root / "remote" / owner / f"{name}.git"
    remote.parent.mkdir(parents=True, exist_ok=True)
    run_git(root, "clone", "-q", "--bare", "--no-local", str(work), str(remote))
    run_git(remote, "config", "uploadpack.allowFilter", "true")
    run_git(remote, "config", "uploadpack.allowAnySHA1InWant", "true")
    return remote, f"file://{root}/remote/{{owner}}/{{repo}}.git"


def make_pull_request_repo(
    root: Path,
    *,
    repo: str = "swe-stream-test/calc",
    base_files: Mapping[str, FileContent],
    pr_files: Mapping[str, FileContent],
    extra_pr_commits: list[dict[str, str | None]] | None = None,
    main_files_after_branch: dict[str, str] | None = None,
) -> PullRequestRepo:
    """Build ``root/work`` (base on ``main``, PR on ``fix``, merged ``--no-ff``) and publish it.

    ``pr_files`` (None deletes a file) is the PR's first commit, each of ``extra_pr_commits``
    one more; ``head_sha`` is the last. ``main_files_after_branch`` adds a commit on ``main``
    after branching, so the merge's first parent is not ``base_sha``. The remote has ``main``
    and ``refs/pull/1/head`` (the ``fix`` branch is deleted there, as after a merged PR).
    """
    root = Path(root).absolute()
    work = root / "work"
    work.mkdir(parents=True)
    run_git(work, "init", "-q", "-b", "main")
    base_sha = commit_files(work, dict(base_files), "Initial commit", tick=0)
    run_git(work, "checkout", "-q", "-b", "fix")
    head_sha = commit_files(work, pr_files, "Fix the bug", tick=1)
    for i, files in enumerate(extra_pr_commits or [], start=1):
        head_sha = commit_files(work, files, f"Address review {i}", tick=1 + i)
    tick = 2 + len(extra_pr_commits or [])
    run_git(work, "checkout", "-q", "main")
    if main_files_after_branch:
        commit_files(work, dict(main_files_after_branch), "Unrelated change on main", tick=tick)
        tick += 1
    run_git(
        work,
        "merge",
        "-q",
        "--no-ff",
        "--no-edit",
        "-m",
        f"Merge pull request #1 from {repo.split('/')[0]}/fix",
        "fix",
        tick=tick,
    )
    merge_sha = run_git(work, "rev-parse", "HEAD")
    remote, url_template = publish(work, root, repo)
    run_git(remote, "update-ref", "refs/pull/1/head", head_sha)
    run_git(remote, "update-ref", "-d", "refs/heads/fix")
    return PullRequestRepo(
        repo=repo,
        url_template=url_template,
        base_sha=base_sha,
        head_sha=head_sha,
        merge_sha=merge_sha,
        remote=remote,
    )
