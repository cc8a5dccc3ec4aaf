"""swe-mvn-cache's decisions, on local repositories the tests make: which files of Maven's local
repository go to the host's package cache, in which layout, and the settings that read it."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages.java.pom import read_maven_facts
from streams.evaluation.recipes.languages.java.recipe import (
    CACHE_SCRIPT,
    KEEP_IN_CACHE,
    USE_CACHE,
    java_recipe,
)
from streams.evaluation.recipes.languages.java.swe_mvn_cache import (
    REPOSITORY_ID,
    downloaded,
    publish,
    settings_xml,
)
from tests.streams.evaluation.recipes.test_go_recipe import tree_of

pytestmark = pytest.mark.unit

TRACKING_NOTE = "#NOTE: This is a Maven Resolver internal implementation file\n#Sat Nov 28\n"


def artifact(local: Path, path: str, names: dict[str, bytes], tracking: str | None) -> Path:
    directory = local / path
    directory.mkdir(parents=True)
    for name, data in names.items():
        (directory / name).write_bytes(data)
    if tracking is not None:
        (directory / "_remote.repositories").write_text(TRACKING_NOTE + tracking)
    return directory


def test_only_files_a_remote_repository_gave_are_downloads() -> None:
    tracking = (
        TRACKING_NOTE + "junit-4.13.2.jar>central=\njunit-4.13.2.pom>central=\n"
        f"stand-in-9.pom>=\nlib-1.jar>{REPOSITORY_ID}=\nodd-line\n"
    )
    assert downloaded(tracking) == ["junit-4.13.2.jar", "junit-4.13.2.pom"]


def test_releases_go_to_the_cache_in_a_repositorys_layout_once(tmp_path: Path) -> None:
    local, cache = tmp_path / "local", tmp_path / "cache"
    artifact(
        local, "junit/junit/4.13.2",
        {"junit-4.13.2.jar": b"jar", "junit-4.13.2.jar.sha1": b"1a2b", "junit-4.13.2.pom": b"pom"},
        "junit-4.13.2.jar>central=\njunit-4.13.2.pom>central=\n",
    )  # fmt: skip
    # a parent's stand-in, installed by the build: no repository gave it
    artifact(local, "org/demo/parent/9.5", {"parent-9.5.pom": b"stand-in"}, "parent-9.5.pom>=\n")
    # a snapshot changes under its version: never kept
    artifact(
        local, "org/demo/lib/1.0-SNAPSHOT", {"lib-1.0-SNAPSHOT.jar": b"snap"},
        "lib-1.0-SNAPSHOT.jar>sonatype-snapshots=\n",
    )  # fmt: skip
    # a group's plugin prefixes as the registry gave them; the local repository's own left
    artifact(
        local, "org/apache/maven/plugins",
        {"maven-metadata-central.xml": b"<metadata/>", "maven-metadata-local.xml": b"local"},
        None,
    )  # fmt: skip

    assert publish(str(local), str(cache)) == 4
    kept = {str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()}
    assert kept == {
        "junit/junit/4.13.2/junit-4.13.2.jar",
        "junit/junit/4.13.2/junit-4.13.2.jar.sha1",
        "junit/junit/4.13.2/junit-4.13.2.pom",
        "org/apache/maven/plugins/maven-metadata.xml",
    }
    assert (cache / "junit/junit/4.13.2/junit-4.13.2.jar").read_bytes() == b"jar"
    # what the cache holds stays as it is; nothing is copied twice
    (local / "junit/junit/4.13.2/junit-4.13.2.jar").write_bytes(b"changed")
    assert publish(str(local), str(cache)) == 0
    assert (cache / "junit/junit/4.13.2/junit-4.13.2.jar").read_bytes() == b"jar"
    assert not any(p.name.startswith(".part-") for p in cache.rglob("*"))


def test_the_settings_add_the_cache_for_plugins_and_dependencies() -> None:
    root = ElementTree.fromstring(settings_xml("/var/cache/swe-stream/maven"))
    assert [e.text for e in root.iter("activeProfile")] == [REPOSITORY_ID]
    urls = [e.text for e in root.iter("url")]
    assert urls == ["file:///var/cache/swe-stream/maven"] * 2
    assert [e.tag for e in root.iter() if e.tag in ("repository", "pluginRepository")] == [
        "repository",
        "pluginRepository",
    ]
    assert [e.text for e in root.iter("enabled")] == ["true", "false", "true", "false"]


def test_the_recipe_reads_the_cache_first_and_keeps_what_it_downloaded(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"pom.xml": "<project><artifactId>demo</artifactId></project>"})
    facts = read_maven_facts(tree)
    assert facts is not None
    recipe = java_recipe(facts, "17", {"17": "swe-stream/java:bookworm"}, None, [])
    assert CACHE_SCRIPT in recipe.dependency_files
    assert recipe.env_commands[0] == USE_CACHE
    assert recipe.env_commands[-1] == KEEP_IN_CACHE
    assert recipe.install_commands[-1] == KEEP_IN_CACHE


def test_every_cache_path_is_where_a_build_mounts_the_cache() -> None:
    # three places name the mount: the builds (Python's and every build's), Go's recipe and
    # the Maven script in the image, which cannot import the others
    from streams.evaluation.image_builds import PACKAGE_CACHE_MOUNT
    from streams.evaluation.recipes.languages.go import recipe as go_recipe
    from streams.evaluation.recipes.languages.java import swe_mvn_cache

    assert go_recipe.CACHE == swe_mvn_cache.CACHE == PACKAGE_CACHE_MOUNT


def test_the_scripts_are_told_the_local_repository_maven_uses() -> None:
    from streams.evaluation.recipes.languages.java.toolchain import JAVA_IMAGES, MAVEN_REPOSITORY

    options = dict(JAVA_IMAGES.environment)["MAVEN_OPTS"].split()
    assert f"-Dmaven.repo.local={MAVEN_REPOSITORY}" in options
    assert KEEP_IN_CACHE.split()[3] == MAVEN_REPOSITORY
