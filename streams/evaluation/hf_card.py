"""The dataset card (``README.md``) of a Hugging Face dataset folder, and its front matter.

The front matter is what ``datasets.load_dataset`` and the Hub read: ``configs`` (which files
make which split) and ``dataset_info`` (each column's type, each split's size), plus the
license and tags. The body is for people: the columns, the tasks per language and per month,
the date range and each repository's license. Everything in it is computed from the tasks, so
the same tasks give the same bytes (no "generated at").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from schemas.workspace import TaskWorkspace
from streams.core.settings import safe_load_yaml
from streams.evaluation.licenses import UNKNOWN
from streams.evaluation.months import created_time, task_month

__all__ = [
    "CARD",
    "Column",
    "ColumnKind",
    "SplitInfo",
    "card_license",
    "read_front_matter",
    "render_card",
]

CARD = "README.md"
_FENCE = "---"

ColumnKind = Literal["string", "int64", "float64", "bool", "strings"]

# the license ids the Hub knows, for the SPDX ids license_name gives
_HUB_LICENSES = {
    "MIT": "mit",
    "Apache-2.0": "apache-2.0",
    "BSD-2-Clause": "bsd-2-clause",
    "BSD-3-Clause": "bsd-3-clause",
    "GPL-2.0": "gpl-2.0",
    "GPL-3.0": "gpl-3.0",
    "LGPL-2.1": "lgpl-2.1",
    "LGPL-3.0": "lgpl-3.0",
    "AGPL-3.0": "agpl-3.0",
    "MPL-2.0": "mpl-2.0",
    "ISC": "isc",
    "Unlicense": "unlicense",
}


@dataclass(frozen=True)
class Column:
    """One column of the dataset: its name, type, whether it may be null, what it holds."""

    name: str
    kind: ColumnKind
    nullable: bool
    description: str

    def feature(self) -> dict[str, str]:
        """The column in ``dataset_info.features``."""
        if self.kind == "strings":
            # `sequence:`, not datasets 4's `list:`: readers before 4 know only the former,
            # and later ones read it as the same list of strings
            return {"name": self.name, "sequence": "string"}
        return {"name": self.name, "dtype": self.kind}

    @property
    def type_text(self) -> str:
        text = "list<string>" if self.kind == "strings" else self.kind
        return f"{text}, nullable" if self.nullable else text


@dataclass(frozen=True)
class SplitInfo:
    """One split as written: its name, the glob of its shards, its rows and sizes."""

    name: str
    pattern: str  # relative to the folder, e.g. data/test-*
    num_examples: int
    num_bytes: int  # in memory (Arrow), as dataset_info counts it
    download_size: int  # the Parquet files


def card_license(names: Sequence[str]) -> str:
    """The card's ``license``: the Hub's id of the repositories' one license, ``other`` when
    they differ or the Hub has no id for it, ``unknown`` when none was named."""
    known = set(names) - {UNKNOWN}
    if not known:
        return UNKNOWN
    if len(known) == 1 and UNKNOWN not in names:
        return _HUB_LICENSES.get(known.pop(), "other")
    return "other"


def _size_category(count: int) -> str:
    # the Hub's size_categories buckets
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if count < limit:
            return name
    return "100K<n<1M" if count < 1_000_000 else "n>1M"


def _front_matter(
    columns: Sequence[Column], splits: Sequence[SplitInfo], licenses: Sequence[str]
) -> dict[str, Any]:
    total = sum(split.num_examples for split in splits)
    return {
        "license": card_license(licenses),
        "pretty_name": "swe-stream tasks",
        "tags": ["swe-bench", "code", "software-engineering", "pull-requests"],
        "size_categories": [_size_category(total)],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s.name, "path": s.pattern} for s in splits],
            }
        ],
        "dataset_info": {
            "features": [column.feature() for column in columns],
            "splits": [
                {"name": s.name, "num_bytes": s.num_bytes, "num_examples": s.num_examples}
                for s in splits
            ],
            "download_size": sum(s.download_size for s in splits),
            "dataset_size": sum(s.num_bytes for s in splits),
        },
    }


def _table(header: tuple[str, ...], rows: Sequence[tuple[object, ...]]) -> list[str]:
    def line(cells: Sequence[object]) -> str:
        # a pipe inside a cell would end it
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows), ""]


def _body(
    columns: Sequence[Column],
    splits: Sequence[SplitInfo],
    tasks: Sequence[TaskWorkspace],
    licenses: Mapping[str, str],
) -> list[str]:
    languages = Counter(ws.language or UNKNOWN for ws in tasks)
    months = Counter(task_month(ws.created_at) for ws in tasks)
    repos = Counter(ws.repo for ws in tasks)
    first = min(tasks, key=lambda ws: (created_time(ws.created_at), ws.instance_id))
    last = max(tasks, key=lambda ws: (created_time(ws.created_at), ws.instance_id))
    names = ", ".join(f"`{s.name}`" for s in splits)
    return [
        "# swe-stream tasks",
        "",
        f"{len(tasks)} SWE-bench-style tasks mined from GitHub pull requests by swe-stream, "
        f"from {len(repos)} repositories. Splits: {names}.",
        "",
        "```python",
        "import datasets",
        "",
        'tasks = datasets.load_dataset("path/to/this/folder")',
        "```",
        "",
        "The columns are SWE-bench's, then SWE-rebench's, then those that rebuild swe-stream's "
        "task directory (`swe-stream export -i THIS_FOLDER -o TASK_DIRS`). `install_config` is "
        "a JSON-encoded object, as its keys vary per language: `json.loads` it.",
        "",
        "## Columns",
        "",
        *_table(
            ("Column", "Type", "Content"),
            [(f"`{c.name}`", c.type_text, c.description) for c in columns],
        ),
        "## Tasks per language",
        "",
        *_table(("Language", "Tasks"), sorted(languages.items())),
        "## Tasks per month",
        "",
        *_table(("Month", "Tasks"), sorted(months.items())),
        "## Date range",
        "",
        f"The tasks' pull requests were created from {first.created_at} ({first.instance_id}) "
        f"to {last.created_at} ({last.instance_id}).",
        "",
        "## Licenses",
        "",
        "Each repository's license, as the LICENSE file at its latest task's base commit names "
        "it (`unknown`: no such file was read, or its text is no license named here).",
        "",
        *_table(
            ("Repository", "Tasks", "License"),
            [(repo, count, licenses.get(repo, UNKNOWN)) for repo, count in sorted(repos.items())],
        ),
    ]


def render_card(
    columns: Sequence[Column],
    splits: Sequence[SplitInfo],
    tasks: Sequence[TaskWorkspace],
    licenses: Mapping[str, str],
) -> str:
    """The ``README.md`` of the folder: front matter, then the description."""
    if not tasks:
        raise ValueError("a dataset card needs at least one task")
    repo_licenses = [licenses.get(repo, UNKNOWN) for repo in sorted({ws.repo for ws in tasks})]
    front = yaml.safe_dump(
        _front_matter(columns, splits, repo_licenses),
        sort_keys=False,
        allow_unicode=True,
        width=2**31 - 1,
    )
    return f"{_FENCE}\n{front}{_FENCE}\n\n" + "\n".join(_body(columns, splits, tasks, licenses))


def read_front_matter(card: Path) -> dict[str, Any] | None:
    """The YAML front matter of a card (between its first two ``---`` lines); None when the
    file has none. ValueError naming the file when it is not valid YAML or not a mapping."""
    try:
        lines = Path(card).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{card}: not UTF-8 text: {exc}") from None
    if not lines or lines[0].rstrip() != _FENCE:
        return None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.rstrip() == _FENCE)
    except StopIteration:
        raise ValueError(f"{card}: the front matter has no closing '---' line") from None
    try:
        data = safe_load_yaml("\n".join(lines[1:end]))
    except (yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"{card}: the front matter is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{card}: the front matter is not a mapping")
    return data
