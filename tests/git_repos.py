"""Real git repositories for tests (``streams.offline.local_repo``), plus what only tests need: more
pull requests pushed as ``refs/pull/<n>/head`` without a merge."""

from __future__ import annotations

from streams.offline.local_repo import (
    EPOCH,
    PullRequestRepo,
    commit_files,
    git_env,
    make_pull_request_repo,
    publish,
    run_git,
    write_files,
)

__all__ = [
    "EPOCH",
    "PullRequestRepo",
    "add_pull_request",
    "commit_files",
    "git_env",
    "make_pull_request_repo",
    "publish",
    "run_git",
    "write_files",
]


def add_pull_request(
    pr: PullRequestRepo, number: int, commits: list[dict[str, str | None]], *, start: str
) -> list[str]:
    """Push unmerged commits (on top of ``start``) to the remote as ``refs/pull/<number>/head``.

    Works in the work repository next to the remote; returns the new commits' shas, oldest
    first. Those commits are reachable from that pull ref only.
    """
    work = pr.remote.parents[2] / "work"
    branch = f"pull-{number}"
    run_git(work, "checkout", "-q", "-b", branch, start)
    shas = [
        commit_files(work, files, f"Pull request {number}, commit {i}", tick=100 * number + i)
        for i, files in enumerate(commits)
    ]
    run_git(work, "checkout", "-q", "main")
    run_git(work, "push", "-q", str(pr.remote), f"{shas[-1]}:refs/pull/{number}/head")
    run_git(work, "branch", "-q", "-D", branch)
    return shas
