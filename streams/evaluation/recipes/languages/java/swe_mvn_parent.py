"""swe-mvn-parent: stand a released parent POM in for a parent that no reachable repository
serves.

Usage: ``python3 swe-mvn-parent.py GROUP:ARTIFACT:VERSION...`` (the parents the reactor does
not build)

A project whose parent is a snapshot of its organisation's shared POM (``2.15.0-SNAPSHOT``)
had it from a snapshot repository on the day; such repositories keep a snapshot only for a
while, and are not reachable here. The release of the same version (``2.15.0``) is what that
snapshot became. A release the registry here does not serve (a mirror behind by a version)
has the newest served release below it as its nearest. Each parent is resolved as it is
where it can be (``dependency:get``); else that release is resolved, given the parent's
version and installed into the local repository (``install:install-file``), where the
offline runs find it, and the line ``swe-mvn-parent: <release> stands in for <version>``
says so. No such release: it is said and left, and the build names the parent it cannot
resolve.

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


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """An order of plain release versions (``2.15.0`` < ``2.15.10`` < ``3``): numbers as
    numbers, a qualifier below a number."""
    parts: list[tuple[int, int | str]] = []
    for part in version.replace("-", ".").split("."):
        parts.append((1, int(part)) if part.isdigit() else (0, part))
    return tuple(parts)


def newest_below(versions: list[str], wanted: str) -> str | None:
    """The newest release of ``versions`` below ``wanted`` (snapshots left out)."""
    key = version_key(wanted.removesuffix(SNAPSHOT))
    lower = [v for v in versions if not v.endswith(SNAPSHOT) and version_key(v) < key]
    return max(lower, key=version_key) if lower else None


def served_versions(group: str, artifact: str) -> list[str]:
    """The versions the repositories' metadata list: its newest release asked for into a
    repository of its own (the local one's metadata of an installed stand-in would answer
    instead), where Maven caches the metadata it read."""
    found: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        mvn(
            f"-Dmaven.repo.local={scratch}",
            "dependency:get",
            f"-Dartifact={group}:{artifact}:RELEASE:pom",
            "-Dtransitive=false",
        )
        folder = os.path.join(scratch, *group.split("."), artifact)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.startswith("maven-metadata") and name.endswith(".xml"):
                try:
                    metadata = ElementTree.parse(os.path.join(folder, name)).getroot()
                except ElementTree.ParseError:
                    continue
                found += [v.text or "" for v in metadata.iter("version") if v.text not in found]
    return found


def resolved(repository: str, group: str, artifact: str, version: str) -> bool:
    got = mvn(
        "dependency:get", f"-Dartifact={group}:{artifact}:{version}:pom", "-Dtransitive=false"
    )
    return got.returncode == 0 and os.path.isfile(pom_path(repository, group, artifact, version))


def stand_in(repository: str, coordinates: str) -> bool:
    """Resolve the parent ``coordinates``; where no reachable repository serves it, install
    under its version the release of its snapshot, else the newest release below it."""
    group, artifact, version = coordinates.split(":")
    if os.path.isfile(pom_path(repository, group, artifact, version)):
        print(f"swe-mvn-parent: {coordinates} is in the local repository")
        return True
    if not version.endswith(SNAPSHOT) and resolved(repository, group, artifact, version):
        return True
    candidates = [version.removesuffix(SNAPSHOT)] if version.endswith(SNAPSHOT) else []
    if not (candidates and resolved(repository, group, artifact, candidates[0])):
        below = newest_below(served_versions(group, artifact), version)
        if below is None or not resolved(repository, group, artifact, below):
            print(f"swe-mvn-parent: no release of {group}:{artifact} to stand in for {version}")
            return False
        candidates = [below]
    release = candidates[0]
    with open(pom_path(repository, group, artifact, release), "rb") as file:
        pom = with_version(file.read(), version)
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
    print(f"swe-mvn-parent: {group}:{artifact}:{release} stands in for {version}")
    return True


def main(arguments: list[str]) -> int:
    """``LOCAL_REPOSITORY GROUP:ARTIFACT:VERSION...`` (the recipe names the image's local
    repository, ``toolchain.MAVEN_REPOSITORY``)."""
    if not arguments:
        print("usage: swe-mvn-parent.py LOCAL_REPOSITORY GROUP:ARTIFACT:VERSION...")
        return 2
    repository, *wanted = arguments
    coordinates = [a for a in wanted if a.count(":") == 2]
    return 0 if all([stand_in(repository, c) for c in coordinates]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
