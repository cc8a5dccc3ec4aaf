"""swe-mvn-cache: the host's package cache as a Maven repository every build reads first.

Usage: ``python3 swe-mvn-cache.py use`` (before a build's first ``mvn``) and
``python3 swe-mvn-cache.py publish LOCAL_REPOSITORY`` (after its last; the recipe names the
image's local repository, ``toolchain.MAVEN_REPOSITORY``).

``use`` writes Maven's global settings with one more repository, for plugins and
dependencies alike: ``file://<cache>/maven``, asked before the build's own repositories, so
what an earlier build of the host downloaded is copied from there (no network) and the rest
comes from the registry as before. The settings stay in the image: Maven's local repository
records which repository each artifact came from, and an offline run accepts an artifact only
from a repository it knows.

``publish`` copies into that repository, in its layout, every release of the image's local
repository that Maven downloaded from a remote repository (``_remote.repositories`` names
it) and the cache lacks, with its checksums; each file written under a temporary name and
renamed, so that a build reading the cache meanwhile sees it whole or not at all. Snapshots
(they change) and what a build installed itself (a parent's stand-in, a module of the
reactor: no repository named) are left out. A directory's remote metadata (a group's plugin
prefixes, an artifact's versions) is kept as its ``maven-metadata.xml`` the first time.

Without a mounted cache both do nothing. Run in the image (its python3); the standard
library only.
"""

from __future__ import annotations

import os
import sys
import tempfile

CACHE = "/var/cache/swe-stream"  # the host's package cache, where a build step mounts it
REPOSITORY_ID = "swe-stream-cache"
SETTINGS = "/usr/share/maven/conf/settings.xml"  # Maven's global settings (Debian's Maven)
TRACKING = "_remote.repositories"
CHECKSUMS = (".sha1", ".md5", ".sha256", ".sha512")
METADATA = "maven-metadata-"

_REPOSITORY = """<id>{id}</id><url>file://{path}</url>
<releases><enabled>true</enabled><checksumPolicy>warn</checksumPolicy></releases>
<snapshots><enabled>false</enabled></snapshots>"""


def cache_repository(cache: str = CACHE) -> str:
    return os.path.join(cache, "maven")


def settings_xml(repository: str) -> str:
    """Maven settings whose one active profile adds ``repository`` before the build's own."""
    entry = _REPOSITORY.format(id=REPOSITORY_ID, path=repository)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<settings>\n<profiles><profile>'
        f"<id>{REPOSITORY_ID}</id>\n<repositories><repository>{entry}</repository></repositories>\n"
        f"<pluginRepositories><pluginRepository>{entry}</pluginRepository></pluginRepositories>\n"
        f"</profile></profiles>\n<activeProfiles><activeProfile>{REPOSITORY_ID}</activeProfile>"
        "</activeProfiles>\n</settings>\n"
    )


def downloaded(tracking: str) -> list[str]:
    """The files a ``_remote.repositories`` text says came from a remote repository other
    than the cache (lines ``name>repository=``; an empty repository: installed locally)."""
    names = []
    for line in tracking.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ">" not in line:
            continue
        name, _, repository = line.partition(">")
        repository = repository.rstrip("=")
        if repository and repository != REPOSITORY_ID and "/" not in name:
            names.append(name)
    return names


def _copy_whole(source: str, target: str) -> bool:
    """``source`` to ``target`` under a temporary name, then renamed; False when there."""
    if os.path.exists(target) or not os.path.isfile(source):
        return False
    os.makedirs(os.path.dirname(target), exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".part-")
    try:
        with os.fdopen(handle, "wb") as out, open(source, "rb") as data:
            while chunk := data.read(1 << 20):
                out.write(chunk)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return True


def remote_metadata(name: str) -> bool:
    """Whether ``name`` is a remote repository's metadata as a local repository keeps it
    (``maven-metadata-central.xml``: a group's plugin prefixes, an artifact's versions)."""
    if not (name.startswith(METADATA) and name.endswith(".xml")):
        return False
    repository = name[len(METADATA) : -len(".xml")]
    return repository not in ("", "local", REPOSITORY_ID)


def publish(local: str, repository: str) -> int:
    """Copy the releases ``local`` downloaded into ``repository``, and the first remote
    metadata of each directory as its ``maven-metadata.xml`` (Maven merges it with what the
    registry says, so an older copy adds nothing wrong); how many files."""
    copied = 0
    for directory, _, files in os.walk(local):
        if directory.endswith("-SNAPSHOT"):
            continue
        target = os.path.join(repository, os.path.relpath(directory, local))
        names = []
        if TRACKING in files:
            with open(os.path.join(directory, TRACKING), encoding="utf-8", errors="replace") as f:
                names = downloaded(f.read())
        for name in names:
            for suffix in ("", *CHECKSUMS):
                source = os.path.join(directory, name + suffix)
                copied += _copy_whole(source, os.path.join(target, name + suffix))
        for name in sorted(n for n in files if remote_metadata(n)):
            copied += _copy_whole(
                os.path.join(directory, name), os.path.join(target, "maven-metadata.xml")
            )
    return copied


def main(argv: list[str]) -> int:
    if argv[1:] != ["use"] and (len(argv) != 3 or argv[1] != "publish"):
        print("usage: swe-mvn-cache.py use | publish LOCAL_REPOSITORY", file=sys.stderr)
        return 2
    repository = cache_repository()
    if argv[1] == "use":
        if not os.path.isdir(os.path.dirname(SETTINGS)):
            print(f"swe-mvn-cache: no {os.path.dirname(SETTINGS)}: the cache is not used")
            return 0
        with open(SETTINGS, "w", encoding="utf-8") as out:
            out.write(settings_xml(repository))
        return 0
    if not os.path.isdir(CACHE):
        return 0  # no cache mounted: nothing to keep
    copied = publish(argv[2], repository)
    print(f"swe-mvn-cache: {copied} files kept in {repository}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
