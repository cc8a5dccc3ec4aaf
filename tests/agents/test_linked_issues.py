"""agents.linked_issues: the issues a PR body resolves, on real GH Archive bodies and edge cases."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from agents.linked_issues import DEFAULT_LIMIT, IssueRef, mentioned_issues, parse_linked_issues

pytestmark = pytest.mark.unit

HOURS = ("2015-01-01-0", "2015-01-01-1")
REPO = "octo-org/octo-repo"


@cache
def load_pr_bodies(gharchive_dir: Path) -> dict[str, str | None]:
    """``owner/repo#N`` -> body of that PR, from every PullRequestEvent of the fixture hours.

    A PR seen in several events keeps its latest body (an author may edit it in between).
    """
    bodies: dict[str, str | None] = {}
    for hour in HOURS:
        with gzip.open(gharchive_dir / f"{hour}.json.gz", "rt", encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                if event["type"] != "PullRequestEvent":
                    continue
                pr = event["payload"]["pull_request"]
                bodies[f"{event['repo']['name']}#{pr['number']}"] = pr.get("body")
    return bodies


@pytest.fixture(scope="module")
def pr_bodies(fixtures_dir: Path) -> dict[str, str | None]:
    return load_pr_bodies(fixtures_dir / "gharchive")


def refs(*items: str) -> list[IssueRef]:
    """IssueRefs from ``owner/repo#N`` strings."""
    out = []
    for item in items:
        repo, number = item.rsplit("#", 1)
        out.append(IssueRef(repo, int(number)))
    return out


def numbers(repo: str, *nums: int) -> list[IssueRef]:
    return [IssueRef(repo, n) for n in nums]


# --- real PR bodies ---------------------------------------------------------------------------

# (PR, a snippet of its real body, linked issues, mentioned issues)
REAL = [
    ("selfhub/selfhub#124", "resolves #117", ["#117"], []),
    (
        "node-inspector/node-inspector#512",
        "Closes #509\r\nCloses #500\r\nCloses #497",
        ["#509", "#500", "#497"],
        [],
    ),
    ("wycats/handlebars.js#932", "Fixes #651 Fixes #805", ["#651", "#805"], []),
    (
        "Homebrew/homebrew#35270",
        "Closes #35194; fixes #35052, fixes #32254.",
        ["#35194", "#35052", "#32254"],
        [],
    ),
    # cross-repository reference; the plain "#294" is only a mention
    (
        "numenta/nupic.core#295",
        "Please try #294 first\r\nFixes numenta/nupic#1694",
        ["numenta/nupic#1694"],
        ["#294"],
    ),
    (
        "KSP-CKAN/CKAN-GUI#15",
        "Closes KSP-CKAN/CKAN-support#40 (does it even work across repos?)",
        ["KSP-CKAN/CKAN-support#40"],
        [],
    ),
    # mentioned first ("As discovered in #20376"), then resolved: linked, not repeated as hint
    ("rust-lang/rust#20382", "Closes #20376", ["#20376"], []),
    ("twbs/bootstrap#15472", "Closes #15288.\r\nX-Ref: #11037", ["#15288"], ["#11037"]),
    ("opencollab/arpack-ng#5", "* Auto-detect OpenBLAS (fixes #1)", ["#1"], ["#4"]),
    ("SFPC/sfpc.github.io#83", "(fixes #61?)", ["#61"], []),
    ("Xedecimal/tabtree#3", "This should Close #2.", ["#2"], []),
    ("tgstation/-tg-station#6646", "fixes #6645 - not really a fix", ["#6645"], []),
    ("SlimeKnights/TinkersConstruct#1283", " * Fixes #1275", ["#1275"], []),
    ("haskell-servant/servant-docs#4", "Resolves #2.", ["#2"], []),
    ("realm/jazzy#133", "Closes #129. Please review", ["#129"], []),
    # a word between keyword and reference breaks the link (as on GitHub)
    ("captainkirkby/Gears#29", "Closes issue #26", [], ["#26"]),
    ("ExactTarget/fuelux#949", "Fixes issue introduced by #939", [], ["#939"]),
    ("PCMDI/pcmdi_metrics#187", "to resolve remaining #161 issues", [], ["#161"]),
    ("apache/spark#3865", "This PR is a fixed version of the original PR #3237", [], ["#3237"]),
    ("simbody/simbody#323", "installation problem fixed in PR #321", [], ["#321", "#322"]),
    # "Issues resolved:" followed by a bullet list of prose, and issue links in markdown
    (
        "Codeusa/Borderless-Gaming#87",
        "Issues resolved:\r\n* Constant toggling",
        [],
        ["#86", "#77", "#65", "#47", "#54", "#39"],
    ),
    # a URL without a keyword, and a keyword not followed by a reference
    (
        "HabitRPG/habitrpg-shared#406",
        "https://github.com/HabitRPG/habitrpg-shared/issues/405",
        [],
        [],
    ),
    ("torch/trepl#12", "fix problems reported in [this issue](https://github.com", [], []),
    # fenced code blocks, and a mention as the text of a markdown link
    (
        "mkaz/termgraph#3",
        "Or as requested by [#1](https://github.com/mkaz/termgraph/issues/1)",
        [],
        ["#1"],
    ),
]


def _expand(pr: str, items: list[str]) -> list[IssueRef]:
    repo = pr.rsplit("#", 1)[0]
    return refs(*(f"{repo}{item}" if item.startswith("#") else item for item in items))


@pytest.mark.parametrize(("pr", "snippet", "linked", "mentioned"), REAL, ids=[r[0] for r in REAL])
def test_real_pr_bodies(
    pr_bodies: dict[str, str | None],
    pr: str,
    snippet: str,
    linked: list[str],
    mentioned: list[str],
) -> None:
    body = pr_bodies[pr]
    assert body is not None
    assert snippet in body
    repo = pr.rsplit("#", 1)[0]
    assert parse_linked_issues(body, repo) == _expand(pr, linked)
    assert mentioned_issues(body, repo) == _expand(pr, mentioned)


def test_every_fixture_body_parses_and_exactly_these_prs_resolve_issues(
    pr_bodies: dict[str, str | None],
) -> None:
    linking = set()
    for pr, body in pr_bodies.items():
        repo = pr.rsplit("#", 1)[0]
        linked = parse_linked_issues(body, repo)
        assert len(linked) <= DEFAULT_LIMIT
        assert len(set(linked)) == len(linked)
        assert all(1 <= ref.number <= 2**31 - 1 for ref in linked)
        hints = mentioned_issues(body, repo)
        assert not set(hints) & set(linked)
        if linked:
            linking.add(pr)
    assert len(pr_bodies) == 487
    assert linking == {
        "selfhub/selfhub#124",
        "enovance/edeploy#174",
        "rust-lang/rust#20382",
        "jdbi/jdbi#125",
        "twbs/bootstrap#15473",
        "twbs/bootstrap#15472",
        "cachethq/Cachet#171",
        "SlimeKnights/TinkersConstruct#1283",
        "node-inspector/node-inspector#512",
        "shapesecurity/shift-parser-js#7",
        "teamvolta/volta-system#107",
        "CleverRaven/Cataclysm-DDA#10698",
        "opencollab/arpack-ng#4",
        "tgstation/-tg-station#6646",
        "opencollab/arpack-ng#5",
        "epeli/underscore.string#370",
        "SFPC/sfpc.github.io#83",
        "SoftwareFoundationGroupAtKyotoU/automata#50",
        "realm/jazzy#133",
        "haskell-servant/servant-docs#4",
        "wycats/handlebars.js#932",
        "ProgVal/Limnoria#980",
        "numenta/nupic.core#295",
        "KSP-CKAN/CKAN-GUI#15",
        "codestork/dronePass-Planner#18",
        "Homebrew/homebrew#35270",
        "Xedecimal/tabtree#3",
    }


# --- synthetic edge cases -----------------------------------------------------------------------

# (body, linked issues of REPO; "#N" is REPO#N)
EDGE = [
    # every keyword, any case, optional colon
    ("close #1", ["#1"]),
    ("Closes #1", ["#1"]),
    ("CLOSED #1", ["#1"]),
    ("fix #1", ["#1"]),
    ("Fixes: #1", ["#1"]),
    ("fixed:#1", ["#1"]),
    ("fixes : #1", ["#1"]),
    ("resolve #1", ["#1"]),
    ("Resolves\t#1", ["#1"]),
    ("resolved #1", ["#1"]),
    ("Fixes\n#1", ["#1"]),
    ("(closes #1)", ["#1"]),
    ("- [x] fixes #1.", ["#1"]),
    # not keywords, or not whole words
    ("prefixes #3", []),
    ("suffixed #3", []),
    ("unresolved #3", []),
    ("bug-fix #3", []),
    ("fixing #3", []),
    ("closing #3", []),
    ("fixup #3", []),
    ("enclosed #3", []),
    ("refs #3", []),
    ("see #3", []),
    # the keyword must be followed by whitespace or a colon, then the reference
    ("fixes#12", []),
    ("fixes\n\n#12", []),
    ("fixes the #12 crash", []),
    ("fixes issue #12", []),
    ("fixes #12abc", []),
    ("fixes #12_x", []),
    # lists after one keyword
    ("fixes #1, #2 and #3", ["#1", "#2", "#3"]),
    ("Fixes #1,#2", ["#1", "#2"]),
    ("fixes #1 #2", ["#1", "#2"]),
    ("fixes #1, and #2", ["#1", "#2"]),
    ("Fixes #1 AND #2 & #3", ["#1", "#2", "#3"]),
    ("fixes #1#2", ["#1"]),
    ("fixes #1; #2", ["#1"]),
    ("fixes #1 andrew #2", ["#1"]),
    ("fixes #1 and\n#2", ["#1"]),
    ("Closes #1, closes #2, fixes #3", ["#1", "#2", "#3"]),
    # reference forms
    ("Fixes other/repo#7", ["other/repo#7"]),
    ("fixes Other-Org/some.repo_name-2#7", ["Other-Org/some.repo_name-2#7"]),
    ("Resolves GH-42", ["#42"]),
    ("resolves gh-42", ["#42"]),
    ("fixes https://github.com/other/repo/issues/9", ["other/repo#9"]),
    ("fixes http://www.github.com/other/repo/issues/9#issuecomment-1", ["other/repo#9"]),
    ("fixes https://github.com/other/repo/issues/9.", ["other/repo#9"]),
    ("fixes https://github.com/other/repo/pull/9", []),
    ("fixes https://gitlab.com/other/repo/issues/9", []),
    (
        "fixes #1, other/repo#2, GH-3 and https://github.com/a/b/issues/4",
        ["#1", "other/repo#2", "#3", "a/b#4"],
    ),
    # invalid numbers and repository names are skipped; the rest of a list still counts
    ("fixes #0", []),
    ("fixes #007", []),
    ("fixes #2147483648", []),
    ("fixes #99999999999999999999", []),
    ("fixes #2147483647", ["#2147483647"]),
    ("fixes #0, #2", ["#2"]),
    ("fixes foo/..#1, #2", ["#2"]),
    ("fixes -foo/bar#1", []),
    ("fixes " + "a" * 40 + "/bar#1", []),
    # de-duplicated in order of appearance; repo names compare case-insensitively
    ("fixes #2, fixes #1, closes #2", ["#2", "#1"]),
    (f"fixes #5 and {REPO}#5 and GH-5", ["#5"]),
    ("fixes Other/Repo#5, closes other/repo#5", ["Other/Repo#5"]),
    # fenced code blocks, inline code and HTML comments are ignored
    ("```\nfixes #1\n```\nfixes #2", ["#2"]),
    ("~~~python\nfixes #1\n~~~\nfixes #2", ["#2"]),
    ("  ```\nfixes #1\n  ```\nFixes #2", ["#2"]),
    ("````\n```\nfixes #1\n````\nfixes #2", ["#2"]),
    ("```\r\nfixes #1\r\n```\r\nfixes #2", ["#2"]),
    ("```\nunclosed fence hides the rest\nfixes #1", []),
    ("`fixes #1` but fixes #2", ["#2"]),
    ("``code with ` fixes #1`` fixes #2", ["#2"]),
    ("fixes `#1`", []),
    ("Fixes `foo` #1", []),
    ("```inline``` fixes #3", ["#3"]),
    ("<!-- Fixes #<issue> -->\nFixes #7", ["#7"]),
    ("<!--\nPlease write 'Fixes #123' below\n-->\nfixes #8", ["#8"]),
    ("<!-- fixes #1", []),
    ("Fixes <!-- the issue --> #9", []),
    ("`<!--` fixes #4 `-->`", ["#4"]),
    ("<!-- ``` -->\nfixes #5", ["#5"]),
    # a stray backtick does not hide anything
    ("don't use ` here; fixes #6", ["#6"]),
    ("one `\n\nfixes #6 `", ["#6"]),
    # nothing to find
    ("", []),
    (None, []),
    ("#1 #2", []),
]


@pytest.mark.parametrize(("body", "linked"), EDGE)
def test_edge_cases(body: str | None, linked: list[str]) -> None:
    expected = refs(*(f"{REPO}{item}" if item.startswith("#") else item for item in linked))
    assert parse_linked_issues(body, REPO) == expected


def test_limit() -> None:
    body = "fixes " + ", ".join(f"#{n}" for n in range(1, 11))
    assert parse_linked_issues(body, REPO) == numbers(REPO, 1, 2, 3, 4, 5)
    assert parse_linked_issues(body, REPO, limit=2) == numbers(REPO, 1, 2)
    assert parse_linked_issues(body, REPO, limit=0) == []
    assert parse_linked_issues(body, REPO, limit=100) == numbers(REPO, *range(1, 11))
    # duplicates do not use up the limit
    assert parse_linked_issues("fixes #1, #1, #1, #2", REPO, limit=2) == numbers(REPO, 1, 2)
    with pytest.raises(ValueError, match="limit"):
        parse_linked_issues(body, REPO, limit=-1)


@pytest.mark.parametrize("repo", ["", "no-slash", "a/b/c", "-owner/repo", "owner/..", "o/r s"])
def test_invalid_repo_is_refused(repo: str) -> None:
    with pytest.raises(ValueError):
        parse_linked_issues("fixes #1", repo)
    with pytest.raises(ValueError):
        mentioned_issues("see #1", repo)


# (body, mentioned issues of REPO)
MENTIONS = [
    ("see #3 and #4, also #3", [3, 4]),
    ("prefixes #3", [3]),
    ("fixes #1, see #2", [2]),
    ("see #2, fixes #1, #2", []),  # resolved, so not a hint
    ("(#5) [#6](https://example.com) #7.", [5, 6, 7]),
    ("other/repo#8 GH-9 https://github.com/o/r/issues/10", []),
    ("foo#1 a/#2 &#39; ##3 #4abc x-#5", [5]),
    ("https://example.com/page#12", []),
    ("#0 #007 #2147483648", []),
    ("`#1` <!-- #2 -->\n```\n#3\n```\n#4", [4]),
    ("fixes#12", []),
    (None, []),
]


@pytest.mark.parametrize(("body", "mentioned"), MENTIONS)
def test_mentioned_issues(body: str | None, mentioned: list[int]) -> None:
    assert mentioned_issues(body, REPO) == numbers(REPO, *mentioned)


def test_mentioned_issues_limit() -> None:
    body = " ".join(f"#{n}" for n in range(1, 30))
    assert len(mentioned_issues(body, REPO)) == 29
    assert mentioned_issues(body, REPO, limit=3) == numbers(REPO, 1, 2, 3)


def test_issue_ref() -> None:
    ref = IssueRef("octo-org/octo-repo", 12)
    assert str(ref) == "octo-org/octo-repo#12"
    assert ref == IssueRef("octo-org/octo-repo", 12)
    assert len({ref, IssueRef("octo-org/octo-repo", 12)}) == 1
    with pytest.raises(AttributeError):
        ref.number = 13  # type: ignore[misc]
