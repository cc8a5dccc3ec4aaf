"""The host's package cache as Maven's first repository, in the real JDK images: what one
build's env and instance steps download from the registry is kept in the cache, and a second
build of the project, without any network, takes all it needs from there and runs the tests
offline (Maven 3.6's wagon transport on JDK 11's image, 3.9's own on JDK 21's)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation.image_builds import PACKAGE_CACHE_MOUNT
from streams.evaluation.recipes.languages.java.pom import read_maven_facts
from streams.evaluation.recipes.languages.java.recipe import java_recipe, warm_up_classes
from streams.evaluation.recipes.model import ENV_DIR
from streams.offline.world import JAVA_BASE
from tests.streams.evaluation.recipes.test_go_recipe import tree_of

pytestmark = pytest.mark.docker

JUNIT_TRACKING = "/opt/swe-m2/repository/org/junit/jupiter/junit-jupiter-api/*/_remote.repositories"


def _archive(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _build(
    client: Any,
    image: str,
    cache: Path,
    network: str,
    archives: dict[str, bytes],
    steps: list[str],
) -> str:
    """``archives`` unpacked (directory -> tar) and the recipe's ``steps`` run in a container
    of ``image`` with ``cache`` mounted; their output."""
    container = client.containers.create(
        image, ["sleep", "600"], network_mode=network,
        volumes={str(cache): {"bind": PACKAGE_CACHE_MOUNT, "mode": "rw"}},
    )  # fmt: skip
    try:
        container.start()
        for directory, archive in archives.items():
            assert container.exec_run(["mkdir", "-p", directory]).exit_code == 0
            assert container.put_archive(directory, archive)
        outputs = []
        for step in steps:
            result = container.exec_run(["bash", "-c", step])
            output = result.output.decode("utf-8", "replace")
            assert result.exit_code == 0, (step, output[-3000:])
            outputs.append(output)
        return "\n".join(outputs)
    finally:
        container.remove(force=True)


@pytest.mark.parametrize("jdk", ["11", "21"])
def test_a_second_build_without_network_takes_everything_from_the_cache(
    docker_client: Any, java_images: dict[str, str], tmp_path: Path, jdk: str
) -> None:
    tree = tree_of(tmp_path / "tree", JAVA_BASE)
    facts = read_maven_facts(tree)
    assert facts is not None
    recipe = java_recipe(facts, jdk, java_images, 8, [], warm_up_classes(facts, tree))
    env_files = _archive({name: data for name, data in recipe.dependency_files.items()})
    sources = _archive({name: text.encode() for name, text in JAVA_BASE.items()})
    cache = tmp_path / "cache"
    cache.mkdir()
    archives = {ENV_DIR: env_files, "/p": sources}
    steps = [
        *recipe.env_commands,
        *(f"cd /p && {command}" for command in recipe.install_commands),
    ]
    first = _build(docker_client, java_images[jdk], cache, "bridge", archives, steps)
    assert "swe-mvn-cache:" in first and " 0 files kept" not in first, first[-3000:]
    kept = {p.name for p in (cache / "maven").rglob("*.jar")}
    assert any(name.startswith("junit-jupiter-api-") for name in kept), sorted(kept)[:20]

    offline_tests = "cd /p && mvn -o -B test"
    second = _build(
        docker_client, java_images[jdk], cache, "none", archives,
        [*steps, f"cat {JUNIT_TRACKING}", offline_tests],
    )  # fmt: skip
    assert "junit-jupiter-api" in second and ">swe-stream-cache=" in second, second[-3000:]
    assert "Tests run:" in second and "BUILD SUCCESS" in second, second[-3000:]
