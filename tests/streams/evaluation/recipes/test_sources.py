"""recipes.sources: the file tree, loaders, CI walker and shell splitter every language's
recipe reader shares, on trees given as {path: text} (no disk, no network)."""

from __future__ import annotations

from collections.abc import Callable
from textwrap import dedent

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.evaluation.recipes.sources.ci import CIJob, read_ci
from streams.evaluation.recipes.sources.loaders import (
    load_ini,
    load_json,
    load_toml,
    load_yaml,
)
from streams.evaluation.recipes.sources.shell import apt_installed, split_commands, split_words
from streams.evaluation.recipes.sources.tree import MAX_FILE_BYTES, SourceTree

pytestmark = pytest.mark.unit


def tree_of(files: dict[str, str | bytes], *extra_names: str) -> SourceTree:
    """A tree of {path: content} (text dedented); ``extra_names`` are listed, not readable."""
    data = {
        path: dedent(content).lstrip("\n").encode() if isinstance(content, str) else content
        for path, content in files.items()
    }
    return SourceTree([*data, *extra_names], data.get)


# -- the tree ------------------------------------------------------------------------------------


def test_a_file_over_the_size_cap_is_a_problem_and_no_text() -> None:
    tree = tree_of({"big.txt": b"x" * (MAX_FILE_BYTES + 1), "fits.txt": b"y" * MAX_FILE_BYTES})

    assert tree.text("big.txt") is None
    assert tree.text("fits.txt") == "y" * MAX_FILE_BYTES
    assert tree.problems == [f"big.txt: larger than {MAX_FILE_BYTES} bytes; not read"]
    # a reader with a cap of its own (lockfiles) still reads it
    assert tree.text("big.txt", limit=MAX_FILE_BYTES + 1) == "x" * (MAX_FILE_BYTES + 1)


def test_a_failing_reader_is_a_problem_not_an_exception() -> None:
    def read(path: str) -> bytes | None:
        raise OSError(f"disk gone reading {path}")

    tree = SourceTree(["./setup.py", "docs/", "absent.txt"], read)

    assert tree.names == ["absent.txt", "setup.py"]  # "./" dropped, directories left out
    assert tree.text("setup.py") is None
    assert tree.text("setup.py") is None  # cached: one problem, not two
    assert tree.text("not-listed.txt") is None
    assert tree.problems == ["setup.py: could not be read (OSError)"]


# -- the loaders ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "text", "load", "problem"),
    [
        ("pyproject.toml", "[project\nname = 'x'\n", load_toml, "pyproject.toml: not valid TOML"),
        ("setup.cfg", "name = outside any section\n", load_ini, "setup.cfg: not valid INI"),
        (".github/workflows/ci.yml", "jobs: [unclosed\n", load_yaml, "ci.yml: not valid YAML"),
        ("package.json", '{"name": "x",', load_json, "package.json: not valid JSON"),
    ],
)
def test_a_bad_file_is_none_and_a_problem(
    path: str, text: str, load: Callable[[SourceTree, str], object], problem: str
) -> None:
    tree = tree_of({path: text})

    assert load(tree, path) is None
    assert len(tree.problems) == 1 and problem in tree.problems[0]


def test_the_loaders_read_good_files_and_parse_each_once() -> None:
    reads: list[str] = []
    files = {
        "pyproject.toml": b"[project]\nname = 'x'\n",
        "tox.ini": b"[testenv]\ncommands = pytest --cov-fail-under=90%\n",
        "a.yml": b"on: push\nkey: [1, 2]\n",
        "b.json": b'{"a": [1, null]}',
    }

    def read(path: str) -> bytes | None:
        reads.append(path)
        return files.get(path)

    tree = SourceTree(files, read)

    assert load_toml(tree, "pyproject.toml") == {"project": {"name": "x"}}
    ini = load_ini(tree, "tox.ini")
    assert ini is not None and ini.get("testenv", "commands") == "pytest --cov-fail-under=90%"
    assert load_yaml(tree, "a.yml") == {True: "push", "key": [1, 2]}  # YAML 1.1's "on"
    assert load_json(tree, "b.json") == {"a": [1, None]}
    assert load_toml(tree, "pyproject.toml") == {"project": {"name": "x"}}
    assert load_toml(tree, "absent.toml") is None
    assert sorted(reads) == sorted(files) and tree.problems == []


def test_a_yaml_alias_bomb_is_refused() -> None:
    levels = "abcdefgh"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{child}: &{child} [{', '.join(['*' + parent] * 9)}]\n"
        for parent, child in zip(levels, levels[1:] + "i", strict=True)
    )
    tree = tree_of({".github/workflows/bomb.yml": bomb})

    assert load_yaml(tree, ".github/workflows/bomb.yml") is None
    assert len(tree.problems) == 1 and "alias bomb" in tree.problems[0]


# -- the CI walker -------------------------------------------------------------------------------

WORKFLOW = """
    defaults:
      run:
        shell: bash
    env:
      CI: "1"
    jobs:
      test:
        runs-on: ${{ matrix.os }}
        strategy:
          matrix:
            os: [ubuntu-latest]
            node: [18, 20]
        env:
          LEVEL: job
        steps:
          - uses: actions/checkout@v4
          - uses: ./.github/actions/setup
            with:
              node-version: ${{ matrix.node }}
          - run: npm test
            env:
              LEVEL: step
      call:
        strategy:
          matrix:
            python: ["3.11", "3.12"]
        uses: ./.github/workflows/reusable.yml
        with:
          python: ${{ matrix.python }}
      remote:
        uses: octo/workflows/.github/workflows/release.yml@v1
"""
ACTION = """
    name: setup
    runs:
      using: composite
      steps:
        - uses: actions/setup-node@v4
          with:
            node-version: ${{ inputs.node-version }}
        - uses: ./.github/actions/deeper
        - run: npm ci
          shell: bash
"""
DEEPER = """
    runs:
      using: composite
      steps:
        - run: echo deeper
          shell: sh
"""
REUSABLE = """
    on: workflow_call
    jobs:
      unit:
        runs-on: ubuntu-22.04
        defaults:
          run:
            shell: pwsh
        steps:
          - uses: actions/setup-python@v5
            with:
              python-version: ${{ inputs.python }}
          - run: pytest
"""


def github_tree() -> SourceTree:
    return tree_of(
        {
            ".github/workflows/ci.yml": WORKFLOW,
            ".github/workflows/reusable.yml": REUSABLE,
            ".github/actions/setup/action.yml": ACTION,
            ".github/actions/deeper/action.yaml": DEEPER,
        }
    )


def job_named(jobs: list[CIJob], name: str) -> CIJob:
    return next(job for job in jobs if job.name == name)


def test_a_workflow_job_follows_its_local_composite_actions() -> None:
    config = read_ci(github_tree())
    test = job_named(config.jobs, "test")

    assert config.files == [".github/workflows/ci.yml", ".github/workflows/reusable.yml"]
    assert (test.system, test.path, test.runs_on) == (
        "github",
        ".github/workflows/ci.yml",
        "${{ matrix.os }}",
    )
    assert test.matrix == {"os": ["ubuntu-latest"], "node": [18, 20]}
    assert test.env == {"CI": "1", "LEVEL": "job"}
    steps = [(step.uses, step.run, step.shell, step.where) for step in test.steps]
    assert steps == [
        ("actions/checkout@v4", None, "bash", ".github/workflows/ci.yml job test"),
        ("./.github/actions/setup", None, "bash", ".github/workflows/ci.yml job test"),
        ("actions/setup-node@v4", None, None, ".github/actions/setup/action.yml"),
        ("./.github/actions/deeper", None, None, ".github/actions/setup/action.yml"),
        (None, "echo deeper", "sh", ".github/actions/deeper/action.yaml"),
        (None, "npm ci", "bash", ".github/actions/setup/action.yml"),
        (None, "npm test", "bash", ".github/workflows/ci.yml job test"),
    ]
    assert test.steps[1].with_ == {"node-version": "${{ matrix.node }}"}
    assert test.steps[-1].env == {"LEVEL": "step"}


def test_a_job_calling_a_local_reusable_workflow_becomes_its_jobs() -> None:
    tree = github_tree()
    jobs = read_ci(tree).jobs
    called = job_named(jobs, "call/unit")

    assert called.path == ".github/workflows/reusable.yml"
    assert called.caller_matrices == ({"python": ["3.11", "3.12"]},)
    assert called.inputs == {"python": "${{ matrix.python }}"}
    assert [(step.run, step.shell) for step in called.steps if step.run] == [("pytest", "pwsh")]
    assert called.runs_on == "ubuntu-22.04"
    # the workflow is also read on its own, as a file of the workflows directory
    assert job_named(jobs, "unit").caller_matrices == ()
    assert tree.problems == [
        ".github/workflows/ci.yml job remote: reusable workflow "
        "octo/workflows/.github/workflows/release.yml@v1 not read"
    ]


def test_reusable_workflows_and_actions_calling_themselves_stop() -> None:
    tree = tree_of(
        {
            ".github/workflows/loop.yml": """
                jobs:
                  again:
                    uses: ./.github/workflows/loop.yml
                  act:
                    runs-on: ubuntu-latest
                    steps:
                      - uses: ./.github/actions/loop
            """,
            ".github/actions/loop/action.yml": """
                runs:
                  using: composite
                  steps:
                    - run: echo once
                      shell: bash
                    - uses: ./.github/actions/loop
            """,
            ".github/workflows/missing.yml": "jobs: {x: {uses: ./.github/workflows/nope.yml}}\n",
        }
    )
    jobs = read_ci(tree).jobs

    # loop.yml is read once: its call to itself is the cycle, the action's use of itself too
    assert [job.name for job in jobs] == ["act"]
    assert [step.run for step in jobs[-1].steps if step.run] == ["echo once"]
    assert any("loop.yml calls itself or nests too deep" in p for p in tree.problems)
    assert any("action ./.github/actions/loop uses itself" in p for p in tree.problems)
    assert any(
        "reusable workflow ./.github/workflows/nope.yml not found" in p for p in tree.problems
    )


def test_travis_is_one_job_of_its_script_sections() -> None:
    jobs = read_ci(
        tree_of(
            {
                ".travis.yml": """
                    language: node_js
                    os: osx
                    node_js: ["16", "18"]
                    install: npm ci
                    before_install:
                      - npm i -g npm@8
                    script:
                      - npm test
                      - npm run lint
                """
            }
        )
    ).jobs

    assert len(jobs) == 1 and (jobs[0].system, jobs[0].runs_on) == ("travis", "osx")
    assert [step.run for step in jobs[0].steps] == [
        "npm i -g npm@8",
        "npm ci",
        "npm test",
        "npm run lint",
    ]
    assert jobs[0].spec["node_js"] == ["16", "18"]


def test_gitlab_jobs_take_the_global_before_script_and_image() -> None:
    config = read_ci(
        tree_of(
            {
                ".gitlab-ci.yml": """
                    image: python:3.9
                    variables:
                      PIP_CACHE_DIR: .cache
                    before_script:
                      - pip install -U pip
                    .template:
                      script: echo hidden
                    stages: [test]
                    test:
                      script: [pytest]
                      variables:
                        LEVEL: job
                    lint:
                      image: node:20
                      before_script: []
                      script: npm run lint
                """
            }
        )
    )

    assert config.files == [".gitlab-ci.yml"]
    assert [(job.name, job.image) for job in config.jobs] == [
        ("test", "python:3.9"),
        ("lint", "node:20"),
    ]
    assert [step.run for step in config.jobs[0].steps] == ["pip install -U pip", "pytest"]
    assert config.jobs[0].env == {"PIP_CACHE_DIR": ".cache", "LEVEL": "job"}
    assert [step.run for step in config.jobs[1].steps] == ["npm run lint"]


def test_ci_files_that_are_no_mappings_give_no_jobs_and_no_crash() -> None:
    tree = tree_of(
        {
            ".github/workflows/list.yml": "- a\n- b\n",
            ".github/workflows/odd.yml": "jobs: {a: 1, b: {steps: [1, {run: 2}, {run: ok}]}}\n",
            ".travis.yml": "just text\n",
            ".gitlab-ci.yml": "[1, 2]\n",
        }
    )
    config = read_ci(tree)

    assert [(job.name, [s.run for s in job.steps]) for job in config.jobs] == [("b", [None, "ok"])]


# -- the shell splitter --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "texts"),
    [
        ("pip install -e . ; pytest", ["pip install -e .", "pytest"]),
        ("make && pytest -x || exit 1", ["make", "pytest -x", "exit 1"]),
        ("pytest | tee log.txt", ["pytest", "tee log.txt"]),
        ("tox -e py & wait", ["tox -e py", "wait"]),
        ("npm ci\nnpm test", ["npm ci", "npm test"]),
        ("(cd sub && pytest) ; echo done", ["cd sub", "pytest", "echo done"]),
        ("{ pip install .; pytest; } > out", ["pip install .", "pytest"]),
        ("if [ -f x ]; then pytest; else tox; fi", ["[ -f x ]", "pytest", "tox"]),
        ("pytest -k \"a && b\" -m 'c; d'", ["pytest -k \"a && b\" -m 'c; d'"]),
        ("find . -name x -exec rm {} \\; && ls", ["find . -name x -exec rm {} \\;", "ls"]),
        ("pytest -n $(nproc) 2>&1 | tee log", ["pytest -n $(nproc) 2>&1", "tee log"]),
        ("pip install x.git#egg=x # x; y", ["pip install x.git#egg=x"]),
        ("echo `date; ls` && ok", ["echo `date; ls`", "ok"]),
    ],
)
def test_the_splitter_cuts_simple_commands_and_keeps_their_text(
    line: str, texts: list[str]
) -> None:
    commands = split_commands(line)

    assert [command.text for command in commands] == texts
    assert all(line[c.start : c.end] == c.text for c in commands)


def test_the_splitter_gives_words_without_quotes_or_redirections() -> None:
    assert split_words('FOO="a b" jest --ci > log 2>&1 && c8 -r "text" mocha') == [
        ["FOO=a b", "jest", "--ci"],
        ["c8", "-r", "text", "mocha"],
    ]
    assert split_words("python -c 'import x; x.run()' <input") == [
        ["python", "-c", "import x; x.run()"],
    ]
    assert split_words("diff <(a | b) x=$((1 + 2))") == [
        ["diff", "<(a", "|", "b)", "x=$((1", "+", "2))"]
    ]


@pytest.mark.parametrize(
    ("line", "texts"),
    [
        ('pytest -k "a && b', ['pytest -k "a && b']),  # unclosed: one command to the end
        ("echo ok; pytest 'x", ["echo ok", "pytest 'x"]),
        ("ls \\", ["ls \\"]),
        ("", []),
        (" ;; && | ", []),
    ],
)
def test_bad_lines_split_as_far_as_they_can_without_raising(line: str, texts: list[str]) -> None:
    assert [command.text for command in split_commands(line)] == texts


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \t\n;&|()<>{}'\"`\\#$=2", max_size=40))
def test_the_splitter_never_raises_and_cuts_from_the_line(line: str) -> None:
    for command in split_commands(line):
        assert command.text == line[command.start : command.end]
        assert command.words and command.text


@pytest.mark.parametrize(
    ("line", "packages"),
    [
        ("sudo apt-get install -y libssl-dev pkg-config", ["libssl-dev", "pkg-config"]),
        (
            "DEBIAN_FRONTEND=noninteractive apt install -o Dpkg::Options::=x -q zlib1g-dev",
            ["zlib1g-dev"],
        ),
        ("sudo env A=1 /usr/bin/apt-get -y install gettext", ["gettext"]),
        ("apt-get update", None),
        ("pip install apt", None),
        ("aptitude install --assume-yes libxml2-dev", ["libxml2-dev"]),
    ],
)
def test_the_packages_an_apt_install_names(line: str, packages: list[str] | None) -> None:
    (command,) = split_commands(line)
    assert apt_installed(command.words) == packages
