"""Generate the JSON Schema files of the topic models and check that the committed ones match."""

from __future__ import annotations

import json
from pathlib import Path

from schemas.base import Record
from schemas.registry import ALL_RECORD_MODELS

__all__ = ["DEFAULT_DIR", "render_json_schemas", "stale_json_schemas", "write_json_schemas"]

DEFAULT_DIR = Path(__file__).parent / "json"


def schema_file_name(model: type[Record]) -> str:
    """The file name of a model's JSON Schema."""
    return f"{model.__name__}.json"


def render_json_schemas() -> dict[str, str]:
    """File name -> deterministic JSON Schema text, for every topic model."""
    return {
        schema_file_name(model): json.dumps(model.model_json_schema(), indent=2, sort_keys=True)
        + "\n"
        for model in ALL_RECORD_MODELS
    }


def stale_json_schemas(directory: Path = DEFAULT_DIR) -> list[str]:
    """Sorted names of schema files in ``directory`` that are missing, different or extra."""
    expected = render_json_schemas()
    stale = [
        name
        for name, text in expected.items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != text
    ]
    if directory.is_dir():
        stale.extend(p.name for p in directory.glob("*.json") if p.name not in expected)
    return sorted(stale)


def write_json_schemas(directory: Path = DEFAULT_DIR) -> list[Path]:
    """Write every schema file into ``directory``, delete stale ``*.json``; return written paths."""
    directory.mkdir(parents=True, exist_ok=True)
    expected = render_json_schemas()
    for path in directory.glob("*.json"):
        if path.name not in expected:
            path.unlink()
    written = []
    for name, text in sorted(expected.items()):
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
