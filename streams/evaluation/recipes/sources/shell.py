"""A shell command line split into its simple commands, by ``shlex`` (``punctuation_chars``):
at ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines outside quotes, with ``( … )`` subshells and
``{ …; }`` groups opened and the keywords of ``if``/``while`` lists dropped, so that
``pip install -e . ; pytest`` and ``if x; then pytest; fi`` both show their ``pytest``.

Each command keeps its text as written (quotes, ``$VAR``, ``$(…)``: what a recipe may run
again) and gets its words as the shell would pass them, without redirections (``> log``,
``2>&1``). Command substitutions (``$(…)``, ``<(…)``) stay inside their word. Nothing raises: an
unbalanced quote leaves the rest of the line to the command it starts in.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO, cast

_PUNCTUATION = ";&|()<>\n"
_SEPARATORS = frozenset({"&&", "||", ";;", ";&", "|&", ";", "&", "|", "\n"})
_REDIRECTIONS = frozenset({"&>>", "&>", "<<<", "<<", ">>", "<>", ">|", "<&", ">&", "<", ">"})
_SUBSTITUTIONS = frozenset({"<(", ">("})  # process substitution: a word, not a subshell
# the operators a run of punctuation characters is cut into, the longest first
_OPERATORS = sorted({*_SEPARATORS, *_REDIRECTIONS, *_SUBSTITUTIONS, "(", ")"}, key=len)[::-1]
# reserved words before a command (``then pytest``) and ending a compound one (``fi``)
_OPENERS = frozenset({"{", "!", "if", "then", "elif", "else", "while", "until", "do"})
_CLOSERS = frozenset({"}", "fi", "done", "esac"})


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: where it is in the line, its text there, its words."""

    start: int
    end: int
    text: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class _Token:
    value: str  # as shlex reads it (quotes removed)
    start: int  # where it is in the line
    end: int
    operator: bool  # a run of unquoted punctuation characters


class _Source:
    """The line as shlex reads it, one character at a time, keeping count of the position:
    shlex tells the words, not where they were, and a command's text is cut from the line.
    shlex only calls ``read(1)`` and, for a comment, ``readline()``."""

    def __init__(self, text: str) -> None:
        self.line = text
        self.pos = 0
        self.exhausted = False
        self.comments: dict[int, int] = {}  # start -> end of each comment

    def read(self, size: int = 1) -> str:
        if self.pos >= len(self.line):
            self.exhausted = True
            return ""
        chunk = self.line[self.pos : self.pos + max(size, 1)]
        self.pos += len(chunk)
        return chunk

    def readline(self) -> str:
        # shlex calls this for a comment; the newline stays, as it ends the command
        start = self.pos - 1  # the '#' just read
        end = self.line.find("\n", self.pos)
        end = len(self.line) if end < 0 else end
        text = self.line[self.pos : end]
        self.comments[start] = end
        self.pos = end
        return text


class _CommentAtWordStart:
    """shlex's ``commenters``: ``#`` starts a comment where a word starts, as in the shell, not
    inside one (``pip install git+https://host/x.git#egg=x``), where shlex would cut it."""

    def __init__(self, lexer: shlex.shlex) -> None:
        self.lexer = lexer

    def __contains__(self, char: object) -> bool:
        # ``state`` is shlex's own (not in its stubs): " " between words
        return char == "#" and getattr(self.lexer, "state", None) == " "


def _skip_blanks(line: str, pos: int, comments: dict[int, int]) -> int:
    while pos < len(line):
        if line[pos] in " \t\r":
            pos += 1
        elif pos in comments:
            pos = comments[pos]
        else:
            break
    return pos


def _tokens(line: str) -> tuple[list[_Token], bool]:
    """The tokens of ``line`` with their places; False when shlex gave up (unbalanced quote,
    trailing backslash) after the tokens returned."""
    source = _Source(line)
    lexer = shlex.shlex(cast(TextIO, source), posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"  # a newline separates commands: a punctuation character here
    lexer.whitespace_split = True
    lexer.quotes = "'\"`"  # a backquoted command is one word, whatever it holds
    lexer.commenters = _CommentAtWordStart(lexer)  # type: ignore[assignment]
    tokens: list[_Token] = []
    previous_end = 0
    try:
        while (value := lexer.get_token()) is not None:
            # shlex has read one character past the token (the one that ended it), unless the
            # line ended
            end = source.pos if source.exhausted else source.pos - 1
            start = _skip_blanks(line, previous_end, source.comments)
            tokens.append(_Token(value, start, end, line[start] in _PUNCTUATION))
            previous_end = end
    except ValueError:
        return tokens, False
    return tokens, True


def _operators(token: _Token) -> list[_Token]:
    """A run of punctuation (``;(``, ``2>&1``'s ``>&``, ``))``) cut into its operators."""
    out: list[_Token] = []
    index = 0
    while index < len(token.value):
        op = next((op for op in _OPERATORS if token.value.startswith(op, index)), None)
        op = op or token.value[index]
        start = token.start + index
        out.append(_Token(op, start, start + len(op), True))
        index += len(op)
    return out


class _Commands:
    """Puts the tokens together into simple commands."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.commands: list[SimpleCommand] = []
        self.parts: list[_Token] = []  # every token of the command being read (its text)
        self.words: list[_Token] = []  # those that are its words
        self.depth = 0  # inside a word's parentheses: $(…), <(…), a=(…)
        self.target = False  # the next word is a redirection's target

    def add(self, token: _Token) -> None:
        if not token.operator:
            self.word(token)
            return
        for op in _operators(token):
            self.operator(op)

    def word(self, token: _Token) -> None:
        if self.depth == 0 and not self.parts:
            unquoted = self.line[token.start : token.end] == token.value
            if unquoted and (token.value in _OPENERS or token.value in _CLOSERS):
                return
        self.parts.append(token)
        if self.target and self.depth == 0:
            self.target = False  # in the text, not a word
        else:
            self.words.append(token)

    def operator(self, op: _Token) -> None:
        adjacent = bool(self.words) and self.words[-1].end == op.start
        if self.depth > 0:
            self.depth += 1 if op.value in _SUBSTITUTIONS or op.value == "(" else 0
            self.depth -= 1 if op.value == ")" else 0
            self.parts.append(op)
            self.words.append(op)
        elif op.value in _SUBSTITUTIONS or (op.value == "(" and adjacent):
            self.depth = 1  # $(…), <(…) and the like: part of the word they are in
            self.parts.append(op)
            self.words.append(op)
        elif op.value in _REDIRECTIONS:
            if adjacent and self.words[-1].value.isdigit():
                self.words.pop()  # the file descriptor of 2>&1
            self.parts.append(op)
            self.target = True
        else:  # a separator, or a subshell's parenthesis
            self.flush()

    def rest(self, start: int) -> None:
        """What follows the last token shlex could read: words of the command it is in (an
        unbalanced quote; better one command too long than one cut inside a quoted string)."""
        position = start
        for piece in self.line[start:].split():
            begin = self.line.find(piece, position)
            position = begin + len(piece)
            token = _Token(piece, begin, position, False)
            self.parts.append(token)
            self.words.append(token)

    def flush(self) -> None:
        if self.words:
            start, end = self.parts[0].start, self.parts[-1].end
            merged: list[str] = []
            last_end = -1
            for word in self.words:
                if merged and word.start == last_end:  # no blank between: one word
                    merged[-1] += word.value
                else:
                    merged.append(word.value)
                last_end = word.end
            self.commands.append(SimpleCommand(start, end, self.line[start:end], tuple(merged)))
        self.parts, self.words = [], []
        self.depth, self.target = 0, False


def split_commands(line: str) -> list[SimpleCommand]:
    """The simple commands of a shell command line (or script), in order."""
    # a backslash-newline joins lines: two blanks of the same length keep the positions
    lexed = line.replace("\\\n", "  ")
    tokens, complete = _tokens(lexed)
    commands = _Commands(line)
    for token in tokens:
        commands.add(token)
    if not complete:
        commands.rest(tokens[-1].end if tokens else 0)
    commands.flush()
    return commands.commands


def split_words(line: str) -> list[list[str]]:
    """The words of each simple command of ``line``."""
    return [list(command.words) for command in split_commands(line)]


APT_PROGRAMS = frozenset({"apt-get", "apt", "aptitude"})
_PREFIXES = frozenset({"sudo", "env"})


def apt_installed(words: Sequence[str]) -> list[str] | None:
    """The packages one ``apt-get install`` / ``apt install`` command's words name (after a
    ``sudo``, ``env`` or variable assignment; options and ``-o`` values left out); None when
    the words are no apt install."""
    at = 0
    while at < len(words) and (words[at] in _PREFIXES or "=" in words[at]):
        at += 1
    if at >= len(words) or words[at].rsplit("/", 1)[-1] not in APT_PROGRAMS:
        return None
    args = list(words[at + 1 :])
    if "install" not in args:
        return None
    after = args[args.index("install") + 1 :]
    return [
        word
        for i, word in enumerate(after)
        if not word.startswith("-") and (i == 0 or after[i - 1] != "-o")
    ]
