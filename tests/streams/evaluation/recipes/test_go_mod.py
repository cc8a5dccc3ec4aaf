"""go.mod and go.work read as go itself reads them: each file in ``tests/data/go/gomod`` was
given to ``go mod edit -json`` / ``go work edit -json`` (go1.26.8, its output kept beside it),
and the reader must say the same; then the toolchain each module needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.go.gomod import (
    ToolchainPlan,
    read_go_mod,
    read_go_work,
    toolchain_plan,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "go" / "gomod"
MODS = sorted(p.stem for p in DATA.glob("*.mod"))
# the Debian suites' packaged go, oldest first (bookworm, trixie, forky)
SUITES = {"bookworm": "1.19", "trixie": "1.24", "forky": "1.26"}


@pytest.mark.parametrize("name", MODS)
def test_a_go_mod_reads_as_go_reads_it(name: str) -> None:
    ours = read_go_mod((DATA / f"{name}.mod").read_text(), f"{name}.mod")
    theirs = json.loads((DATA / f"{name}.json").read_text())
    assert ours.problems == []
    assert ours.module == theirs["Module"]["Path"]
    assert ours.go == theirs.get("Go")
    assert ours.toolchain == theirs.get("Toolchain")
    assert [(r.path, r.version, r.indirect) for r in ours.requires] == [
        (r["Path"], r["Version"], bool(r.get("Indirect"))) for r in theirs.get("Require") or []
    ]
    local = {
        r["Old"]["Path"]: r["New"]["Path"]
        for r in theirs.get("Replace") or []
        if r["New"]["Path"].startswith(("./", "../", "/"))
    }
    assert ours.local_replacements == local


def test_the_files_cover_blocks_quotes_comments_and_replacements() -> None:
    """The check above is only as good as its files: they hold what makes the format hard."""
    module = read_go_mod((DATA / "blocks.mod").read_text())
    assert module.local_replacements == {
        "github.com/example/lib": "../lib",
        "github.com/example/other": "./third_party/other",
    }
    assert [r.path for r in module.requires if r.indirect] == [
        "golang.org/x/sync",
        "gopkg.in/yaml.v3",
    ]
    assert "github.com/quoted/path" in [r.path for r in module.requires]


def test_a_go_work_reads_as_go_reads_it() -> None:
    work = read_go_work((DATA / "work.work").read_text())
    theirs = json.loads((DATA / "work.json").read_text())
    assert work.go == theirs["Go"] and work.problems == []
    assert work.uses == [
        use["DiskPath"].removeprefix("./").rstrip("/") or "." for use in theirs["Use"]
    ]
    assert work.uses == ["api", "cmd/tool", "."]


@pytest.mark.parametrize(
    "text",
    [
        'module "unterminated\ngo 1.21\n',
        "module m\nrequire (\n\tx v1\n",
        "module m\ngo one.two\n",
        "module m\ntoolchain rust1.80\n",
        "module m\nrequire onlypath\n",
        "module `m\n",
        "\x00\x01 (\n)",
    ],
)
def test_a_line_go_would_not_read_is_a_problem(text: str) -> None:
    assert read_go_mod(text).problems


@pytest.mark.parametrize(
    ("go", "toolchain", "plan"),
    [
        ("1.16", None, ToolchainPlan("bookworm", None)),
        ("1.19", None, ToolchainPlan("bookworm", None)),
        ("1.21", None, ToolchainPlan("trixie", None)),
        ("1.24.2", None, ToolchainPlan("forky", None)),  # trixie's 1.24 is older than 1.24.2
        ("1.21.0", "go1.23.1", ToolchainPlan("trixie", None)),
        ("1.22", "go1.27.1", ToolchainPlan("forky", "go1.27.1")),
        ("1.28", None, ToolchainPlan("forky", "go1.28.0")),  # no go1.28 to fetch: 1.28.0
        ("1.28.3", None, ToolchainPlan("forky", "go1.28.3")),
        (None, None, ToolchainPlan("bookworm", None)),
        ("1.22", "default", ToolchainPlan("trixie", None)),
    ],
)
def test_the_toolchain_is_the_oldest_suite_new_enough_or_fetched(
    go: str | None, toolchain: str | None, plan: ToolchainPlan
) -> None:
    assert toolchain_plan(go, toolchain, SUITES) == plan
    assert toolchain_plan(go, toolchain, {}) is None
