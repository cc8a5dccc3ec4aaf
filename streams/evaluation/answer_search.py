"""Whether a container holds the answer to its task: ``search_for_answer``.

A benchmark is only worth something if the agent under test cannot look the fix up. The
answer is the fix's commit (its id: a history that holds it holds the fix) and the lines the
gold and test patches add; a line of at least ``MIN_LINE_CHARS`` characters that the base tree
does not already hold is specific enough that finding it anywhere means the answer leaked. The
search covers what an agent can read in its container: every regular file (text files by
content; ``/proc``, ``/sys`` and ``/dev`` are the kernel's), every object of every git
repository (loose and packed, reachable or not: ``git cat-file --batch-all-objects``), the
environment, and what the engine says of the container and its image (history and labels).

Blocking (the Docker SDK, and commands run in the sandbox, which must be entered).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.sandbox import Sandbox

MIN_LINE_CHARS = 20
NEEDLES = "/tmp/swe-stream-answer-needles"
KERNEL_DIRS = ("proc", "sys", "dev")
# find's expression that leaves the kernel's directories out
_PRUNE_KERNEL = "\\( " + " -o ".join(f"-path /{name}" for name in KERNEL_DIRS) + " \\) -prune"
_SHA = re.compile(r"[0-9a-f]{40}")


def added_lines(patch: str, min_chars: int = MIN_LINE_CHARS) -> list[str]:
    """The lines a unified diff adds, stripped, of at least ``min_chars`` characters, once each
    (file headers are not lines it adds)."""
    found: dict[str, None] = {}
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            text = line[1:].strip()
            if len(text) >= min_chars:
                found[text] = None
    return list(found)


@dataclass
class AnswerSearch:
    """What was searched for, where, and what was found (``NAME: where``)."""

    commits: list[str]
    lines: list[str]
    in_base: int = 0  # added lines the base tree already holds: not the answer
    searched: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.found

    def report(self) -> str:
        """The search in a few lines: what, where, and the finds."""
        lines = [
            f"searched for {len(self.commits)} commit id(s) and {len(self.lines)} added line(s) "
            f"of {MIN_LINE_CHARS}+ characters ({self.in_base} more are in the base tree)",
            *(f"  in {where}" for where in self.searched),
        ]
        lines += [f"  FOUND {what}" for what in self.found] or ["  found nothing"]
        return "\n".join(lines)


def _exec(box: Sandbox, command: str) -> tuple[int, str]:
    result = box.run(command, timeout=600, output_limit=16 << 20)
    return result.exit_code, result.stdout


def _put_needles(box: Sandbox, needles: Iterable[str]) -> None:
    box.put_file(NEEDLES, "".join(f"{needle}\n" for needle in needles))


def _matched(output: str, needles: Sequence[str]) -> list[str]:
    """The needles ``grep -o`` printed (one match per line)."""
    wanted = set(needles)
    return sorted({line for line in output.splitlines() if line in wanted})


def _search_files(box: Sandbox, needles: list[str], search: AnswerSearch) -> None:
    _, counted = _exec(box, f"find / {_PRUNE_KERNEL} -o -type f -print | wc -l")
    search.searched.append(
        f"files: {counted.strip()} regular files under / (not /proc, /sys, /dev)"
    )
    kernel = "|".join(KERNEL_DIRS)
    _, hits = _exec(
        box,
        f"cd / && grep -rIlF -f {NEEDLES} $(ls -A / | grep -vxE '{kernel}') 2>/dev/null "
        f"| grep -vx '{NEEDLES[1:]}' | head -50",
    )
    for path in hits.splitlines():
        where = "/" + path
        _, what = _exec(box, f"grep -oF -f {NEEDLES} {shlex.quote(where)} | head -5")
        search.found += [f"{needle[:80]!r}: file {where}" for needle in _matched(what, needles)]


def _search_git(box: Sandbox, needles: list[str], search: AnswerSearch) -> None:
    _, listed = _exec(
        box,
        f"find / {_PRUNE_KERNEL} -o -name objects -type d -path '*.git/objects' -print 2>/dev/null",
    )
    for objects in listed.splitlines():
        git_dir = shlex.quote(objects.removesuffix("/objects"))
        git = f"git --git-dir={git_dir}"
        _, counted = _exec(box, f"{git} cat-file --batch-all-objects --batch-check | wc -l")
        search.searched.append(
            f"git objects: {counted.strip()} in {objects.removesuffix('/objects')}"
        )
        _, what = _exec(
            box,
            f"{git} cat-file --batch-all-objects --batch 2>/dev/null | grep -aoF -f {NEEDLES}"
            " | sort -u | head -50",
        )
        where = f"git objects of {objects.removesuffix('/objects')}"
        search.found += [f"{needle[:80]!r}: {where}" for needle in _matched(what, needles)]
        for commit in search.commits:
            code, _ = _exec(box, f"{git} cat-file -e {commit}")
            if code == 0:
                search.found.append(f"commit {commit}: an object of {where}")


def _search_text(what: str, text: str, needles: list[str], search: AnswerSearch) -> None:
    search.found += [f"{needle[:80]!r}: {what}" for needle in needles if needle in text]


def search_for_answer(
    client: Any, box: Sandbox, commits: Sequence[str], patches: Sequence[str]
) -> AnswerSearch:
    """Search the entered sandbox ``box`` (its repository at ``/testbed``; ``client``: the
    Docker client) for the fix's ``commits`` and the lines ``patches`` add that its base tree
    does not hold; the report says what was searched and what was found."""
    for commit in commits:
        if not _SHA.fullmatch(commit):
            raise ValueError(f"not a full commit id: {commit!r}")
    lines = list(dict.fromkeys(line for patch in patches for line in added_lines(patch)))
    search = AnswerSearch(list(commits), lines)
    if lines:  # lines the base tree already has say nothing of the fix
        _put_needles(box, lines)
        _, in_base = _exec(
            box, f"cd /testbed && git grep -h -oF -f {NEEDLES} HEAD 2>/dev/null | sort -u"
        )
        known = set(_matched(in_base, lines))
        search.lines = [line for line in lines if line not in known]
        search.in_base = len(known)
    needles = [*search.commits, *search.lines]
    if not needles:
        return search
    _put_needles(box, needles)
    _search_files(box, needles, search)
    _search_git(box, needles, search)
    _, environment = _exec(box, "env")
    search.searched.append(f"environment: {len(environment.splitlines())} variables")
    _search_text("the environment", environment, needles, search)
    container = client.containers.get(box.container_id)
    image = client.images.get(container.image.id)
    history = client.api.history(image.id)
    steps = "\n".join(f"{h.get('CreatedBy', '')}\n{h.get('Comment', '')}" for h in history)
    search.searched.append(f"image history: {len(history)} layers of {image.id[:19]}")
    _search_text("the image history", steps, needles, search)
    labels = {**(image.labels or {}), **(container.labels or {})}
    search.searched.append(f"labels: {len(labels)} of the image and the container")
    _search_text("the labels", "\n".join(f"{k}={v}" for k, v in labels.items()), needles, search)
    _exec(box, f"rm -f {NEEDLES}")
    return search
