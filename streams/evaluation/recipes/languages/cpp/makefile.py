"""What a project built by a plain Makefile says a recipe needs, read as make reads its rules:
logical lines (a backslash-newline joins the next), ``#`` comments dropped, recipe lines (a tab
first) and conditionals passed over; a rule line is ``targets: prerequisites`` whose colon is
not part of an assignment (``=``, ``:=``, ``::=``, ``?=``, ``+=``, ``!=`` before it). Its facts:
the targets, the one that runs the tests (``check``, else ``test``), whether it compiles C++,
and the libraries its variables link (``-lz``) and the pkg-config modules they ask for
(``$(shell pkg-config --libs libcurl)``), for their Debian packages.

Variables are not expanded (the tree is read, not run): a target named through one is not a
name, so only literal targets count; make runs the test target itself, with its own reading."""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.evaluation.recipes.model import TreeFiles

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")  # the order make looks for them in
TEST_TARGETS = ("check", "test")  # GNU's name for the tests first
MAX_BYTES = 2 << 20
_CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++")
_DIRECTIVES = frozenset(
    {"ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "include", "-include", "sinclude",
     "define", "endef", "export", "unexport", "override", "vpath", "undefine", "private"}
)  # fmt: skip


@dataclass
class MakefileFacts:
    makefile: str
    targets: list[str] = field(default_factory=list)
    test_target: str | None = None
    cxx: bool = False  # C++ sources in the tree (else its tasks say C)
    libraries: list[str] = field(default_factory=list)  # -l names
    modules: list[str] = field(default_factory=list)  # pkg-config modules
    project: str | None = None  # (none: a Makefile names no project)


def logical_lines(text: str) -> list[str]:
    """The Makefile's lines with continuations joined, recipe lines (a tab first) and
    ``define`` bodies left out, comments removed."""
    lines: list[str] = []
    pending = ""
    in_define = False
    for raw in text.splitlines():
        if pending:
            raw = pending + " " + raw.lstrip()
            pending = ""
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            pending = raw[:-1]
            continue
        if raw.startswith("\t"):
            continue  # a recipe line: the shell's, not make's
        line = _without_comment(raw).strip()
        first = line.split(None, 1)[0] if line else ""
        if first == "define" or (first in ("override", "export") and " define " in f" {line} "):
            in_define = True
        elif first == "endef":
            in_define = False
        elif line and not in_define:
            lines.append(line)
    return lines


def _without_comment(line: str) -> str:
    index = 0
    while (index := line.find("#", index)) >= 0:
        if index == 0 or line[index - 1] != "\\":
            return line[:index]
        index += 1
    return line


def rule_targets(line: str) -> list[str]:
    """The targets a rule line names (none: the line is not a rule). The first ``=`` or ``:``
    decides: an ``=`` first (``VAR = a:b``, ``VAR ?= x``) or a ``:`` that begins ``:=`` /
    ``::=`` is an assignment."""
    if line.split(None, 1)[0] in _DIRECTIVES:
        return []
    first = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    if first <= 0 or line[first] == "=" or line[first:].lstrip(":").startswith("="):
        return []
    return [t for t in line[:first].split() if "$" not in t and "%" not in t]


def read_makefile(tree: TreeFiles) -> MakefileFacts | None:
    """The facts of the tree's root Makefile; None without one or without a test target."""
    makefile = next((name for name in MAKEFILES if tree.has(name)), None)
    if makefile is None:
        return None
    text = (tree.read(makefile, MAX_BYTES) or b"").decode("utf-8", errors="replace")
    facts = MakefileFacts(makefile=makefile)
    for line in logical_lines(text):
        targets = rule_targets(line)
        for target in targets:
            if target not in facts.targets:
                facts.targets.append(target)
        if not targets and "=" in line:
            _read_links(line.split("=", 1)[1].split(), facts)
    facts.test_target = next((t for t in TEST_TARGETS if t in facts.targets), None)
    if facts.test_target is None:
        return None
    facts.cxx = any(name.lower().endswith(_CXX_SUFFIXES) for name in tree.names)
    return facts


def _read_links(words: list[str], facts: MakefileFacts) -> None:
    """The ``-l`` libraries and pkg-config modules an assignment's value names."""
    asking = False  # after ``pkg-config``: its modules, up to a word that is not one
    for word in (w.strip("()") for w in words):
        if word.startswith("-l") and len(word) > 2 and "$" not in word:
            found, named = facts.libraries, word[2:]
        elif word.endswith("pkg-config"):
            asking = True
            continue
        elif asking and word and not word.startswith("-") and "$" not in word:
            found, named = facts.modules, word
        else:
            asking = asking and word.startswith("-")
            continue
        if named not in found:
            found.append(named)
