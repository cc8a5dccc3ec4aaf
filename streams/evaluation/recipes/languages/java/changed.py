"""The tests a Java test patch adds or changes: ``<package>.<Class>[$<Nested>]#<method>`` of
each test method a line the patch adds falls in (its annotations through its closing brace).

A test patch that does not compile without the fix takes its whole module's tests out of the
run with the test patch alone (javac compiles a module's test sources together); three runs
then tell an old test of the module (it passed at the base: PASS_TO_PASS) from one the patch
changed (its new body never ran before the fix). Each changed ``.java`` file under a
``src/test/java/`` is made as the patch leaves it and scanned: comments, strings and text
blocks blanked, then braces, class declarations and annotations followed. A test method is
one annotated ``@Test`` (JUnit 4 and 5), ``@ParameterizedTest``, ``@RepeatedTest``,
``@TestFactory``, ``@TestTemplate`` or ``@Theory``, or a ``test*`` method of a JUnit 3
``TestCase``. A parameterized method is named without its cases' parameters: each case's id
(``converts(int)[1]``) is new with the patch anyway.

Nothing raises on a malformed patch or source: what could be read is returned.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import file_patches, new_side, touched_by

__all__ = ["changed_tests", "find_test_methods"]

_MAX_SOURCE = 8 << 20
TEST_SOURCES = "src/test/java/"
TEST_ANNOTATIONS = frozenset(
    {"Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate", "Theory"}
)
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*|[@{}();=]")
_TYPE_KEYWORDS = frozenset({"class", "interface", "enum", "record"})
_BLANKED = re.compile(
    r'"""(?:\\.|[^\\])*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/',
    re.DOTALL,
)


@dataclass(frozen=True)
class FoundTest:
    classes: tuple[str, ...]  # the enclosing classes, outermost first
    name: str
    start: int  # 1-based lines, inclusive: its first annotation through its closing brace
    end: int


def _blank(text: str) -> str:
    """``text`` with comments and literals replaced by spaces (newlines kept)."""
    return _BLANKED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def find_test_methods(text: str) -> tuple[str, list[FoundTest]]:
    """The package and the test methods of a Java source."""
    source = _blank(text)
    newlines = [i for i, c in enumerate(source) if c == "\n"]

    def line(position: int) -> int:
        return bisect.bisect_right(newlines, position - 1) + 1

    tokens = [(m.group(0), m.start()) for m in _TOKEN.finditer(source)]
    package = ""
    stack: list[str | None] = []  # per open brace: a class's name, or None (another block)
    junit3: list[bool] = []  # per open class: whether it extends TestCase
    pending_class: str | None = None
    extends_test_case = False
    annotations: list[tuple[str, int]] = []
    found: list[FoundTest] = []
    i = 0
    while i < len(tokens):
        token, position = tokens[i]
        in_class_body = bool(stack) and stack[-1] is not None
        if token == "package" and not stack and i + 1 < len(tokens):
            package = re.sub(r"\s+", "", tokens[i + 1][0])
        elif token == "@" and i + 1 < len(tokens):
            name = tokens[i + 1][0].rsplit(".", 1)[-1].strip()
            annotations.append((name, position))
            i += 2
            if i < len(tokens) and tokens[i][0] == "(":  # the annotation's arguments
                i = _after_parentheses(tokens, i)
            continue
        elif token in _TYPE_KEYWORDS and i + 1 < len(tokens) and tokens[i + 1][0] not in "{(;":
            pending_class, extends_test_case = tokens[i + 1][0], False
            annotations = []
        elif token == "TestCase" and pending_class is not None:
            extends_test_case = True
        elif token == "{":
            stack.append(pending_class)
            if pending_class is not None:
                junit3.append(extends_test_case)
            pending_class = None
            annotations = []
        elif token == "}":
            if stack and stack.pop() is not None and junit3:
                junit3.pop()
        elif token == ";":
            annotations = []
        elif token == "(" and in_class_body and pending_class is None and i > 0:
            name = tokens[i - 1][0]
            tested = any(a in TEST_ANNOTATIONS for a, _ in annotations)
            tested = tested or (bool(junit3) and junit3[-1] and name.startswith("test"))
            close = _after_parentheses(tokens, i)
            body = close
            while body < len(tokens) and tokens[body][0] not in ("{", ";"):
                body += 1  # throws clauses
            if body < len(tokens) and tokens[body][0] == "{":
                end = _after_braces(tokens, body)
                if tested:
                    first = annotations[0][1] if annotations else tokens[i - 1][1]
                    classes = tuple(c for c in stack if c is not None)
                    last = tokens[end - 1][1] if end - 1 < len(tokens) else len(source)
                    found.append(FoundTest(classes, name, line(first), line(last)))
                annotations = []
                i = end
                continue
            annotations = []
            i = close
            continue
        i += 1
    return package, found


def _after_parentheses(tokens: list[tuple[str, int]], i: int) -> int:
    depth = 0
    while i < len(tokens):
        depth += {"(": 1, ")": -1}.get(tokens[i][0], 0)
        i += 1
        if depth == 0:
            break
    return i


def _after_braces(tokens: list[tuple[str, int]], i: int) -> int:
    depth = 0
    while i < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[i][0], 0)
        i += 1
        if depth == 0:
            break
    return i


def changed_tests(tree: TreeFiles, test_patch: str) -> list[str]:
    """The ids of the test methods ``test_patch`` adds or changes in the test sources of
    ``tree`` (the base the patch applies to), sorted."""
    found: set[str] = set()
    for patch in file_patches(test_patch):
        path = patch.new
        if not path or not path.endswith(".java") or TEST_SOURCES not in path:
            continue
        text, added = new_side(tree, patch, _MAX_SOURCE)
        package, methods = find_test_methods(text)
        for method in touched_by(methods, added, lambda m: (m.start, m.end)):
            if method.classes:
                qualified = ".".join(p for p in (package, method.classes[0]) if p)
                nested = "".join(f"${c}" for c in method.classes[1:])
                found.add(f"{qualified}{nested}#{method.name}")
    return sorted(found)
