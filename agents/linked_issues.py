"""Which issues a pull request says it resolves, read from its body.

A SWE-bench task is a merged PR *plus the issue it resolves*: the task's problem statement is
the text of the linked issue(s), never the PR's own description (which would give the fix
away), and a PR that resolves no issue cannot become a task. SWE-bench finds those issues the
way GitHub links them for auto-closing: a closing keyword (``close``/``closes``/``closed``,
``fix``/``fixes``/``fixed``, ``resolve``/``resolves``/``resolved``; any case, optionally
followed by a colon) then a reference::

    Fixes #12                     -> <repo>#12
    closes: octo-org/octo-repo#7  -> octo-org/octo-repo#7
    Resolves GH-3                 -> <repo>#3
    fixed https://github.com/octo-org/octo-repo/issues/9

Deliberate choices, each covered by the tests:

- The keyword is a whole word (``prefixes #3``, ``bug-fix #3`` do not count) and must be
  separated from the reference by whitespace and/or a colon (``fixes#12`` does not count,
  ``fixes:#12`` does); at most one line break may sit in between.
- One keyword may be followed by a list: ``fixes #1, #2 and #3`` resolves all three (GitHub
  itself wants the keyword repeated; PR authors often do not, and SWE-bench-style miners
  accept the list).
- Only issue URLs count (``/issues/N``), not ``/pull/N``; ``Closes issue #26`` does not count
  (the word between keyword and reference breaks the link, as on GitHub).
- Text GitHub does not show as prose is ignored: fenced code blocks (````` ``` ````` or
  ``~~~``), inline code spans and HTML comments (PR templates ship ``<!-- Fixes #<number> -->``).
  An unclosed fence or comment hides the rest of the body, as when rendered.
- A number must be 1..2**31-1 without leading zeros; a reference outside that range, or to an
  invalid ``owner/repo``, is skipped (the rest of a list still counts).

:func:`mentioned_issues` returns the remaining bare ``#N`` references (no keyword), which later
stages may use as hints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.base import PR_NUMBER_MAX, REPO_NAME_RE, validate_repo_name

__all__ = [
    "CLOSING_KEYWORDS",
    "DEFAULT_LIMIT",
    "IssueRef",
    "mentioned_issues",
    "parse_linked_issues",
]

DEFAULT_LIMIT = 5

CLOSING_KEYWORDS = frozenset(
    {"close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"}
)

# owner/name as schemas.base.REPO_NAME_RE has it, without its named groups (used twice below);
# a match is checked again with validate_repo_name (which also refuses "." and "..").
_REPO = re.sub(r"\(\?P<\w+>", "(?:", REPO_NAME_RE.pattern)

# Text GitHub does not render as prose, in one alternation so the leftmost region wins
# (a `<!--` inside a code span is code, a fence inside a comment is comment).
_HIDDEN_RE = re.compile(
    r"""
    ^[ \t]{0,3}(?P<fence>(?P<ch>[`~])(?P=ch){2,})          # opening fence, then its info
        (?:(?<=`)[^`\n]*|(?<=~)[^\n]*)(?=\n|\Z)            # string (no ` after a ``` fence)
        (?:.*?\n[ \t]{0,3}(?P=fence)(?P=ch)*[ \t]*(?=\r?\n|\Z)   # ... to a closing fence
        |.*\Z)                                            # ... or, unclosed, to the end
    |<!--.*?(?:-->|\Z)                                    # HTML comment (unclosed: to end)
    |(?<!`)(?P<ticks>`+)(?!`)(?:(?!\n[ \t]*\r?\n).)+?(?<!`)(?P=ticks)(?!`)  # code span
    """,
    re.VERBOSE | re.MULTILINE | re.DOTALL,
)
# Stands in for hidden text: neither a word character nor whitespace, so it joins nothing.
_HIDDEN_MARK = "\ufffc"

_KEYWORD_RE = re.compile(
    rf"(?<![\w-])(?P<keyword>{'|'.join(sorted(CLOSING_KEYWORDS, key=lambda k: (-len(k), k)))})"
    r"(?=[\s:])[ \t]*:?[ \t]*(?:\r?\n[ \t]*)?",
    re.IGNORECASE,
)
_REF_RE = re.compile(
    rf"""
    (?:
        https?://(?:www\.)?github\.com/(?P<url_repo>{_REPO})/issues/(?P<url_num>\d+)
      | (?P<xrepo>{_REPO})\#(?P<xnum>\d+)
      | GH-(?P<gh_num>\d+)
      | \#(?P<num>\d+)
    )(?!\w)
    """,
    re.VERBOSE | re.IGNORECASE,
)
# Between two references of one list: a comma, "and" or "&", or just spaces.
_LIST_SEP_RE = re.compile(r"[ \t]*,?[ \t]*(?:(?:and|&)[ \t]+)?", re.IGNORECASE)
# A bare #N: not part of a word, path, URL fragment, HTML entity (&#39;) or heading (##).
_BARE_REF_RE = re.compile(r"(?<![\w/&#])#(?P<num>\d+)(?!\w)")


@dataclass(frozen=True)
class IssueRef:
    """An issue of a GitHub repository: ``repo`` is ``owner/name``, ``number`` 1..2**31-1."""

    repo: str
    number: int

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"


def _hide_non_prose(body: str) -> str:
    return _HIDDEN_RE.sub(_HIDDEN_MARK, body)


def _number(digits: str) -> int | None:
    if digits.startswith("0") or len(digits) > 10:
        return None
    number = int(digits)
    return number if 1 <= number <= PR_NUMBER_MAX else None


def _valid_repo(name: str) -> str | None:
    try:
        return validate_repo_name(name)
    except ValueError:
        return None


def _ref(match: re.Match[str], repo: str) -> IssueRef | None:
    """The IssueRef a _REF_RE match names, or None if its repo or number is invalid."""
    if match["url_num"] is not None:
        target, digits = _valid_repo(match["url_repo"]), match["url_num"]
    elif match["xnum"] is not None:
        target, digits = _valid_repo(match["xrepo"]), match["xnum"]
    else:
        target, digits = repo, match["gh_num"] or match["num"]
    number = _number(digits)
    if target is None or number is None:
        return None
    return IssueRef(target, number)


def _closing_refs(text: str, repo: str) -> list[IssueRef]:
    """Every valid reference after a closing keyword, in order of appearance."""
    refs: list[IssueRef] = []
    pos = 0
    while (keyword := _KEYWORD_RE.search(text, pos)) is not None:
        pos = keyword.end()
        ref = _REF_RE.match(text, pos)
        while ref is not None:
            if (found := _ref(ref, repo)) is not None:
                refs.append(found)
            pos = ref.end()
            sep = _LIST_SEP_RE.match(text, pos)
            if sep is None or sep.end() == pos:  # "#1#2" is not a list
                break
            ref = _REF_RE.match(text, sep.end())
    return refs


def _unique(refs: list[IssueRef], limit: int | None) -> list[IssueRef]:
    """De-duplicated (repo names compare case-insensitively, as on GitHub), first kept."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    seen: set[tuple[str, int]] = set()
    out: list[IssueRef] = []
    for ref in refs:
        key = (ref.repo.lower(), ref.number)
        if key in seen:
            continue
        if limit is not None and len(out) >= limit:
            break
        seen.add(key)
        out.append(ref)
    return out


def parse_linked_issues(
    body: str | None, repo: str, *, limit: int = DEFAULT_LIMIT
) -> list[IssueRef]:
    """The issues the PR ``body`` of a PR in ``repo`` says it resolves (closing keywords).

    In order of first appearance, de-duplicated, at most ``limit``; ``#N`` and ``GH-N`` are
    resolved against ``repo``. Raises ValueError if ``repo`` is not a valid ``owner/name``
    or ``limit`` is negative.
    """
    validate_repo_name(repo)
    if not body:
        return _unique([], limit)
    return _unique(_closing_refs(_hide_non_prose(body), repo), limit)


def mentioned_issues(body: str | None, repo: str, *, limit: int | None = None) -> list[IssueRef]:
    """Bare ``#N`` references of ``repo`` in ``body`` that no closing keyword claims.

    Same exclusions as :func:`parse_linked_issues` (code, comments, invalid numbers); an issue
    the PR resolves is not repeated here even if it is also mentioned elsewhere. In order of
    first appearance, de-duplicated, at most ``limit`` (default: all).
    """
    validate_repo_name(repo)
    if not body:
        return _unique([], limit)
    text = _hide_non_prose(body)
    resolved = {(ref.repo.lower(), ref.number) for ref in _closing_refs(text, repo)}
    refs: list[IssueRef] = []
    for match in _BARE_REF_RE.finditer(text):
        number = _number(match["num"])
        if number is not None and (repo.lower(), number) not in resolved:
            refs.append(IssueRef(repo, number))
    return _unique(refs, limit)
