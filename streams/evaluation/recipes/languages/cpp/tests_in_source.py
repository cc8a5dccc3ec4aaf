"""The test cases a C or C++ source defines, with their lines, as the frameworks' macros
declare them:

- GoogleTest: ``TEST(Suite, Name)``, ``TEST_F``, ``TEST_P``, ``TYPED_TEST``, ``TYPED_TEST_P``
  (named ``Suite.Name``; a value-parameterized case's instances are ``Prefix/Suite.Name/N``);
- Catch2 and doctest: ``TEST_CASE("name", ...)``, ``TEST_CASE_METHOD(Fixture, "name")``,
  ``SCENARIO("name")`` (Catch2 names it ``Scenario: name``), ``TEST_CASE_FIXTURE`` (doctest);
  a ``SECTION`` / ``SUBCASE`` belongs to the case around it.

A case spans its macro's line through the closing brace of its body. Comments, string and
character literals (raw strings too) are blanked before the macros and braces are followed,
so a brace in a string or a macro in a comment counts for nothing; a case's name is read from
the source as written. Nothing raises on a malformed source: what could be read is returned.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["LITERAL", "FoundCase", "blank", "closing_offset", "find_cases"]

GTEST_MACROS = frozenset({"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"})
NAMED_MACROS = {  # macro -> the argument that is the case's name, and the prefix it gets
    "TEST_CASE": (0, ""),
    "SCENARIO": (0, "Scenario: "),
    "TEST_CASE_METHOD": (1, ""),
    "TEST_CASE_FIXTURE": (1, ""),
    "TEMPLATE_TEST_CASE": (0, ""),
}
_MACRO = re.compile(
    r"\b(" + "|".join(sorted([*GTEST_MACROS, *NAMED_MACROS], key=len, reverse=True)) + r")\s*\("
)
LITERAL = re.compile(
    r'R"(?P<delim>[^()\\\s]{0,16})\((?:.|\n)*?\)(?P=delim)"'  # a raw string
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'"
    r"|//[^\n]*"
    r"|/\*(?:.|\n)*?\*/",
)
_STRING = re.compile(r'^"((?:\\.|[^"\\])*)"')


@dataclass(frozen=True)
class FoundCase:
    name: str  # ``Suite.Name`` (GoogleTest), the case's name (Catch2, doctest)
    framework: str  # gtest or catch (Catch2 and doctest name cases alike)
    start: int  # 1-based lines, inclusive: the macro through its body's closing brace
    end: int


def blank(text: str) -> str:
    """``text`` with comments and literals as spaces (newlines kept, so offsets stay)."""
    return LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def closing_offset(blank: str, at: int, opening: str, closing: str) -> int:
    """The offset past the ``closing`` that matches the ``opening`` at ``at`` (-1: none)."""
    depth = 0
    for position in range(at, len(blank)):
        char = blank[position]
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return position + 1
    return -1


def _arguments(text: str) -> list[str]:
    """A macro's arguments as written (commas inside parentheses or strings are kept)."""
    found, depth, current, quoted = [], 0, [], False
    at = 0
    while at < len(text):
        char = text[at]
        if quoted:
            current.append(char)
            if char == "\\" and at + 1 < len(text):
                current.append(text[at + 1])
                at += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current.append(char)
        elif char in "(<[{":
            depth += 1
            current.append(char)
        elif char in ")>]}":
            depth -= 1
            current.append(char)
        elif char == "," and depth == 0:
            found.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        at += 1
    found.append("".join(current).strip())
    return found


def _case_name(macro: str, arguments: list[str]) -> tuple[str, str] | None:
    if macro in GTEST_MACROS:
        if len(arguments) < 2 or not all(a.isidentifier() for a in arguments[:2]):
            return None
        return f"{arguments[0]}.{arguments[1]}", "gtest"
    index, prefix = NAMED_MACROS[macro]
    if len(arguments) <= index:
        return None
    literal = _STRING.match(arguments[index])
    if literal is None:
        return None
    name = re.sub(r"\\(.)", r"\1", literal.group(1))
    return prefix + name, "catch"


def find_cases(text: str) -> list[FoundCase]:
    """The test cases of a C or C++ source, in order."""
    blanked = blank(text)
    newlines = [i for i, char in enumerate(text) if char == "\n"]

    def line(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    found: list[FoundCase] = []
    at = 0
    while (macro := _MACRO.search(blanked, at)) is not None:
        opened = macro.end() - 1
        closed = closing_offset(blanked, opened, "(", ")")
        if closed < 0:
            break
        at = closed
        named = _case_name(macro.group(1), _arguments(text[opened + 1 : closed - 1]))
        body = re.match(r"\s*(?:[A-Za-z_]\w*\s*(?:\([^)]*\))?\s*)*\{", blanked[closed:])
        if named is None or body is None:
            continue
        brace = closed + body.end() - 1
        end = closing_offset(blanked, brace, "{", "}")
        if end < 0:
            break
        found.append(FoundCase(named[0], named[1], line(macro.start()), line(end - 1)))
        at = end
    return found
