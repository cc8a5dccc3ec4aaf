"""The testbed's git repository, as an environment image's steps make it (``GIT_BASE``, the
install steps, ``GIT_IGNORE_BUILT``), on a real repository the test makes: what the install
left is ignored whole, names with gitignore's glob characters included, and what a later build
writes under those directories too; an agent's own change is what ``git diff`` shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from streams.evaluation.environments import GIT_BASE, GIT_IGNORE_BUILT

pytestmark = pytest.mark.unit


def bash(directory: Path, command: str) -> str:
    done = subprocess.run(
        ["bash", "-c", command], cwd=directory, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_what_the_install_left_is_ignored_and_an_agents_change_is_not(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int a;\n")
    (tmp_path / ".gitignore").write_text("*.log\n")
    bash(tmp_path, GIT_BASE)
    # the install steps: a build directory, odd names at the root
    built = {
        "build/temperature_test[1]_include.cmake": "x",
        "build/CMakeFiles/a.o": "x",
        "x*?.o": "x",
        "!bang": "x",
        "#hash": "x",
        "trailing ": "x",
        "back\\slash": "x",
        "run.log": "x",  # ignored already
    }
    for name, text in built.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    bash(tmp_path, GIT_IGNORE_BUILT)
    assert bash(tmp_path, "git status --porcelain --untracked-files=all") == ""
    # later: a build writes more under build/; an agent edits a source and adds a file
    (tmp_path / "build" / "temperature_test[1]_tests.cmake").write_text("y")
    (tmp_path / "src" / "a.c").write_text("int a = 1;\n")
    (tmp_path / "src" / "b[1].c").write_text("int b;\n")
    (tmp_path / "x1.o").write_text("not the ignored x*?.o\n")
    diff = bash(tmp_path, "git add -A && git diff --cached --name-only HEAD")
    assert diff.splitlines() == ["src/a.c", "src/b[1].c", "x1.o"]
