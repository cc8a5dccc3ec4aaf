"""The Python readers on the file texts that exposed their misreadings: requirements files
read as pip reads them, poetry constraints and PEP 735 groups read by their own libraries,
tox factor conditions as tox finds them, versions compared as versions, and the repository's
own scripts a CI test job runs before its tests taken as (failure-tolerant) pre-test steps."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

from streams.evaluation.recipes.languages.python.commands import classify_command
from streams.evaluation.recipes.languages.python.common import sorted_versions
from streams.evaluation.recipes.languages.python.facts import ProjectFacts, read_project
from streams.evaluation.recipes.languages.python.pyproject import poetry_constraint
from streams.evaluation.recipes.languages.python.recipe import (
    RecipeContext,
    python_recipe,
    tolerated_step,
)

pytestmark = pytest.mark.unit


def facts(files: dict[str, str]) -> ProjectFacts:
    data = {path: dedent(text).lstrip("\n").encode() for path, text in files.items()}
    return read_project(list(data), data.get)


# -- 1. a comment line ending in a backslash ----------------------------------------------------

COMMENTS_AND_CONTINUATIONS = """\
# pinned until the next release \\
requests
    # an indented comment \\
attrs
flask # web framework \\
six
sqlalchemy \\
# a comment ends the continuation
click
"""


def test_a_comment_line_ending_in_a_backslash_does_not_swallow_the_next_requirement() -> None:
    """pip never continues a comment line (``req_file.join_lines``): before, ``requests``
    and ``attrs`` were joined to the comment above them and lost. A requirement with a
    comment ending in a backslash does take the next line in, as in pip (``six`` is lost)."""
    found = facts({"requirements.txt": COMMENTS_AND_CONTINUATIONS})

    (item,) = found.requirements_files
    assert item.requirements == ["requests", "attrs", "flask", "sqlalchemy", "click"]


def test_requirements_lines_are_joined_as_pips_own_parser_joins_them(tmp_path: Path) -> None:
    """pip's parser is internal: the check is skipped where it cannot be imported."""
    req_file = pytest.importorskip("pip._internal.req.req_file")
    session = pytest.importorskip("pip._internal.network.session").PipSession()
    path = tmp_path / "requirements.txt"
    path.write_text(COMMENTS_AND_CONTINUATIONS)
    by_pip = [line.requirement for line in req_file.parse_requirements(str(path), session)]

    (item,) = facts({"requirements.txt": COMMENTS_AND_CONTINUATIONS}).requirements_files
    assert item.requirements == by_pip


# -- 2. ${VAR} in -r / -c -----------------------------------------------------------------------


def test_requirement_includes_expand_variables_the_ci_test_job_sets() -> None:
    """pip expands ``${NAME}`` from its environment: the CI job's ``env`` (workflow, job or
    step) is where it runs; a variable set nowhere we read is left as written, and said."""
    found = facts(
        {
            "requirements-dev.txt": """
                -r ${DEPS_DIR}/test.txt
                -c ${CONSTRAINTS}/pins.txt
                pytest
            """,
            "ci/deps/test.txt": "hypothesis\n",
            ".github/workflows/tests.yml": """
                env:
                  DEPS_DIR: ci/deps
                jobs:
                  test:
                    runs-on: ubuntu-latest
                    steps:
                      - run: pip install -r requirements-dev.txt
                      - run: pytest
            """,
        }
    )

    dev = next(item for item in found.requirements_files if item.path == "requirements-dev.txt")
    assert dev.referenced_files == ["ci/deps/test.txt", "${CONSTRAINTS}/pins.txt"]
    included = next(item for item in found.requirements_files if item.path == "ci/deps/test.txt")
    assert included.requirements == ["hypothesis"]
    assert any("${CONSTRAINTS}" in problem for problem in found.problems)
    assert not any("${DEPS_DIR}" in problem for problem in found.problems)


# -- 3. poetry's || ---------------------------------------------------------------------------


def test_a_poetry_union_constraint_becomes_the_range_that_holds_it() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [tool.poetry]
                name = "app"

                [tool.poetry.dependencies]
                python = "^3.8"
                django = "^3.2 || ^4.0"
                click = "^7.0 || ^8.1"
                attrs = ">=21,!=21.1.*"
            """
        }
    )

    assert found.dependencies == ["django>=3.2,<5.0", "click>=7.0,<9.0", "attrs>=21,!=21.1.*"]
    assert not any("not convertible" in problem for problem in found.problems)


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("^1.2 || ^2.0", ">=1.2,<3.0"),
        ("^1.2 || ^3.0", ">=1.2,<4.0"),  # not contiguous: the smallest range holding both
        ("^1.0 | ^2.0", ">=1.0,<3.0"),
        (">=3.8,<3.11 || >=3.12", ">=3.8"),
        ("^1.2,!=1.5", ">=1.2,<2.0,!=1.5"),
        (">=2.7,!=3.0.*,!=3.1.*", ">=2.7,!=3.0.*,!=3.1.*"),
        ("2.0.0-beta.1", "==2.0.0b1"),
        (">=2,<1", None),  # allows nothing
        ("1.2.x", None),
    ],
)
def test_poetry_constraint_by_poetry_core(constraint: str, expected: str | None) -> None:
    assert poetry_constraint(constraint) == expected


# -- 4. PEP 735 groups ------------------------------------------------------------------------


def test_a_long_chain_of_included_groups_is_resolved_not_taken_for_a_cycle() -> None:
    """The hand-written resolver stopped at 30 includes and called that a cycle."""
    groups = "\n".join(f'g{i} = ["pkg{i}", {{ include-group = "G{i + 1}" }}]' for i in range(40))
    found = facts({"pyproject.toml": f'[dependency-groups]\n{groups}\ng40 = ["pkg40"]\n'})

    assert found.dependency_groups["g0"] == [f"pkg{i}" for i in range(41)]
    assert not any("cycle" in problem for problem in found.problems)


def test_dependency_group_cycles_and_bad_entries_are_problems_not_crashes() -> None:
    found = facts(
        {
            "pyproject.toml": """
                [dependency-groups]
                test = ["pytest", "not a requirement!", { include-group = "Missing" }]
                self = ["x", { include-group = "self" }]
                odd = [{ include-group = "test", extra = 1 }, 3]
            """
        }
    )

    assert found.dependency_groups == {"test": ["pytest"], "self": [], "odd": []}
    problems = "\n".join(found.problems)
    assert "dependency-groups.self: include cycle" in problems
    assert "includes unknown group" in problems and "not a PEP 508 requirement" in problems
    assert "dependency-groups.odd: entry" in problems


# -- 5. tox: a factor condition needs whitespace after its colon ---------------------------------


def test_a_tox_colon_without_whitespace_is_no_factor_condition() -> None:
    found = facts(
        {
            "tox.ini": """
                [tox]
                envlist = py39

                [testenv]
                deps =
                    py38: mock
                    py39:
                commands =
                    py38:pytest
                    py39: pytest -x
                    py38: pytest --py38
            """
        }
    )

    assert found.tox is not None
    assert found.tox.commands == ["py38:pytest", "pytest -x"]
    assert found.tox.deps == []


# -- 6. versions compared as versions --------------------------------------------------------


def test_versions_sort_as_versions_and_unparsable_ones_last() -> None:
    """Before, a part that was not a number counted as 0: ``3.x`` came before ``3.9`` and
    ``pypy`` first."""
    versions = ["3.10", "pypy", "3.9", "3.x", "3.10rc1", "2.7", "3.10.1"]

    assert sorted_versions(versions) == ["2.7", "3.9", "3.10rc1", "3.10", "3.10.1", "3.x", "pypy"]


# -- 7. the repository's own scripts before the tests -----------------------------------------

SCRIPTS_WORKFLOW = """
    jobs:
      test:
        runs-on: ubuntu-latest
        steps:
          - uses: actions/checkout@v4
          - run: sudo apt-get install -y gettext
          - run: pip install -e .[test]
          - run: msgfmt -o app/de.mo app/de.po
          - run: ./scripts/build-translations.sh
          - run: sh tools/missing.sh
          - run: |
              python scripts/gen.py --out app/generated.py
              bash scripts/lint.sh
          - run: pytest
          - run: bash ci/after.sh
"""
SCRIPTS_TREE = {
    "setup.py": "from setuptools import setup\nsetup(name='app')\n",
    "scripts/build-translations.sh": "#!/bin/sh\nmsgfmt -o app/x.mo app/x.po\n",
    "scripts/gen.py": "print('generated')\n",
    "scripts/lint.sh": "ruff check .\n",
    "ci/after.sh": "echo done\n",
    ".github/workflows/tests.yml": SCRIPTS_WORKFLOW,
}


def test_scripts_a_test_job_runs_between_install_and_tests_are_pre_test_steps() -> None:
    """Not a file absent from the tree, not a lint script, not a script after the tests."""
    ci = facts(SCRIPTS_TREE).ci

    assert ci.pre_test_scripts == [
        "./scripts/build-translations.sh",
        "python scripts/gen.py --out app/generated.py",
    ]
    assert ci.pre_test_commands == ["msgfmt -o app/de.mo app/de.po", *ci.pre_test_scripts]
    assert ci.system_packages == ["gettext"]


def test_a_script_before_any_install_or_without_a_test_step_is_not_taken() -> None:
    tree = dict(SCRIPTS_TREE)
    tree[".github/workflows/tests.yml"] = """
        jobs:
          test:
            runs-on: ubuntu-latest
            steps:
              - run: ./scripts/build-translations.sh
              - run: pip install -e .
              - run: pytest
          docs:
            runs-on: ubuntu-latest
            steps:
              - run: pip install -e .
              - run: python scripts/gen.py
    """
    assert facts(tree).ci.pre_test_scripts == []


def test_the_recipe_runs_the_scripts_in_order_and_lets_them_fail() -> None:
    found = facts(SCRIPTS_TREE)
    ctx = RecipeContext(list(SCRIPTS_TREE), lambda _: None, found, "3.11", "python:3.11")

    recipe = python_recipe(ctx)

    assert recipe.pre_test_commands == (
        "msgfmt -o app/de.mo app/de.po",
        tolerated_step("./scripts/build-translations.sh"),
        tolerated_step("python scripts/gen.py --out app/generated.py"),
    )
    assert "gettext" in recipe.system_packages
    assert "ci:pre-test-script" in recipe.sources


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_failing_pre_test_script_is_dropped_with_its_reason(tmp_path: Path) -> None:
    script = tmp_path / "scripts" / "build.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho building\nexit 3\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)

    failed = _run(tolerated_step("./scripts/build.sh"), tmp_path)
    assert failed.returncode == 0
    assert "building" in failed.stdout
    assert "swe-stream: pre-test step dropped (exit 3): ./scripts/build.sh" in failed.stderr

    script.write_text("#!/bin/sh\necho built > built.txt\n")
    passed = _run(tolerated_step("FLAG='a b' sh scripts/build.sh"), tmp_path)
    assert passed.returncode == 0 and passed.stderr == ""
    assert (tmp_path / "built.txt").read_text() == "built\n"


# -- 8. a line of several commands ------------------------------------------------------------


def test_a_line_that_installs_then_tests_is_a_test_command() -> None:
    assert classify_command("pip install -e . ; pytest") == ("test", [])
    assert classify_command("sudo apt-get install -y gettext && python -m pytest -x") == (
        "test",
        ["gettext"],
    )
    assert classify_command("bash -ex scripts/run_tests.sh")[0] == "test"
