"""Recipe inference without Docker: the Python version choice, the pytest options made safe,
each detector of the Python recipe on the set-up styles real projects use, overrides."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import configured_images
from streams.evaluation.recipes.languages.python.language import version_of_tag
from streams.evaluation.recipes.languages.python.pytest_options import plan_pytest_run
from streams.evaluation.recipes.languages.python.recipe import REQUIREMENTS_FILE
from streams.evaluation.recipes.languages.python.versions import allowed_by, python_order
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.overrides import load_overrides

pytestmark = pytest.mark.unit

PYTHONS = ["3.9", "3.11", "3.13", "3.14"]
IMAGES = configured_images()["python"]


def tree(files: dict[str, str]) -> TreeFiles:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return TreeFiles(buffer.getvalue())


def when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def recipes_of(files: dict[str, str], created: str = "2024-06-01", tag: str | None = None):  # type: ignore[no-untyped-def]
    recipes, facts = infer_recipes(
        tree(files), repo="o/r", images={"python": IMAGES}, created_at=when(created),
        release_tag=lambda: tag,
    )  # fmt: skip
    return recipes, facts


def requirements(recipe) -> list[str]:  # type: ignore[no-untyped-def]
    return [r for r in recipe.dependency_files[REQUIREMENTS_FILE].decode().split("\n") if r]


# -- Python versions --------------------------------------------------------------------------


def test_requires_python_excludes_and_the_newest_in_time_comes_first() -> None:
    assert python_order(PYTHONS, ">=3.10", [], when("2025-01-01")) == ["3.13", "3.11", "3.14"]
    assert python_order(PYTHONS, "<3.10", [], when("2025-01-01")) == ["3.9"]
    assert python_order(PYTHONS, ">=3.15", [], None) == []


def test_an_old_pr_gets_the_oldest_python_and_newer_ones_as_fallbacks() -> None:
    assert python_order(PYTHONS, ">=3.6", [], when("2020-04-17")) == PYTHONS


def test_declared_versions_cap_the_first_guess() -> None:
    # tested up to 3.11 (classifiers, tox, CI): 3.13 is tried only after 3.11 and 3.9
    order = python_order(PYTHONS, None, ["3.8", "3.10", "3.11"], when("2026-01-01"))
    assert order == ["3.11", "3.9", "3.13", "3.14"]
    # declared only older than every image: the closest one
    assert python_order(PYTHONS, None, ["3.6", "3.7"], when("2023-01-01"))[0] == "3.9"


def test_a_patch_level_floor_admits_its_minor_version() -> None:
    assert allowed_by(">=3.8.1", "3.9") and allowed_by(">=3.9.1", "3.9")
    assert not allowed_by(">=3.10", "3.9") and allowed_by("not a specifier", "3.9")


# -- pytest options -----------------------------------------------------------------------------


def test_coverage_colour_parallelism_and_report_flags_are_dropped() -> None:
    run = plan_pytest_run(
        ["--cov=arrow", "--cov-fail-under=99", "--cov-report", "term", "--color=yes",
         "-n", "auto", "-ra", "-x", "-W", "error", "--import-mode=importlib",
         "--doctest-modules", "-p", "no:warnings", "--strict-markers", "--cov", "pkg"],
    )  # fmt: skip
    assert run.addopts == [
        "-W", "error", "--import-mode=importlib", "--doctest-modules", "-p", "no:warnings",
        "--strict-markers",
    ]  # fmt: skip
    assert "--cov=arrow" in run.dropped and "pkg" in run.dropped and "auto" in run.dropped


def test_plugins_the_configuration_names_are_installed() -> None:
    run = plan_pytest_run(["--timeout=30"], {"asyncio_mode": "auto"}, ["pytest-mock>=3"])
    assert run.plugins == ["pytest-asyncio", "pytest-mock>=3", "pytest-timeout"]
    assert run.addopts == ["--timeout=30"]
    assert run.override() == ["-o", "addopts=--timeout=30"]


# -- detectors --------------------------------------------------------------------------------

SETUP_PY = "from setuptools import setup\nsetup(name='pkg', install_requires=['six>=1'])\n"


def test_setup_py_with_tox_deps_and_a_test_requirements_file() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "setup.py": SETUP_PY,
            "tox.ini": "[tox]\nenvlist = py38,py39\n[testenv]\n"
            "deps =\n    freezegun\n    -r requirements/tests.txt\ncommands = pytest {posargs}\n",
            "requirements/tests.txt": "pytest\n-e .\n--index-url https://example.invalid\n",
            "requirements/docs.txt": "sphinx\n",
            "src/pkg/__init__.py": "",
        },
        created="2021-03-01",
    )
    assert recipe.python == "3.9"  # tox envlist up to 3.9, a 2021 PR
    assert "freezegun" in requirements(recipe) and "six>=1" in requirements(recipe)
    assert recipe.dependency_files["requirements/tests.txt"] == b"pytest\n"  # sanitized
    assert "requirements/docs.txt" not in recipe.dependency_files
    assert any("-r /opt/swe-env/requirements/tests.txt" in c for c in recipe.env_commands)
    assert recipe.install_commands[0].endswith("--no-deps -e .")
    assert ("UV_EXCLUDE_NEWER", "2021-03-01") in recipe.environment


def test_flit_with_a_test_extra_and_a_pep735_group() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['flit_core']\n"
            "build-backend = 'flit_core.buildapi'\n"
            "[project]\nname = 'pkg'\nrequires-python = '>=3.8'\ndependencies = []\n"
            "[project.optional-dependencies]\ntest = ['pytest>=7', 'hypothesis']\n"
            "[dependency-groups]\ndev = ['mypy', {include-group = 'testing'}]\n"
            "testing = ['freezegun']\n",
            "pkg/__init__.py": "",
        }
    )
    assert "build:flit_core" in recipe.sources and "extra:test" in recipe.sources
    reqs = requirements(recipe)
    assert "hypothesis" in reqs and "freezegun" in reqs and "mypy" not in reqs
    assert reqs.count("pytest>=7") == 1 and "pytest" not in reqs  # the project's own pin
    assert recipe.install_commands[0].endswith("-e '.[test]'")


def test_poetry_dev_dependencies_are_installed() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['poetry-core>=1.0.0']\n"
            "build-backend = 'poetry.core.masonry.api'\n"
            "[tool.poetry]\nname = 'pkg'\nversion = '1.0'\ndescription = ''\nauthors = []\n"
            "[tool.poetry.dependencies]\npython = '^3.7'\n"
            "[tool.poetry.dev-dependencies]\npytest = '^6.0'\nblack = '*'\n",
            "pkg/__init__.py": "",
        },
        created="2022-01-10",
    )
    assert recipe.python == "3.9"  # nothing newer was out in January 2022
    reqs = requirements(recipe)
    assert any(r.startswith("pytest") and "<7" in r for r in reqs)
    assert not any(r.startswith("black") for r in reqs)


def test_scm_versions_are_told_the_latest_release_tag() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['setuptools', 'setuptools_scm']\n"
            "build-backend = 'setuptools.build_meta'\n"
            "[project]\nname = 'pkg'\ndynamic = ['version']\n[tool.setuptools_scm]\n",
            "pkg/__init__.py": "",
        },
        tag="v2.4.1",
    )
    assert ("SETUPTOOLS_SCM_PRETEND_VERSION", "2.4.1") in recipe.environment
    assert version_of_tag("release-1.2") == "1.2" and version_of_tag("nothing") is None


def test_ci_build_steps_and_c_extensions_bring_their_system_packages() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "setup.py": "from setuptools import setup, Extension\n"
            "setup(name='pkg', ext_modules=[Extension('pkg._speedups', ['pkg/_speedups.c'])])\n",
            "pkg/_speedups.c": "",
            "pkg/__init__.py": "",
            ".github/workflows/tests.yml": "jobs:\n  test:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - run: sudo apt-get install -y gettext\n"
            "      - run: msgfmt pkg/de.po -o pkg/de.mo\n"
            "      - run: pytest\n",
        }
    )
    assert {"gcc", "python3-dev", "gettext"} <= set(recipe.system_packages)
    assert any(c.startswith("msgfmt") for c in recipe.pre_test_commands)


def test_a_missing_submodule_is_noted_and_a_tree_without_metadata_uses_pythonpath() -> None:
    (recipe, *_), _ = recipes_of(
        {
            ".gitmodules": '[submodule "data"]\n\tpath = tests/data\n\turl = https://x/y.git\n',
            "test.py": "import unittest\n",
            "lib.py": "",
        }
    )
    assert any("tests/data" in note for note in recipe.notes)
    assert recipe.install_commands == () and ("PYTHONPATH", "/testbed") in recipe.environment


def test_addopts_are_made_safe_in_the_test_command() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "setup.py": SETUP_PY,
            "setup.cfg": "[tool:pytest]\naddopts = --cov=pkg --color=yes -W error\ntimeout = 5\n",
            "pkg/__init__.py": "",
        }
    )
    assert "-o 'addopts=-W error'" in recipe.test_command
    assert "pytest-timeout" in requirements(recipe)
    assert any("--cov=pkg" in note for note in recipe.notes)


def test_a_tree_without_python_has_no_python_recipe() -> None:
    assert recipes_of({"main.go": "", "README.md": ""}) == ([], None)
    # a package.json goes to the JavaScript chain (test_language_dispatch.py)
    recipes, _ = recipes_of({"index.js": "", "package.json": "{}"})
    assert recipes and all(r.language == "JavaScript" and r.python is None for r in recipes)


# -- overrides --------------------------------------------------------------------------------


def test_an_override_wins_field_by_field(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text(
        "repositories:\n  O/R:\n    python: '3.13'\n    pre_test: [make compile]\n"
        "    test_command: python -m pytest -rA\n    environment: {TZ: UTC}\n"
    )
    override = load_overrides(path).lookup("o/r")
    recipes, _ = infer_recipes(
        tree({"setup.py": SETUP_PY}), repo="o/r", images={"python": IMAGES}, override=override
    )
    (recipe,) = recipes
    assert recipe.python == "3.13" and recipe.pre_test_commands == ("make compile",)
    assert recipe.test_command == "python -m pytest -rA" and ("TZ", "UTC") in recipe.environment
    assert recipe.sources[-1] == "override"


@pytest.mark.parametrize(
    "text", ["repositories:\n  o/r:\n    pyhton: '3.9'\n", "- a list\n", "repositories: [\n"]
)
def test_a_bad_override_file_names_itself(tmp_path: Path, text: str) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"overrides\.yaml"):
        load_overrides(path)


def test_the_repositorys_files_pin_what_they_name_and_vcs_requirements_are_dropped() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['setuptools']\n"
            "build-backend = 'setuptools.build_meta'\n[project]\nname = 'pkg'\n"
            "[project.optional-dependencies]\ntests = ['pytest>=8.3', 'freezegun']\n",
            "requirements/tests.txt": "pytest==8.2.2\ngit+https://github.com/x/nbval.git@master\n"
            "nbval @ https://example.org/nbval.tar.gz\n",
            "pkg/__init__.py": "",
        }
    )
    ours = requirements(recipe)
    # the file's pin wins over the extra's `pytest>=8.3`; ours only says "one that runs here"
    assert "freezegun" in ours and [r for r in ours if r.startswith("pytest")] == ["pytest>=7.0"]
    assert recipe.dependency_files["requirements/tests.txt"] == b"pytest==8.2.2\n"


def test_an_install_without_a_solution_falls_back_to_fewer_sources() -> None:
    (recipe, *_), _ = recipes_of(
        {
            "setup.py": SETUP_PY,
            "requirements-dev.txt": "tensorflow==2.3.0\npytest\n",
            "tox.ini": "[testenv]\ndeps = freezegun\n",
            "pkg/__init__.py": "",
        }
    )
    plans = recipe.env_commands[0].split(" || ")
    assert plans[0] == (
        "uv pip install -r /opt/swe-env/swe-stream-requirements.txt "
        "-r /opt/swe-env/requirements-dev.txt"
    )
    assert plans[1].endswith("uv pip install -r /opt/swe-env/swe-stream-requirements.txt; }")
    # at last the minimum, then everything else one requirement at a time
    assert "-r /opt/swe-env/swe-stream-minimal.txt && while read -r requirement" in plans[2]
    files = recipe.dependency_files
    assert files["swe-stream-minimal.txt"].split()[1:] == [b"six>=1", b"pytest>=7.0"]
    assert files["swe-stream-rest.txt"].split() == [b"freezegun", b"tensorflow==2.3.0"]


def test_c_extensions_are_rebuilt_with_the_ci_step_or_setuptools() -> None:
    ci = (
        "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: REQUIRE_SPEEDUPS=1 python setup.py build_ext -i\n"
        "      - run: python -m pytest\n"
    )
    extension = (
        "from setuptools import setup, Extension\n"
        "setup(name='pkg', ext_modules=[Extension('pkg._speedups', ['pkg/_speedups.c'])])\n"
    )
    files = {"setup.py": extension, "pkg/_speedups.c": "", "pkg/__init__.py": ""}
    (recipe, *_), _ = recipes_of({**files, ".github/workflows/ci.yml": ci})
    assert recipe.rebuild_commands == ("REQUIRE_SPEEDUPS=1 python setup.py build_ext -i",)
    assert recipe.pre_test_commands == recipe.rebuild_commands
    assert any("setuptools wheel" in command for command in recipe.env_commands)
    (recipe, *_), _ = recipes_of(files)
    assert recipe.rebuild_commands == ("/opt/venv/bin/python setup.py build_ext --inplace",)


@pytest.mark.parametrize(
    ("path", "python", "skipped"),
    [
        ("requirements/3.3/requirements-dev.txt", "3.9", True),
        ("requirements/py27.txt", "3.9", True),
        ("requirements-py3.9.txt", "3.9", False),
        ("requirements-py3.9.txt", "3.11", True),
        ("requirements/tests.txt", "3.11", False),
    ],
)
def test_requirement_files_for_another_python_are_left_out(
    path: str, python: str, skipped: bool
) -> None:
    from streams.evaluation.recipes.languages.python.recipe import _for_another_python

    assert _for_another_python(path, python) is skipped


@pytest.mark.parametrize(
    ("requirement", "runs"),
    [("pytest==3.0.7", False), ("pytest<7", False), ("pytest~=7.1", False),
     ("pytest==7.*", False), ("pytest>=3.0", True), ("pytest==8.2.2", True),
     ("pytest", True), ("freezegun==0.1", True)],
)  # fmt: skip
def test_a_pytest_pin_too_old_for_the_python_is_not_kept(requirement: str, runs: bool) -> None:
    from streams.evaluation.recipes.languages.python.recipe import _runs_here

    assert _runs_here(requirement, "8.0") is runs


def test_a_pinned_pytest_that_cannot_run_on_the_python_chosen_is_replaced() -> None:
    (recipe, *_), _ = recipes_of(
        {"setup.py": SETUP_PY, "requirements-test.txt": "pytest==3.0.7\nfreezegun\n"},
        created="2025-03-01",
    )
    assert recipe.python == "3.13"
    assert recipe.dependency_files["requirements-test.txt"] == b"freezegun\n"
    assert "pytest>=8.0" in requirements(recipe)


def test_ci_install_lines_add_their_requirement_files_packages_and_groups() -> None:
    workflow = (
        "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: pip install -r ci/test-requirements.txt hypothesis tox\n"
        "      - run: pdm install -G toc\n"
        "      - run: pytest\n"
    )
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['pdm-backend']\n"
            "build-backend = 'pdm.backend'\n[project]\nname = 'pkg'\n"
            "[project.optional-dependencies]\ntoc = ['python-slugify']\n",
            "ci/test-requirements.txt": "freezegun\n",
            ".github/workflows/ci.yml": workflow,
            "pkg/__init__.py": "",
        }
    )
    reqs = requirements(recipe)
    assert "hypothesis" in reqs and "python-slugify" in reqs and "tox" not in reqs
    assert "ci/test-requirements.txt" in recipe.dependency_files
    assert recipe.install_commands[0].endswith("-e '.[toc]'") and "ci:install" in recipe.sources


def test_a_pr_older_than_its_pythons_pytest_floor_gets_that_series_undated() -> None:
    (recipe, *_), _ = recipes_of({"setup.py": SETUP_PY}, created="2019-01-04")
    assert recipe.python == "3.9"  # the oldest there is: nothing older was out
    assert "pytest>=4.6,<5" in requirements(recipe)
    config = recipe.dependency_files["uv.toml"].decode()
    assert 'pytest = "2100-01-01T00:00:00Z"' in config and 'setuptools = "2100' in config
    (recipe, *_), _ = recipes_of({"setup.py": SETUP_PY}, created="2022-06-01")
    assert "pytest" not in recipe.dependency_files["uv.toml"].decode()  # only build tools
    assert ("UV_CONFIG_FILE", "/opt/swe-env/uv.toml") in recipe.environment


def test_a_nox_test_session_adds_its_installs() -> None:
    noxfile = (
        "import nox\n\n\n@nox.session(python=['3.9', '3.11'])\ndef tests(session):\n"
        "    session.install('-e', '.[speed]', 'freezegun', '-r', 'requirements/ci.txt')\n"
        "    session.run('pytest')\n"
    )
    (recipe, *_), _ = recipes_of(
        {
            "pyproject.toml": "[build-system]\nrequires = ['setuptools']\n"
            "build-backend = 'setuptools.build_meta'\n[project]\nname = 'pkg'\n"
            "[project.optional-dependencies]\nspeed = ['ujson']\n",
            "noxfile.py": noxfile,
            "requirements/ci.txt": "hypothesis\n",
            "pkg/__init__.py": "",
        },
        created="2025-06-01",
    )
    assert recipe.python == "3.11"  # the newest the sessions name
    assert {"freezegun", "ujson"} <= set(requirements(recipe)) and "nox:tests" in recipe.sources
    assert recipe.dependency_files["requirements/ci.txt"] == b"hypothesis\n"
    assert recipe.install_commands[0].endswith("-e '.[speed]'")
