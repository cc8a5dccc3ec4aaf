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
