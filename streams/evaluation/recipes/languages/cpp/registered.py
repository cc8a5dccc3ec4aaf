"""The test functions of C sources whose framework registers a case by its function rather
than by a macro around its body: CUnit's ``CU_add_test(suite, "name", test_fn)``, µnit's and
tinytest's tables (``{"/name", test_fn, ...}``), Unity's ``RUN_TEST(test_fn)``, cmocka's
``cmocka_unit_test(test_fn)``. A function a test patch changes is a case the runs name either
as the function (Unity, cmocka) or as the string its registration gives beside it (CUnit,
µnit, tinytest); both names are returned, and a name no run gives matches nothing.

The sources are read as ``tests_in_source`` reads them: comments and literals blanked first,
so a brace or a name inside them counts for nothing."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from streams.evaluation.recipes.languages.cpp.tests_in_source import (
    GTEST_MACROS,
    LITERAL,
    NAMED_MACROS,
    blank,
    closing_offset,
)

__all__ = ["DefinedFunction", "defined_functions", "registered_names"]

# a definition's head, just before its body's brace: ``name(parameters)``, maybe a
# trailing qualifier (``) const {``, ``) noexcept {``); no ``;`` or brace inside
_HEAD = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^;{}]*)\)\s*(?:[A-Za-z_]\w*\s*)*$")
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "defined"})
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')
_MAX_NAME = 200  # a registration's string longer than this names no case


@dataclass(frozen=True)
class DefinedFunction:
    name: str
    start: int  # 1-based lines, inclusive: the head through the body's closing brace
    end: int


def defined_functions(text: str) -> list[DefinedFunction]:
    """The functions a C source defines at its top level, with their lines; a test macro's
    case (``TEST(A, B) {``) is ``tests_in_source``'s, not one of these."""
    blanked = blank(text)
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    found: list[DefinedFunction] = []
    depth, statement_start, position = 0, 0, 0
    head: re.Match[str] | None = None
    while position < len(blanked):
        char = blanked[position]
        if (
            char == "#"
            and depth == 0
            and not blanked[_line_start(blanked, position) : position].strip()
        ):
            # a preprocessor line (a macro's braces too) is no code and no statement's start
            position = statement_start = _line_end(blanked, position)
            continue
        if char == "{":
            if depth == 0:
                head = _HEAD.search(blanked, statement_start, position)
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                name = head.group("name") if head else ""
                if head and name not in _NOT_FUNCTIONS and not _is_macro_case(name):
                    start = bisect.bisect_left(newlines, head.start()) + 1
                    end = bisect.bisect_left(newlines, position) + 1
                    found.append(DefinedFunction(name, start, end))
                head, statement_start = None, position + 1
        elif char == ";" and depth == 0:
            statement_start = position + 1
        position += 1
    return found


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _is_macro_case(name: str) -> bool:
    return name in GTEST_MACROS or name in NAMED_MACROS


def _line_end(text: str, at: int) -> int:
    """The offset past the end of the (backslash-continued) line holding ``at``."""
    while True:
        newline = text.find("\n", at)
        if newline < 0:
            return len(text)
        if text[newline - 1 : newline] != "\\":
            return newline + 1
        at = newline + 1


def registered_names(functions: Iterable[str], sources: Iterable[str]) -> set[str]:
    """The names ``sources`` register the ``functions`` under: each string literal given
    directly beside a function's name in one argument list or initializer (the name used as a
    value, not called)."""
    wanted = set(functions)
    if not wanted:
        return set()
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, wanted))) + r")\b(?!\s*\()")
    names: set[str] = set()
    for text in sources:
        blanked = blank(text)
        for found in pattern.finditer(blanked):
            group = _enclosing_group(blanked, found.start())
            if group is not None:
                names.update(_direct_strings(text, blanked, *group))
    return names


def _enclosing_group(blanked: str, at: int) -> tuple[int, int] | None:
    """The span of the innermost ``(...)`` or ``{...}`` around ``at`` (its brackets)."""
    depth = 0
    for position in range(at - 1, -1, -1):
        char = blanked[position]
        if char in ")}":
            depth += 1
        elif char in "({":
            if depth == 0:
                closing = ")" if char == "(" else "}"
                end = closing_offset(blanked, position, char, closing)
                return (position, end) if end > 0 else None
            depth -= 1
        elif char == ";" and depth == 0:
            return None  # a statement's boundary: the name is in no list
    return None


def _direct_strings(text: str, blanked: str, start: int, end: int) -> list[str]:
    """The string literals at the group's own level (not inside a nested call or list)."""
    strings = []
    for found in LITERAL.finditer(text, start + 1, end - 1):
        literal = _STRING.fullmatch(found.group(0))
        if literal is None:
            continue  # a comment, a character or a raw string
        inner = blanked[start + 1 : found.start()]
        nested = sum(inner.count(c) for c in "({[") - sum(inner.count(c) for c in ")}]")
        value = literal.group(1)
        if nested == 0 and value and len(value) <= _MAX_NAME:
            strings.append(re.sub(r"\\(.)", r"\1", value))
    return strings
