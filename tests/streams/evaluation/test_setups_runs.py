"""Test runs that survive a repository's configuration, and rejections that say what the runs
showed: real Docker, real installs, repositories made by the tests in the styles of real
projects (``setups``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from streams.evaluation.recipes.languages.python.language import NO_PYTHON
from streams.evaluation.validator import (
    NO_FAIL_TO_PASS,
    SUBMODULE_MISSING,
    TESTS_DID_NOT_RUN,
    TESTS_FAIL_AFTER_FIX,
)
from tests.streams.evaluation.setups import (
    F2P,
    OPS,
    P2P,
    TEST_ADD,
    TESTS,
    calc_files,
    fix_files,
    validate,
)

pytestmark = pytest.mark.docker


async def test_coverage_colour_and_warnings_as_errors_in_addopts(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """arrow's style: `--cov=... --cov-fail-under=99` (pytest-cov absent: a usage error) and
    `--color=yes` (escape codes around every status) in addopts, with `-W error` kept."""
    setup_cfg = (
        "[tool:pytest]\n"
        "addopts = --cov=calc --cov-fail-under=99 --color=yes -W error -p no:doctest\n"
    )
    outcome = await validate(
        tmp_path, docker_client, python_images, calc_files(**{"setup.cfg": setup_cfg}), fix_files()
    )
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == P2P
    config = task.install_config
    assert config is not None and "addopts=-W error -p no:doctest" in config.test_command
    assert config.version("python") in python_images and "pytest:setup.cfg" in config.recipe


async def test_a_unittest_suite_in_one_root_test_file(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """python-slugify's style: setup.py only, unittest.TestCase classes in a root test.py."""
    test_py = (
        "import unittest\n\nfrom calc.ops import sub\n\n\n"
        "class TestCalc(unittest.TestCase):\n"
        "    def test_sub(self):\n        self.assertEqual(sub(3, 1), 2)\n"
    )
    base = {k: v for k, v in calc_files().items() if not k.startswith("tests/")}
    base["test.py"] = test_py
    added = (
        "\n    def test_add(self):\n        from calc.ops import add\n\n"
        "        self.assertEqual(add(2, 3), 5)\n"
    )
    pr = {"calc/ops.py": fix_files()["calc/ops.py"], "test.py": test_py + added}
    outcome = await validate(tmp_path, docker_client, python_images, base, pr)
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert task.FAIL_TO_PASS == ["test.py::TestCalc::test_add"]
    assert task.PASS_TO_PASS == ["test.py::TestCalc::test_sub"]


async def test_a_new_test_passing_before_the_fix_is_no_fail_to_pass_with_counts(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    passing = (
        "\n\ndef test_sub_zero():\n    from calc.ops import sub\n\n    assert sub(2, 2) == 0\n"
    )
    pr = {"calc/ops.py": OPS + "\n# a comment\n", "tests/test_ops.py": TESTS + passing}
    outcome = await validate(tmp_path, docker_client, python_images, calc_files(), pr, attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", NO_FAIL_TO_PASS)
    assert outcome.detail is not None
    assert "before the fix: 3 passed; after: 3 passed" in outcome.detail


async def test_a_conftest_that_breaks_collection_is_tests_did_not_run_with_its_output(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    base = calc_files(**{"tests/conftest.py": "raise RuntimeError('conftest broke here')\n"})
    outcome = await validate(tmp_path, docker_client, python_images, base, fix_files(), attempts=2)
    assert (outcome.status, outcome.reason) == ("rejected", TESTS_DID_NOT_RUN)
    assert outcome.detail is not None
    assert "no test result (exit code 4" in outcome.detail  # pytest's usage error
    assert "conftest broke here" in outcome.detail
    assert outcome.detail.startswith("[python ")


async def test_tests_needing_a_submodule_that_is_not_there_say_so(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """tomlkit's style: test data in a git submodule, read by conftest.py."""
    base = calc_files(
        **{
            ".gitmodules": '[submodule "toml-test"]\n\tpath = tests/toml-test\n'
            "\turl = https://github.com/toml-lang/toml-test.git\n",
            "tests/conftest.py": "import pathlib\n\n"
            "CASES = list((pathlib.Path(__file__).parent / 'toml-test').iterdir())\n",
        }
    )
    outcome = await validate(tmp_path, docker_client, python_images, base, fix_files(), attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", SUBMODULE_MISSING)
    assert outcome.detail is not None and "tests/toml-test" in outcome.detail


async def test_new_test_files_that_do_not_import_before_the_fix_are_fail_to_pass(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """A test file that imports what the fix adds fails to collect before it: its tests are
    FAIL_TO_PASS, not a run that "did not run"."""
    new_test = "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    pr = {
        "calc/ops.py": OPS + "\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_mul.py": new_test,
        "tests/test_ops.py": TESTS + TEST_ADD.replace("test_add", "test_add_later"),
    }
    outcome = await validate(tmp_path, docker_client, python_images, calc_files(), pr, attempts=1)
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert "tests/test_mul.py::test_mul" in task.FAIL_TO_PASS


async def test_tests_that_fail_with_the_fix_too_say_so(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    failing = "def test_mul():\n    from calc.ops import add\n\n    assert add(2, 2) == 5\n"
    pr = {"calc/ops.py": fix_files()["calc/ops.py"], "tests/test_new.py": failing}
    outcome = await validate(tmp_path, docker_client, python_images, calc_files(), pr, attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", TESTS_FAIL_AFTER_FIX)
    assert outcome.detail is not None and "after: 1 failed" in outcome.detail


async def test_a_requires_python_no_base_image_meets_is_its_own_reason(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    setup_py = (
        "from setuptools import setup\n\n"
        "setup(name='calc', packages=['calc'], python_requires='>=3.99')\n"
    )
    base = calc_files(**{"setup.py": setup_py})
    outcome = await validate(tmp_path, docker_client, python_images, base, fix_files())
    assert (outcome.status, outcome.reason) == ("rejected", NO_PYTHON)
    assert outcome.detail is not None and "'>=3.99'" in outcome.detail
