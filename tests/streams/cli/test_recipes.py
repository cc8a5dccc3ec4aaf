"""``swe-stream recipes``: export, edit by hand, import, and the next build does what the edit
says (real git, real Docker)."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from schemas import RememberedRecipe
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.recipes.memory import RecipeTable, dependency_fingerprint
from streams.evaluation.validator import Validator
from tests.agents.repo_tasks import make_calc_repo
from tests.conftest import SWE_STREAM

EDIT = "echo edited-by-hand > EDITED"


def recipes(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_STREAM_")}
    env["SWE_STREAM_WORKER_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [SWE_STREAM, "recipes", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.unit
def test_import_refuses_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipes:\n  - repo: o/r\n    python: 3.11\n")
    result = recipes(tmp_path / "data", "import", "--file", str(bad))
    assert result.returncode == 2 and "recipe 1" in result.stderr and "fingerprint" in result.stderr
    bad.write_text("- just a list\n")
    result = recipes(tmp_path / "data", "import", "--file", str(bad))
    assert result.returncode == 2 and "`recipes:` list" in result.stderr
    shown = recipes(tmp_path / "data", "show", "o/r")
    assert shown.returncode == 1 and "no remembered recipe" in shown.stderr


@pytest.mark.docker
def test_an_exported_recipe_edited_and_imported_changes_the_next_build(
    tmp_path: Path, docker_client: Any, base_image: str
) -> None:
    pr = make_calc_repo(tmp_path / "git")
    data = tmp_path / "data"
    table = RecipeTable(data / "recipes.sqlite")
    docker = DockerSettings(
        base_image=base_image, toolchain_images={"python": {"3.11": base_image}}
    )
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(), 1, memory=table)
    tree = validator.tree(pr.repo, pr.base_sha)
    learned = RememberedRecipe(
        pipeline_version=1,
        repo=pr.repo,
        fingerprint=dependency_fingerprint(tree),
        source="heuristic",
        python="3.11",
        instance_id="swe-stream-test__calc-1",
        base_commit=pr.base_sha,
        tests=3,
        verified_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    table.put(learned)

    exported = tmp_path / "recipes.yaml"
    result = recipes(data, "export", "--file", str(exported))
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(exported.read_text())
    (item,) = document["recipes"]
    assert item["repo"] == pr.repo and item["source"] == "heuristic" and item["pre_test"] is None
    item["pre_test"] = [EDIT]
    exported.write_text(yaml.safe_dump(document))
    result = recipes(data, "import", "--file", str(exported))
    assert result.returncode == 0 and "imported 1 edited recipe(s), 0 forgotten" in result.stdout
    listed = recipes(data, "list")
    assert "edited" in listed.stdout and "changes: pre_test" in listed.stdout
    assert EDIT in recipes(data, "show", pr.repo).stdout

    _, candidates = validator.recipes(pr.repo, pr.base_sha)
    first = candidates[0]
    assert first.pre_test_commands == (EDIT,) and "memory:edited" in first.sources
    assert first.origin.remembered and first.origin.trusted  # edited: trusted as an override
    environment = validator.build(pr.repo, "swe-stream-test__calc-1", tree, first)
    try:
        with environment.sandbox(validator.limits) as box:
            assert box.run("cat EDITED", timeout=30).stdout.strip() == "edited-by-hand"
    finally:
        environment.release()
    # importing the same file again changes nothing: the table holds that recipe already
    result = recipes(data, "import", "--file", str(exported))
    assert "imported 0 edited recipe(s)" in result.stdout
    assert table.get(pr.repo, learned.fingerprint).source == "edited"  # type: ignore[union-attr]
    # a tombstone forgets it
    item["deleted"] = True
    exported.write_text(yaml.safe_dump(document))
    assert "1 forgotten" in recipes(data, "import", "--file", str(exported)).stdout
    assert table.get(pr.repo, learned.fingerprint) is None


@pytest.mark.integration
def test_imported_recipes_reach_the_topic_every_worker_reads(
    tmp_path: Path, bootstrap: str
) -> None:
    entry = RememberedRecipe(
        pipeline_version=1,
        repo="octo/widgets",
        fingerprint="0123456789abcdef",
        source="agent",
        python="3.11",
        pre_test=["make -C locale"],
        instance_id="octo__widgets-7",
        base_commit="a" * 40,
        tests=12,
        verified_at=datetime(2026, 11, 2, tzinfo=UTC),
    )
    exported = tmp_path / "recipes.yaml"
    exported.write_text(yaml.safe_dump({"recipes": [entry.model_dump(mode="json")]}))
    result = recipes(tmp_path / "data", "import", "--file", str(exported), "--bootstrap", bootstrap)
    assert result.returncode == 0, result.stderr
    assert f"recipes.memory on {bootstrap}" in result.stdout
    # another machine: no local table, the topic only
    listed = recipes(tmp_path / "elsewhere", "list", "--bootstrap", bootstrap)
    assert listed.returncode == 0 and "octo/widgets" in listed.stdout
    assert "edited" in listed.stdout and "changes: pre_test" in listed.stdout
    assert recipes(tmp_path / "elsewhere", "list").stdout == ""  # its own table is empty


@pytest.mark.unit
def test_each_entry_says_its_toolchain_whatever_the_language() -> None:
    from streams.cli.recipes import toolchain_summary

    base = {
        "pipeline_version": 1, "repo": "o/r", "fingerprint": "0" * 16, "source": "heuristic",
        "instance_id": "o__r-1", "base_commit": "c" * 40, "tests": 1,
        "verified_at": "2026-11-01T00:00:00Z",
    }  # fmt: skip
    for toolchain, expected in (
        ({"go": "1.24"}, "go 1.24"),
        ({"java": "17"}, "java 17"),
        ({"rust": None}, "rust -"),  # picked per PR: named, not kept
        # an entry written before toolchains were keys of their own names every one
        ({"python": "3.11", "node": None, "go": None, "rust": None, "java": None}, "python 3.11"),
        ({"python": None, "node": None}, "-"),
    ):
        entry = RememberedRecipe.model_validate({**base, **toolchain})
        assert toolchain_summary(entry) == expected
