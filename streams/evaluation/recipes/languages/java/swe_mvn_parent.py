"""swe-mvn-parent: stand a released parent POM in for a ``-SNAPSHOT`` parent that no reachable
repository has.

Usage: ``python3 swe-mvn-parent.py GROUP:ARTIFACT:VERSION-SNAPSHOT...``

A project whose parent is a snapshot of its organisation's shared POM (``2.15.0-SNAPSHOT``)
had it from a snapshot repository on the day; such repositories keep a snapshot only for a
while, and are not reachable here. The release of the same version (``2.15.0``) is what that
snapshot became: this resolves it from the build's repositories (Maven Central) with
``dependency:get``, gives it the snapshot's version and installs it into the local repository
(``install:install-file``), where the offline runs find it. A release that is not there is
said and left: the build then names the parent it cannot resolve.

Run in the env layer (python3 of the image); the standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

POM_NAMESPACE = "http://maven.apache.org/POM/4.0.0"
SNAPSHOT = "-SNAPSHOT"


def local_repository() -> str:
    """Maven's local repository: ``-Dmaven.repo.local`` of ``MAVEN_OPTS``, else ``~/.m2``."""
    for option in os.environ.get("MAVEN_OPTS", "").split():
        if option.startswith("-Dmaven.repo.local="):
            return option.split("=", 1)[1]
    return os.path.expanduser("~/.m2/repository")


def pom_path(repository: str, group: str, artifact: str, version: str) -> str:
    name = f"{artifact}-{version}.pom"
    return os.path.join(repository, *group.split("."), artifact, version, name)


def with_version(pom: bytes, version: str) -> bytes:
    """``pom`` with the project's own ``<version>`` set to ``version`` (added after its
    ``<artifactId>`` where it inherits its parent's; the parent's kept)."""
    ElementTree.register_namespace("", POM_NAMESPACE)
    project = ElementTree.fromstring(pom)
    children = list(project)
    names = [child.tag.rsplit("}", 1)[-1] for child in children]
    if "version" in names:
        element = children[names.index("version")]
    elif "artifactId" in names:
        namespace = project.tag[: project.tag.index("}") + 1] if "}" in project.tag else ""
        element = ElementTree.Element(f"{namespace}version")
        project.insert(names.index("artifactId") + 1, element)
    else:
        raise ValueError("the POM names no artifactId")
    element.text = version
    return bytes(ElementTree.tostring(project, encoding="utf-8", xml_declaration=True))


def mvn(*arguments: str) -> subprocess.CompletedProcess[str]:
    # outside the project: its POM, whose parent cannot be resolved yet, would fail the goal
    with tempfile.TemporaryDirectory() as outside:
        return subprocess.run(
            ["mvn", "-B", "-q", *arguments],
            capture_output=True,
            text=True,
            check=False,
            cwd=outside,
        )


def stand_in(coordinates: str) -> bool:
    """Install the release of the snapshot ``coordinates`` under the snapshot's version."""
    group, artifact, snapshot = coordinates.split(":")
    release = snapshot.removesuffix(SNAPSHOT)
    repository = local_repository()
    if os.path.isfile(pom_path(repository, group, artifact, snapshot)):
        print(f"swe-mvn-parent: {coordinates} is in the local repository")
        return True
    pom_of_release = f"-Dartifact={group}:{artifact}:{release}:pom"
    got = mvn("dependency:get", pom_of_release, "-Dtransitive=false")
    released = pom_path(repository, group, artifact, release)
    if got.returncode != 0 or not os.path.isfile(released):
        print(f"swe-mvn-parent: no release {release} of {group}:{artifact} for {snapshot}")
        print((got.stdout + got.stderr)[-2000:])
        return False
    with open(released, "rb") as file:
        pom = with_version(file.read(), snapshot)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "pom.xml")
        with open(path, "wb") as file:
            file.write(pom)
        installed = mvn(
            "install:install-file", f"-Dfile={path}", f"-DpomFile={path}", "-Dpackaging=pom"
        )
    if installed.returncode != 0:
        print(f"swe-mvn-parent: could not install {coordinates}")
        print((installed.stdout + installed.stderr)[-2000:])
        return False
    print(f"swe-mvn-parent: {group}:{artifact}:{release} stands in for {snapshot}")
    return True


def main(arguments: list[str]) -> int:
    wanted = [a for a in arguments if a.count(":") == 2 and a.endswith(SNAPSHOT)]
    return 0 if all([stand_in(coordinates) for coordinates in wanted]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
