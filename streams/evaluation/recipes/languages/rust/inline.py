"""Rust tests inside source files: the line ranges of the items only a test build compiles.

Rust keeps unit tests next to the code, in ``#[cfg(test)] mod tests { ... }`` at the end of
``src/foo.rs`` or as ``#[test]`` functions anywhere. A pull request that fixes ``foo.rs`` and
adds a test there changes one file in two kinds of places: the extract stage splits its hunks
by these ranges (``Language.test_line_ranges``).

An item (a field, variant, match arm or statement alike) is a test when one of its attributes
is

- a test attribute: a path whose last segment is ``test`` (``#[test]``, ``#[tokio::test]``,
  ``#[sqlx::test(...)]``), ``rstest``, ``test_case`` or ``wasm_bindgen_test``;
- a ``#[cfg(...)]`` whose predicate *requires* ``test``: false whenever ``test`` is off and
  not always false, evaluated with three values (every other option is unknown). So
  ``cfg(test)`` and ``cfg(all(test, feature = "x"))`` are tests; ``cfg(not(test))`` is not,
  nor ``cfg(any(test, feature = "x"))``: a normal build with the feature on compiles it too,
  so a change there can change the code under test.

A range runs from the item's first attribute (or the comments right above it, with no blank
line between: its doc comments) through its closing ``}`` (or ``;``: ``mod tests;``). Items
nested in a test item are inside its range: the ranges are the outermost ones, sorted. An
inner ``#![cfg(test)]`` at the top of a file makes the whole file a test (one inside a block is
not looked at).

The lexer skips comments (nested block comments too), strings with their escapes, raw strings
(``r#"..."#``, any number of ``#``), byte and C strings, and tells char literals (``'{'``)
from lifetimes (``'a``), so no brace inside them counts. Nothing raises: an item left open
runs to the end of the file (or to the close of the block around it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TestFunction", "test_functions", "test_item_ranges"]

_TEST_ATTRIBUTES = frozenset({"test", "rstest", "test_case", "wasm_bindgen_test"})
_OPENERS = frozenset("{([")
_CLOSERS = frozenset("})]")
# the first word of a declaration: a ``,`` inside it (generics: ``impl<A, B>``) ends nothing
_ITEM_WORDS = frozenset(
    {"fn", "mod", "impl", "struct", "enum", "trait", "type", "use", "const", "static"}
    | {"extern", "unsafe", "async", "union", "macro_rules", "macro", "let", "default", "auto"}
)
# declarations that end at their ``;`` only (``const X: S = S { a: 1 };``), not at a ``}``
_SEMICOLON_WORDS = frozenset({"let", "static", "type"})
_CONST_FN_WORDS = frozenset({"fn", "unsafe", "async", "extern"})  # ``const fn`` is a function
_ESCAPED_CHAR_MAX = 12  # '\u{10FFFF}' and a little slack: a longer "char" is a stray quote


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "ident" (numbers too), "punct", "literal", "lifetime", "comment"
    text: str  # an identifier or one punctuation character; "" for the others
    line: int
    end: int  # its last line


def test_item_ranges(text: str) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of the test items of Rust source ``text`` (see above)."""
    last = _last_line(text)
    code, before = _code_and_comments(_tokens(text))
    ranges: list[tuple[int, int]] = []
    depth = 0
    i = 0
    while i < len(code):
        attribute = _attribute(code, i)
        if attribute is not None:
            inner, content, after = attribute
            if inner:
                if depth == 0 and _is_test_attribute(content):
                    return [(1, last)]
                i = after
                continue
            attributes, after = _attribute_group(code, i)
            if not any(map(_is_test_attribute, attributes)):
                i = after  # scan the item itself: a test may be nested in it
                continue
            end = _item_end(code, after)
            start = _attached_start(code, before, i)
            stop = last if end is None else code[end].end
            ranges.append((start, max(start, stop)))
            i = len(code) if end is None else end + 1
            continue
        token = code[i]
        if token.kind == "punct" and token.text in _OPENERS:
            depth += 1
        elif token.kind == "punct" and token.text in _CLOSERS:
            depth = max(0, depth - 1)
        i += 1
    return _merged(ranges)


# -- the lexer --------------------------------------------------------------------------------


def _last_line(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _is_ident_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _tokens(text: str) -> list[_Token]:
    """The tokens of ``text`` that matter here, comments kept (they attach to items)."""
    tokens: list[_Token] = []
    n = len(text)
    i = 0
    if text.startswith("#!") and not text.startswith("#!["):  # a shebang line
        i = n if (eol := text.find("\n")) < 0 else eol
    line = 1
    while i < n:
        char = text[i]
        if char.isspace():
            if char == "\n":
                line += 1
            i += 1
            continue
        kind, text_of, j = _lex_one(text, i)
        end = line + text.count("\n", i, j)
        tokens.append(_Token(kind, text_of, line, end))
        line, i = end, j
    return tokens


def _lex_one(text: str, i: int) -> tuple[str, str, int]:
    """(kind, text, end index) of the token starting at ``text[i]`` (no whitespace)."""
    n = len(text)
    char = text[i]
    if text.startswith("//", i):
        eol = text.find("\n", i)
        return "comment", "", n if eol < 0 else eol
    if text.startswith("/*", i):
        return "comment", "", _block_comment_end(text, i)
    if char == '"':
        return "literal", "", _string_end(text, i + 1)
    if char == "'":
        end, is_char = _quote_end(text, i)
        return ("literal" if is_char else "lifetime"), "", end
    if _is_ident_char(char):
        j = i + 1
        while j < n and _is_ident_char(text[j]):
            j += 1
        return _after_word(text, text[i:j], j)
    return "punct", char, i + 1


def _after_word(text: str, word: str, j: int) -> tuple[str, str, int]:
    """A word, or the literal it prefixes: ``r"..."``, ``br#"..."#``, ``b"..."``, ``b'x'``."""
    n = len(text)
    following = text[j] if j < n else ""
    if word in ("r", "br", "cr") and following in ('"', "#"):
        k = j
        while k < n and text[k] == "#":
            k += 1
        if k < n and text[k] == '"':
            close = '"' + "#" * (k - j)
            found = text.find(close, k + 1)
            return "literal", "", n if found < 0 else found + len(close)
        if word == "r" and k == j + 1 and k < n and _is_ident_char(text[k]):  # r#match
            m = k
            while m < n and _is_ident_char(text[m]):
                m += 1
            return "ident", text[k:m], m
    if word in ("b", "c") and following == '"':
        return "literal", "", _string_end(text, j + 1)
    if word == "b" and following == "'":
        return "literal", "", _quote_end(text, j)[0]
    return "ident", word, j


def _block_comment_end(text: str, i: int) -> int:
    """The index after the ``*/`` closing the (nested) block comment opened at ``i``."""
    depth = 0
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _string_end(text: str, i: int) -> int:
    """The index after the ``"`` closing a string whose contents start at ``i``."""
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
        elif char == '"':
            return i + 1
        else:
            i += 1
    return n


def _quote_end(text: str, i: int) -> tuple[int, bool]:
    """(end index, whether a char literal) of what starts with the ``'`` at ``i``: a char
    literal (``'{'``, ``'\\''``, ``'\\u{7f}'``) or a lifetime or label (``'a``)."""
    n = len(text)
    if i + 1 < n and text[i + 1] == "\\":
        close = text.find("'", i + 3, i + _ESCAPED_CHAR_MAX)
        if close >= 0 and "\n" not in text[i:close]:
            return close + 1, True
        return i + 1, False  # a stray quote
    if i + 2 < n and text[i + 2] == "'" and text[i + 1] != "\n":
        return i + 3, True
    j = i + 1
    while j < n and _is_ident_char(text[j]):
        j += 1
    return j, False


def _code_and_comments(tokens: list[_Token]) -> tuple[list[_Token], list[list[_Token]]]:
    """The tokens but comments, and for each the comments just before it."""
    code: list[_Token] = []
    before: list[list[_Token]] = []
    pending: list[_Token] = []
    for token in tokens:
        if token.kind == "comment":
            pending.append(token)
        else:
            code.append(token)
            before.append(pending)
            pending = []
    return code, before


# -- the items --------------------------------------------------------------------------------


def _at(tokens: list[_Token], k: int, punct: str) -> bool:
    return k < len(tokens) and tokens[k].kind == "punct" and tokens[k].text == punct


def _word(tokens: list[_Token], k: int) -> str | None:
    return tokens[k].text if k < len(tokens) and tokens[k].kind == "ident" else None


def _matching(tokens: list[_Token], k: int) -> int | None:
    """The index of the bracket closing the one at ``k`` (None: it is never closed)."""
    depth = 0
    for j in range(k, len(tokens)):
        token = tokens[j]
        if token.kind != "punct":
            continue
        if token.text in _OPENERS:
            depth += 1
        elif token.text in _CLOSERS:
            depth -= 1
            if depth == 0:
                return j
    return None


def _attribute(code: list[_Token], i: int) -> tuple[bool, list[_Token], int] | None:
    """(inner, the tokens inside its brackets, the index after it) of an attribute at ``i``."""
    if not _at(code, i, "#"):
        return None
    inner = _at(code, i + 1, "!")
    opening = i + 2 if inner else i + 1
    if not _at(code, opening, "["):
        return None
    close = _matching(code, opening)
    if close is None:
        return inner, code[opening + 1 :], len(code)
    return inner, code[opening + 1 : close], close + 1


def _attribute_group(code: list[_Token], i: int) -> tuple[list[list[_Token]], int]:
    """The outer attributes stacked from ``i`` on, and the index of what they annotate."""
    attributes = []
    while (attribute := _attribute(code, i)) is not None and not attribute[0]:
        attributes.append(attribute[1])
        i = attribute[2]
    return attributes, i


def _attached_start(code: list[_Token], before: list[list[_Token]], i: int) -> int:
    """The first line of the attribute at ``i`` or of the comments right above it."""
    start = code[i].line
    floor = code[i - 1].end if i > 0 else 0  # a comment after code on its line is the code's
    for comment in reversed(before[i]):
        if comment.line <= floor or comment.end < start - 1:
            break
        start = min(start, comment.line)
    return start


def _item_shape(code: list[_Token], k: int) -> tuple[bool, bool]:
    """(a declaration, ending at its ``;`` only) of the item starting at ``k``."""
    if _word(code, k) == "pub":
        k += 1
        if _at(code, k, "("):  # pub(crate)
            close = _matching(code, k)
            k = len(code) if close is None else close + 1
    word = _word(code, k)
    if word == "const":
        return True, _word(code, k + 1) not in _CONST_FN_WORDS
    return word in _ITEM_WORDS, word in _SEMICOLON_WORDS


def _item_end(code: list[_Token], k: int) -> int | None:
    """The index of the last token of the item starting at ``k``; None: it runs to the end.

    A declaration ends at its ``;`` or at the ``}`` of its body (and a ``;`` right after);
    anything else (a field, variant, argument, arm) also at a ``,``; an item cut short by the
    close of the block around it ends before that close.
    """
    item, semicolon_only = _item_shape(code, k)
    depth = 0
    for j in range(k, len(code)):
        token = code[j]
        if token.kind != "punct":
            continue
        if token.text in _OPENERS:
            depth += 1
        elif token.text in _CLOSERS:
            if depth == 0:
                return j - 1
            depth -= 1
            if depth == 0 and token.text == "}" and not semicolon_only:
                if _at(code, j + 1, ";") or (not item and _at(code, j + 1, ",")):
                    return j + 1
                return j
        elif depth == 0 and (token.text == ";" or (token.text == "," and not item)):
            return j
    return None


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# -- the attributes ---------------------------------------------------------------------------


class _Malformed(Exception):
    """A ``cfg`` predicate this reader does not understand: no test then."""


def _is_test_attribute(content: list[_Token]) -> bool:
    """Whether the tokens inside ``#[...]`` make the item a test (see the module doc)."""
    path, k = _attribute_path(content)
    if not path:
        return False
    if path[-1] in _TEST_ATTRIBUTES:
        return True
    if path != ["cfg"] or not _at(content, k, "(") or _matching(content, k) != len(content) - 1:
        return False
    predicate = content[k + 1 : -1]
    try:
        off, after = _cfg_value(predicate, 0, test=False)
        on, _ = _cfg_value(predicate, 0, test=True)
    except (_Malformed, RecursionError):
        return False
    if after != len(predicate) and not (_at(predicate, after, ",") and after + 1 == len(predicate)):
        return False
    return off is False and on is not False


def _attribute_path(content: list[_Token]) -> tuple[list[str], int]:
    """(the words of the path, the index after it) an attribute opens with: ``tokio::test``."""
    path: list[str] = []
    k = 2 if _at(content, 0, ":") and _at(content, 1, ":") else 0  # #[::tokio::test]
    while (word := _word(content, k)) is not None:
        path.append(word)
        k += 1
        if not (_at(content, k, ":") and _at(content, k + 1, ":")):
            break
        k += 2
    return path, k


def _cfg_value(tokens: list[_Token], k: int, *, test: bool) -> tuple[bool | None, int]:
    """(value, index after it) of the predicate at ``k`` with ``test`` on or off; None for
    what depends on another option (``feature = "x"``, ``unix``)."""
    word = _word(tokens, k)
    if word is None:
        raise _Malformed
    k += 1
    if _at(tokens, k, "="):  # feature = "x"
        if k + 1 >= len(tokens) or tokens[k + 1].kind != "literal":
            raise _Malformed
        return None, k + 2
    if not _at(tokens, k, "("):
        return (test if word == "test" else None), k
    values: list[bool | None] = []
    k += 1
    while not _at(tokens, k, ")"):
        value, k = _cfg_value(tokens, k, test=test)
        values.append(value)
        if _at(tokens, k, ","):
            k += 1
        elif not _at(tokens, k, ")"):
            raise _Malformed
    return _combined(word, values), k + 1


def _combined(word: str, values: list[bool | None]) -> bool | None:
    if word == "all":
        return False if False in values else (True if None not in values else None)
    if word == "any":
        return True if True in values else (False if None not in values else None)
    if word == "not" and len(values) == 1:
        return None if values[0] is None else not values[0]
    if word == "not":
        raise _Malformed
    return None  # a predicate form of a newer Rust (``version(...)``): unknown


# -- the test functions -----------------------------------------------------------------------

# what may stand between a function's attributes and its ``fn``: ``pub(crate) async unsafe``
_FN_QUALIFIERS = frozenset({"const", "async", "unsafe", "extern", "default"})


@dataclass(frozen=True, slots=True)
class TestFunction:
    """A test function of a source file: the path of the inline modules around it
    (``mod tests { mod nested { ... } }``: ``("tests", "nested")``), its name, and its lines
    (1-based, inclusive) from its first attribute through its closing brace."""

    __test__ = False  # a pytest collecting a test module that imports it: no test class

    modules: tuple[str, ...]
    name: str
    start: int
    end: int


def test_functions(text: str) -> list[TestFunction]:
    """The test functions of Rust source ``text`` (an ``fn`` with a test attribute: the path
    ones of the module doc, not ``cfg``) that libtest runs: the ones at the top of the file or
    of an inline module, not those inside a function, ``impl`` or macro (rustc does not
    collect those). In source order; nothing raises: an item left open runs to the end."""
    code, _ = _code_and_comments(_tokens(text))
    last = _last_line(text)
    found: list[TestFunction] = []
    # per open bracket: the name of the module its ``{`` opens, None for any other bracket
    stack: list[str | None] = []
    i = 0
    while i < len(code):
        in_modules = None not in stack
        attribute = _attribute(code, i)
        if attribute is not None:
            inner, _, after = attribute
            if inner or not in_modules:
                i = after
                continue
            attributes, after = _attribute_group(code, i)
            name = _function_name(code, after)
            if name is None or not any(map(_is_test_function_attribute, attributes)):
                i = after  # a module it annotates is read on: a test may be inside
                continue
            end = _item_end(code, after)
            stop = last if end is None else code[end].end
            modules = tuple(m for m in stack if m is not None)
            found.append(TestFunction(modules, name, code[i].line, max(code[i].line, stop)))
            i = len(code) if end is None else end + 1
            continue
        module = _word(code, i + 1) if _word(code, i) == "mod" else None
        if in_modules and module is not None and _at(code, i + 2, "{"):
            stack.append(module)
            i += 3
            continue
        token = code[i]
        if token.kind == "punct" and token.text in _OPENERS:
            stack.append(None)
        elif token.kind == "punct" and token.text in _CLOSERS and stack:
            stack.pop()
        i += 1
    return found


def _function_name(code: list[_Token], k: int) -> str | None:
    """The name of the function declared at ``k`` (None: no function is)."""
    if _word(code, k) == "pub":
        k += 1
        if _at(code, k, "("):  # pub(crate)
            close = _matching(code, k)
            k = len(code) if close is None else close + 1
    while _word(code, k) in _FN_QUALIFIERS:
        k += 1
        if k < len(code) and code[k].kind == "literal":  # extern "C"
            k += 1
    return _word(code, k + 1) if _word(code, k) == "fn" else None


def _is_test_function_attribute(content: list[_Token]) -> bool:
    """Whether the tokens inside ``#[...]`` make a function a test libtest runs: the test
    attributes (a ``cfg(test)`` makes a helper, compiled for tests, not a test)."""
    path, _ = _attribute_path(content)
    return bool(path) and path[-1] in _TEST_ATTRIBUTES
