"""Stage ``enrich``: ``pr.candidates`` -> ``pr.enriched``.

Completes a candidate from the GitHub REST API, spending calls only where the event is silent
and rejecting as early as the data allows (each rejection is free of the calls after it):

1. the PR itself: carried whole by a full payload (no call); fetched for a slim one, which
   also confirms the merge (a slim ``closed`` may be unmerged);
2. the local filter on the PR's numbers: files changed, added lines (no call);
3. the repository (stars, language, license, archived, fork): from a full payload's
   ``base.repo`` (no call), else from a cache table with a TTL, revalidated with its ETag
   (a 304 costs no quota) - one call per repository per TTL at most;
4. the changed files (one call per 100 files): docs-only, test-only and PRs without a
   non-test source change are rejected;
5. issues linked from the body (``fixes #N``, ``closes owner/repo#N``, ...): their title and
   body become the problem statement, as in SWE-bench; without one, the PR's own title and
   body are used.

A call that still fails after the client's retries raises: the runner sends the candidate to
``pr.candidates.dlq`` and the ledger (``failed``, with the error).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from pydantic import ValidationError

from agents.bots import is_bot
from agents.linked_issues import parse_linked_issues
from agents.paths import file_kind
from schemas import (
    ChangedFile,
    EnrichedPullRequest,
    LinkedIssue,
    PullRequestCandidate,
    RepositoryInfo,
)
from streams.clients.github import GitHubClient, GitHubNotFound
from streams.core import metrics
from streams.core.settings import EnrichSettings
from streams.evaluation.recipes.languages import languages
from streams.kafka.topics import CANDIDATES, ENRICHED
from streams.pipeline.stage import Outcome, Stage

log = logging.getLogger("swe_stream.enrich")

STAGE = "enrich"
# Kafka's default message limit is 1 MiB: keep per-file patches only up to this total.
PATCH_BUDGET_CHARS = 256 * 1024

# rejection reasons (final for this pipeline version)
NOT_MERGED = "not_merged"
BOT = "bot"
NO_MERGE_COMMIT = "no_merge_commit"
FILES_OUT_OF_RANGE = "files_out_of_range"
ADDITIONS_OUT_OF_RANGE = "additions_out_of_range"
LANGUAGE = "language_not_allowed"
TOO_FEW_STARS = "too_few_stars"
DOCS_ONLY = "docs_only"
TESTS_ONLY = "tests_only"
NO_SOURCE_CHANGE = "no_source_change"


def known() -> list[str]:
    """The repository languages validation can install and test: every registered
    language's name and other names (TypeScript for JavaScript)."""
    return [
        name
        for language in languages()
        for name in dict.fromkeys([language.name, *sorted(language.spellings)])
    ]


@dataclass(frozen=True)
class EnrichRules:
    """The local filter; built from ``EnrichSettings`` (and the prefilter's bot list)."""

    languages: frozenset[str] = frozenset()  # lower-case; empty = every language
    min_stars: int = 20
    min_files: int = 1
    max_files: int = 50
    min_added_lines: int = 3
    max_added_lines: int = 1000
    require_source_change: bool = True
    max_linked_issues: int = 3
    bots: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: EnrichSettings, bots: list[str] | None = None) -> EnrichRules:
        return cls(
            languages=frozenset(
                lang.lower()
                for lang in (settings.languages if settings.languages is not None else known())
            ),
            min_stars=settings.min_stars,
            min_files=settings.min_files,
            max_files=settings.max_files,
            min_added_lines=settings.min_added_lines,
            max_added_lines=settings.max_added_lines,
            require_source_change=settings.require_source_change,
            max_linked_issues=settings.max_linked_issues,
            bots=frozenset(login.lower() for login in bots or ()),
        )


# the local filter: pure functions, each returns a rejection reason or None ---------------------


def check_size(changed_files: int, additions: int, rules: EnrichRules) -> str | None:
    if not rules.min_files <= changed_files <= rules.max_files:
        return FILES_OUT_OF_RANGE
    if not rules.min_added_lines <= additions <= rules.max_added_lines:
        return ADDITIONS_OUT_OF_RANGE
    return None


def check_repository(info: RepositoryInfo, rules: EnrichRules) -> str | None:
    if rules.languages and (info.language or "").lower() not in rules.languages:
        return LANGUAGE
    if info.stars < rules.min_stars:
        return TOO_FEW_STARS
    return None


def check_files(files: list[ChangedFile], rules: EnrichRules) -> str | None:
    # By path only. A source file holding tests of its own (Rust's #[cfg(test)] modules in
    # src/*.rs) is a source change here, so a PR changing only such files passes: extract
    # splits their test hunks out (and rejects one whose hunks are all tests).
    kinds = {file_kind(f.filename) for f in files}
    if kinds == {"docs"}:
        return DOCS_ONLY
    if kinds == {"test"}:
        return TESTS_ONLY
    if rules.require_source_change and "source" not in kinds:
        return NO_SOURCE_CHANGE
    return None


# conversions from GitHub's JSON ------------------------------------------------------------


def repository_info(repo: dict[str, Any], fallback_branch: str = "main") -> RepositoryInfo:
    """RepositoryInfo from a repository object (API answer or a PR's ``base.repo``)."""
    license_ = repo.get("license")
    spdx = license_.get("spdx_id") if isinstance(license_, dict) else None
    return RepositoryInfo(
        stars=int(repo.get("stargazers_count") or repo.get("watchers_count") or 0),
        language=repo.get("language"),
        license=spdx if isinstance(spdx, str) else None,
        archived=bool(repo.get("archived", False)),
        fork=bool(repo.get("fork", False)),
        default_branch=repo.get("default_branch") or repo.get("master_branch") or fallback_branch,
    )


def changed_files(files: list[dict[str, Any]]) -> list[ChangedFile]:
    """ChangedFile records; patches kept while they fit the message budget."""
    budget = PATCH_BUDGET_CHARS
    result = []
    for item in files:
        patch = item.get("patch")
        if isinstance(patch, str) and len(patch) <= budget:
            budget -= len(patch)
        else:
            patch = None
        result.append(
            ChangedFile(
                filename=item["filename"],
                status=item.get("status", "modified"),
                additions=item.get("additions", 0),
                deletions=item.get("deletions", 0),
                changes=item.get("changes", 0),
                patch=patch,
                previous_filename=item.get("previous_filename"),
            )
        )
    return result


def problem_statement(issues: list[LinkedIssue], title: str, body: str | None) -> str:
    """The linked issues' text (SWE-bench style), else the PR's own title and body."""
    parts = [f"{i.title}\n{i.body or ''}".strip() for i in issues] or [
        f"{title}\n{body or ''}".strip()
    ]
    return "\n\n".join(parts)


# the repository cache ------------------------------------------------------------------------


@dataclass
class CachedRepository:
    fetched_at: float
    etag: str | None
    info: RepositoryInfo

    def to_bytes(self) -> bytes:
        return orjson.dumps(
            {"fetched_at": self.fetched_at, "etag": self.etag, "info": self.info.model_dump()}
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> CachedRepository | None:
        try:
            data = orjson.loads(raw)
            return cls(float(data["fetched_at"]), data.get("etag"), RepositoryInfo(**data["info"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, ValidationError):
            return None  # an entry written by another version of this code: fetch again


class RepositoryCache:
    """Repository facts per ``owner/repo``, in any bytes mapping (a Faust table in a worker)."""

    def __init__(
        self,
        table: MutableMapping[bytes, bytes],
        github: GitHubClient,
        ttl_seconds: float,
        clock: Callable[[], float] = time.time,
    ):
        self.table = table
        self.github = github
        self.ttl = ttl_seconds
        self.clock = clock
        self._pending: dict[bytes, asyncio.Future[CachedRepository]] = {}

    async def get(self, repo: str) -> RepositoryInfo:
        key = repo.lower().encode()
        pending = self._pending.get(key)
        if pending is not None:  # another PR of this repo is fetching it right now
            metrics.ENRICH_REPO_CACHE.labels(result="hit").inc()
            return (await asyncio.shield(pending)).info
        raw = self.table.get(key)
        cached = CachedRepository.from_bytes(raw) if raw is not None else None
        now = self.clock()
        if cached is not None and now - cached.fetched_at < self.ttl:
            metrics.ENRICH_REPO_CACHE.labels(result="hit").inc()
            return cached.info
        fetch = asyncio.ensure_future(self._fetch(repo, cached, now))
        self._pending[key] = fetch
        try:
            fresh = await asyncio.shield(fetch)
        finally:
            self._pending.pop(key, None)
        self.table[key] = fresh.to_bytes()
        return fresh.info

    async def _fetch(
        self, repo: str, cached: CachedRepository | None, now: float
    ) -> CachedRepository:
        response = await self.github.repository(repo, etag=cached.etag if cached else None)
        if response.not_modified and cached is not None:
            metrics.ENRICH_REPO_CACHE.labels(result="revalidated").inc()
            return CachedRepository(now, cached.etag, cached.info)
        metrics.ENRICH_REPO_CACHE.labels(result="miss").inc()
        if not isinstance(response.data, dict):
            raise ValueError(f"repository {repo}: expected a JSON object")
        return CachedRepository(now, response.etag, repository_info(response.data))

    def offer(self, repo: str, info: RepositoryInfo) -> None:
        """Facts a full payload carried for free; kept unless fresher ones are cached."""
        key = repo.lower().encode()
        raw = self.table.get(key)
        cached = CachedRepository.from_bytes(raw) if raw is not None else None
        if cached is None or self.clock() - cached.fetched_at >= self.ttl:
            self.table[key] = CachedRepository(self.clock(), None, info).to_bytes()


# the stage ---------------------------------------------------------------------------------


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None


class Enricher:
    """The stage's handler."""

    def __init__(
        self,
        github: GitHubClient,
        repositories: RepositoryCache,
        rules: EnrichRules,
        pipeline_version: int,
    ):
        self.github = github
        self.repositories = repositories
        self.rules = rules
        self.pipeline_version = pipeline_version

    async def __call__(self, candidate: PullRequestCandidate) -> Outcome:
        repo, number = candidate.repo, candidate.number
        carried = candidate.payload_format == "full" and candidate.pull_request is not None
        pr = candidate.pull_request if carried else await self.github.pull_request(repo, number)
        assert pr is not None
        if not pr.get("merged") and not pr.get("merged_at"):
            return Outcome.reject(NOT_MERGED)
        user = pr.get("user") or {}
        author = user.get("login") or candidate.actor_login
        if is_bot(author, self.rules.bots):
            return Outcome.reject(BOT)
        merge_commit = pr.get("merge_commit_sha") or candidate.merge_commit_sha
        merged_at = _when(pr.get("merged_at"))
        if not merge_commit or merged_at is None:
            return Outcome.reject(NO_MERGE_COMMIT)
        reason = check_size(
            int(pr.get("changed_files") or 0), int(pr.get("additions") or 0), self.rules
        )
        if reason:
            return Outcome.reject(reason)

        base = pr.get("base") or {}
        base_repo = base.get("repo")
        if carried and isinstance(base_repo, dict):
            info = repository_info(base_repo, base.get("ref") or "main")
            metrics.ENRICH_REPO_CACHE.labels(result="event").inc()
            self.repositories.offer(repo, info)
        else:
            info = await self.repositories.get(repo)
        reason = check_repository(info, self.rules)
        if reason:
            return Outcome.reject(reason)

        files = changed_files(await self.github.pull_request_files(repo, number))
        reason = check_files(files, self.rules)
        if reason:
            return Outcome.reject(reason)

        title, body = str(pr.get("title") or ""), pr.get("body")
        issues = await self._linked_issues(repo, body)
        created_at = _when(pr.get("created_at")) or candidate.created_at
        enriched = EnrichedPullRequest(
            pipeline_version=self.pipeline_version,
            repo=repo,
            number=number,
            title=title,
            body=body,
            merged_at=merged_at,
            merge_commit_sha=merge_commit,
            base_sha=base.get("sha") or candidate.base_sha,
            base_ref=base.get("ref") or info.default_branch,
            additions=int(pr.get("additions") or 0),
            deletions=int(pr.get("deletions") or 0),
            changed_files=int(pr.get("changed_files") or len(files)),
            files=files,
            repo_info=info,
            linked_issues=issues,
            problem_statement=problem_statement(issues, title, body),
            created_at=created_at,
            author_login=author,
        )
        return Outcome.accept(enriched)

    async def _linked_issues(self, repo: str, body: str | None) -> list[LinkedIssue]:
        found = []
        for ref in parse_linked_issues(body, repo, limit=self.rules.max_linked_issues):
            try:
                issue = await self.github.issue(ref.repo, ref.number)
            except GitHubNotFound:
                # DEBUG: one more line per PR of a screening stage (see streams.pipeline.stage)
                log.debug("linked issue %s#%d not found; ignored", ref.repo, ref.number)
                continue
            if "pull_request" in issue:
                continue  # "fixes #12" where #12 is another PR: not a problem statement
            found.append(
                LinkedIssue(
                    repo=ref.repo,
                    number=ref.number,
                    title=str(issue.get("title") or ""),
                    body=issue.get("body"),
                )
            )
        return found


def enrich_stage(
    settings: EnrichSettings,
    github: GitHubClient,
    repositories: RepositoryCache,
    pipeline_version: int,
    bots: list[str],
    concurrency: int,
) -> Stage[PullRequestCandidate]:
    rules = EnrichRules.from_settings(settings, bots)
    handler = Enricher(github, repositories, rules, pipeline_version)
    # screening: most PRs prefilter keeps end here (stars, language, size): lines at DEBUG
    return Stage(STAGE, CANDIDATES, ENRICHED, handler, concurrency=concurrency, screening=True)
