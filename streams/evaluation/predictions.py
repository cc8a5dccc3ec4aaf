"""SWE-bench predictions and SWE-bench's reports of a run (``swe-stream harness --predictions``).

A predictions file is what SWE-bench's ``run_evaluation`` reads: JSONL, one object a line with
``instance_id``, ``model_name_or_path`` and ``model_patch``; or a ``.json`` file holding a list
of such objects, or a dict of them keyed by instance id. Every problem in it is a
``PredictionsError`` naming the file and the line (or item) before anything runs.

The reports are SWE-bench's: per instance ``report.json`` under
``logs/run_evaluation/<run_id>/<model>/<instance_id>/`` and the run's summary
``<model>.<run_id>.json``; this module holds their pure parts (names, the summary).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LOG_DIR",
    "Outcome",
    "Prediction",
    "PredictionsError",
    "default_run_id",
    "load_predictions",
    "model_dir_name",
    "run_summary",
    "summary_name",
]

LOG_DIR = Path("logs") / "run_evaluation"  # SWE-bench's RUN_EVALUATION_LOG_DIR

# how SWE-bench's summary counts an instance: graded (resolved or not), not run because its
# patch is empty, or not graded (no task, the environment, the patch does not apply...)
Outcome = Literal["resolved", "unresolved", "empty_patch", "error"]

SCHEMA_VERSION = 2  # of SWE-bench's summary report


class PredictionsError(ValueError):
    """A predictions file that cannot be graded: its one-line message names file and line."""


@dataclass(frozen=True)
class Prediction:
    """One instance's candidate patch, as SWE-bench's predictions give it."""

    instance_id: str
    model_name_or_path: str
    model_patch: str | None  # None: missing or null (SWE-bench's ``patch_is_None``)
    where: str = ""  # ``file:line`` (or ``file: item N``), for messages

    @property
    def empty(self) -> bool:
        """No patch to grade: SWE-bench's empty patch (whitespace alone is none either)."""
        return not (self.model_patch or "").strip()


def default_run_id(now: datetime | None = None) -> str:
    """A timestamp (UTC), the run id when none is given: ``20260101T120000Z``."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def model_dir_name(model: str) -> str:
    """``model`` as SWE-bench names its directory (``/`` becomes ``__``), refused as a path
    that would leave its parent (``..``, NUL, longer than a file name may be)."""
    name = model.replace("/", "__")
    if name in ("", ".", "..") or "\0" in name or len(name.encode()) > 255:
        raise ValueError(f"{model!r} cannot name a directory")
    return name


def summary_name(model: str, run_id: str) -> str:
    """The run's summary report's file name, as SWE-bench names it: ``<model>.<run_id>.json``."""
    return f"{model_dir_name(model)}.{run_id}.json"


def load_predictions(path: Path) -> list[Prediction]:
    """The predictions in ``path`` (``.json``: a list or a dict by instance id; else JSONL),
    in the file's order; raises ``PredictionsError`` naming the file and line of the first
    problem: not JSON, not an object, no ``instance_id`` or ``model_name_or_path``, a
    ``model_patch`` that is not a string, an instance id given twice, no prediction at all."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PredictionsError(f"{path}: cannot read predictions: {exc}") from exc
    items = _json_items(path, text) if path.suffix == ".json" else _jsonl_items(path, text)
    predictions: list[Prediction] = []
    seen: dict[str, str] = {}
    for where, item, key in items:
        prediction = _prediction(where, item, key)
        if prediction.instance_id in seen:
            raise PredictionsError(
                f"{where}: instance_id {prediction.instance_id!r} is also predicted at "
                f"{seen[prediction.instance_id]}"
            )
        seen[prediction.instance_id] = where
        predictions.append(prediction)
    if not predictions:
        raise PredictionsError(f"{path}: no predictions")
    return predictions


def _jsonl_items(path: Path, text: str) -> list[tuple[str, Any, str | None]]:
    items: list[tuple[str, Any, str | None]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            items.append((where, json.loads(line), None))
        except json.JSONDecodeError as exc:
            raise PredictionsError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from exc
    return items


def _json_items(path: Path, text: str) -> list[tuple[str, Any, str | None]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PredictionsError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if isinstance(data, list):
        return [(f"{path}: item {n}", item, None) for n, item in enumerate(data, start=1)]
    if isinstance(data, dict):
        return [(f"{path}: key {key!r}", item, key) for key, item in data.items()]
    raise PredictionsError(
        f"{path}: a list of predictions or a dict of them by instance_id, not {type(data).__name__}"
    )


def _prediction(where: str, item: Any, key: str | None) -> Prediction:
    if not isinstance(item, dict):
        raise PredictionsError(f"{where}: a prediction is a JSON object, not {type(item).__name__}")
    instance_id = item.get("instance_id", key)
    if not isinstance(instance_id, str) or not instance_id.strip():
        raise PredictionsError(f"{where}: no instance_id (a non-empty string)")
    if key is not None and instance_id != key:
        raise PredictionsError(f"{where}: instance_id {instance_id!r} is not its key")
    model = item.get("model_name_or_path")
    if not isinstance(model, str):
        raise PredictionsError(f"{where}: no model_name_or_path (a string)")
    try:
        model_dir_name(model)
    except ValueError as exc:
        raise PredictionsError(f"{where}: model_name_or_path {exc}") from exc
    patch = item.get("model_patch")
    if patch is not None and not isinstance(patch, str):
        raise PredictionsError(f"{where}: model_patch is a string, not {type(patch).__name__}")
    return Prediction(instance_id, model, patch, where)


def run_summary(dataset_ids: Iterable[str], outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    """SWE-bench's summary report of a run (``make_run_report``'s keys): ``dataset_ids`` the
    instances the run could grade (the tasks found), ``outcomes`` each submitted instance's.
    A submitted id that is not in the dataset counts in the total, as an error (SWE-bench
    refuses such a file; here it is reported, not dropped): the total is completed + empty
    patch + error + incomplete (in the dataset, not submitted)."""
    dataset = set(dataset_ids)
    submitted = set(outcomes)

    def ids(*kinds: Outcome) -> list[str]:
        return sorted(i for i, outcome in outcomes.items() if outcome in kinds)

    completed = ids("resolved", "unresolved")
    resolved, unresolved = ids("resolved"), ids("unresolved")
    empty, error = ids("empty_patch"), ids("error")
    incomplete = sorted(dataset - submitted)
    return {
        "total_instances": len(dataset | submitted),
        "submitted_instances": len(submitted),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(error),
        "completed_ids": completed,
        "incomplete_ids": incomplete,
        "empty_patch_ids": empty,
        "submitted_ids": sorted(submitted),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "error_ids": error,
        "schema_version": SCHEMA_VERSION,
    }
