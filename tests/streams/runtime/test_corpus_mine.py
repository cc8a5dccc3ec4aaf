"""``mine`` end to end on a corpus of three repositories in the set-up styles of the real
corpus (setup.py + tox + a test requirements file; flit with a test extra and coverage and
colour in addopts; poetry-core with dev-dependencies and unittest classes), made by the test:
served as a GH Archive hour and a GitHub stand-in (``streams.offline.corpus``), mined by the
real pipeline on an embedded broker (``benchmarks.yield``'s run), each PR a validated task.
CI cannot fetch the real corpus; ``python -m benchmarks.yield`` runs that one."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from streams.offline.corpus import load_corpus
from tests.git_repos import CorpusPullRequest, make_corpus_dir
from tests.streams.evaluation.setups import OPS, TESTS, fix_files

pytestmark = pytest.mark.docker
yield_benchmark = importlib.import_module("benchmarks.yield")

UNITTEST_TESTS = (
    "import unittest\n\nfrom calc.ops import sub\n\n\n"
    "class TestOps(unittest.TestCase):\n"
    "    def test_sub(self):\n        self.assertEqual(sub(3, 1), 2)\n"
)
UNITTEST_ADD = (
    "\n    def test_add(self):\n        from calc.ops import add\n\n"
    "        self.assertEqual(add(2, 3), 5)\n"
)
SETUPS: dict[str, tuple[dict[str, str], dict[str, str | None], str]] = {
    "corpus-test/tox-style": (
        {
            "setup.py": "from setuptools import setup\nsetup(name='calc', packages=['calc'])\n",
            "tox.ini": "[tox]\nenvlist = py39,py311\n[testenv]\n"
            "deps = -r requirements/tests.txt\ncommands = pytest {posargs}\n",
            "requirements/tests.txt": "pytest\n-e .\n",
            "calc/__init__.py": "",
            "calc/ops.py": OPS,
            "tests/test_ops.py": TESTS,
        },
        fix_files(),
        "2023-03-01T10:00:00Z",
    ),
    "corpus-test/flit-style": (
        {
            "pyproject.toml": "[build-system]\nrequires = ['flit_core>=3.4']\n"
            "build-backend = 'flit_core.buildapi'\n[project]\nname = 'calc'\n"
            "version = '1.0'\ndescription = 'calc'\nrequires-python = '>=3.9'\n"
            "[project.optional-dependencies]\ntest = ['pytest', 'pytest-cov']\n"
            "[tool.pytest.ini_options]\naddopts = '--cov=calc --cov-fail-under=100 --color=yes'\n",
            "calc/__init__.py": '"""calc."""\n',
            "calc/ops.py": OPS,
            "tests/test_ops.py": TESTS,
        },
        fix_files(),
        "2025-02-01T10:00:00Z",
    ),
    "corpus-test/poetry-style": (
        {
            "pyproject.toml": "[build-system]\nrequires = ['poetry-core>=1.0.0']\n"
            "build-backend = 'poetry.core.masonry.api'\n[tool.poetry]\nname = 'calc'\n"
            "version = '1.0'\ndescription = ''\nauthors = ['a <a@b.c>']\n"
            "packages = [{include = 'calc'}]\n"
            "[tool.poetry.dependencies]\npython = '^3.9'\n"
            "[tool.poetry.dev-dependencies]\npytest = '>=7'\n",
            "calc/__init__.py": "",
            "calc/ops.py": OPS,
            "tests/test_ops.py": UNITTEST_TESTS,
        },
        {
            "calc/ops.py": fix_files()["calc/ops.py"],
            "tests/test_ops.py": UNITTEST_TESTS + UNITTEST_ADD,
        },
        "2024-05-01T10:00:00Z",
    ),
}


def make_corpus(root: Path) -> Path:
    """A corpus folder as ``../shared/fixtures/corpus`` is laid out, with its remotes."""
    pulls = [CorpusPullRequest(repo, "Python", base, pr_files, merged_at)
             for repo, (base, pr_files, merged_at) in SETUPS.items()]  # fmt: skip
    return make_corpus_dir(root, pulls, first_number=11, title="Fix add", body="add subtracts")


def test_mine_validates_a_pr_of_every_set_up_style(
    tmp_path: Path, python_images: dict[str, str], docker_client: Any
) -> None:
    corpus = load_corpus(make_corpus(tmp_path))
    rows, _ = yield_benchmark.mine_corpus(corpus, tmp_path / "run", concurrency=2)
    log = (tmp_path / "run" / "mine.log").read_text()
    by_pr = {row.pr: row for row in rows}
    assert len(by_pr) == 3
    for pr, row in by_pr.items():
        assert row.validated, f"{pr}: {row.stage} {row.reason} {row.detail}\n{log[-3000:]}"
        assert (row.fail_to_pass, row.pass_to_pass) in {(1, 2), (1, 1)}, pr
    assert by_pr["corpus-test/tox-style#11"].python == "3.11"  # tox envlist, a 2023 PR
    assert "tox:py39" in (by_pr["corpus-test/tox-style#11"].recipe or "")
    assert by_pr["corpus-test/poetry-style#13"].python == "3.11"  # nothing newer in May 2024
    assert by_pr["corpus-test/flit-style#12"].python == "3.13"
