"""Installing real set-ups: dependencies as of the PR's date, the Python chosen and the next
one tried, a failed install named with its step, an override file winning over inference
(real Docker, real installs from PyPI; repositories made by the tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from streams.evaluation.recipes.overrides import Overrides, RepositoryOverride
from streams.evaluation.validator import INSTALL_FAILED
from tests.streams.evaluation.setups import (
    TEST_ADD,
    TESTS,
    calc_files,
    fix_files,
    patches_for,
    validate,
    validator_for,
    when,
)

pytestmark = pytest.mark.docker


async def test_dependencies_resolve_as_of_the_prs_date(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """A PR of June 2020 gets the packaging release of its time (20.4, May 2020), on the
    Python of its time (3.9: nothing newer with a base image was out)."""
    base = calc_files(**{"requirements-test.txt": "pytest\npackaging\n"})
    patches, repos = await patches_for(tmp_path, base, fix_files(), when("2020-06-01"))
    validator = validator_for(repos, docker_client, python_images)
    environment = validator.environment(
        patches.repo, patches.base_commit, patches.instance_id, patches.created_at
    )
    try:
        assert environment.recipe.python == "3.9"
        with environment.sandbox(validator.limits) as box:
            shown = box.run(
                "python -c 'import packaging, pytest; print(packaging.__version__, "
                "pytest.__version__)'",
                timeout=60,
            )
    finally:
        environment.release()
    packaging_version, pytest_version = shown.stdout.split()
    assert packaging_version == "20.4", shown.output
    assert pytest_version.startswith("5."), shown.output  # pytest 5.4.3 was June 2020's


async def test_a_python_where_the_tests_do_not_run_is_followed_by_the_next(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """The project declares 3.9 (classifiers), but its tests need tomllib (3.11+): on 3.9 they
    do not even collect, on 3.11 they pass."""
    setup_py = (
        "from setuptools import setup\n\nsetup(name='calc', version='1.0', packages=['calc'], "
        "classifiers=['Programming Language :: Python :: 3.9'])\n"
    )
    base = calc_files(**{"setup.py": setup_py, "tests/conftest.py": "import tomllib\n"})
    outcome = await validate(
        tmp_path, docker_client, python_images, base, fix_files(), created=when("2026-01-05")
    )
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert task.install_config is not None and task.install_config.version("python") == "3.11"


async def test_a_failed_install_names_its_step_and_output(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """A project that does not build: the instance step that failed, with its output. (A
    requirement that does not exist does not fail the install: it is left out, said in the
    build log, and the tests run without it.)"""
    setup_py = (
        "from setuptools import setup\n\n"
        "raise SystemExit('calc cannot be built without its vendored toolchain')\n"
    )
    base = calc_files(
        **{
            "setup.py": setup_py,
            "tests/requirements.txt": "pytest\nswe-stream-no-such-package-anywhere==0.0.1\n",
        }
    )
    outcome = await validate(tmp_path, docker_client, python_images, base, fix_files(), attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", INSTALL_FAILED)
    assert outcome.detail is not None
    assert "instance step `RUN env -u UV_EXCLUDE_NEWER uv pip install --no-deps -e ." in (
        outcome.detail
    )
    assert "calc cannot be built without its vendored toolchain" in outcome.detail


async def test_an_override_wins_over_inference(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """The tests read a file a build step makes, which no CI file of the repository names:
    inferred, they are skipped; with the override's pre-test step, they prove the fix."""
    reads_data = (
        "import pathlib\n\nimport pytest\n\n"
        "DATA = pathlib.Path(__file__).parent / 'generated.txt'\n"
        "pytestmark = pytest.mark.skipif(not DATA.exists(), reason='run make_data.py first')\n"
    )
    base = calc_files(
        **{
            "make_data.py": "import pathlib\npathlib.Path('tests/generated.txt').write_text('x')\n",
            "tests/test_ops.py": reads_data + TESTS,
        }
    )
    pr = fix_files(**{"tests/test_ops.py": reads_data + TESTS + TEST_ADD})
    override = RepositoryOverride(python="3.11", pre_test=["python make_data.py"])
    overrides = Overrides(repositories={"swe-stream-test/calc": override})
    outcome = await validate(
        tmp_path, docker_client, python_images, base, pr, attempts=1, overrides=overrides
    )
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.install_config is not None
    assert task.install_config.pre_test_commands == ["python make_data.py"]
    config = task.install_config
    assert config.version("python") == "3.11" and config.recipe[-1] == "override"
