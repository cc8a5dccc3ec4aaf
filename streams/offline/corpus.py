"""A corpus of real repositories and real merged PRs, served offline as GH Archive and GitHub.

A corpus folder (``../shared/fixtures/corpus/``: see its README) holds ``repos.json`` (the
repositories), ``prs.jsonl`` (one merged PR a line, shaped like GitHub's pulls API) and, made
on this machine from fetched snapshots, ``repos/<owner>__<name>.git`` bare remotes. This module
turns it into what the pipeline reads from the internet:

- one GH Archive hour holding a full-format ``PullRequestEvent`` (action ``closed``, merged) per
  PR, as GitHub published them;
- a GitHub API stand-in answering ``/repos/R``, ``/repos/R/pulls/N`` and
  ``/repos/R/pulls/N/files`` for those PRs (``404`` for the rest);
- ``file://`` remotes for extract's clones (``github.git_url_template``).

Used by ``python -m benchmarks.yield`` and by tests with corpora they make themselves.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isal import igzip

from streams.offline.local_http import running
from streams.offline.world import GitHubData, serve_github

log = logging.getLogger("swe_stream.corpus")

# the hour the corpus is published as (any hour would do: nothing checks event times against it)
CORPUS_HOUR = "2026-01-01-0"


class CorpusError(ValueError):
    """A corpus folder that cannot be served, with what to do about it."""


@dataclass(frozen=True)
class CorpusRepository:
    repo: str
    remote: Path  # the bare repository
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Corpus:
    """The repositories and PRs of a corpus folder (possibly a subset)."""

    root: Path
    repositories: list[CorpusRepository]
    pull_requests: list[dict[str, Any]]

    @property
    def git_url_template(self) -> str:
        """``github.git_url_template`` for the bare remotes of ``repos/``."""
        return f"file://{(self.root / 'repos').resolve()}/{{owner}}__{{repo}}.git"

    def repository(self, repo: str) -> CorpusRepository:
        for candidate in self.repositories:
            if candidate.repo == repo:
                return candidate
        raise KeyError(repo)


def serve_like_github(remote: Path) -> None:
    """Let the bare ``remote`` serve partial clones and fetches by sha, as GitHub does: a
    snapshot leaves out its largest files, which a full clone (git's fallback where the remote
    refuses ``--filter``) would need. Left as it is where it cannot be written (a read-only
    corpus: its clones are then full)."""
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        done = subprocess.run(
            ["git", "-C", str(remote), "config", key, "true"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            log.warning("%s: cannot set %s: %s", remote, key, done.stderr.strip()[:200])
            return


def load_corpus(root: Path, only: Iterable[str] = ()) -> Corpus:
    """The corpus at ``root``, restricted to the repositories named in ``only`` (``owner/name``
    or ``name``; all when empty). CorpusError when a remote is missing or a name is unknown."""
    root = Path(root)
    try:
        listed = json.loads((root / "repos.json").read_text(encoding="utf-8"))
        lines = (root / "prs.jsonl").read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{root}: not a corpus folder (repos.json, prs.jsonl): {exc}") from None
    wanted = {name.strip().lower() for name in only if name.strip()}
    repositories = []
    for meta in listed:
        repo = str(meta["repo"])
        if wanted and repo.lower() not in wanted and repo.split("/")[1].lower() not in wanted:
            continue
        remote = root / "repos" / f"{repo.replace('/', '__')}.git"
        if not remote.is_dir():
            raise CorpusError(
                f"{remote} is missing: fetch the corpus repositories and run corpus-remotes "
                "(see the corpus README); for a read-only corpus, `corpus-remotes --into DIR` "
                "and pass DIR/<corpus> as the corpus"
            )
        serve_like_github(remote)
        repositories.append(CorpusRepository(repo, remote, meta))
    known = {r.repo.lower() for r in repositories} | {
        r.repo.split("/")[1].lower() for r in repositories
    }
    unknown = sorted(wanted - known)
    if unknown:
        raise CorpusError(f"not in {root / 'repos.json'}: {', '.join(unknown)}")
    names = {r.repo for r in repositories}
    prs = [pr for pr in map(json.loads, filter(None, lines)) if pr["repo"] in names]
    return Corpus(root, repositories, prs)


def _stable_id(text: str) -> int:
    """A numeric id for ``text``, the same in every process (``hash`` is salted)."""
    return zlib.crc32(text.encode()) or 1


def _owner(repo: str) -> dict[str, Any]:
    owner = repo.split("/")[0]
    return {"login": owner, "id": _stable_id(owner), "type": "User"}


def repository_json(repo: str, meta: dict[str, Any]) -> dict[str, Any]:
    """``GET /repos/{repo}`` for a corpus repository."""
    name = repo.split("/")[1]
    return {
        "id": _stable_id(repo),
        "name": name,
        "full_name": repo,
        "owner": _owner(repo),
        "private": False,
        "fork": False,
        "archived": False,
        "language": meta.get("language", "Python"),
        "stargazers_count": int(meta.get("stargazers_count", 100)),
        "watchers_count": int(meta.get("stargazers_count", 100)),
        "default_branch": meta.get("default_branch", "main"),
    }


def pull_request_json(pr: dict[str, Any]) -> dict[str, Any]:
    """``GET /repos/{repo}/pulls/{number}`` (and the event's ``pull_request``) for a corpus PR."""
    repo = pr["repo"]
    repository = repository_json(repo, pr.get("repo_meta", {}))
    merged_at = pr["merged_at"]
    return {
        "url": f"https://api.github.com/repos/{repo}/pulls/{pr['number']}",
        "id": _stable_id(f"{repo}#{pr['number']}"),
        "number": pr["number"],
        "state": "closed",
        "title": pr["title"],
        "body": pr.get("body") or "",
        "user": {"login": pr.get("author_login") or "contributor", "id": 1, "type": "User"},
        "created_at": merged_at,
        "updated_at": merged_at,
        "closed_at": merged_at,
        "merged_at": merged_at,
        "merged": True,
        "merge_commit_sha": pr["merge_commit_sha"],
        "commits": 1,
        "additions": pr.get("additions", 0),
        "deletions": pr.get("deletions", 0),
        "changed_files": pr.get("changed_files", len(pr.get("files", []))),
        "head": {"ref": f"pr-{pr['number']}", "sha": pr["head_sha"], "repo": repository},
        "base": {"ref": repository["default_branch"], "sha": pr["base_sha"], "repo": repository},
    }


def files_json(pr: dict[str, Any]) -> list[dict[str, Any]]:
    """``GET /repos/{repo}/pulls/{number}/files`` (no patches: extract diffs with git)."""
    out = []
    for item in pr.get("files", []):
        entry = {
            "filename": item["filename"],
            "status": item.get("status", "modified"),
            "additions": item.get("additions", 0),
            "deletions": item.get("deletions", 0),
            "changes": item.get("additions", 0) + item.get("deletions", 0),
        }
        if item.get("previous_filename"):
            entry["previous_filename"] = item["previous_filename"]
        out.append(entry)
    return out


def event_json(pr: dict[str, Any], event_id: int) -> dict[str, Any]:
    """The merge's PullRequestEvent, full-format as GH Archive records it."""
    owner = pr["repo"].split("/")[0]
    return {
        "id": str(9_100_000_000 + event_id),
        "type": "PullRequestEvent",
        "actor": {"id": 2, "login": f"{owner}-maintainer"},
        "repo": {"id": _stable_id(pr["repo"]), "name": pr["repo"]},
        "public": True,
        "created_at": pr["merged_at"],
        "payload": {
            "action": "closed",
            "number": pr["number"],
            "pull_request": pull_request_json(pr),
        },
    }


def corpus_hour(corpus: Corpus) -> bytes:
    """The gzip bytes of one GH Archive hour with every corpus PR's merge event."""
    lines = [
        json.dumps(event_json(pr, index), separators=(",", ":")).encode() + b"\n"
        for index, pr in enumerate(corpus.pull_requests)
    ]
    return igzip.compress(b"".join(lines), compresslevel=1)


def github_data(corpus: Corpus) -> GitHubData:
    data = GitHubData(not_found="Not Found (offline: only the corpus is served)")
    metas = {r.repo: r.meta for r in corpus.repositories}
    for pr in corpus.pull_requests:
        meta = {**metas.get(pr["repo"], {}), **pr.get("repo_meta", {})}
        data.add(
            pr["repo"],
            pr["number"],
            pull_request_json(pr),
            files_json(pr),
            repository_json(pr["repo"], meta),
        )
    return data


@dataclass
class CorpusWorld:
    """Where the pipeline's settings point while the corpus is served."""

    hour_file: Path  # give it to ingest as --source
    github_url: str
    git_url_template: str

    def environment(self) -> dict[str, str]:
        """``SWE_STREAM_*`` variables that send the pipeline to the corpus."""
        return {
            "SWE_STREAM_GITHUB_API_URL": self.github_url,
            "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": self.git_url_template,
            "SWE_STREAM_GITHUB_MAX_ATTEMPTS": "1",
        }


@contextlib.contextmanager
def serve_corpus(corpus: Corpus, workdir: Path) -> Iterator[CorpusWorld]:
    """Write the corpus's hour under ``workdir`` and serve its GitHub API until the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    hour_file = workdir / f"{CORPUS_HOUR}.json.gz"
    hour_file.write_bytes(corpus_hour(corpus))
    with running(serve_github(github_data(corpus)), "corpus-github") as github:
        yield CorpusWorld(hour_file, github.base_url, corpus.git_url_template)
