"""The tasks the Hugging Face dataset tests export (the five real SWE-bench Lite rows, given
creation times in three UTC months) and ``datasets.load_dataset`` run offline."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from schemas.workspace import TaskWorkspace, task_dir_name
from tests.conftest import scored_task

# the creation time each of the five SWE-bench Lite tasks is given
CREATED = {
    "django__django-16255": "2026-01-15T10:00:00Z",
    "sympy__sympy-13031": "2026-01-31T23:30:00-02:00",  # 01:30 UTC on February 1st
    "pytest-dev__pytest-11143": "2026-02-03 08:00:00.000+00:00",
    "scikit-learn__scikit-learn-13584": "2025-12-31T23:59:59Z",
    "django__django-15781": "2026-01-02T00:00:00Z",
}
MONTH_SPLITS = {
    "2025_12": ["scikit-learn__scikit-learn-13584"],
    "2026_01": ["django__django-15781", "django__django-16255"],
    "2026_02": ["sympy__sympy-13031", "pytest-dev__pytest-11143"],
}
ORDER = [i for ids in MONTH_SPLITS.values() for i in ids]  # by created_at
LICENSES = {
    "django/django": "BSD-3-Clause",
    "sympy/sympy": "BSD-3-Clause",
    "pytest-dev/pytest": "MIT",
    "scikit-learn/scikit-learn": "BSD-3-Clause",
}


def make_tasks(validated: list[ValidatedTask]) -> list[TaskWorkspace]:
    """The five SWE-bench Lite tasks: three as the pipeline exports them (install config,
    checks, scores), two as a dataset row gives them; one pushed, with its own prompt and
    generated tests, and an install config with nested, non-ASCII values."""
    tasks = []
    for index, task in enumerate(validated[:5]):
        if index % 2 == 0:
            ws = TaskWorkspace.from_scored(scored_task(task), task_dir_name(task.instance_id))
        else:
            ws = TaskWorkspace.from_swebench(task.to_swebench())
        update: dict[str, Any] = {"created_at": CREATED[ws.instance_id]}
        if index == 0:
            update |= {
                "image_name": "127.0.0.1:5000/swe/django-16255:latest",
                "prompt": "Fix the sitemap.\n\nIt fails when empty.",
                "tests_generated": True,
                "testgen_turns": 7,
                "testgen_tokens": 12345,
                "status": "pushed",
                "install_config": {"z": {"é": [1, "ü"]}, **ws.install_config, "a": None},
            }
        tasks.append(ws.model_copy(update=update))
    return tasks


def offline_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], Any]:
    """``datasets.load_dataset`` of a folder, offline (nothing reaches the network), with a
    fresh cache under ``tmp_path`` each call (nothing carries over between loads or tests)."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    import datasets

    # datasets reads these when it is first imported, which another test may have done
    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setattr(datasets.config, name, True)
    calls = count()

    def load(folder: Path) -> Any:
        cache = tmp_path / f"hf-cache-{next(calls)}"
        return datasets.load_dataset(str(folder), cache_dir=str(cache))

    return load
