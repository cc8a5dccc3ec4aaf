"""CMake's language (``cmake-language(7)``), read as CMake reads it: a listfile is a sequence
of command invocations ``name(arguments)``, each argument a bracket argument (``[=[...]=]``), a
quoted argument (``"..."``, escapes and line continuations) or an unquoted one (which may hold
balanced parentheses and ``"`` pairs); comments are ``#`` to the end of a line and bracket
comments (``#[[...]]``). Variable references (``${X}``) are kept as written: what a recipe
needs from a listfile (its options, the packages it finds, what it fetches, its tests) is read
off the commands, not evaluated.

Nothing raises on a malformed listfile: the commands read before the first error are returned
with the error (``Listfile.problem``), as CMake itself would stop there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Argument", "Command", "Listfile", "read_listfile"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", ";": ";"}
MAX_COMMANDS = 100_000  # a generated listfile of more is read no further


@dataclass(frozen=True)
class Argument:
    """One argument as CMake splits it: its text (escapes applied) and whether it was quoted
    or bracketed (such an argument is never split on ``;`` nor taken as a keyword)."""

    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Command:
    """One command invocation: its name in lower case (CMake's names are case-insensitive),
    its arguments and the line it starts on."""

    name: str
    arguments: tuple[Argument, ...]
    line: int

    @property
    def words(self) -> list[str]:
        """The arguments' texts."""
        return [argument.text for argument in self.arguments]


@dataclass
class Listfile:
    commands: list[Command] = field(default_factory=list)
    problem: str | None = None  # where reading stopped, and why


class _Unclosed(ValueError):
    """The listfile ends inside a command invocation."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.line = 1

    def error(self, why: str) -> ValueError:
        return ValueError(f"line {self.line}: {why}")

    def advance(self, to: int) -> str:
        chunk = self.text[self.at : to]
        self.line += chunk.count("\n")
        self.at = to
        return chunk

    def bracket(self) -> str | None:
        """A bracket argument or comment's content when one starts here, else None."""
        opened = _BRACKET_OPEN.match(self.text, self.at)
        if opened is None:
            return None
        close = "]" + opened.group(1) + "]"
        end = self.text.find(close, opened.end())
        if end < 0:
            raise self.error("a bracket argument or comment is never closed")
        content = self.text[opened.end() : end]
        self.advance(end + len(close))
        return content[1:] if content.startswith("\n") else content

    def skip_space_and_comments(self) -> None:
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char in " \t\r\n":
                self.advance(self.at + 1)
            elif char == "#":
                self.advance(self.at + 1)
                if self.bracket() is None:
                    end = text.find("\n", self.at)
                    self.advance(len(text) if end < 0 else end)
            else:
                return

    def quoted(self) -> str:
        text, out = self.text, []
        start = self.at + 1
        at = start
        while at < len(text):
            char = text[at]
            if char == "\\" and at + 1 < len(text):
                following = text[at + 1]
                if following == "\n":  # a line continuation
                    pass
                else:
                    out.append(_ESCAPES.get(following, following))
                at += 2
                continue
            if char == '"':
                self.advance(at + 1)
                return "".join(out)
            out.append(char)
            at += 1
        raise self.error("a quoted argument is never closed")

    def unquoted(self) -> str:
        text, out, depth = self.text, [], 0
        at = self.at
        while at < len(text):
            char = text[at]
            if char == "\\" and at + 1 < len(text):
                out.append(_ESCAPES.get(text[at + 1], text[at + 1]))
                at += 2
                continue
            if char in " \t\r\n#" and depth == 0:
                break
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    break
                depth -= 1
            elif char == '"':  # a legacy unquoted argument: "a"b keeps its quotes' content
                end = text.find('"', at + 1)
                if end < 0:
                    break
                out.append(text[at : end + 1])
                at = end + 1
                continue
            out.append(char)
            at += 1
        self.advance(at)
        return "".join(out)

    def arguments(self) -> list[Argument]:
        """The arguments after an invocation's ``(`` through its ``)``; nested parentheses
        are arguments of their own (``if((A) AND B)``), as CMake passes them."""
        found: list[Argument] = []
        depth = 0
        while True:
            self.skip_space_and_comments()
            if self.at >= len(self.text):
                raise _Unclosed
            char = self.text[self.at]
            if char == ")":
                self.advance(self.at + 1)
                if depth == 0:
                    return found
                depth -= 1
                found.append(Argument(")"))
            elif char == "(":
                self.advance(self.at + 1)
                depth += 1
                found.append(Argument("("))
            elif char == '"':
                found.append(Argument(self.quoted(), quoted=True))
            elif (content := self.bracket()) is not None:
                found.append(Argument(content, quoted=True))
            else:
                word = self.unquoted()
                if not word:
                    raise self.error(f"unexpected {self.text[self.at]!r}")
                found.append(Argument(word))


def read_listfile(text: str) -> Listfile:
    """The command invocations of a CMake listfile (``CMakeLists.txt``, ``*.cmake``)."""
    reader, listfile = _Reader(text), Listfile()
    try:
        while len(listfile.commands) < MAX_COMMANDS:
            reader.skip_space_and_comments()
            if reader.at >= len(text):
                break
            name = _IDENTIFIER.match(text, reader.at)
            if name is None:
                raise reader.error(f"expected a command name, found {text[reader.at]!r}")
            line = reader.line
            reader.advance(name.end())
            while reader.at < len(text) and text[reader.at] in " \t":
                reader.advance(reader.at + 1)
            if reader.at >= len(text) or text[reader.at] != "(":
                raise reader.error(f"{name.group(0)} is not followed by '('")
            reader.advance(reader.at + 1)
            try:
                arguments = reader.arguments()
            except _Unclosed:
                raise ValueError(f"line {line}: {name.group(0)}( is never closed") from None
            listfile.commands.append(Command(name.group(0).lower(), tuple(arguments), line))
    except ValueError as error:
        listfile.problem = str(error)
    return listfile
