"""An exported task records the git remote it was mined from (without credentials), and is
re-validated from there wherever it runs, whatever the local URL template says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.validator import Validator, validate_task_dirs
from tests.harness_tasks import TASK, made  # noqa: F401 (a module-scoped fixture)


@pytest.mark.unit
def test_a_recorded_remote_wins_over_the_template_and_keeps_no_credentials(
    tmp_path: Path,
) -> None:
    cache = RepoCache(tmp_path, "https://x-access-token:ghs_SECRET@github.com/{owner}/{repo}.git")
    assert cache.url("octo/widgets") == (
        "https://x-access-token:ghs_SECRET@github.com/octo/widgets.git"
    )
    assert cache.public_url("octo/widgets") == "https://github.com/octo/widgets.git"
    cache.use_remote("Octo/Widgets", "file:///srv/git/octo/widgets.git")
    assert cache.url("octo/widgets") == "file:///srv/git/octo/widgets.git"
    assert cache.url("octo/other") == "https://x-access-token:ghs_SECRET@github.com/octo/other.git"
    local = RepoCache(tmp_path, "file:///srv/{owner}/{repo}.git")
    assert local.public_url("a/b") == "file:///srv/a/b.git"
    with pytest.raises(ValueError):
        cache.use_remote("../etc", "file:///x")


@pytest.mark.docker
def test_validate_clones_an_exported_task_from_its_recorded_remote(
    made: Any,  # noqa: F811
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
) -> None:
    root, pr, workspace = made
    owner, name = pr.repo.split("/")
    assert workspace.install_config["remote"] == pr.url_template.format(owner=owner, repo=name)
    # another machine: no clone yet, and a template that names nothing there
    repos = RepoCache(tmp_path / "elsewhere", f"file://{tmp_path}/nowhere/{{owner}}/{{repo}}.git")
    docker = DockerSettings(
        base_image=base_image, toolchain_images={"python": {"3.11": base_image}}
    )
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=1), 1)
    (report,) = validate_task_dirs(root / "tasks", validator)
    assert report["task"] == TASK and report["valid"], report
    assert (tmp_path / "elsewhere" / owner / f"{name}.git").is_dir()
