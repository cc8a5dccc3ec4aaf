"""Test-log parsers behind one registry (as SWE-bench's ``harness/log_parsers``): a recipe names
its runner (``InstallRecipe.test_runner``) and the validator reads the test command's output
with that runner's parser.

The parsers live with their language (``recipes/languages/<language>/runners/``): each
language lists its runners (``Language.runners``: a ``LogParser`` each), the reports they
write (``Language.reports``) and how the recipe side runs them (``Language.runner_commands``).
This module is their union, looked up when first used (``LOG_PARSERS``, ``REPORT_PARSERS``,
``RUNNER_COMMANDS``), and the language-free questions asked of a test id: its file
(``file_of``) and the command that runs it alone (``check_command``), each answered by the
languages.

A parser is two pure functions of the output: the per-test statuses, and the test a run was
inside when it was killed at its timeout (reported as ``error``). A runner may also write a
machine-readable report: ``parse_report`` reads one by its kind, and ``merge_statuses``
(``combine``) merges it with the parsed log, the report winning.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.base import LogParser, ReportParser, RunnerCommand
from streams.evaluation.log_parsers.combine import merge_statuses

__all__ = [
    "LOG_PARSERS",
    "REPORT_PARSERS",
    "RUNNER_COMMANDS",
    "LogParser",
    "RunnerCommand",
    "check_command",
    "file_of",
    "log_parser",
    "merge_statuses",
    "parse_report",
]

_V = TypeVar("_V")


class _Union(Mapping[str, _V]):
    """A read-only mapping that is the union of one table of every registered language, read
    when used (the languages import this package's types: no import-time cycle)."""

    def __init__(self, table: Callable[[object], Mapping[str, _V]]):
        self._table = table
        # merged once per registry (``reload`` makes a new tuple): a lookup per test id is
        # on the grading path
        self._made_of: object = None
        self._merged_tables: dict[str, _V] = {}

    def _merged(self) -> dict[str, _V]:
        from streams.evaluation.recipes.languages import languages

        registered = languages()
        if registered is not self._made_of:
            merged: dict[str, _V] = {}
            for language in registered:
                merged.update(self._table(language))
            self._merged_tables, self._made_of = merged, registered
        return self._merged_tables

    def __getitem__(self, key: str) -> _V:
        return self._merged()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def __repr__(self) -> str:
        return repr(self._merged())


LOG_PARSERS: Mapping[str, LogParser] = _Union(lambda language: language.runners)  # type: ignore[attr-defined]
REPORT_PARSERS: Mapping[str, ReportParser] = _Union(lambda language: language.reports)  # type: ignore[attr-defined]
RUNNER_COMMANDS: Mapping[str, RunnerCommand] = _Union(
    lambda language: language.runner_commands  # type: ignore[attr-defined]
)


def file_of(test_id: str, language: str) -> str | None:
    """The file (or package) a test id of a ``language`` recipe names (``path::name``,
    ``path > name``), as that language reads its ids; None when it names none. Only the
    recipe's language is asked: another's id shapes never have to be told apart."""
    from streams.evaluation.recipes.languages import language_named

    owner = language_named(language)
    return owner.file_of(test_id) if owner is not None else None


def check_command(test_command: str, runner: str, test_id: str) -> str:
    """A shell command that runs the one test ``test_id`` of a recipe's ``test_command`` (its
    exit status is the test's): as the runner's language builds it, else the id appended
    whole."""
    from streams.evaluation.recipes.languages import runner_owner

    language = runner_owner(runner)
    command = language.check_command(test_command, runner, test_id) if language else None
    return command if command is not None else " ".join([test_command, shlex.quote(test_id)])


def log_parser(runner: str) -> LogParser:
    """The parser registered for ``runner``; ValueError naming the known ones otherwise."""
    parsers = dict(LOG_PARSERS)
    try:
        return parsers[runner]
    except KeyError:
        raise ValueError(
            f"no log parser for test runner {runner!r}; known: {sorted(parsers)}"
        ) from None


def parse_report(kind: str, data: bytes) -> dict[str, TestStatus]:
    """Per-test statuses from a report of ``kind`` (``"junit"``); ValueError for an unknown
    kind (naming the known ones) or a report that does not parse."""
    parsers = dict(REPORT_PARSERS)
    try:
        parser = parsers[kind]
    except KeyError:
        raise ValueError(f"no parser for report kind {kind!r}; known: {sorted(parsers)}") from None
    return parser(data)
