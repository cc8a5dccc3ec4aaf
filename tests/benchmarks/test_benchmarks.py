"""The benchmarks stay runnable (CI does not time them), and the API-call budget of
prefilter + enrich - a count, not a time - is held to its targets."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path

import pytest


@pytest.mark.unit
@pytest.mark.parametrize(
    "module",
    [
        "benchmarks.stream",
        "benchmarks.ingest",
        "benchmarks.enrich",
        "benchmarks.validate",
        "benchmarks.passthrough_app",
        "benchmarks.yield",
    ],
)
def test_benchmark_modules_import(module: str) -> None:
    loaded = importlib.import_module(module)
    assert loaded.__doc__


@pytest.mark.integration
async def test_enrich_api_calls_per_candidate_meet_the_targets() -> None:
    from benchmarks.enrich import TARGETS, run

    results = await run()
    assert set(results) == {"full", "slim"}
    for label, calls in results.items():
        assert 0 < calls <= TARGETS[label], f"{label}: {calls:.2f} calls per candidate"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("interpreter", "python", "node"),
    [("python 3.11", "3.11", None), ("node 20", None, "20"), ("rustc 1.85", None, None)],
)
def test_yield_reads_the_interpreter_of_a_failed_validation(
    interpreter: str, python: str | None, node: str | None
) -> None:
    """validate prefixes a failure's detail with what ran the tests and the recipe's sources:
    ``[python 3.11; recipe ...]``, ``[node 20; recipe ...]`` for JavaScript / TypeScript,
    ``[rustc 1.85; recipe ...]`` for Rust (its recipe read all the same)."""
    from datetime import UTC, datetime, timedelta

    from schemas import LedgerEntry

    yield_benchmark = importlib.import_module("benchmarks.yield")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    entries = [
        LedgerEntry(
            pipeline_version=1, repo="o/r", number=1, stage=stage, status=status, reason=reason,
            detail=detail,
            first_seen_at=start, updated_at=start + timedelta(seconds=seconds),
        )
        for stage, status, reason, detail, seconds in [
            ("extract", "accepted", None, None, 1),
            ("validate", "rejected", "install_failed",
             f"[{interpreter}; recipe package-manager:npm, runner:mocha:test] npm ERR! 404", 31),
        ]
    ]  # fmt: skip
    row = yield_benchmark._row("o/r#1", "o/r", entries, None)
    assert (row.python, row.node) == (python, node)
    assert row.recipe == "package-manager:npm,runner:mocha:test"
    assert (row.reason, row.detail, row.seconds) == ("install_failed", "npm ERR! 404", 30.0)
    assert row.cause is None
    # the cause line validate puts first (failures.with_cause) is read off, the rest as before
    caused = entries[-1].model_copy(
        update={"detail": f"cause: a locked dependency is gone\n{entries[-1].detail}"}
    )
    row = yield_benchmark._row("o/r#1", "o/r", [entries[0], caused], None)
    assert row.cause == "a locked dependency is gone"
    assert (row.python, row.node, row.detail) == (python, node, "npm ERR! 404")


@pytest.mark.unit
def test_a_stopped_run_leaves_its_undecided_prs_to_the_next_part(tmp_path: Path) -> None:
    """A yield run in parts: the rows a stopped run had not decided are ``undecided``; a run
    resumed from its JSON keeps the decided rows of the corpus's PRs alone (a PR of another
    corpus, an undecided one, a PR never seen are mined again)."""
    from benchmarks.corpus_engine import DEFAULT_CORPUS
    from streams.offline.corpus import Corpus

    yield_benchmark = importlib.import_module("benchmarks.yield")
    row = yield_benchmark.Row
    rows = [
        row("o/r#1", "o/r", "export", "exported", True, fail_to_pass=2, pass_to_pass=9),
        row("o/r#2", "o/r", "validate", "rejected", False, "no_fail_to_pass"),
        row("o/r#3", "o/r", "extract", "accepted", False),  # waiting for validate
        row("o/r#4", "o/r", "-", "never seen", False, "not_in_ledger"),
        row("o/r#5", "o/r", "enrich", "failed", False, "github_unavailable"),
    ]
    assert yield_benchmark.mark_undecided(rows) == 2
    assert [(r.pr, r.status, r.reason) for r in rows if r.status == "undecided"] == [
        ("o/r#3", "undecided", "run_stopped"),
        ("o/r#4", "undecided", "run_stopped"),
    ]
    saved = tmp_path / "yield.json"
    listed = [dataclasses.asdict(r) | {"tests_ran": r.tests_ran} for r in rows]
    other = dataclasses.asdict(row("x/y#1", "x/y", "export", "exported", True))
    saved.write_text(json.dumps({"head": "abc123", "rows": [*listed, other]}))
    corpus = Corpus(DEFAULT_CORPUS, [], [{"repo": "o/r", "number": n} for n in (5, 4, 3, 2, 1)])
    kept, head = yield_benchmark.resumed_rows(saved, corpus)
    assert head == "abc123"
    assert [r.pr for r in kept] == ["o/r#1", "o/r#2", "o/r#5"]
    assert kept[0].fail_to_pass == 2 and kept[1].reason == "no_fail_to_pass"
    ordered = yield_benchmark.in_corpus_order([*kept, row("o/r#3", "o/r", "-", "x", False)], corpus)
    assert [r.pr for r in ordered] == ["o/r#5", "o/r#3", "o/r#2", "o/r#1"]
    saved.write_text("{}")
    with pytest.raises(yield_benchmark.CorpusError, match="not a yield run"):
        yield_benchmark.resumed_rows(saved, corpus)


@pytest.mark.unit
def test_stop_after_ends_mine_as_a_user_would_and_says_it_did(tmp_path: Path) -> None:
    """``run_mine``'s deadline on a real process: SIGTERM at the deadline (the process's own
    handler runs and its last lines are logged), and no stop for a process that ends first."""
    yield_benchmark = importlib.import_module("benchmarks.yield")
    program = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    print('swe_stream.progress: stopping on SIGTERM', flush=True); sys.exit(3)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('swe_stream.progress: started', flush=True)\n"
        "time.sleep(float(sys.argv[1]))\n"
    )
    log = tmp_path / "mine.log"
    code, stopped = yield_benchmark.run_mine([sys.executable, "-c", program, "60"], {}, log, 1.0)
    assert (code, stopped) == (3, True)
    assert "stopping on SIGTERM" in log.read_text()
    code, stopped = yield_benchmark.run_mine([sys.executable, "-c", program, "0"], {}, log, 30.0)
    assert (code, stopped) == (0, False)
