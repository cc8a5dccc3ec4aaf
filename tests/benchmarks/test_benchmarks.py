"""The benchmarks stay runnable (CI does not time them), and the API-call budget of
prefilter + enrich - a count, not a time - is held to its targets."""

from __future__ import annotations

import importlib

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
