"""The Hugging Face dataset folder, both ways: ``swe-stream export --format hf DIR``.

``DIR/data/<split>-00000-of-00002.parquet`` ... (Parquet shards of at most ``MAX_SHARD_ROWS``
rows and about ``MAX_SHARD_BYTES`` bytes of text) and ``DIR/README.md``, the dataset card
(``hf_card``) whose front matter names each split's shards and each column's type, so that
``datasets.load_dataset(DIR)`` loads it as it is, and the Hub shows it. One split, ``test``
(SWE-bench's), or one per month of ``created_at`` (``2026_01``, ...).

The columns (``COLUMNS``): SWE-bench's twelve in its order (the test lists as lists of strings,
as SWE-rebench has them), SWE-rebench's (``image_name``, ``docker_image``, ``language``,
``install_config`` as a JSON-encoded object, the difficulty and quality fields), the repository's
license, then the rest of the task's ``workspace.yaml``, so that the folder converts back into
task directories byte for byte (``read_hf_dataset``).

Re-exports are idempotent: rows are sorted (``created_at``, then ``instance_id``), the files
hold nothing of the moment they were written, and a file whose bytes would not change is not
touched. Each file is replaced atomically (temp file + rename); shards of an earlier export
that this one did not write are removed after the card is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# pyarrow ships no type information (no py.typed, no stubs)
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from pydantic import ValidationError

from schemas import SWEBENCH_FIELDS
from schemas.workspace import TaskWorkspace
from streams.evaluation.hf_card import (
    CARD,
    Column,
    ColumnKind,
    SplitInfo,
    read_front_matter,
    render_card,
)
from streams.evaluation.licenses import UNKNOWN
from streams.evaluation.months import created_time, task_month
from streams.evaluation.taskdir import WORKSPACE, unique_instances, write_if_changed

__all__ = [
    "COLUMNS",
    "DATA",
    "SCHEMA",
    "HfExport",
    "export_row",
    "is_hf_folder",
    "read_hf_dataset",
    "shard_paths",
    "workspace_of",
    "write_hf_dataset",
]

DATA = "data"
SPLIT = "test"  # SWE-bench's one split
MAX_SHARD_ROWS = 1000
MAX_SHARD_BYTES = 200 * 1024 * 1024  # what the Hub's viewer and a 32-bit string offset can take
ROW_GROUP_ROWS = 100  # rows of whole patches: small groups let a reader fetch a few rows

SplitBy = Literal["month"] | None

_S: ColumnKind = "string"
_I: ColumnKind = "int64"
_F: ColumnKind = "float64"
_B: ColumnKind = "bool"
_L: ColumnKind = "strings"  # list<string>

COLUMNS: tuple[Column, ...] = (
    # SWE-bench's, in its order
    Column("repo", _S, False, "the GitHub repository, owner/name"),
    Column("instance_id", _S, False, "`<owner>__<name>-<pull request number>`"),
    Column("base_commit", _S, False, "the commit the task starts from (the PR's base)"),
    Column("patch", _S, False, "the fix: the PR's change outside the tests, a unified diff"),
    Column("test_patch", _S, False, "the PR's change to the tests, a unified diff"),
    Column("problem_statement", _S, False, "the issue or PR text the task states"),
    Column("hints_text", _S, False, "comments made before the fix"),
    Column("created_at", _S, False, "when the pull request was created, ISO 8601"),
    Column("version", _S, True, "the project's version at the base commit"),
    Column("FAIL_TO_PASS", _L, False, "tests that fail before the fix and pass after it"),
    Column("PASS_TO_PASS", _L, False, "tests that pass before and after the fix"),
    Column("environment_setup_commit", _S, True, "the commit whose environment is installed"),
    # SWE-rebench's
    Column("image_name", _S, True, "the task's instance image in a registry; null: not pushed"),
    Column("docker_image", _S, True, "the same image, under SWE-rebench's name"),
    Column("language", _S, True, "the repository's language"),
    Column("install_config", _S, False, "how to install and test, a JSON-encoded object"),
    Column("difficulty", _S, True, "easy, medium or hard"),
    Column("difficulty_score", _I, True, "1 easy, 2 medium, 3 hard"),
    Column("quality_score", _F, True, "the task's quality score, 0 to 1"),
    Column("quality_passed", _B, True, "whether the quality gate accepted the task"),
    Column("docker_passed", _B, True, "whether the tests were proven in Docker"),
    Column("license", _S, True, "the repository's license (SPDX id); null: not read"),
    # swe-stream's: the rest of workspace.yaml
    Column("task_id", _S, False, "the task directory's name"),
    Column("number", _I, False, "the pull request's number"),
    Column("prompt", _S, True, "what a coding agent is given; null: the problem statement"),
    # not fail_to_pass: a column differing from FAIL_TO_PASS in case only is one column to
    # case-blind readers (DuckDB, SQL engines)
    Column("fail_to_pass_commands", _L, False, "shell commands of the FAIL_TO_PASS tests"),
    Column("pass_to_pass_commands", _L, False, "shell commands of the PASS_TO_PASS tests"),
    Column("tests_generated", _B, False, "whether the tests were written by the pipeline"),
    Column("testgen_turns", _I, True, "agent turns the test generation took"),
    Column("testgen_tokens", _I, True, "tokens the test generation took"),
    Column("status", _S, False, "the task's status"),
    Column("pipeline_version", _I, True, "the pipeline version that mined the task"),
    Column("schema_version", _I, False, "the workspace.yaml schema version"),
)

_ARROW = {
    _S: pa.string(),
    _I: pa.int64(),
    _F: pa.float64(),
    _B: pa.bool_(),
    _L: pa.list_(pa.string()),
}
SCHEMA = pa.schema([pa.field(c.name, _ARROW[c.kind], nullable=c.nullable) for c in COLUMNS])
"""The Arrow schema of every shard: explicit, so a column that is null in every row of a
shard still has its type, and every shard of every split has the same one."""


# rows <-> workspaces -----------------------------------------------------------------------


def export_row(ws: TaskWorkspace, license: str | None = None) -> dict[str, Any]:
    """The dataset row of a task, its columns in ``COLUMNS``'s order; ``license`` is the
    repository's (None or ``"unknown"``: null)."""
    return {
        **ws.to_swebench(),
        "image_name": ws.image_name,
        "docker_image": ws.image_name,
        "language": ws.language,
        # a JSON string, not a struct: its keys differ per language, and a struct's fields
        # would be the union of all of them, null in most rows; json keeps the key order,
        # which workspace.yaml's bytes depend on
        "install_config": json.dumps(ws.install_config, ensure_ascii=False),
        "difficulty": ws.difficulty,
        "difficulty_score": ws.difficulty_score,
        "quality_score": ws.quality_score,
        "quality_passed": ws.quality_passed,
        "docker_passed": ws.docker_passed,
        "license": None if license in (None, UNKNOWN) else license,
        "task_id": ws.id,
        "number": ws.number,
        "prompt": None if ws.prompt == ws.problem_statement else ws.prompt,
        "fail_to_pass_commands": ws.fail_to_pass,
        "pass_to_pass_commands": ws.pass_to_pass,
        "tests_generated": ws.tests_generated,
        "testgen_turns": ws.testgen_turns,
        "testgen_tokens": ws.testgen_tokens,
        "status": ws.status,
        "pipeline_version": ws.pipeline_version,
        "schema_version": ws.schema_version,
    }


def workspace_of(row: Mapping[str, Any]) -> TaskWorkspace:
    """The task of a dataset row: ours (with ``task_id``) rebuilt field by field; any other
    SWE-bench or SWE-rebench row through ``TaskWorkspace.from_swebench``. ValueError when the
    row is not a valid task."""
    if "task_id" not in row:
        return TaskWorkspace.from_swebench(dict(row))
    missing = [c.name for c in COLUMNS if c.name not in row]
    if missing:
        raise ValueError(f"the row has task_id but lacks the columns {missing}")
    try:
        install = json.loads(row["install_config"])
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"install_config is not JSON: {exc}") from None
    if not isinstance(install, dict):
        raise ValueError("install_config is not a JSON object")
    prompt = row["prompt"]
    return TaskWorkspace.model_validate(
        {
            **{name: row[name] for name in SWEBENCH_FIELDS},
            "schema_version": row["schema_version"],
            "pipeline_version": row["pipeline_version"],
            "id": row["task_id"],
            "language": row["language"],
            "difficulty": row["difficulty"],
            "difficulty_score": row["difficulty_score"],
            "fail_to_pass": row["fail_to_pass_commands"] or [],
            "pass_to_pass": row["pass_to_pass_commands"] or [],
            "install_config": install,
            "prompt": row["problem_statement"] if prompt is None else prompt,
            "quality_score": row["quality_score"],
            "quality_passed": row["quality_passed"],
            "docker_passed": row["docker_passed"],
            "status": row["status"],
            "image_name": row["image_name"] or row["docker_image"],
            "number": row["number"],
            "tests_generated": row["tests_generated"],
            "testgen_turns": row["testgen_turns"],
            "testgen_tokens": row["testgen_tokens"],
        }
    )


# writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HfExport:
    """What an export wrote: rows per split, the shards (relative paths), the stale shards it
    removed."""

    splits: dict[str, int]
    shards: list[str]
    removed: list[str]


def _row_bytes(row: Mapping[str, Any]) -> int:
    size = 0
    for value in row.values():
        if isinstance(value, str):
            size += len(value.encode("utf-8"))
        elif isinstance(value, list):
            size += sum(len(item.encode("utf-8")) for item in value)
        else:
            size += 8
    return size


def _shards(
    rows: list[dict[str, Any]], max_rows: int, max_bytes: int
) -> list[list[dict[str, Any]]]:
    shards: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        row_size = _row_bytes(row)
        if current and (len(current) >= max_rows or size + row_size > max_bytes):
            shards.append(current)
            current, size = [], 0
        current.append(row)
        size += row_size
    if current:
        shards.append(current)
    return shards


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    return bytes(sink.getvalue().to_pybytes())


def _splits(tasks: list[TaskWorkspace], split_by: SplitBy) -> dict[str, list[TaskWorkspace]]:
    """Split name -> its tasks, sorted by creation then instance id; splits in name order."""
    groups: dict[str, list[TaskWorkspace]] = {}
    for ws in tasks:
        name = task_month(ws.created_at) if split_by == "month" else SPLIT
        groups.setdefault(name, []).append(ws)
    return {
        name: sorted(members, key=lambda ws: (created_time(ws.created_at), ws.instance_id))
        for name, members in sorted(groups.items())
    }


def _check_output(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is not a directory: a Hugging Face dataset is a folder")
    card = out_dir / CARD
    if card.exists():
        front = read_front_matter(card)
        # someone's README.md that is no dataset card is not ours to overwrite
        if not front or "configs" not in front:
            raise ValueError(
                f"{card} exists and is not a dataset card (no `configs` front matter): "
                "not overwriting it; export to another folder"
            )


def write_hf_dataset(
    workspaces: Iterable[TaskWorkspace],
    out_dir: Path,
    *,
    split_by: SplitBy = None,
    licenses: Mapping[str, str] | None = None,
    max_shard_rows: int = MAX_SHARD_ROWS,
    max_shard_bytes: int = MAX_SHARD_BYTES,
) -> HfExport:
    """Write the tasks as a Hugging Face dataset folder ``out_dir`` (see the module's doc).

    ``licenses`` maps a repository to its license's SPDX id (``licenses.repository_licenses``);
    a repository it lacks is ``unknown``. ValueError for no tasks, an instance id twice, or an
    ``out_dir`` that is a file or holds a README.md that is no dataset card.
    """
    tasks = unique_instances(workspaces)
    if not tasks:
        raise ValueError("no tasks to export: a dataset needs at least one row")
    if max_shard_rows < 1 or max_shard_bytes < 1:
        raise ValueError("a shard holds at least one row")
    out_dir = Path(out_dir)
    _check_output(out_dir)
    licenses = dict(licenses or {})
    files: dict[str, bytes] = {}
    infos: list[SplitInfo] = []
    for name, members in _splits(tasks, split_by).items():
        rows = [export_row(ws, licenses.get(ws.repo)) for ws in members]
        shards = _shards(rows, max_shard_rows, max_shard_bytes)
        num_bytes = download = 0
        for index, shard in enumerate(shards):
            table = pa.Table.from_pylist(shard, schema=SCHEMA)
            data = _parquet_bytes(table)
            files[f"{DATA}/{name}-{index:05d}-of-{len(shards):05d}.parquet"] = data
            num_bytes += table.nbytes
            download += len(data)
        infos.append(SplitInfo(name, f"{DATA}/{name}-*", len(rows), num_bytes, download))
    card = render_card(COLUMNS, infos, tasks, licenses)
    (out_dir / DATA).mkdir(parents=True, exist_ok=True)
    for relative, data in files.items():
        write_if_changed(out_dir / relative, data)
    write_if_changed(out_dir / CARD, card.encode("utf-8"))
    removed: list[str] = []
    for stale in sorted((out_dir / DATA).glob("*.parquet")):
        relative = f"{DATA}/{stale.name}"
        if relative not in files:
            stale.unlink()
            removed.append(relative)
    return HfExport({info.name: info.num_examples for info in infos}, sorted(files), removed)


# reading ---------------------------------------------------------------------------------


def is_hf_folder(path: Path) -> bool:
    """Whether ``path`` looks like a Hugging Face dataset folder rather than task directories:
    Parquet files under ``data/``, or a README.md with front matter (a dataset card)."""
    path = Path(path)
    if not path.is_dir() or (path / WORKSPACE).is_file():
        return False
    if (path / DATA).is_dir() and any((path / DATA).rglob("*.parquet")):
        return True
    card = path / CARD
    if not card.is_file():
        return False
    try:
        front = read_front_matter(card)
    except ValueError:
        return True  # a card, if a broken one: reading it says what is wrong
    return front is not None and ("configs" in front or "dataset_info" in front)


def _data_file_patterns(card: Path, front: Mapping[str, Any]) -> list[str]:
    """The shard globs of the card's ``default`` config (else its first)."""
    configs = front.get("configs")
    if not isinstance(configs, list) or not configs:
        raise ValueError(f"{card}: `configs` is not a list of configs")
    chosen = next(
        (c for c in configs if isinstance(c, dict) and c.get("config_name") == "default"),
        configs[0],
    )
    data_files = chosen.get("data_files") if isinstance(chosen, dict) else None
    # the Hub's forms: one glob, a list of globs, or a list of {split, path} with path one
    # glob or a list of them
    entries = data_files if isinstance(data_files, list) else [data_files]
    patterns: list[str] = []
    for entry in entries:
        paths = entry.get("path") if isinstance(entry, dict) else entry
        for pattern in paths if isinstance(paths, list) else [paths]:
            if not isinstance(pattern, str) or not pattern:
                raise ValueError(f"{card}: a data_files entry names no path: {entry!r}")
            patterns.append(pattern)
    return patterns


def shard_paths(path: Path) -> list[Path]:
    """The Parquet files of a dataset folder: those its card's ``configs`` name, else every
    ``data/**/*.parquet``; ValueError when there are none, or the card names a file outside the
    folder or one that is not Parquet."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise ValueError(f"{path} is not a directory")
    card = root / CARD
    front = read_front_matter(card) if card.is_file() else None
    if front and "configs" in front:
        found: set[Path] = set()
        for pattern in _data_file_patterns(card, front):
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise ValueError(f"{card}: data file {pattern!r} is outside the folder")
            found.update(p.resolve() for p in root.glob(pattern) if p.is_file())
        files = sorted(found)
        for file in files:
            if not file.is_relative_to(root):  # a symbolic link out of the folder
                raise ValueError(f"{card}: data file {file} is outside the folder")
            if file.suffix != ".parquet":
                raise ValueError(f"{file}: only Parquet data files are read")
    else:
        files = sorted((root / DATA).rglob("*.parquet"))
    if not files:
        raise ValueError(f"{path}: no Parquet shards (data/*.parquet) in the dataset folder")
    return files


def _read_rows(file: Path) -> list[dict[str, Any]]:
    try:
        rows: list[dict[str, Any]] = pq.read_table(file).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ValueError(f"{file}: not a readable Parquet file: {exc}") from None
    return rows


def read_hf_dataset(path: Path) -> list[TaskWorkspace]:
    """The tasks of a Hugging Face dataset folder (every split), shard by shard in name order:
    ours rebuilt as they were exported, other SWE-bench-like rows as ``from_swebench`` reads
    them. ValueError naming the file and row of anything unreadable."""
    tasks: list[TaskWorkspace] = []
    for file in shard_paths(path):
        for index, row in enumerate(_read_rows(file)):
            try:
                tasks.append(workspace_of(row))
            except (ValueError, ValidationError) as exc:
                name = row.get("instance_id")
                raise ValueError(f"{file}: row {index} ({name!r}): {exc}") from None
    return tasks
