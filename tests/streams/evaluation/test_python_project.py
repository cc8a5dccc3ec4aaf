"""languages.python.facts: the facts a Python repository's own files state about installing and
testing it, read with each file's own parser from a dict-backed tree (no disk, no network)."""

from __future__ import annotations

from textwrap import dedent

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.evaluation.recipes.languages.python import facts as python_facts
from streams.evaluation.recipes.languages.python.commands import classify_command, run_segments
from streams.evaluation.recipes.languages.python.facts import ProjectFacts, read_project
from streams.evaluation.recipes.languages.python.pyproject import poetry_constraint
from streams.evaluation.recipes.languages.python.requirements import requirements_kind
from streams.evaluation.recipes.languages.python.tox import expand_tox_envs
from streams.evaluation.recipes.sources.tree import MAX_FILE_BYTES

pytestmark = pytest.mark.unit


def facts(files: dict[str, str | bytes], *extra_names: str) -> ProjectFacts:
    """Reads a tree given as {path: content}; ``extra_names`` are listed but hold nothing."""
    data = {
        path: dedent(content).lstrip("\n").encode() if isinstance(content, str) else content
        for path, content in files.items()
    }
    return read_project([*data, *extra_names], data.get)


def tripped(found: ProjectFacts) -> list[str]:
    """Problems of the last-line guard: a reader raised where it should have coped."""
    return [problem for problem in found.problems if ": not read (" in problem]


# -- setuptools: setup.py + setup.cfg + tox.ini + requirements/ ------------------------------------

LEGACY_SETUP_PY = """
    #!/usr/bin/env python
    import os
    from setuptools import setup

    here = os.path.abspath(os.path.dirname(__file__))

    if __name__ == "__main__":
        setup()
"""

LEGACY_SETUP_CFG = """
    [metadata]
    name = flaskish
    description = A small web framework
    long_description = file: README.rst
    classifiers =
        Development Status :: 5 - Production/Stable
        Programming Language :: Python
        Programming Language :: Python :: 3
        Programming Language :: Python :: 3 :: Only
        Programming Language :: Python :: 3.7
        Programming Language :: Python :: 3.8
        Programming Language :: Python :: 3.9

    [options]
    packages = find:
    package_dir = = src
    include_package_data = true
    python_requires = >= 3.7
    install_requires =
        Werkzeug >= 2.0
        Jinja2 >= 3.0
        itsdangerous >= 2.0
        click >= 7.1.2
        importlib_metadata; python_version < "3.8"

    [options.extras_require]
    async = asgiref >= 3.2
    dotenv = python-dotenv
    testing =
        pytest
        pytest-cov
        blinker

    [options.packages.find]
    where = src

    [flake8]
    max-line-length = 88

    [tool:pytest]
    testpaths = tests
    filterwarnings =
        error
"""

LEGACY_TOX_INI = """
    [tox]
    envlist =
        py{37,38,39}
        pypy3
        style
        docs
    skip_missing_interpreters = true

    [base]
    deps = -r requirements/tests.txt

    [testenv]
    deps =
        {[base]deps}
        -c {toxinidir}/requirements/constraints.txt
    setenv =
        PYTHONDEVMODE = 1
        COVERAGE_FILE = {toxworkdir}/.coverage.{envname}
    whitelist_externals = make
    commands =
        pytest -v --tb=short --basetemp={envtmpdir} {posargs:tests}
        # a comment between commands

    [testenv:style]
    deps = pre-commit
    skip_install = true
    commands = pre-commit run --all-files --show-diff-on-failure

    [testenv:docs]
    deps =
        -r requirements/docs.txt
        {[testenv]deps}
    commands = sphinx-build -W -b html -d {envtmpdir}/doctrees docs {envtmpdir}/html
"""


def legacy_tree() -> dict[str, str | bytes]:
    return {
        "setup.py": LEGACY_SETUP_PY,
        "setup.cfg": LEGACY_SETUP_CFG,
        "tox.ini": LEGACY_TOX_INI,
        "requirements/tests.txt": """
            # pinned by pip-compile
            -r base.txt
            pytest==7.1.2
            pytest-cov==3.0.0  # via -r tests.in
            blinker==1.4
        """,
        "requirements/tests.in": "pytest\npytest-cov\nblinker\n",
        "requirements/base.txt": "Werkzeug==2.1.2\nJinja2==3.1.2\n",
        "requirements/docs.txt": "Sphinx==4.5.0\nPallets-Sphinx-Themes==2.0.2\n",
        "requirements/constraints.txt": "pytest<8\n",
        "requirements/dev.txt": "-r tests.txt\n-r docs.txt\npre-commit\ntox\n",
        "src/flaskish/__init__.py": "",
        "tests/conftest.py": "",
    }


def test_setuptools_project_with_setup_cfg_metadata_and_extras() -> None:
    found = facts(legacy_tree())

    assert found.build_backend is None  # only setup.py/setup.cfg: legacy setuptools
    assert found.project_name == "flaskish"
    assert found.requires_python == ">= 3.7"
    assert found.classifier_pythons == ["3.7", "3.8", "3.9"]
    assert found.dependencies == [
        "Werkzeug >= 2.0",
        "Jinja2 >= 3.0",
        "itsdangerous >= 2.0",
        "click >= 7.1.2",
        'importlib_metadata; python_version < "3.8"',
    ]
    assert found.extras == {
        "async": ["asgiref >= 3.2"],
        "dotenv": ["python-dotenv"],
        "testing": ["pytest", "pytest-cov", "blinker"],
    }
    assert found.scm_version is False
    assert found.c_extensions is False
    assert found.problems == []


def test_tox_ini_test_env_with_section_references_and_requirement_files() -> None:
    tox = facts(legacy_tree()).tox

    assert tox is not None
    assert tox.path == "tox.ini"
    assert tox.envlist == ["py37", "py38", "py39", "pypy3", "style", "docs"]
    assert tox.pythons == ["3.7", "3.8", "3.9"]
    assert tox.env_name == "py37"
    assert tox.deps == []
    assert tox.requirement_files == ["requirements/tests.txt"]
    assert tox.constraint_files == ["requirements/constraints.txt"]
    assert tox.commands == ["pytest -v --tb=short --basetemp={envtmpdir}"]
    assert tox.setenv == {"PYTHONDEVMODE": "1", "COVERAGE_FILE": "{toxworkdir}/.coverage.{envname}"}
    assert tox.allowlist_externals == ["make"]
    assert tox.skip_install is False


def test_requirements_files_by_name_place_and_reference() -> None:
    found = facts(legacy_tree())
    by_path = {item.path: item for item in found.requirements_files}

    assert list(by_path) == sorted(by_path)
    assert by_path["requirements/tests.txt"].kind == "test"
    assert by_path["requirements/tests.txt"].requirements == [
        "pytest==7.1.2",
        "pytest-cov==3.0.0",
        "blinker==1.4",
    ]
    assert by_path["requirements/tests.txt"].referenced_files == ["requirements/base.txt"]
    assert by_path["requirements/docs.txt"].kind == "docs"
    assert by_path["requirements/dev.txt"].kind == "dev"
    assert by_path["requirements/dev.txt"].referenced_files == [
        "requirements/tests.txt",
        "requirements/docs.txt",
    ]
    assert by_path["requirements/base.txt"].kind == "runtime"
    assert "requirements/tests.in" not in by_path  # the .txt compiled from it is there
    assert by_path["requirements/constraints.txt"].kind == "other"


def test_pytest_hints_of_a_setuptools_project() -> None:
    found = facts(legacy_tree())

    assert found.pytest_config is not None
    assert found.pytest_config.path == "setup.cfg"
    assert found.pytest_config.testpaths == ["tests"]
    assert found.pytest_config.options == {"filterwarnings": "error"}
    assert found.test_runner_hints.pytest_used is True
    assert found.test_runner_hints.unittest_only is False
    assert found.test_runner_hints.test_dirs == ["tests"]
    assert found.config_files == ["setup.py", "setup.cfg", "tox.ini"]


# -- tox dialect details -----------------------------------------------------------------------


def test_tox_generative_envlist_and_factor_conditions() -> None:
    found = facts(
        {
            "tox.ini": """
                [tox]
                envlist =
                    lint
                    py3{8,9}-django{32,40}
                    py{310-312}-django40{,-postgres}

                [testenv]
                description = run the tests under {basepython}
                deps =
                    pytest>=7
                    django32: Django>=3.2,<3.3
                    django40: Django>=4.0,<4.1
                    postgres: psycopg2-binary
                    !postgres: pytest-randomly
                    py38,py39: backports.zoneinfo
                extras =
                    test
                    postgres: postgres
                setenv =
                    DJANGO_SETTINGS_MODULE = tests.settings
                    postgres: DATABASE_URL = postgres://localhost/test
                commands =
                    {env:TEST_RUNNER:pytest} {posargs}
                    postgres: python -m pytest -m db

                [testenv:lint]
                skip_install = true
                deps = flake8
                commands = flake8 src tests
            """
        }
    )
    tox = found.tox

    assert tox is not None
    assert tox.envlist[:5] == [
        "lint",
        "py38-django32",
        "py38-django40",
        "py39-django32",
        "py39-django40",
    ]
    assert "py312-django40-postgres" in tox.envlist
    assert tox.pythons == ["3.8", "3.9", "3.10", "3.11", "3.12"]
    assert tox.env_name == "py38-django32"
    assert tox.deps == [
        "pytest>=7",
        "Django>=3.2,<3.3",
        "pytest-randomly",
        "backports.zoneinfo",
    ]
    assert tox.extras == ["test"]
    assert tox.setenv == {"DJANGO_SETTINGS_MODULE": "tests.settings"}
    assert tox.commands == ["pytest"]


def test_tox_takes_the_first_python_env_when_testenv_has_no_commands() -> None:
    tox = facts(
        {
            "tox.ini": """
                [tox]
                envlist = docs, py39, py310

                [testenv]
                passenv = CI

                [testenv:docs]
                commands = sphinx-build docs build

                [testenv:py{39,310}]
                deps = -rrequirements-test.txt
                usedevelop = True
                changedir = tests
                allowlist_externals =
                    bash
                    make
                commands =
                    bash -c "echo start"
                    python -m pytest \\
                        --cov=pkg \\
                        {posargs}
            """,
            "requirements-test.txt": "pytest\n",
        }
    ).tox

    assert tox is not None
    assert tox.env_name == "py39"
    assert tox.requirement_files == ["requirements-test.txt"]
    assert tox.usedevelop is True
    assert tox.changedir == "tests"
    assert tox.allowlist_externals == ["bash", "make"]
    assert tox.commands == ['bash -c "echo start"', "python -m pytest --cov=pkg"]


@pytest.mark.parametrize(
    ("envlist", "expected"),
    [
        ("py{37,38,39}", ["py37", "py38", "py39"]),
        ("py3{8,9}-django{3,4}", ["py38-django3", "py38-django4", "py39-django3", "py39-django4"]),
        ("py{310-312}", ["py310", "py311", "py312"]),
        ("3.{8,9}{,-tf}", ["3.8", "3.8-tf", "3.9", "3.9-tf"]),
        ("py{3.10, 3.11}-{a, b}", ["py3.10-a", "py3.10-b", "py3.11-a", "py3.11-b"]),
        ("lint, py39\n  docs", ["lint", "py39", "docs"]),
    ],
)
def test_expand_tox_envs(envlist: str, expected: list[str]) -> None:
    assert expand_tox_envs(envlist) == expected


def test_tox_legacy_ini_inside_pyproject() -> None:
    found = facts(
        {
            "pyproject.toml": '''
                [build-system]
                requires = ["setuptools>=61"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "widgets"
                version = "1.0"

                [tool.tox]
                legacy_tox_ini = """
                [tox]
                envlist = py{39,310,311}

                [common]
                deps =
                    pytest
                    pytest-mock

                [testenv]
                deps =
                    {[common]deps}
                    .[yaml]
                commands = pytest {posargs:tests}
                """
            '''
        }
    )

    assert found.tox is not None
    assert found.tox.path == "pyproject.toml"
    assert found.tox.envlist == ["py39", "py310", "py311"]
    assert found.tox.deps == ["pytest", "pytest-mock", ".[yaml]"]
    assert found.tox.commands == ["pytest"]


def test_tox_native_toml_in_pyproject() -> None:
    tox = facts(
        {
            "pyproject.toml": """
                [project]
                name = "parsers"
                version = "2.0"

                [tool.tox]
                requires = ["tox>=4.21"]
                env_list = ["3.12", "3.11", "lint"]

                [tool.tox.env_run_base]
                description = "run unit tests"
                deps = ["pytest>=8", "-r requirements/test.txt"]
                extras = ["toml"]
                dependency_groups = ["test"]
                set_env = { PYTHONWARNINGS = "error" }
                commands = [
                    [
                        "pytest", "-q", "--basetemp={env_tmp_dir}",
                        { replace = "posargs", default = ["tests"], extend = true },
                    ],
                ]

                [tool.tox.env.lint]
                skip_install = true
                deps = ["ruff"]
                commands = [["ruff", "check", "."]]
            """
        }
    ).tox

    assert tox is not None
    assert tox.envlist == ["3.12", "3.11", "lint"]
    assert tox.pythons == ["3.11", "3.12"]
    assert tox.deps == ["pytest>=8"]
    assert tox.requirement_files == ["requirements/test.txt"]
    assert tox.extras == ["toml"]
    assert tox.dependency_groups == ["test"]
    assert tox.setenv == {"PYTHONWARNINGS": "error"}
    assert tox.commands == ["pytest -q '--basetemp={env_tmp_dir}'"]


def test_tox_toml_file_and_setup_cfg_tox_section() -> None:
    from_toml = facts(
        {
            "tox.toml": """
                env_list = ["py312"]
                [env_run_base]
                deps = ["pytest"]
                commands = [["pytest"]]
            """
        }
    ).tox
    from_cfg = facts(
        {
            "setup.cfg": """
                [metadata]
                name = oldstyle

                [tox:tox]
                envlist = py36,py37

                [testenv]
                deps = nose
                commands = nosetests
            """
        }
    ).tox

    assert from_toml is not None and from_toml.path == "tox.toml"
    assert from_toml.commands == ["pytest"]
    assert from_cfg is not None and from_cfg.path == "setup.cfg"
    assert from_cfg.pythons == ["3.6", "3.7"]
    assert from_cfg.commands == ["nosetests"]


# -- pyproject backends --------------------------------------------------------------------------


def test_flit_core_project_with_test_extra() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [build-system]
                requires = ["flit_core >=3.4,<4"]
                build-backend = "flit_core.buildapi"

                [project]
                name = "tinytime"
                authors = [{name = "A. Author", email = "author@example.org"}]
                readme = "README.rst"
                license = {file = "LICENSE"}
                requires-python = ">=3.8"
                dynamic = ["version", "description"]
                classifiers = [
                    "License :: OSI Approved :: MIT License",
                    "Programming Language :: Python :: 3 :: Only",
                    "Programming Language :: Python :: 3.8",
                    "Programming Language :: Python :: 3.12",
                    "Programming Language :: Python :: Implementation :: PyPy",
                ]
                dependencies = [
                    "python-dateutil>=2.7.0",
                    "tzdata; python_version >= '3.9'",
                ]

                [project.optional-dependencies]
                test = ["pytest>=7", "pytest-cov", "freezegun==1.*"]
                doc = ["sphinx>=7"]

                [tool.flit.module]
                name = "tinytime"

                [tool.pytest.ini_options]
                addopts = "-ra --strict-markers"
                testpaths = ["tests"]
            """,
            "tinytime/__init__.py": '"""Tiny."""\n__version__ = "1.0"\n',
            "tests/test_tiny.py": "",
        }
    )

    assert found.build_backend == "flit_core.buildapi"
    assert found.build_requires == ["flit_core >=3.4,<4"]
    assert found.project_name == "tinytime"
    assert found.requires_python == ">=3.8"
    assert found.classifier_pythons == ["3.8", "3.12"]
    assert found.dependencies == ["python-dateutil>=2.7.0", "tzdata; python_version >= '3.9'"]
    assert found.extras == {
        "test": ["pytest>=7", "pytest-cov", "freezegun==1.*"],
        "doc": ["sphinx>=7"],
    }
    assert found.pytest_config is not None
    assert found.pytest_config.addopts == ["-ra", "--strict-markers"]
    assert found.test_runner_hints.pytest_used is True
    assert found.problems == []


def test_hatchling_with_hatch_vcs_and_hatch_envs_reported() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [build-system]
                requires = ["hatchling>=1.18", "hatch-vcs"]
                build-backend = "hatchling.build"

                [project]
                name = "retrying-thing"
                dynamic = ["version"]
                requires-python = ">=3.9"
                dependencies = ["anyio>=4"]

                [project.optional-dependencies]
                tests = ["pytest", "trio"]

                [tool.hatch.version]
                source = "vcs"

                [tool.hatch.build.hooks.vcs]
                version-file = "src/retrying_thing/_version.py"

                [tool.hatch.envs.default]
                dependencies = ["coverage[toml]", "pytest"]

                [tool.hatch.envs.default.scripts]
                test = "pytest {args:tests}"

                [[tool.hatch.envs.all.matrix]]
                python = ["3.9", "3.10", "3.11"]
            """
        }
    )

    assert found.build_backend == "hatchling.build"
    assert found.scm_version is True
    assert found.extras == {"tests": ["pytest", "trio"]}
    assert found.problems == ["pyproject.toml: [tool.hatch.envs] (default, all) not read"]


def test_poetry_core_dependencies_groups_and_extras_converted() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [tool.poetry]
                name = "cleo-like"
                version = "0.8.1"
                description = "Console applications"
                authors = ["Someone <someone@example.org>"]
                classifiers = ["Programming Language :: Python :: 3.7"]

                [tool.poetry.dependencies]
                python = "^3.6"
                clikit = "^0.6.0"
                tomli = { version = ">=1.1.0", python = "<3.11" }
                colorama = { version = "~0.4", markers = "sys_platform == 'win32'" }
                pyyaml = { version = "^6.0", optional = true }
                crashtest = { git = "https://github.com/example/crashtest.git", branch = "main" }

                [tool.poetry.extras]
                yaml = ["pyyaml"]

                [tool.poetry.dev-dependencies]
                pytest = "^6.0"
                pytest-mock = "~3.7"

                [tool.poetry.group.dev.dependencies]
                mypy = ">=0.9,<1.0"
                black = { version = "^22.3", extras = ["d"], python = ">=3.7.1" }

                [tool.poetry.group.docs.dependencies]
                mkdocs = "*"
                local-theme = { path = "../theme", develop = true }

                [build-system]
                requires = ["poetry-core>=1.0.0"]
                build-backend = "poetry.core.masonry.api"
            """
        }
    )

    assert found.build_backend == "poetry.core.masonry.api"
    assert found.project_name == "cleo-like"
    assert found.requires_python == ">=3.6,<4.0"
    assert found.dependencies == [
        "clikit>=0.6.0,<0.7.0",
        'tomli>=1.1.0 ; python_version < "3.11"',
        "colorama>=0.4,<0.5 ; sys_platform == 'win32'",
    ]
    assert found.extras == {"yaml": ["pyyaml>=6.0,<7.0"]}
    assert found.poetry_groups == {
        "dev": [
            "pytest>=6.0,<7.0",
            "pytest-mock>=3.7,<3.8",
            "mypy>=0.9,<1.0",
            'black[d]>=22.3,<23.0 ; python_full_version >= "3.7.1"',
        ],
        "docs": ["mkdocs"],
    }
    assert any("crashtest comes from git" in problem for problem in found.problems)
    assert any("local-theme comes from path" in problem for problem in found.problems)


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("^3.6", ">=3.6,<4.0"),
        ("~3.7", ">=3.7,<3.8"),
        ("^6.0", ">=6.0,<7.0"),
        ("^0.2.3", ">=0.2.3,<0.3.0"),
        ("^0.0.3", ">=0.0.3,<0.0.4"),
        ("^0.0", ">=0.0,<0.1"),
        ("^1", ">=1,<2"),
        ("~1.2.3", ">=1.2.3,<1.3.0"),
        ("~1", ">=1,<2"),
        ("~=1.4", ">=1.4,<2.0"),  # the same versions, as poetry-core writes them
        (">=1.2,<2", ">=1.2,<2"),
        (">= 1.2, < 2.0", ">=1.2,<2.0"),
        (">=1.2 <2.0", ">=1.2,<2.0"),
        ("1.2.3", "==1.2.3"),
        ("=1.2.3", "==1.2.3"),
        ("1.2.*", "==1.2.*"),
        ("*", ""),
        ("", ""),
        ("!=1.5", "!=1.5"),
        ("^1.2 || ^2.0", ">=1.2,<3.0"),
        ("^banana", None),
    ],
)
def test_poetry_constraint(constraint: str, expected: str | None) -> None:
    assert poetry_constraint(constraint) == expected


def test_pdm_backend_dev_dependencies_and_dependency_groups() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [build-system]
                requires = ["pdm-backend"]
                build-backend = "pdm.backend"

                [project]
                name = "marker"
                requires-python = ">=3.8"
                dependencies = []
                dynamic = ["version"]

                [project.optional-dependencies]
                toc = ["python-slugify"]

                [tool.pdm.version]
                source = "scm"

                [tool.pdm.dev-dependencies]
                test = ["pytest>=7", "pytest-cov"]
                doc = ["marker[toc]", "sphinx"]
                local = ["-e file:///${PROJECT_ROOT}/plugins/extra#egg=extra"]

                [dependency-groups]
                lint = ["ruff"]
            """
        }
    )

    assert found.build_backend == "pdm.backend"
    assert found.scm_version is True
    assert found.pdm_dev_groups == {
        "test": ["pytest>=7", "pytest-cov"],
        "doc": ["marker[toc]", "sphinx"],
        "local": [],
        "lint": ["ruff"],
    }
    assert found.dependency_groups == {"lint": ["ruff"]}
    assert found.dependencies == []
    assert len(found.problems) == 1 and "not a PEP 508 requirement" in found.problems[0]


def test_pep735_dependency_groups_resolve_includes_and_report_cycles() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [project]
                name = "signer"
                version = "2.3.0.dev"
                requires-python = ">=3.10"

                [dependency-groups]
                tests = ["pytest", "freezegun"]
                typing = ["mypy", { include-group = "tests" }]
                dev = ["ruff", { include-group = "Typing" }, "tox"]
                loop-a = ["a", { include-group = "loop_b" }]
                loop-b = ["b", { include-group = "loop-a" }]

                [tool.uv]
                dev-dependencies = ["ipython"]
            """
        }
    )

    assert found.dependency_groups["tests"] == ["pytest", "freezegun"]
    assert found.dependency_groups["typing"] == ["mypy", "pytest", "freezegun"]
    assert found.dependency_groups["dev"] == [
        "ruff",
        "mypy",
        "pytest",
        "freezegun",
        "tox",
        "ipython",
    ]
    assert any("include cycle" in problem for problem in found.problems)
    assert found.pdm_dev_groups == {}  # not a pdm project


def test_setuptools_dynamic_dependencies_from_files() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [build-system]
                requires = ["setuptools>=64"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "fromfiles"
                version = "1"
                dynamic = ["dependencies", "optional-dependencies"]

                [tool.setuptools.dynamic]
                dependencies = {file = ["requirements.txt"]}
                optional-dependencies.test = { file = ["requirements-test.txt"] }
            """,
            "requirements.txt": "numpy>=1.22\nscipy\n",
            "requirements-test.txt": "pytest\n",
        }
    )

    assert found.dependencies == ["numpy>=1.22", "scipy"]
    assert found.extras == {"test": ["pytest"]}
    assert [(item.path, item.kind) for item in found.requirements_files] == [
        ("requirements-test.txt", "test"),
        ("requirements.txt", "runtime"),
    ]


# -- setup.py: literals only, never executed -----------------------------------------------------


def test_setup_py_literals_are_followed_through_names_and_kwargs() -> None:
    found = facts(
        {
            "setup.py": """
                #!/usr/bin/env python
                import os
                import sys
                from setuptools import setup

                raise SystemExit("executing setup.py is not allowed")  # ast only: never runs

                package = 'slugger'
                python_requires = ">=3.7"
                install_requires = ['text-unidecode>=1.3']
                extras_requires = {'unidecode': ['Unidecode>=1.1.1']}
                TESTS = ["pytest", "pytest-cov"]
                about = {}
                with open(os.path.join(package, '__version__.py')) as f:
                    exec(f.read(), about)

                common = dict(
                    classifiers=[
                        'Programming Language :: Python :: 3.7',
                        'Programming Language :: Python :: 3.11',
                    ],
                    tests_require=TESTS + ["mock"],
                )

                setup(
                    name=about['__title__'],
                    version=about['__version__'],
                    python_requires=python_requires,
                    install_requires=install_requires,
                    extras_require=extras_requires,
                    test_suite="tests",
                    **common,
                )
            """
        }
    )

    assert found.project_name is None  # about['__title__'] is not a literal
    assert found.requires_python == ">=3.7"
    assert found.dependencies == ["text-unidecode>=1.3"]
    assert found.extras == {"unidecode": ["Unidecode>=1.1.1"]}
    assert found.tests_require == ["pytest", "pytest-cov", "mock"]
    assert found.classifier_pythons == ["3.7", "3.11"]
    assert found.problems == []


def test_setup_py_non_literal_requirements_become_problems() -> None:
    found = facts(
        {
            "setup.py": """
                from setuptools import setup, find_packages

                def read_requirements(path):
                    with open(path) as handle:
                        return [line.strip() for line in handle]

                setup(
                    name="dynamic",
                    packages=find_packages(),
                    install_requires=read_requirements("requirements.txt"),
                    python_requires=">=3.8",
                )
            """,
            "requirements.txt": "requests\n",
        }
    )

    assert found.project_name == "dynamic"
    assert found.requires_python == ">=3.8"
    assert found.dependencies == []
    assert found.problems == ["setup.py: install_requires= is not a literal; not read"]


def test_setuptools_scm_from_setup_py_pyproject_setup_cfg_and_versioneer() -> None:
    from_setup_py = facts(
        {
            "setup.py": """
                from setuptools import setup
                setup(
                    use_scm_version={"write_to": "src/pkg/_version.py"},
                    setup_requires=["setuptools_scm"],
                )
            """
        }
    )
    from_setup_py_true = facts(
        {"setup.py": "from setuptools import setup\nsetup(use_scm_version=True)\n"}
    )
    from_pyproject = facts(
        {
            "pyproject.toml": """
                [build-system]
                requires = ["setuptools>=64"]
                build-backend = "setuptools.build_meta"
                [tool.setuptools_scm]
            """
        }
    )
    from_setup_cfg = facts({"setup.cfg": "[options]\nsetup_requires = setuptools_scm\n"})
    from_versioneer = facts({"setup.py": "import versioneer\n", "versioneer.py": "# versioneer\n"})
    plain = facts({"setup.py": "from setuptools import setup\nsetup(use_scm_version=False)\n"})

    assert from_setup_py.scm_version is True
    assert from_setup_py_true.scm_version is True
    assert from_pyproject.scm_version is True
    assert from_setup_cfg.scm_version is True
    assert from_versioneer.scm_version is True
    assert plain.scm_version is False


def test_c_extension_setup_py() -> None:
    found = facts(
        {
            "setup.py": """
                import platform
                from setuptools import Extension, setup
                from setuptools.command.build_ext import build_ext

                ext_modules = [
                    Extension("fastjson._speedups", ["src/fastjson/_speedups.c"]),
                ]

                class optional_build_ext(build_ext):
                    def run(self):
                        try:
                            super().run()
                        except Exception:
                            pass

                def run_setup(with_binary):
                    setup(
                        cmdclass={"build_ext": optional_build_ext},
                        ext_modules=ext_modules if with_binary else [],
                    )

                run_setup(platform.python_implementation() == "CPython")
            """,
            "src/fastjson/_speedups.c": "/* C */\n",
            "src/fastjson/__init__.py": "",
        }
    )

    assert found.c_extensions is True
    assert found.extension_sources == ["src/fastjson/_speedups.c"]
    assert found.problems == []


def test_cython_sources_and_the_cap_on_extension_sources() -> None:
    files: dict[str, str | bytes] = {
        "setup.py": "from Cython.Build import cythonize\nfrom setuptools import setup\n"
        "setup(ext_modules=cythonize('src/*.pyx'))\n"
    }
    files.update({f"src/mod{i:02}.pyx": "# cython\n" for i in range(25)})
    found = facts(files)
    toml_ext = facts(
        {
            "pyproject.toml": """
                [tool.setuptools]
                ext-modules = [{name = "pkg._c", sources = ["pkg/_c.c"]}]
            """
        }
    )

    assert found.c_extensions is True
    assert len(found.extension_sources) == 20
    assert found.extension_sources[0] == "src/mod00.pyx"
    assert toml_ext.c_extensions is True


def test_setup_py_ext_modules_from_an_unknown_builder_is_a_problem() -> None:
    found = facts(
        {
            "setup.py": """
                import os
                from setuptools import setup
                if os.environ.get("USE_MYPYC") == "1":
                    from mypyc.build import mypycify
                    ext_modules = mypycify(["src/pkg/core.py"])
                else:
                    ext_modules = []
                setup(ext_modules=ext_modules)
            """
        }
    )

    assert found.c_extensions is False
    assert found.problems == ["setup.py: ext_modules built by mypycify(...); not read"]


# -- nox -----------------------------------------------------------------------------------------


def test_noxfile_sessions_pythons_installs_and_commands() -> None:
    found = facts(
        {
            "noxfile.py": """
                import nox
                from nox import session

                nox.options.sessions = ["lint", "tests"]
                PYTHONS = ["3.9", "3.10", "3.11"]
                TEST_DEPS = ("pytest", "pytest-timeout")

                @nox.session(python=PYTHONS)
                def tests(session):
                    session.install("-e", ".[test]")
                    session.install("-r", "requirements/tests.txt")
                    session.install(*TEST_DEPS)
                    session.run("pytest", "--timeout=60", *session.posargs)

                @nox.session(python="3.11", name="tests-numpy")
                def tests_numpy(session: nox.Session) -> None:
                    session.install(".", "numpy")
                    session.run("python", "-m", "pytest", "tests/numpy", env={"X": "1"})

                @session
                def lint(session):
                    session.install("flake8")
                    session.run("flake8", "src")

                def helper(session):
                    session.run("not", "a", "session")
            """,
            "requirements/tests.txt": "hypothesis\n",
        }
    )

    nox = found.nox
    assert nox is not None
    assert [session.name for session in nox.sessions] == ["tests", "tests-numpy", "lint"]
    tests, numpy_tests, lint = nox.sessions
    assert tests.pythons == ["3.9", "3.10", "3.11"]
    assert tests.installs == [
        ["-e", ".[test]"],
        ["-r", "requirements/tests.txt"],
        ["pytest", "pytest-timeout"],
    ]
    assert tests.commands == ["pytest --timeout=60"]
    assert numpy_tests.pythons == ["3.11"]
    assert numpy_tests.commands == ["python -m pytest tests/numpy"]
    assert lint.installs == [] and lint.commands == []  # not a test session
    assert [item.path for item in found.requirements_files] == ["requirements/tests.txt"]


# -- CI ------------------------------------------------------------------------------------------

WORKFLOW = """
    name: tests
    on:
      push:
        branches: [main]
      pull_request:
    jobs:
      tests:
        name: ${{ matrix.os }} / ${{ matrix.python-version }}
        runs-on: ${{ matrix.os }}
        strategy:
          fail-fast: false
          matrix:
            os: [ubuntu-latest, windows-latest]
            python-version: ["3.8", "3.9", "3.10", "pypy-3.9", "3.13-dev"]
            include:
              - os: ubuntu-22.04
                python-version: "3.7"
        steps:
          - uses: actions/checkout@v4
          - uses: actions/setup-python@v5
            with:
              python-version: ${{ matrix.python-version }}
          - name: Install system packages
            if: runner.os == 'Linux'
            run: |
              sudo apt-get update
              sudo apt-get install -y --no-install-recommends gettext libxml2-dev
          - name: Install
            run: |
              python -m pip install --upgrade pip
              pip install -e .[test] \\
                  -r requirements/tests.txt
          - name: Compile translations
            run: msgfmt -o src/pkg/locale/de/LC_MESSAGES/pkg.mo src/pkg/locale/de/LC_MESSAGES/pkg.po
          - run: python setup.py compile_catalog && make build-locales
          - name: Test
            run: |
              # run the suite
              pytest -v --cov=pkg tests/
          - name: Docs smoke test
            shell: pwsh
            run: pytest --doctest-glob="*.rst" docs
      macos:
        runs-on: macos-latest
        steps:
          - uses: actions/setup-python@v5
            with:
              python-version: "3.12"
          - run: brew install gettext && sudo apt-get install -y never-on-macos
          - run: python -m pytest
      docs:
        runs-on: ubuntu-latest
        steps:
          - uses: actions/setup-python@v5
            with:
              python-version: "3.x"
          - run: pip install sphinx
          - run: make html
      release:
        uses: example/workflows/.github/workflows/release.yml@v1
"""


def test_github_workflow_matrix_system_packages_and_steps() -> None:
    found = facts({".github/workflows/tests.yml": WORKFLOW, "requirements/tests.txt": "pytest\n"})
    ci = found.ci

    assert ci.files == [".github/workflows/tests.yml"]
    assert ci.python_versions == ["3.7", "3.8", "3.9", "3.10", "3.12", "3.13"]
    assert ci.system_packages == ["gettext", "libxml2-dev"]  # not the macOS job's
    assert ci.install_commands == [
        "python -m pip install --upgrade pip",
        "pip install -e .[test] -r requirements/tests.txt",
    ]
    assert ci.pre_test_commands == [
        "msgfmt -o src/pkg/locale/de/LC_MESSAGES/pkg.mo src/pkg/locale/de/LC_MESSAGES/pkg.po",
        "python setup.py compile_catalog",
        "make build-locales",
    ]
    assert ci.test_commands == ["pytest -v --cov=pkg tests/", "python -m pytest"]
    assert "pip install sphinx" not in ci.install_commands  # the docs job runs no tests
    assert found.problems == [
        ".github/workflows/tests.yml job release: reusable workflow "
        "example/workflows/.github/workflows/release.yml@v1 not read"
    ]


def test_ci_without_any_test_job_keeps_every_job() -> None:
    ci = facts(
        {
            ".github/workflows/build.yaml": """
                jobs:
                  build:
                    runs-on: ubuntu-latest
                    steps:
                      - uses: actions/setup-python@v5
                        with:
                          python-version: |
                            3.10
                            3.11
                      - run: pip install build
                      - run: python -m build
            """
        }
    ).ci

    assert ci.python_versions == ["3.10", "3.11"]
    assert ci.install_commands == ["pip install build"]
    assert ci.test_commands == []


def test_unquoted_yaml_python_versions_are_flagged() -> None:
    found = facts(
        {
            ".github/workflows/ci.yml": """
                jobs:
                  test:
                    runs-on: ubuntu-latest
                    strategy:
                      matrix:
                        python: [3.9, 3.10, "3.11"]
                    steps:
                      - run: tox
            """
        }
    )

    assert found.ci.python_versions == ["3.9", "3.11"]
    assert any("3.10 unquoted" in problem for problem in found.problems)


def test_composite_action_steps_are_followed() -> None:
    ci = facts(
        {
            ".github/workflows/ci.yml": """
                jobs:
                  test:
                    runs-on: ubuntu-latest
                    steps:
                      - uses: ./.github/actions/setup
                      - run: python -m pytest
            """,
            ".github/actions/setup/action.yml": """
                name: setup
                runs:
                  using: composite
                  steps:
                    - uses: actions/setup-python@v5
                      with:
                        python-version: "3.11"
                    - run: sudo apt-get install -y libgeos-dev
                      shell: bash
                    - run: pip install -r requirements-dev.txt
                      shell: bash
            """,
        }
    ).ci

    assert ci.python_versions == ["3.11"]
    assert ci.system_packages == ["libgeos-dev"]
    assert ci.install_commands == ["pip install -r requirements-dev.txt"]


def test_a_local_reusable_workflow_is_read_with_its_callers_matrix() -> None:
    found = facts(
        {
            ".github/workflows/ci.yml": """
                jobs:
                  tests:
                    strategy:
                      matrix:
                        python-version: ["3.10", "3.12"]
                    uses: ./.github/workflows/tests.yml
                    with:
                      python: ${{ matrix.python-version }}
            """,
            ".github/workflows/tests.yml": """
                on:
                  workflow_call:
                    inputs:
                      python: {type: string}
                jobs:
                  run:
                    runs-on: ubuntu-latest
                    steps:
                      - uses: actions/setup-python@v5
                        with:
                          python-version: ${{ inputs.python }}
                      - run: pip install -e .[test]; pytest -q
            """,
        }
    )

    assert found.ci.files == [".github/workflows/ci.yml", ".github/workflows/tests.yml"]
    assert found.ci.python_versions == ["3.10", "3.12"]
    assert found.ci.install_commands == ["pip install -e .[test]"]
    assert found.ci.test_commands == ["pytest -q"]
    assert found.problems == []


def test_travis_and_gitlab_ci() -> None:
    found = facts(
        {
            ".travis.yml": """
                language: python
                python:
                  - "2.7"
                  - "3.6"
                  - "pypy3"
                matrix:
                  include:
                    - python: "3.7"
                      dist: xenial
                addons:
                  apt:
                    packages:
                      - libenchant-dev
                install:
                  - pip install -r requirements-test.txt
                  - pip install -e .
                script: python setup.py test
            """,
            ".gitlab-ci.yml": """
                image: python:3.9-slim
                stages: [test]
                before_script:
                  - apt-get update && apt-get install -y gcc
                .template: &template
                  script: ["echo hidden"]
                test:
                  stage: test
                  script:
                    - pip install tox
                    - tox -e py39
                test-311:
                  image: python:3.11
                  script: pytest
            """,
        }
    )

    assert found.ci.files == [".travis.yml", ".gitlab-ci.yml"]
    assert found.ci.python_versions == ["2.7", "3.6", "3.7", "3.9", "3.11"]
    assert found.ci.system_packages == ["libenchant-dev", "gcc"]
    assert found.ci.test_commands == ["python setup.py test", "tox -e py39", "pytest"]
    assert "pip install -r requirements-test.txt" in found.ci.install_commands


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("pytest -x tests", "test"),
        ("python -m pytest", "test"),
        ("python3.11 -W error -m pytest -q", "test"),
        ("coverage run -m pytest", "test"),
        ("coverage run --source=pkg test.py", "test"),
        ("python -m unittest discover -s tests", "test"),
        ("python setup.py test", "test"),
        ("make test", "test"),
        ("tox", "test"),
        ("python -m tox -e py39", "test"),
        ("tox -e lint", "other"),
        ("tox -e docs,pre-commit", "other"),
        ("tox -p -e py,build --notest", "install"),
        ("nox -s tests-3.11", "test"),
        ("nox -s lint", "other"),
        ("uv run --python ${{ matrix.python }} pytest", "test"),
        ("poetry run pytest -q tests/", "test"),
        ("pdm run -v pytest tests", "test"),
        ("hatch run test:cov", "test"),
        ("uvx --with tox-uv tox -e ${{ matrix.tox }}", "test"),
        ("python -m mypkg.tests.runner .", "test"),
        ("./runtests.py --verbose", "test"),
        ("bash scripts/run_tests.sh", "test"),
        ("pip install -e .[test]", "install"),
        ("python -m pip install -U pip", "install"),
        ("uv pip install --system -r requirements.txt", "install"),
        ("uv sync --all-extras", "install"),
        ("poetry install --with dev", "install"),
        ("pdm install -G test", "install"),
        ("msgfmt -o a.mo a.po", "pre_test"),
        ("pybabel compile -d src/pkg/translations", "pre_test"),
        ("REQUIRE_SPEEDUPS=1 python setup.py build_ext -i", "pre_test"),
        ("python manage.py compilemessages", "pre_test"),
        ("django-admin compilemessages", "pre_test"),
        ("make compile-translations", "pre_test"),
        ("make html", "other"),
        ("python -c 'import pkg'", "other"),
        ("test -f setup.py", "other"),
        ("sudo apt-get install -y gettext", "system"),
        ("echo done", "other"),
    ],
)
def test_classify_command(command: str, kind: str) -> None:
    assert classify_command(command)[0] == kind


def test_apt_packages_lose_flags_and_options() -> None:
    assert classify_command(
        "sudo -E apt-get -o Dpkg::Use-Pty=0 install -y --no-install-recommends a b"
    )[1] == ["a", "b"]


def test_run_segments_join_continuations_and_split_and_lists() -> None:
    run = 'pip install \\\n    -e . && pytest -k "a && b"\n# comment\n\necho done\n'
    assert run_segments(run) == ["pip install -e .", 'pytest -k "a && b"', "echo done"]


def test_run_segments_split_at_semicolons_so_the_test_command_is_not_lost() -> None:
    """``classify_command`` takes one command: before the shell splitter, ``pip install -e . ;
    pytest`` was one segment, classified an install, and its ``pytest`` was lost."""
    segments = run_segments("pip install -e . ; pytest")

    assert segments == ["pip install -e .", "pytest"]
    assert [classify_command(segment)[0] for segment in segments] == ["install", "test"]


def test_run_segments_split_pipes_or_lists_and_groups_but_not_expressions() -> None:
    run = (
        "pytest -x | tee log || exit 1\n"
        'if [ -n "$CI" ]; then python -m pytest; fi  # run; again\n'
        "tox -e ${{ matrix.env || 'py' }}\n"
    )
    assert run_segments(run) == [
        "pytest -x",
        "tee log",
        "exit 1",
        '[ -n "$CI" ]',
        "python -m pytest",
        "tox -e ${{ matrix.env || 'py' }}",
    ]


# -- submodules, pytest configuration ----------------------------------------------------------


def test_gitmodules() -> None:
    found = facts(
        {
            ".gitmodules": """
                [submodule "tests/toml-test"]
                \tpath = tests/toml-test
                \turl = https://github.com/example/toml-test.git
                [submodule "vendor/lib"]
                \tpath = vendor/lib
                \turl = ../lib.git
                \tbranch = stable
            """
        }
    )

    assert [(s.name, s.path, s.url) for s in found.submodules] == [
        ("tests/toml-test", "tests/toml-test", "https://github.com/example/toml-test.git"),
        ("vendor/lib", "vendor/lib", "../lib.git"),
    ]


PYPROJECT_WITH_PYTEST = """
    [project]
    name = "pkg"
    version = "1"
    [tool.pytest.ini_options]
    addopts = ["--strict-markers"]
    testpaths = "tests"
"""
PYTEST_INI = """
    [pytest]
    addopts = --cov=pkg --cov-fail-under=99 -W error
    timeout = 10
    testpaths = tests integration
    minversion = 7.0
    required_plugins = pytest-cov>=4 pytest-timeout
    markers =
        slow: marks tests as slow
        network: needs the network
"""


def test_pytest_ini_beats_pyproject() -> None:
    config = facts(
        {"pyproject.toml": PYPROJECT_WITH_PYTEST, "pytest.ini": PYTEST_INI}
    ).pytest_config

    assert config is not None
    assert config.path == "pytest.ini"
    assert config.addopts == ["--cov=pkg", "--cov-fail-under=99", "-W", "error"]
    assert config.options == {
        "timeout": "10",
        "markers": "slow: marks tests as slow\nnetwork: needs the network",
    }
    assert config.testpaths == ["tests", "integration"]
    assert config.minversion == "7.0"
    assert config.required_plugins == ["pytest-cov>=4", "pytest-timeout"]


def test_pyproject_counts_only_with_a_pytest_table() -> None:
    tox_ini = "[pytest]\naddopts = -ra\n"
    without = facts({"pyproject.toml": "[project]\nname = 'pkg'\n", "tox.ini": tox_ini})
    with_ini_options = facts({"pyproject.toml": PYPROJECT_WITH_PYTEST, "tox.ini": tox_ini})

    assert without.pytest_config is not None and without.pytest_config.path == "tox.ini"
    assert with_ini_options.pytest_config is not None
    assert with_ini_options.pytest_config.path == "pyproject.toml"
    assert with_ini_options.pytest_config.addopts == ["--strict-markers"]
    assert with_ini_options.pytest_config.testpaths == ["tests"]


def test_tox_ini_pytest_section_beats_setup_cfg() -> None:
    config = facts(
        {
            "setup.cfg": "[tool:pytest]\naddopts = --doctest-modules\n",
            "tox.ini": """
                [tox]
                envlist = py311

                [pytest]
                addopts = --cov=pkg --cov-fail-under=99 -W error
                timeout = 10
            """,
        }
    ).pytest_config

    assert config is not None
    assert config.path == "tox.ini"
    assert config.addopts == ["--cov=pkg", "--cov-fail-under=99", "-W", "error"]
    assert config.options == {"timeout": "10"}


def test_pytest_native_toml_tables() -> None:
    native = facts(
        {
            "pyproject.toml": """
                [tool.pytest]
                minversion = "9.0"
                addopts = ["-ra", "-q"]
                testpaths = ["tests"]
                xfail_strict = true
                timeout = 10
            """
        }
    ).pytest_config
    dedicated = facts(
        {"pytest.toml": '[pytest]\naddopts = "-x"\n', "pytest.ini": "[pytest]\naddopts = -v\n"}
    ).pytest_config

    assert native is not None
    assert native.addopts == ["-ra", "-q"]
    assert native.minversion == "9.0"
    assert native.options == {"xfail_strict": "true", "timeout": "10"}
    assert dedicated is not None and dedicated.path == "pytest.toml"
    assert dedicated.addopts == ["-x"]


def test_empty_pytest_ini_still_wins() -> None:
    config = facts(
        {"pytest.ini": "# nothing\n", "setup.cfg": "[tool:pytest]\naddopts = -v\n"}
    ).pytest_config

    assert config is not None and config.path == "pytest.ini"
    assert config.addopts == []


# -- test runner hints ---------------------------------------------------------------------------


def test_single_root_test_py_unittest_project() -> None:
    found = facts(
        {
            "setup.py": """
                from distutils.core import setup
                setup(
                    name="humanize-lite",
                    version="0.3",
                    py_modules=["humanize_lite"],
                    classifiers=["Programming Language :: Python :: 3.6"],
                )
            """,
            "humanize_lite.py": "def words(n):\n    return str(n)\n",
            "test.py": """
                import unittest
                import humanize_lite

                class TestWords(unittest.TestCase):
                    def test_words(self):
                        self.assertEqual(humanize_lite.words(1), "1")

                if __name__ == "__main__":
                    unittest.main()
            """,
        }
    )

    assert found.project_name == "humanize-lite"
    assert found.test_runner_hints.pytest_used is False
    assert found.test_runner_hints.unittest_only is True
    assert found.test_runner_hints.test_dirs == []


def test_conftest_alone_means_pytest() -> None:
    hints = facts(
        {"setup.py": "", "tests/conftest.py": "", "tests/test_a.py": ""}
    ).test_runner_hints

    assert hints.pytest_used is True
    assert hints.unittest_only is False
    assert hints.test_dirs == ["tests"]


def test_unittest_from_tox_commands() -> None:
    hints = facts(
        {
            "tox.ini": """
                [tox]
                envlist = py{310,311}
                [testenv]
                commands = {envpython} -m unittest -v {posargs}
            """,
            "tests/test_x.py": "",
            "testing/helpers.py": "",
        }
    ).test_runner_hints

    assert hints.pytest_used is False
    assert hints.unittest_only is True
    assert hints.test_dirs == ["testing", "tests"]


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("requirements.txt", "runtime"),
        ("requirements-dev.txt", "dev"),
        ("dev-requirements.txt", "dev"),
        ("dev.requirements.txt", "dev"),
        ("requirements_dev.txt", "dev"),
        ("requirements-test.txt", "test"),
        ("requirements-tests.txt", "test"),
        ("test-requirements.txt", "test"),
        ("requirements/test.txt", "test"),
        ("requirements/tests.txt", "test"),
        ("requirements/testing.txt", "test"),
        ("requirements/requirements-tests.txt", "test"),
        ("tests/requirements.txt", "test"),
        ("test/requirements.txt", "test"),
        (".meta/requirements-test.txt", "test"),
        ("package/requirements.testing.txt", "test"),
        ("requirements/docs.txt", "docs"),
        ("docs/requirements.txt", "docs"),
        ("docs/requirements-rtd.txt", "docs"),
        ("requirements-lint.txt", "lint"),
        ("requirements/flake8.txt", "lint"),
        ("requirements-style.txt", "lint"),
        ("requirements/pre-commit.txt", "lint"),
        ("requirements-mypy.txt", "typing"),
        ("requirements/typing.txt", "typing"),
        ("requirements/types.txt", "typing"),
        ("requirements/typechecks.txt", "typing"),
        ("requirements/dev.txt", "dev"),
        ("requirements/development.txt", "dev"),
        ("requirements/build.txt", "build"),
        ("requirements/packaging.txt", "build"),
        ("requirements/requirements.txt", "runtime"),
        ("requirements/base.txt", "runtime"),
        ("benchmark/requirements.txt", "other"),
        ("requirements/constraints.txt", "other"),
    ],
)
def test_requirements_kind(path: str, kind: str) -> None:
    assert requirements_kind(path) == kind


def test_requirements_file_syntax() -> None:
    found = facts(
        {
            "requirements/dev.in": "-r test.in\nipython\n",
            "requirements/test.in": "pytest\n",
            "requirements-dev.txt": """
                # dev tools
                --index-url https://pypi.org/simple
                -r requirements/test.in
                --requirement=requirements/extra.txt
                -c constraints.txt
                -e .[dev]
                attrs==23.1.0 \\
                    --hash=sha256:aaaa \\
                    --hash=sha256:bbbb
                nbval @ git+https://github.com/example/nbval.git@main
                git+https://github.com/example/plugin.git@v1#egg=plugin
                git+https://github.com/example/noegg.git
                ./vendored/thing
                six; python_version < "3"   # legacy
            """,
        }
    )
    dev = next(item for item in found.requirements_files if item.path == "requirements-dev.txt")

    assert dev.kind == "dev"
    assert dev.has_editable is True
    assert dev.referenced_files == [
        "requirements/test.in",
        "requirements/extra.txt",
        "constraints.txt",
    ]
    assert dev.requirements == [
        "attrs==23.1.0",
        "nbval @ git+https://github.com/example/nbval.git@main",
        "plugin @ git+https://github.com/example/plugin.git@v1",
        'six; python_version < "3"',
    ]
    assert {item.path for item in found.requirements_files} == {
        "requirements-dev.txt",
        "requirements/dev.in",  # no .txt beside it
        "requirements/test.in",
    }
    assert any("without #egg=" in problem for problem in found.problems)
    assert any("./vendored/thing" in problem for problem in found.problems)


def test_setup_cfg_file_directive_reads_requirements() -> None:
    found = facts(
        {
            "setup.cfg": """
                [metadata]
                name = filed
                classifiers = file: classifiers.txt

                [options]
                install_requires = file: requirements/base.txt
                tests_require = pytest; mock

                [options.extras_require]
                test = file: requirements/test.txt
            """,
            "classifiers.txt": "Programming Language :: Python :: 3.10\n",
            "requirements/base.txt": "attrs\n",
            "requirements/test.txt": "pytest\n",
        }
    )

    assert found.dependencies == ["attrs"]
    assert found.extras == {"test": ["pytest"]}
    assert found.tests_require == ["pytest", "mock"]
    assert found.classifier_pythons == ["3.10"]


# -- malformed and hostile input ------------------------------------------------------------------


def test_malformed_files_become_problems_not_exceptions() -> None:
    found = facts(
        {
            "pyproject.toml": "[project\nname = 'broken'\n",
            "setup.cfg": "no section header here\nkey = value\n",
            "tox.ini": "[tox\nenvlist = py39\n",
            "setup.py": "from setuptools import setup\nsetup(name='x',\n",
            "noxfile.py": "def (:\n",
            ".github/workflows/ci.yml": "jobs: [unclosed\n  - : :\n",
            ".gitmodules": '[submodule "x"\npath = a\n',
            "pytest.ini": "[pytest\naddopts = -x\n",
            "requirements.txt": "valid-one\n!!!not a requirement!!!\n",
            ".travis.yml": "- just\n- a list\n",
        }
    )

    joined = "\n".join(found.problems)
    for path in ("pyproject.toml", "setup.cfg", "tox.ini", "setup.py", "noxfile.py", "pytest.ini"):
        assert f"{path}: not valid" in joined
    assert ".github/workflows/ci.yml: not valid YAML" in joined
    assert ".gitmodules: not valid INI" in joined
    assert found.requirements_files[0].requirements == ["valid-one"]
    assert found.tox is None
    assert found.pytest_config is None
    assert found.nox is not None and found.nox.sessions == []
    assert not tripped(found)


def test_wrong_types_in_valid_files_are_tolerated() -> None:
    found = facts(
        {
            "pyproject.toml": """
                build-system = "setuptools"
                [project]
                name = 42
                dependencies = "requests"
                optional-dependencies = ["not", "a", "table"]
                classifiers = {a = 1}
                [dependency-groups]
                dev = "pytest"
                weird = [1, {x = 1}]
                [tool]
                tox = "nope"
                pytest = 3
            """,
            ".github/workflows/ci.yml": """
                jobs:
                  a: 1
                  b:
                    runs-on: [self-hosted, linux]
                    strategy: {matrix: "${{ fromJson(needs.setup.outputs.matrix) }}"}
                    steps: "not a list"
                  c:
                    steps:
                      - 7
                      - run: [1, 2]
                      - uses: actions/setup-python@v5
                        with: nonsense
            """,
            ".travis.yml": "python: {a: 1}\nos: [linux, osx]\nscript: 5\n",
        }
    )

    assert found.project_name is None
    assert found.dependencies == ["requests"]
    assert any("weird" in problem for problem in found.problems)
    assert any("matrix computed by an expression" in problem for problem in found.problems)
    assert not tripped(found)


def test_huge_file_is_not_read() -> None:
    huge = b"[project]\nname = 'big'\n" + b"# padding\n" * (MAX_FILE_BYTES // 10 + 10)
    found = facts({"pyproject.toml": huge, "setup.cfg": "[metadata]\nname = small\n"})

    assert found.project_name == "small"
    assert found.problems == [f"pyproject.toml: larger than {MAX_FILE_BYTES} bytes; not read"]


def test_deeply_nested_and_pathological_inputs_do_not_hang_or_crash() -> None:
    depth = 100_000
    files: dict[str, str | bytes] = {
        "pyproject.toml": "a = " + "[" * depth + "]" * depth + "\n",
        ".github/workflows/deep.yml": "a: " + "[" * depth + "\n",
        ".github/workflows/aliases.yml": "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
        + "jobs: {t: {strategy: {matrix: {python-version: *i}}, steps: [{run: pytest}]}}\n",
        "setup.py": "x = " + "(" * 5000 + ")" * 5000 + "\nsetup(install_requires=x)\n",
        "noxfile.py": "X = 1" + " + 1" * 100_000 + "\n",
        "tox.ini": "[tox]\nenvlist = "
        + "".join("{a,b,c,d,e,f,g,h,i,j}" for _ in range(20))
        + "\n[testenv]\ndeps = {[testenv]deps}\ncommands = {[testenv]commands}\n",
    }
    files["requirements.txt"] = "".join(f"-r r{i}.txt\n" for i in range(300))
    files.update({f"r{i}.txt": f"-r r{i + 1}.txt\n-r requirements.txt\n" for i in range(300)})
    # no time limit asserted (machines here are noisy): a reader without its caps would not
    # return at all, and the test's own timeout would fail it
    found = facts(files)

    assert not tripped(found)
    assert found.tox is not None and found.tox.deps == [] and found.tox.commands == []
    assert any("nests too deep" in problem for problem in found.problems)
    assert any("more than 100 requirements files" in problem for problem in found.problems)


def test_a_failing_reader_is_a_problem() -> None:
    def read(path: str) -> bytes | None:
        if path == "setup.cfg":
            raise OSError("disk on fire")
        return None

    found = read_project(["setup.cfg", "pyproject.toml", "./tests/", "./tests/test_a.py"], read)

    assert found.problems == [
        "pyproject.toml: could not be read",
        "setup.cfg: could not be read (OSError)",
    ]
    assert found.test_runner_hints.test_dirs == ["tests"]


CONFIG_NAMES = [
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "tox.ini",
    "noxfile.py",
    ".github/workflows/ci.yml",
    ".travis.yml",
    ".gitlab-ci.yml",
    "pytest.ini",
    ".gitmodules",
    "requirements.txt",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from(CONFIG_NAMES), st.binary(max_size=400) | st.text(max_size=400))
)
def test_arbitrary_contents_never_raise(files: dict[str, bytes | str]) -> None:
    data = {
        path: value.encode() if isinstance(value, str) else value for path, value in files.items()
    }
    found = read_project(data, data.get)

    assert isinstance(found, ProjectFacts)
    assert not tripped(found)


def test_results_are_deterministic_whatever_the_order_of_names() -> None:
    tree = legacy_tree()
    tree[".github/workflows/tests.yml"] = WORKFLOW
    data = {path: dedent(str(text)).lstrip("\n").encode() for path, text in tree.items()}

    first = read_project(sorted(data), data.get)
    second = read_project(sorted(data, reverse=True), data.get)

    assert first == second


def test_exponential_literals_and_substitutions_are_cut_short() -> None:
    doubling = "".join(f"a{i + 1} = a{i} + a{i}\n" for i in range(40))
    fan_out = " ".join(["{[base]deps}"] * 8)
    files: dict[str, str | bytes] = {
        "setup.py": f"a0 = ['x']\n{doubling}setup(install_requires=a40, tests_require=a3)\n",
        "tox.ini": f"[tox]\nenvlist = py311\n[base]\ndeps = {fan_out}\n"
        f"[testenv]\ndeps = {fan_out}\n",
        "pyproject.toml": "[tool.poetry.dependencies]\nnested = [[[{version = '1'}]]]\n",
    }
    found = facts(files)  # without the caps this would not return (see above)

    assert not tripped(found)
    assert found.tests_require == ["x"] * 8
    assert "setup.py: install_requires= is not a literal; not read" in found.problems
    assert any("nested" in problem for problem in found.problems)


def test_an_envlist_too_large_to_expand_is_a_problem() -> None:
    groups = "".join("{a,b,c,d,e,f,g,h,i,j}" for _ in range(6))
    found = facts({"tox.ini": f"[tox]\nenvlist = py39, {groups}\n[testenv]\ncommands = pytest\n"})

    assert found.tox is not None and found.tox.envlist == ["py39"]
    assert any("too many environments" in problem for problem in found.problems)


def test_a_reader_that_trips_is_a_problem_and_the_rest_is_still_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: object) -> None:
        raise TypeError("unexpected shape")

    monkeypatch.setattr(python_facts, "read_ci_facts", broken)
    found = facts({"setup.cfg": "[metadata]\nname = sturdy\n", ".travis.yml": "python: 3.9\n"})

    assert found.project_name == "sturdy"
    assert found.ci == python_facts.CIFacts()
    assert found.problems == ["CI files: not read (TypeError: unexpected shape)"]
