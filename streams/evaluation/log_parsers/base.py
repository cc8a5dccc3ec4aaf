"""What a test runner is to the engine, as types every language's runners fill in: how its
output is read (``LogParser``), how its machine-readable report is (``ReportParser``), and how
the recipe side runs it so that both can be read (``RunnerCommand``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from schemas.tasks import TestStatus

# a report's bytes -> per-test statuses (ValueError when it is malformed or refused)
ReportParser = Callable[[bytes], dict[str, TestStatus]]


@dataclass(frozen=True)
class LogParser:
    """How to read one test runner's output."""

    parse: Callable[[str], dict[str, TestStatus]]
    running_when_killed: Callable[[str], str | None]
    # the kind of machine-readable report the runner can write (a key of REPORT_PARSERS), if
    # any: for pytest, ``--junitxml=PATH`` (``-o junit_family=xunit1`` keeps each test's file)
    report: str | None = None


@dataclass(frozen=True)
class RunnerCommand:
    """How the recipe side runs a JS runner so that its log and report can be read (the shape
    of ``validator.REPORTS``: the engine appends the test files, and ``report_arguments``
    with ``{path}`` replaced by where it wants the report, before or after the files)."""

    program: str  # how the runner is started
    options: tuple[str, ...]  # the console options its log parser reads (the recipe's too)
    report_arguments: str | None  # turn the report on, written to {path}; None: no report
    report_before_files: bool = False  # node refuses options after its file arguments
    # "appended": test files are positional arguments; "pattern": one regex of their paths
    files: str = "appended"
    note: str = ""
    # the options that run only the test of a title path (its describe blocks, then its
    # title), for a check command of one test id (``check_command``); None: the runner has none
    select: Callable[[list[str]], list[str]] | None = None
    # where ``select`` may run more than that test (a title alone): a shell pipe after the
    # command whose status is that test's, read from the runner's console
    passed: Callable[[list[str]], str] | None = None

    @property
    def command(self) -> str:
        """The runner with its console options."""
        return " ".join([self.program, *(shlex.quote(option) for option in self.options)])

    def line(self, files: Sequence[str] = (), report_path: str | None = None) -> str:
        """The shell command running ``files`` (all tests when empty), with the report written
        to ``report_path`` when given and the runner has one."""
        if self.files == "pattern":
            chosen = "(?:" + "|".join(re.escape(file) for file in files) + ")$" if files else ""
            arguments = [shlex.quote(chosen)] if chosen else []
        else:
            arguments = [shlex.quote(file) for file in files]
        report = []
        if report_path is not None and self.report_arguments is not None:
            report = [self.report_arguments.replace("{path}", shlex.quote(report_path))]
        if self.report_before_files:
            return " ".join([self.command, *report, *arguments])
        return " ".join([self.command, *arguments, *report])


@dataclass(frozen=True)
class ReportFile:
    """Where a runner writes its machine-readable report, and the arguments that ask for it
    (appended after the test files)."""

    path: str
    arguments: str
