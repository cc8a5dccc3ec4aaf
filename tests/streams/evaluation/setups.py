"""Repositories in the set-up styles of real projects, made with git by the tests, and one
validation of their PR through extract and the validate stage (real Docker, real installs
from PyPI): the calc package's ``add`` subtracts, the PR fixes it and adds ``test_add``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.recipes.overrides import Overrides
from streams.evaluation.validator import Validator
from streams.pipeline.stage import Outcome
from tests.agents.repo_tasks import classified_for
from tests.git_repos import make_pull_request_repo

OPS = (
    "def add(a, b):\n    return a - b\n\n\n"
    "def sub(a, b):\n    return a - b\n"
)  # fmt: skip
FIXED_OPS = OPS.replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub")
TESTS = (
    "from calc.ops import sub\n\n\n"
    "def test_sub():\n    assert sub(3, 1) == 2\n\n\n"
    "def test_sub_negative():\n    assert sub(1, 3) == -2\n"
)
TEST_ADD = "\n\ndef test_add():\n    from calc.ops import add\n\n    assert add(2, 3) == 5\n"
SETUP_PY = "from setuptools import setup\n\nsetup(name='calc', version='1.0', packages=['calc'])\n"
F2P = ["tests/test_ops.py::test_add"]
P2P = ["tests/test_ops.py::test_sub", "tests/test_ops.py::test_sub_negative"]


def calc_files(**extra: str) -> dict[str, str]:
    """The base tree: setup.py, the calc package, its tests; ``extra`` files added."""
    return {
        "setup.py": SETUP_PY,
        "calc/__init__.py": "",
        "calc/ops.py": OPS,
        "tests/__init__.py": "",
        "tests/test_ops.py": TESTS,
        **extra,
    }


def fix_files(**extra: str | None) -> dict[str, str | None]:
    """The PR: the fix and ``test_add`` (plus ``extra`` changes)."""
    return {"calc/ops.py": FIXED_OPS, "tests/test_ops.py": TESTS + TEST_ADD, **extra}


def validator_for(
    repos: RepoCache,
    docker_client: Any,
    python_images: dict[str, str],
    attempts: int = 2,
    overrides: Overrides | None = None,
) -> Validator:
    docker = DockerSettings(
        toolchain_images={"python": python_images}, cache_level="env", memory_mb=1024, cpus=1
    )
    settings = ValidateSettings(runs=1, test_timeout_seconds=300, max_python_attempts=attempts)
    return Validator(repos, lambda: docker_client, docker, settings, 1, overrides)


async def patches_for(
    root: Path,
    base: dict[str, str],
    pr: dict[str, str | None],
    created: datetime | None = None,
    repo: str = "swe-stream-test/calc",
) -> tuple[PatchSet, RepoCache]:
    made = make_pull_request_repo(root / "git", repo=repo, base_files=base, pr_files=pr)
    repos = RepoCache(root / "cache", made.url_template)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(made))).outputs
    assert isinstance(patches, PatchSet)
    if created is not None:
        patches = patches.model_copy(update={"created_at": created})
    return patches, repos


async def validate(
    root: Path,
    docker_client: Any,
    python_images: dict[str, str],
    base: dict[str, str],
    pr: dict[str, str | None],
    *,
    created: datetime | None = None,
    attempts: int = 2,
    overrides: Overrides | None = None,
) -> Outcome:
    """The validate stage's outcome for the repository's PR."""
    patches, repos = await patches_for(root, base, pr, created)
    validator = validator_for(repos, docker_client, python_images, attempts, overrides)
    return await ValidateStage(validator)(patches)


def when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
