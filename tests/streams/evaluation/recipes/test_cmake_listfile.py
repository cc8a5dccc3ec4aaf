"""CMake's language read as cmake-language(7) says: command names in any case, quoted, bracket
and unquoted arguments (with nested parentheses), comments of both kinds, continuations, and a
malformed listfile read up to its error."""

from __future__ import annotations

import pytest

from streams.evaluation.recipes.languages.cpp.listfile import Argument, read_listfile

pytestmark = pytest.mark.unit

LISTFILE = r"""
cmake_minimum_required(VERSION 3.8...3.28)  # a trailing comment
PROJECT(fmt CXX)
#[[ a bracket comment
add_subdirectory(not_a_command) ]]
option(FMT_TEST "Generate the test target." ${FMT_MASTER_PROJECT})
set(MSG "a \"quoted\" value\twith a ; and a \
continuation")
set(RAW [==[keep ${this} "as" [[it]] is]==])
if ((FMT_TEST OR BUILD_TESTING) AND NOT MSVC)
  add_subdirectory(test)
endif ()
message(STATUS a"legacy"b -DX=1)
"""


def test_commands_and_their_arguments() -> None:
    listfile = read_listfile(LISTFILE)
    assert listfile.problem is None
    names = [c.name for c in listfile.commands]
    assert names == [
        "cmake_minimum_required", "project", "option", "set", "set", "if", "add_subdirectory",
        "endif", "message",
    ]  # fmt: skip
    first, project, option, message_set, raw, condition, sub, _, legacy = listfile.commands
    assert first.words == ["VERSION", "3.8...3.28"] and first.line == 2
    assert project.words == ["fmt", "CXX"]
    assert option.arguments[1] == Argument("Generate the test target.", quoted=True)
    assert option.words[2] == "${FMT_MASTER_PROJECT}"
    assert message_set.words[1] == 'a "quoted" value\twith a ; and a continuation'
    assert raw.arguments[1] == Argument('keep ${this} "as" [[it]] is', quoted=True)
    assert condition.words == ["(", "FMT_TEST", "OR", "BUILD_TESTING", ")", "AND", "NOT", "MSVC"]
    assert sub.words == ["test"] and sub.line == 11
    assert legacy.words == ["STATUS", 'a"legacy"b', "-DX=1"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('set(A "never closed)\n', "line 1: a quoted argument is never closed"),
        ("set(A [[open\n", "line 1: a bracket argument or comment is never closed"),
        ("project(x)\nadd_test(NAME t\n", "line 2: add_test( is never closed"),
        ("project(x)\n= nonsense\n", "line 2: expected a command name, found '='"),
        ("project x\n", "line 1: project is not followed by '('"),
    ],
)
def test_a_malformed_listfile_is_read_up_to_its_error(text: str, problem: str) -> None:
    listfile = read_listfile(text)
    assert listfile.problem == problem
    assert [c.name for c in listfile.commands] == (
        ["project"] if text.startswith("project(") else []
    )
