"""GitHub API calls per candidate: how frugal prefilter + enrich are, full vs slim payloads.

    python -m benchmarks.enrich

Both runs take fixture hour 0 through the real code: the ingest scanner (normalised records),
``agents.prefilter`` with the default rules, then ``agents.enrich`` with a real
``GitHubClient`` talking HTTP to a GitHub look-alike on 127.0.0.1 (``tests.fakes.github_server``):

* ``full``: ``2015-01-01-0.json.gz``, the real hour: every candidate carries its PR object;
* ``slim``: ``2015-01-01-0.slim.json.gz``, the same hour cut to the post-2025-10-07 payloads:
  candidates carry no PR, and ``closed`` is only "maybe merged".

What the server answers: each PR, as the hour's full payload recorded it (``pull_request``,
real data), each repository from that PR's ``base.repo`` (real data), and per PR a file list
synthesised to match the PR's recorded ``changed_files`` / ``additions`` (file names are not
in GH Archive; they are named like source files of the repository's language, so the file
rules let them through and the count measures the worst case). Issues linked from bodies
answer with a synthetic issue. Every answer carries an ETag and rate-limit headers.

Printed per run: candidates, enriched, rejected by reason, requests (304s included), calls
per candidate and per enriched record. Targets (per candidate): full <= 1.0, slim <= 3.0.
Always exits 0; the verdict is printed.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from pathlib import Path

from agents.enrich import Enricher, EnrichRules, RepositoryCache
from agents.ingest_scan import HourScanner
from agents.prefilter import PrefilterRules, prefilter_event
from schemas import PullRequestCandidate, RawPullRequestEvent
from streams.clients.github import GitHubClient
from streams.core.settings import EnrichSettings, GitHubSettings, PrefilterSettings
from tests.fakes.github_server import FakeGitHub, serve_github, serve_hour

ROOT = Path(__file__).resolve().parent.parent
GHARCHIVE = ROOT.parent / "shared" / "fixtures" / "gharchive"
HOUR = "2015-01-01-0"
TARGETS = {"full": 1.0, "slim": 3.0}


def read_hour(name: str) -> list[RawPullRequestEvent]:
    scanner = HourScanner(HOUR, pipeline_version=1)
    path = GHARCHIVE / f"{name}.json.gz"
    outputs = scanner.feed(path.read_bytes()) + scanner.close()
    return [RawPullRequestEvent.from_json(o[1]) for o in outputs if isinstance(o, tuple)]


async def measure(label: str, events: list[RawPullRequestEvent], server: FakeGitHub) -> float:
    prefilter_rules = PrefilterRules.from_settings(PrefilterSettings())
    candidates = [
        result
        for event in events
        if isinstance(result := prefilter_event(event, prefilter_rules, 1), PullRequestCandidate)
    ]
    github = GitHubClient(GitHubSettings(api_url=server.base_url, rate_limit_reserve=0))
    enricher = Enricher(
        github,
        RepositoryCache({}, github, ttl_seconds=3600),
        EnrichRules.from_settings(EnrichSettings(languages=[]), PrefilterSettings().bots),
        pipeline_version=1,
    )
    outcomes: Counter[str] = Counter()
    try:
        for candidate in candidates:
            outcome = await enricher(candidate)
            outcomes["enriched" if outcome.outputs else f"rejected:{outcome.reason}"] += 1
    finally:
        await github.aclose()
    calls = github.requests_sent
    per_candidate = calls / max(1, len(candidates))
    enriched = outcomes.pop("enriched", 0)
    print(f"\n{label}: {len(candidates)} candidates from {len(events)} PR events")
    print(f"  enriched {enriched}; rejected {dict(sorted(outcomes.items()))}")
    print(f"  GitHub requests {calls}")
    print(f"  calls per candidate       {per_candidate:.2f}  (target <= {TARGETS[label]:.1f})")
    if enriched:
        print(f"  calls per enriched record {calls / enriched:.2f}")
    return per_candidate


async def run() -> dict[str, float]:
    full = read_hour(HOUR)
    slim = read_hour(f"{HOUR}.slim")
    results = {}
    for label, events in (("full", full), ("slim", slim)):
        with serve_github({}) as server:
            serve_hour(server, full)
            results[label] = await measure(label, events, server)
    return results


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    results = asyncio.run(run())
    print()
    for label, value in results.items():
        verdict = "PASS" if value <= TARGETS[label] else "FAIL"
        print(
            f"{label}: {value:.2f} calls per candidate, target <= {TARGETS[label]:.1f}: {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
