"""The readers' fuzz benchmark, briefly: no escape from the readers, and an escape is found
(and its input kept) when a reader parses without the loaders' guard."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from benchmarks import fuzz_readers
from streams.evaluation.recipes.model import TreeFiles

pytestmark = pytest.mark.unit


def test_no_exception_escapes_the_readers(tmp_path: Path) -> None:
    tally = fuzz_readers.run(0.25, seed=7, out=tmp_path / "escapes")
    assert tally.inputs >= 50
    assert not tally.escapes, tally.escapes
    assert set(tally.kinds) == {"seed", "mutated", "generated"}


def test_a_reader_without_the_guard_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unguarded(tree: TreeFiles) -> None:
        data = tree.read("pyproject.toml")
        if data is not None:
            tomllib.loads(data.decode("utf-8", errors="replace"))

    monkeypatch.setattr(fuzz_readers, "read_everything", unguarded)
    tally = fuzz_readers.run(0.25, seed=7, out=tmp_path / "escapes")
    assert any(key.startswith("TOMLDecodeError") for key in tally.escapes), tally.escapes
    kept = json.loads(next((tmp_path / "escapes").glob("escape-*.json")).read_text())
    assert "pyproject.toml" in kept["files"] and "TOMLDecodeError" in kept["error"]
