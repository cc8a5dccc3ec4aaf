"""What a Meson project says a recipe needs, read from its ``meson.build`` files as Meson's
lexer splits them (strings, multi-line strings, comments, identifiers, punctuation; nothing is
evaluated): its name and languages (``project()``), the dependencies it finds
(``dependency('zlib')``), its tests (``test('name', ...)``) and the options that turn them on
(``meson_options.txt`` / ``meson.options``: a boolean or feature option named for tests).

The root ``meson.build`` is read, then each directory it enters (``subdir('tests')``), once.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.model import TreeFiles

ROOT_BUILD = "meson.build"
OPTION_FILES = ("meson.options", "meson_options.txt")
MAX_BUILD_FILES = 400
MAX_BYTES = 2 << 20
_PUNCTUATION = "()[]{},:"


@dataclass
class Call:
    """A function call: its name, its positional string arguments and its keyword
    arguments' first string (``required: false`` is kept as the word ``false``)."""

    name: str
    strings: list[str] = field(default_factory=list)
    keywords: dict[str, str] = field(default_factory=dict)


@dataclass
class MesonFacts:
    project: str | None = None
    languages: tuple[str, ...] = ()
    dependencies: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    test_options: dict[str, str] = field(default_factory=dict)  # option -> the value to set
    build_files: list[str] = field(default_factory=list)


def tokens(text: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of Meson's tokens: ``string``, ``word`` (an identifier, a number, an
    operator) or a punctuation mark as its own kind."""
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == "#":
            end = text.find("\n", index)
            index = length if end < 0 else end
        elif char.isspace():
            index += 1
        elif char == "'" or (char in "fF" and text[index + 1 : index + 2] == "'"):
            index += char != "'"
            value, index = _string(text, index)
            yield "string", value
        elif char in _PUNCTUATION:
            yield char, char
            index += 1
        else:
            start = index
            while (
                index < length
                and not text[index].isspace()
                and text[index] not in (_PUNCTUATION + "'#")
            ):
                index += 1
            yield "word", text[start:index]


def _string(text: str, index: int) -> tuple[str, int]:
    if text.startswith("'''", index):
        end = text.find("'''", index + 3)
        end = len(text) if end < 0 else end
        return text[index + 3 : end], end + 3
    value = []
    index += 1
    while index < len(text) and text[index] not in "'\n":
        if text[index] == "\\" and index + 1 < len(text):
            value.append(text[index + 1])
            index += 2
            continue
        value.append(text[index])
        index += 1
    return "".join(value), index + 1


def calls(text: str) -> list[Call]:
    """Every call of the text (nested ones too), with the strings it is given directly."""
    found: list[Call] = []
    # per open parenthesis: its call (None: a grouping), the keyword argument being read, and
    # how deep in lists and dictionaries of that argument the reader is
    frames: list[list[Any]] = []
    previous: tuple[str, str] = ("", "")
    for kind, value in tokens(text):
        frame = frames[-1] if frames else None
        if kind == "(":
            call = Call(previous[1]) if previous[0] == "word" else None
            if call is not None:
                found.append(call)
            frames.append([call, None, 0])
        elif kind == ")" and frames:
            frames.pop()
        elif frame is None:
            pass
        elif kind == ":" and previous[0] == "word":
            frame[1] = previous[1]
        elif kind in ("[", "{"):
            frame[2] += 1
        elif kind in ("]", "}"):
            frame[2] = max(0, frame[2] - 1)
        elif kind == "," and frame[2] == 0:
            frame[1] = None  # a list's commas do not end the keyword argument it is
        elif frame[0] is not None and kind in ("string", "word"):
            if frame[1] is not None:
                frame[0].keywords.setdefault(frame[1], value)
            elif kind == "string":
                frame[0].strings.append(value)
        previous = (kind, value)
    return found


def read_meson(tree: TreeFiles) -> MesonFacts | None:
    """The facts of the tree's Meson project; None without a root ``meson.build``."""
    if not tree.has(ROOT_BUILD):
        return None
    facts = MesonFacts()
    pending = [ROOT_BUILD]
    while pending and len(facts.build_files) < MAX_BUILD_FILES:
        path = pending.pop(0)
        data = tree.read(path, MAX_BYTES)
        if path in facts.build_files or data is None:
            continue
        facts.build_files.append(path)
        directory = posixpath.dirname(path)
        for call in calls(data.decode("utf-8", errors="replace")):
            _read_call(facts, call, directory, pending)
    for name in OPTION_FILES:
        data = tree.read(name, MAX_BYTES)
        if data is not None:
            facts.test_options.update(test_options(data.decode("utf-8", errors="replace")))
    return facts


def _read_call(facts: MesonFacts, call: Call, directory: str, pending: list[str]) -> None:
    if call.name == "project" and call.strings and facts.project is None:
        facts.project = call.strings[0]
        facts.languages = tuple(call.strings[1:])
    elif call.name == "dependency" and call.strings and call.strings[0]:
        facts.dependencies += [d for d in call.strings[:1] if d not in facts.dependencies]
    elif call.name == "test" and call.strings:
        facts.tests.append(call.strings[0])
    elif call.name == "subdir" and call.strings:
        pending.append(posixpath.join(directory, call.strings[0], ROOT_BUILD))


# words of a test option that turns on more than the tests (a sanitizer's build of them, a
# fuzzer, benchmarks, coverage): left off
MORE_THAN_TESTS = (
    "asan", "ubsan", "tsan", "msan", "lsan", "sanitiz", "fuzz", "bench", "coverage", "valgrind",
    "memcheck", "cuda",
)  # fmt: skip


def test_options(text: str) -> dict[str, str]:
    """The options that turn tests on (``option('tests', type: 'boolean', ...)``) and the
    value that does (``true``, or ``enabled`` for a feature)."""
    chosen: dict[str, str] = {}
    for call in calls(text):
        if call.name != "option" or not call.strings:
            continue
        name = call.strings[0]
        words = name.lower().replace("-", "_").split("_")
        if not any(word in ("test", "tests", "testing", "unittests") for word in words):
            continue
        if any(word.startswith(MORE_THAN_TESTS) for word in words):
            continue  # tests under a sanitizer or a fuzzer: another build, not the suite's
        kind = call.keywords.get("type", "")
        if kind == "boolean":
            chosen[name] = "true"
        elif kind == "feature":
            chosen[name] = "enabled"
    return chosen
