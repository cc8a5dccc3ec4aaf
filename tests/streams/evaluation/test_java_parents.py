"""Java parents that no reachable repository serves, in the real JDK image against Maven
Central: the env layer's stand-in (``swe-mvn-parent.py``) installs a release under the
parent's version, and the build then resolves it from the local repository (a file of its own,
so that xdist runs it beside the long end-to-end tests)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.docker


SNAPSHOT_PARENT_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>org.sonatype.oss</groupId>
    <artifactId>oss-parent</artifactId>
    <version>9-SNAPSHOT</version>
  </parent>
  <groupId>demo.snap</groupId>
  <artifactId>snap</artifactId>
  <version>1.0.0</version>
</project>
"""


def test_a_parent_no_repository_serves_is_resolved_offline_through_a_release(
    docker_client: Any, java_images: dict[str, str]
) -> None:
    """The env layer's stand-in, in the real image against Maven Central: before it, the build
    cannot resolve the snapshot parent (Central has no snapshots); after it, it builds from
    the local repository (the offline runs' too)."""
    import io
    import tarfile

    from streams.evaluation.recipes.languages.java.recipe import PARENT_SCRIPT, runner_program
    from streams.evaluation.recipes.languages.java.toolchain import MAVEN_REPOSITORY

    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in (
            ("pom.xml", SNAPSHOT_PARENT_POM.encode()),
            (PARENT_SCRIPT, runner_program("swe_mvn_parent.py")),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    container = docker_client.containers.create(
        java_images["11"], ["sleep", "300"], working_dir="/p", network_mode="bridge"
    )
    try:
        container.start()
        container.exec_run("mkdir -p /p")
        assert container.put_archive("/p", archive.getvalue())
        validate = "mvn -B -q validate"
        before = container.exec_run(["bash", "-c", validate], workdir="/p")
        assert before.exit_code != 0
        assert b"oss-parent:pom:9-SNAPSHOT" in before.output, before.output[-2000:]
        stood = container.exec_run(
            ["python3", PARENT_SCRIPT, MAVEN_REPOSITORY, "org.sonatype.oss:oss-parent:9-SNAPSHOT"],
            workdir="/p",
        )
        assert stood.exit_code == 0, stood.output[-2000:]
        assert b"oss-parent:9 stands in for 9-SNAPSHOT" in stood.output
        after = container.exec_run(["bash", "-c", validate], workdir="/p")
        assert after.exit_code == 0, after.output[-2000:]
        again = container.exec_run(
            ["python3", PARENT_SCRIPT, MAVEN_REPOSITORY, "org.sonatype.oss:oss-parent:9-SNAPSHOT"],
            workdir="/p",
        )
        assert b"is in the local repository" in again.output
        # a release the registry does not serve: the newest served one below it stands in
        container.exec_run(["sed", "-i", "s/9-SNAPSHOT/9.5/", "/p/pom.xml"])
        assert container.exec_run(["bash", "-c", validate], workdir="/p").exit_code != 0
        stood = container.exec_run(
            ["python3", PARENT_SCRIPT, MAVEN_REPOSITORY, "org.sonatype.oss:oss-parent:9.5"],
            workdir="/p",
        )
        assert b"oss-parent:9 stands in for 9.5" in stood.output, stood.output[-2000:]
        after = container.exec_run(["bash", "-c", validate], workdir="/p")
        assert after.exit_code == 0, after.output[-2000:]
        # a parent that is served is resolved as it is, nothing stands in
        served = container.exec_run(
            ["python3", PARENT_SCRIPT, MAVEN_REPOSITORY, "org.sonatype.oss:oss-parent:7"],
            workdir="/p",
        )
        assert served.exit_code == 0 and b"stands in" not in served.output, served.output
    finally:
        container.remove(force=True)
