"""The committed JSON Schema files match the models, and the check can fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schemas import ALL_RECORD_MODELS
from schemas.__main__ import main
from schemas.base import TOOLCHAIN_NAME, TOOLCHAIN_VERSION
from schemas.generate import (
    DEFAULT_DIR,
    render_json_schemas,
    stale_json_schemas,
    write_json_schemas,
)

pytestmark = pytest.mark.unit


def test_committed_schemas_are_up_to_date() -> None:
    stale = stale_json_schemas(DEFAULT_DIR)
    assert stale == [], (
        f"JSON schemas out of date: {stale}; run `python -m schemas` and commit schemas/json/"
    )


def test_rendering_is_deterministic() -> None:
    assert render_json_schemas() == render_json_schemas()
    assert sorted(render_json_schemas()) == sorted(f"{m.__name__}.json" for m in ALL_RECORD_MODELS)


def test_write_creates_valid_schema_files(tmp_path: Path) -> None:
    paths = write_json_schemas(tmp_path)
    assert len(paths) >= 13
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(p.name for p in paths)
    for path in paths:
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert schema["type"] == "object"
        assert "pipeline_version" in schema["required"], path.name
        assert schema["properties"]["schema_version"]["const"] == 1
        # no other key but a toolchain's version, where a record names one (ToolchainVersions)
        others = schema["additionalProperties"]
        assert others is False or (
            schema["propertyNames"] == {"pattern": TOOLCHAIN_NAME}
            and others["anyOf"][0]["pattern"] == TOOLCHAIN_VERSION
        ), path.name
    assert stale_json_schemas(tmp_path) == []


def test_stale_schemas_are_reported(tmp_path: Path) -> None:
    shutil.copytree(DEFAULT_DIR, tmp_path, dirs_exist_ok=True)
    assert stale_json_schemas(tmp_path) == []

    changed = tmp_path / "LedgerEntry.json"
    schema = json.loads(changed.read_text(encoding="utf-8"))
    schema["properties"]["stage"]["type"] = "integer"
    changed.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (tmp_path / "DeadLetter.json").unlink()
    (tmp_path / "RemovedModel.json").write_text("{}\n", encoding="utf-8")

    assert stale_json_schemas(tmp_path) == [
        "DeadLetter.json",
        "LedgerEntry.json",
        "RemovedModel.json",
    ]
    assert main(["--check", "--dir", str(tmp_path)]) == 1

    assert main(["--dir", str(tmp_path)]) == 0
    assert stale_json_schemas(tmp_path) == []
    assert not (tmp_path / "RemovedModel.json").exists()
    assert main(["--check", "--dir", str(tmp_path)]) == 0


def test_missing_directory_is_all_stale(tmp_path: Path) -> None:
    assert len(stale_json_schemas(tmp_path / "nowhere")) == len(ALL_RECORD_MODELS)
