"""extract: the diff of a real merged PR (real git, served over file://) split into patch and
test_patch; rejections for tests-only, binary and oversized diffs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.extract import (
    TESTS_ONLY,
    TOO_LARGE,
    Extract,
    check_diff,
    split_diff,
)
from schemas import DeadLetter, LedgerEntry, PatchSet
from streams.clients.git import FileDiff, RepoCache
from streams.core.settings import ExtractSettings
from streams.kafka.topics import CLASSIFIED, LEDGER, PATCHES
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage, StageRunner
from tests.agents.repo_tasks import BASE_FILES, classified_for, make_calc_repo


def diff(path: str, *, binary: bool = False, submodule: bool = False) -> FileDiff:
    text = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x\n+y\n"
    return FileDiff(path, None, "modified", binary, submodule, 1, 1, text)


@pytest.mark.unit
def test_split_and_checks_by_path_rules() -> None:
    files = [diff("src/app.py"), diff("tests/test_app.py"), diff("docs/index.md")]
    split = split_diff(files)
    assert split.source_files == ["src/app.py"] and split.test_files == ["tests/test_app.py"]
    assert "tests/test_app.py" in split.test_patch and "tests/test_app.py" not in split.patch
    assert "docs/index.md" in split.patch  # non-test changes belong to the gold patch
    assert check_diff(files, 10_000) is None
    assert check_diff([diff("tests/test_app.py")], 10_000) == TESTS_ONLY
    assert check_diff([diff("docs/a.md"), diff("tests/t_test.go")], 10_000) == "no_source_change"
    assert check_diff([diff("src/a.py", binary=True)], 10_000) == "binary_diff"
    assert check_diff([diff("src/a.py"), diff("vendor", submodule=True)], 10_000) == (
        "submodule_change"
    )
    assert check_diff(files, 50) == TOO_LARGE
    assert check_diff([], 50) == "empty_diff"


@pytest.mark.integration
async def test_merged_pr_is_split_into_patch_and_test_patch(tmp_path: Path) -> None:
    pr = make_calc_repo(tmp_path / "git")
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(classified_for(pr))
    (patches,) = outcome.outputs
    assert isinstance(patches, PatchSet)
    assert patches.instance_id == "swe-stream-test__calc-1"
    # the merge's first parent: main after the README commit, not the PR's branch point
    assert patches.base_commit == repos.parents(pr.repo, pr.merge_sha)[0] != pr.base_sha
    assert patches.source_files == ["calc/ops.py"] and patches.test_files == ["tests/test_ops.py"]
    assert "+    return a + b" in patches.patch and "test_add" not in patches.patch
    assert "+def test_add():" in patches.test_patch and "README" not in patches.test_patch
    assert patches.language == "Python" and patches.classification == "easy"


@pytest.mark.integration
async def test_tests_only_pr_is_rejected(tmp_path: Path) -> None:
    only_tests = {"tests/test_ops.py": BASE_FILES["tests/test_ops.py"] + "\n# more\n"}
    pr = make_calc_repo(tmp_path / "git", only_tests)
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(classified_for(pr))
    assert (outcome.status, outcome.reason) == ("rejected", TESTS_ONLY)


@pytest.mark.integration
async def test_a_clone_failure_goes_to_the_dlq_and_the_ledger(tmp_path: Path) -> None:
    pr = make_calc_repo(tmp_path / "git")
    repos = RepoCache(tmp_path / "cache", f"file://{tmp_path}/nowhere/{{owner}}/{{repo}}.git")
    sink = MemorySink()
    stage = Stage("extract", CLASSIFIED, PATCHES, Extract(repos, ExtractSettings(), 1))
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    record = classified_for(pr)
    assert await runner.process(record.key.encode(), record.to_json(), 0, 3) is None
    (letter,) = [DeadLetter.from_json(v) for _, v in sink.on(CLASSIFIED.dlq_name)]
    assert letter.error_type == "CloneError" and "nowhere" in letter.error
    (entry,) = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    assert entry.status == "failed" and entry.reason and entry.reason.startswith("CloneError")
