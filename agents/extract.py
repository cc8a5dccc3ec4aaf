"""Stage ``extract``: ``pr.classified`` -> ``pr.patches``.

On the host, with git only (nothing of the repository runs here): a partial clone per
repository (``--filter=blob:none``, reused across its PRs) fetches the merge commit; the base
commit is the merge's first parent (for a squash or rebase merge that is also the branch it
landed on), else the PR's base sha. The diff base..merge is split by path rules
(``agents.paths``): test files make ``test_patch``, everything else ``patch``.

Rejected with a reason: binary diffs, submodule changes, diffs over ``extract.max_patch_bytes``,
PRs with no source change or only test changes. A clone or fetch that fails raises, so the
runner sends the record to the DLQ and the ledger.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agents.paths import file_kind, language_of
from schemas import ClassifiedPullRequest, PatchSet, instance_id_for
from streams.clients.git import FileDiff, RepoCache
from streams.core.settings import ExtractSettings
from streams.kafka.topics import CLASSIFIED, PATCHES
from streams.pipeline.stage import Outcome, Stage

STAGE = "extract"

BINARY = "binary_diff"
SUBMODULE = "submodule_change"
TOO_LARGE = "diff_too_large"
TESTS_ONLY = "tests_only"
NO_SOURCE = "no_source_change"
EMPTY = "empty_diff"


@dataclass(frozen=True)
class SplitDiff:
    patch: str
    test_patch: str
    source_files: list[str]
    test_files: list[str]


def split_diff(files: list[FileDiff]) -> SplitDiff:
    """Test files (by path rules) to ``test_patch``, the rest to ``patch``; file order kept."""
    tests = [f for f in files if file_kind(f.path) == "test"]
    others = [f for f in files if file_kind(f.path) != "test"]
    return SplitDiff(
        patch="".join(f.text for f in others),
        test_patch="".join(f.text for f in tests),
        source_files=[f.path for f in others if file_kind(f.path) == "source"],
        test_files=[f.path for f in tests if f.status != "deleted"],
    )


def check_diff(files: list[FileDiff], max_bytes: int) -> str | None:
    """A rejection reason for a diff no task can be made of, or None."""
    if not files:
        return EMPTY
    if any(f.submodule for f in files):
        return SUBMODULE
    if any(f.binary for f in files):
        return BINARY
    if sum(len(f.text.encode()) for f in files) > max_bytes:
        return TOO_LARGE
    kinds = {file_kind(f.path) for f in files}
    if kinds == {"test"}:
        return TESTS_ONLY
    if "source" not in kinds:
        return NO_SOURCE
    return None


class Extract:
    def __init__(self, repos: RepoCache, settings: ExtractSettings, pipeline_version: int):
        self.repos = repos
        self.settings = settings
        self.pipeline_version = pipeline_version

    async def __call__(self, classified: ClassifiedPullRequest) -> Outcome:
        pr = classified.pull_request
        merge = pr.merge_commit_sha
        await asyncio.to_thread(self.repos.ensure, pr.repo, merge)
        parents = await asyncio.to_thread(self.repos.parents, pr.repo, merge)
        base = parents[0] if parents else pr.base_sha
        if not parents:  # a root commit: diff against the PR's base, fetched if need be
            await asyncio.to_thread(self.repos.ensure, pr.repo, base)
        files = await asyncio.to_thread(self.repos.diff, pr.repo, base, merge)
        reason = check_diff(files, self.settings.max_patch_bytes)
        if reason:
            return Outcome.reject(reason)
        split = split_diff(files)
        languages = [lang for f in split.source_files if (lang := language_of(f))]
        language = pr.repo_info.language or (
            max(set(languages), key=languages.count) if languages else None
        )
        return Outcome.accept(
            PatchSet(
                pipeline_version=self.pipeline_version,
                repo=pr.repo,
                number=pr.number,
                instance_id=instance_id_for(pr.repo, pr.number),
                base_commit=base,
                patch=split.patch,
                test_patch=split.test_patch,
                environment_setup_commit=base,
                language=language,
                title=pr.title,
                body=pr.body or "",
                problem_statement=pr.problem_statement,
                hints_text=pr.hints_text,
                created_at=pr.created_at,
                test_files=split.test_files,
                source_files=split.source_files,
                classification=classified.classification,
                score=classified.score,
            )
        )


def extract_stage(
    settings: ExtractSettings, repos: RepoCache, pipeline_version: int
) -> Stage[ClassifiedPullRequest]:
    return Stage(STAGE, CLASSIFIED, PATCHES, Extract(repos, settings, pipeline_version))
