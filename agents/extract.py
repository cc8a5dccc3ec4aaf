"""Stage ``extract``: ``pr.classified`` -> ``pr.patches``.

On the host, with git only (nothing of the repository runs here): a partial clone per
repository (``--filter=blob:none``, reused across its PRs) fetches the merge commit; the base
commit is the merge's first parent (for a squash or rebase merge that is also the branch it
landed on), else the PR's base sha. The diff base..merge is split by path rules
(``agents.paths``): test files make ``test_patch``, everything else ``patch``.

Tests inside source files (Rust's ``#[cfg(test)] mod tests`` in ``src/foo.rs``) are split by
hunk: for a source file whose language plugin gives the line ranges of its tests
(``Language.test_line_ranges``), the file is read at both commits and a hunk all of whose
changed lines (blank ones aside) lie in tests (added lines in the merge's ranges, removed
ones in the base's) goes to ``test_patch``, every other hunk to ``patch``. Each half keeps the
file's header and its hunks' old line numbers (their new ones are recomputed), so either
applies alone on the base and the other after it (``git apply`` finds the shifted hunks by
their context). A file with test hunks is a test file; with other hunks too, a source file
as well. A file with only test hunks counts as a test for the rejections below.

Rejected with a reason: binary diffs, submodule changes, diffs over ``extract.max_patch_bytes``,
PRs with no source change or only test changes. A clone or fetch that fails raises, so the
runner sends the record to the DLQ and the ledger.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Mapping
from dataclasses import dataclass

from agents.paths import HUNK_HEADER, FileKind, file_kind, inline_test_language, language_of
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


# the bytes of one file read to find the tests inside it: a larger one is split by path only
INLINE_TEST_MAX_BYTES = 1 << 20
# the statuses whose diff has one part with hunks (a type change has two)
_HUNK_SPLIT_STATUSES = frozenset({"added", "modified", "deleted", "renamed", "copied"})
# file header lines two halves of one file's diff may both carry (a rename, a mode change
# or a creation must happen once: such a file is split only when all its hunks go one way)
_PLAIN_HEADER = ("diff --git ", "index ", "--- ", "+++ ")

# path -> (its text at the base, at the merge); None where there is no file
FileTexts = Mapping[str, tuple[str | None, str | None]]


@dataclass(frozen=True)
class SplitDiff:
    patch: str
    test_patch: str
    source_files: list[str]
    test_files: list[str]


@dataclass(frozen=True)
class _Hunk:
    header: str  # its ``@@`` line
    lines: list[str]  # its body, each line with its newline

    def changes(self) -> tuple[list[int], list[int]]:
        """The old line numbers of its removed lines and the new ones of its added lines,
        blank lines aside (they change no code, and follow an added test module)."""
        match = HUNK_HEADER.match(self.header)
        assert match is not None
        old, new = int(match[1]), int(match[3])
        removed, added = [], []
        for line in self.lines:
            sign, blank = line[:1], not line[1:].strip()
            if sign == "-" and not blank:
                removed.append(old)
            elif sign == "+" and not blank:
                added.append(new)
            old += sign in (" ", "-")
            new += sign in (" ", "+")
        return removed, added

    def moved(self, delta: int) -> tuple[str, int]:
        """Its header with the new start ``delta`` lines after the old one (the other half's
        hunks above it absent), and its own delta."""
        match = HUNK_HEADER.match(self.header)
        assert match is not None
        old_start = int(match[1])
        old_count = 1 if match[2] is None else int(match[2])
        new_count = 1 if match[4] is None else int(match[4])
        # a count of 0 names the line before: an insertion starts after it, a removal ends
        start = old_start + delta + (old_count == 0) - (new_count == 0)
        counts = f",{match[4]}" if match[4] is not None else ""
        old_side = self.header[: self.header.index(" +")]
        return f"{old_side} +{start}{counts} @@{match[5]}", new_count - old_count


def _lines(text: str) -> list[str]:
    """``text`` cut after each newline (only ``\\n``: a ``\\r`` inside a line is content)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return [line for line in lines if line]


def _hunks(text: str) -> tuple[list[str], list[_Hunk]] | None:
    """The file header lines and the hunks of one file's diff; None if it is not one part of
    plain hunks (binary, a type change)."""
    header: list[str] = []
    hunks: list[_Hunk] = []
    for line in _lines(text):
        if line.startswith("@@"):
            if not HUNK_HEADER.match(line):
                return None
            hunks.append(_Hunk(line, []))
        elif not hunks:
            header.append(line)
        elif line[:1] in (" ", "+", "-", "\\"):
            hunks[-1].lines.append(line)
        else:
            return None
    return (header, hunks) if hunks else None


def _in(ranges: list[tuple[int, int]], lines: list[int]) -> bool:
    """Whether every line number of ``lines`` is inside one of ``ranges`` (inclusive)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    starts = [start for start, _ in merged]
    for n in lines:
        at = bisect.bisect_right(starts, n) - 1
        if at < 0 or merged[at][1] < n:
            return False
    return True


def _joined(header: list[str], hunks: list[_Hunk]) -> str:
    """One file's diff of ``hunks`` alone, their new starts recomputed."""
    parts, delta = list(header), 0
    for hunk in hunks:
        moved, own = hunk.moved(delta)
        parts += [moved, *hunk.lines]
        delta += own
    return "".join(parts)


def _file_halves(f: FileDiff, texts: FileTexts) -> tuple[str, str]:
    """(its share of ``patch``, its share of ``test_patch``) of one file's diff."""
    kind = file_kind(f.path)
    if kind == "test":
        return "", f.text
    language = inline_test_language(f.path) if f.path in texts else None
    parsed = _hunks(f.text) if language is not None else None
    if language is None or parsed is None or f.binary or f.status not in _HUNK_SPLIT_STATUSES:
        return f.text, ""
    old_text, new_text = texts[f.path]
    old_ranges = language.test_line_ranges(f.path, old_text or "") or []
    new_ranges = language.test_line_ranges(f.path, new_text or "") or []
    header, hunks = parsed
    tests: list[_Hunk] = []
    others: list[_Hunk] = []
    for hunk in hunks:
        removed, added = hunk.changes()
        is_test = bool(removed or added) and _in(old_ranges, removed) and _in(new_ranges, added)
        (tests if is_test else others).append(hunk)
    if not tests:
        return f.text, ""
    if not others:
        return "", f.text
    if not all(line.startswith(_PLAIN_HEADER) for line in header):
        return f.text, ""  # a rename or mode change cannot be made twice: all to the fix
    return _joined(header, others), _joined(header, tests)


# one file's diff, its share of ``patch`` and its share of ``test_patch``
Share = tuple[FileDiff, str, str]


def shares_of(files: list[FileDiff], texts: FileTexts | None = None) -> list[Share]:
    """Each file with its shares of ``patch`` and ``test_patch``: by path rules, and by hunk
    for a source file whose texts at the base and the merge ``texts`` has."""
    return [(f, *_file_halves(f, texts or {})) for f in files]


def inline_test_candidates(files: list[FileDiff]) -> list[FileDiff]:
    """The changed files that may hold tests of their own: read them for ``split_diff``."""
    return [
        f
        for f in files
        if not (f.binary or f.submodule)
        and f.status in _HUNK_SPLIT_STATUSES
        and inline_test_language(f.path) is not None
    ]


def split_shares(shares: list[Share]) -> SplitDiff:
    """The two patches and the file lists of the files' ``shares``."""
    return SplitDiff(
        patch="".join(gold for _, gold, _ in shares),
        test_patch="".join(tests for _, _, tests in shares),
        source_files=[f.path for f, gold, _ in shares if gold and file_kind(f.path) == "source"],
        test_files=[f.path for f, _, tests in shares if tests and f.status != "deleted"],
    )


def split_diff(files: list[FileDiff], texts: FileTexts | None = None) -> SplitDiff:
    """Test files (by path rules) and test hunks of source files (by ``texts``: the files'
    texts at the base and the merge) to ``test_patch``, the rest to ``patch``; order kept."""
    return split_shares(shares_of(files, texts))


def check_shares(shares: list[Share]) -> str | None:
    """``tests_only`` or ``no_source_change`` by the files' shares (a source file whose hunks
    are all tests is a test), or None."""
    kinds: set[FileKind] = set()
    for f, gold, tests in shares:
        kinds |= {file_kind(f.path)} if gold else set()
        kinds |= {"test"} if tests else set()
    if kinds == {"test"}:
        return TESTS_ONLY
    if "source" not in kinds:
        return NO_SOURCE
    return None


def check_diff(files: list[FileDiff], max_bytes: int, texts: FileTexts | None = None) -> str | None:
    """A rejection reason for a diff no task can be made of, or None; a source file whose
    hunks are all tests (by ``texts``, as ``split_diff``) counts as a test."""
    if not files:
        return EMPTY
    if any(f.submodule for f in files):
        return SUBMODULE
    if any(f.binary for f in files):
        return BINARY
    if sum(len(f.text.encode()) for f in files) > max_bytes:
        return TOO_LARGE
    return check_shares(shares_of(files, texts))


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
        # by path first: the files are read only for a diff that may make a task
        reason = check_diff(files, self.settings.max_patch_bytes)
        if reason:
            return Outcome.reject(reason)
        texts = await asyncio.to_thread(self._texts, pr.repo, base, merge, files)
        shares = await asyncio.to_thread(shares_of, files, texts)  # lexes the texts read
        reason = check_shares(shares)
        if reason:
            return Outcome.reject(reason)
        split = split_shares(shares)
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

    def _texts(
        self, repo: str, base: str, merge: str, files: list[FileDiff]
    ) -> dict[str, tuple[str | None, str | None]]:
        """The texts at both commits of the files that may hold tests (none too large)."""
        texts = {}
        for f in inline_test_candidates(files):
            old = None
            if f.status != "added":
                old = self.repos.text_at(repo, base, f.old_path or f.path, INLINE_TEST_MAX_BYTES)
            new = None
            if f.status != "deleted":
                new = self.repos.text_at(repo, merge, f.path, INLINE_TEST_MAX_BYTES)
            # a side missing where the file is (over the size limit): split by path only
            if (old is not None) == (f.status != "added") and (new is not None) == (
                f.status != "deleted"
            ):
                texts[f.path] = (old, new)
        return texts


def extract_stage(
    settings: ExtractSettings, repos: RepoCache, pipeline_version: int
) -> Stage[ClassifiedPullRequest]:
    # screening: its rejections, before any test ran, are DEBUG lines like enrich's
    handler = Extract(repos, settings, pipeline_version)
    return Stage(STAGE, CLASSIFIED, PATCHES, handler, screening=True)
