"""A small Python repository with a bug and the PR that fixes it, made with real git by the
test, plus the records the pipeline would carry for that PR (shared by extract / validate
tests and the validation benchmark)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from schemas import ClassifiedPullRequest, EnrichedPullRequest, RepositoryInfo
from tests.git_repos import PullRequestRepo, make_pull_request_repo

REPO = "swe-stream-test/calc"

BASE_FILES = {
    "README.md": "# calc\n\nA tiny calculator.\n",
    "calc/__init__.py": "from calc.ops import add, sub\n\n__all__ = ['add', 'sub']\n",
    "calc/ops.py": (
        '"""Arithmetic."""\n\n\n'
        "def add(a, b):\n"
        '    """The sum of a and b."""\n'
        "    return a - b\n\n\n"
        "def sub(a, b):\n"
        '    """The difference of a and b."""\n'
        "    return a - b\n"
    ),
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "from calc import sub\n\n\n"
        "def test_sub():\n"
        "    assert sub(3, 1) == 2\n\n\n"
        "def test_sub_negative():\n"
        "    assert sub(1, 3) == -2\n"
    ),
}

FIXED_OPS = BASE_FILES["calc/ops.py"].replace(
    '"""The sum of a and b."""\n    return a - b', '"""The sum of a and b."""\n    return a + b'
)
TEST_ADD = "\n\ndef test_add():\n    from calc import add\n\n    assert add(2, 3) == 5\n"
FLAKY = (
    "\n\ndef test_flaky():\n"
    "    import pathlib\n\n"
    "    marker = pathlib.Path('/tmp/flaky-count')\n"
    "    count = int(marker.read_text()) if marker.exists() else 0\n"
    "    marker.write_text(str(count + 1))\n"
    "    assert count % 2 == 0  # passes, fails, passes, ...: a flaky test\n"
)
HANGS = "\n\ndef test_zz_hangs():\n    import time\n\n    time.sleep(3600)\n"


def pr_files(*extra_tests: str) -> dict[str, str | None]:
    """The fix plus ``test_add`` (and any extra tests) appended to the existing test file."""
    return {
        "calc/ops.py": FIXED_OPS,
        "tests/test_ops.py": BASE_FILES["tests/test_ops.py"] + TEST_ADD + "".join(extra_tests),
    }


def make_calc_repo(root: Path, files: dict[str, str | None] | None = None) -> PullRequestRepo:
    return make_pull_request_repo(
        root,
        repo=REPO,
        base_files=BASE_FILES,
        pr_files=files if files is not None else pr_files(),
        main_files_after_branch={"README.md": BASE_FILES["README.md"] + "\nMIT licensed.\n"},
    )


def classified_for(pr: PullRequestRepo, number: int = 1) -> ClassifiedPullRequest:
    """What classify would emit for the repository's PR."""
    when = datetime(2026, 11, 1, tzinfo=UTC)
    enriched = EnrichedPullRequest(
        pipeline_version=1,
        repo=pr.repo,
        number=number,
        title="Fix add()",
        body="add() subtracts. Fixes #0.",
        merged_at=when,
        merge_commit_sha=pr.merge_sha,
        base_sha=pr.base_sha,
        base_ref="main",
        additions=7,
        deletions=1,
        changed_files=2,
        files=[],
        repo_info=RepositoryInfo(stars=100, language="Python", default_branch="main"),
        problem_statement="add(2, 3) returns -1 instead of 5: `calc.add` subtracts.",
        created_at=when,
        author_login="dev",
    )
    return ClassifiedPullRequest(
        pipeline_version=1,
        repo=pr.repo,
        number=number,
        pull_request=enriched,
        classification="easy",
        score=0.2,
        reasoning="a one-character fix",
        classified_by="heuristic",
    )
