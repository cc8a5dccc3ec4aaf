"""Real git repositories for tests (``streams.offline.local_repo``), plus what only tests need: more
pull requests pushed as ``refs/pull/<n>/head`` without a merge."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    "CorpusPullRequest",
    "PullRequestRepo",
    "add_pull_request",
    "commit_files",
    "git_env",
    "make_corpus_dir",
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


@dataclass(frozen=True)
class CorpusPullRequest:
    """One merged pull request of a corpus a test makes: its repository's files before and
    the pull request's changes (None deletes)."""

    repo: str
    language: str
    base: dict[str, str]
    pr_files: dict[str, str | None]
    merged_at: str


def make_corpus_dir(
    root: Path, pulls: Iterable[CorpusPullRequest], *, first_number: int, title: str, body: str
) -> Path:
    """A corpus folder as ``../shared/fixtures/corpus`` (and ``corpus-js``) is laid out:
    ``repos.json``, ``prs.jsonl`` and a bare remote per repository under ``repos/``; the pull
    requests numbered from ``first_number``."""
    corpus = root / "corpus"
    (corpus / "repos").mkdir(parents=True)
    repos, prs = [], []
    for number, pull in enumerate(pulls, start=first_number):
        made = make_pull_request_repo(
            root / pull.repo, repo=pull.repo, base_files=pull.base, pr_files=pull.pr_files
        )
        remote = corpus / "repos" / f"{pull.repo.replace('/', '__')}.git"
        run_git(root, "clone", "-q", "--bare", str(made.remote), str(remote))
        changed = run_git(made.remote, "diff", "--numstat", made.base_sha, made.merge_sha)
        files: list[dict[str, Any]] = [
            {"filename": name, "status": "modified", "additions": int(a), "deletions": int(d)}
            for a, d, name in (line.split("\t") for line in changed.splitlines())
        ]
        meta = {"language": pull.language, "stargazers_count": 50, "default_branch": "main"}
        repos.append({"repo": pull.repo, **meta})
        prs.append(
            {
                "repo": pull.repo, "number": number, "title": title, "body": body,
                "merge_commit_sha": made.merge_sha, "base_sha": made.base_sha,
                "head_sha": made.head_sha, "merged_at": pull.merged_at, "author_login": "dev",
                "additions": sum(f["additions"] for f in files),
                "deletions": sum(f["deletions"] for f in files),
                "changed_files": len(files), "files": files, "repo_meta": meta,
            }
        )  # fmt: skip
    (corpus / "repos.json").write_text(json.dumps(repos))
    (corpus / "prs.jsonl").write_text("".join(json.dumps(pr) + "\n" for pr in prs))
    return corpus
