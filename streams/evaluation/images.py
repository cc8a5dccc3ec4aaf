"""Offline Docker base image for running repository code.

No image registry is reachable from these machines, so the base image every later
stage builds on is made locally: ``debootstrap`` a minimal Debian root file system,
optionally add an extra CA bundle (for networks that intercept TLS, e.g. a corporate
proxy, so ``pip`` inside containers can reach PyPI), and ``docker import`` it as a tar
stream. The result is cached by tag: if the tag exists, nothing is rebuilt.

One image per Python version: a Debian suite ships one ``python3``, so ``PYTHON_SUITES``
maps a version to the suite that has it and ``base_image_tag`` names its image
(``swe-stream/base:<suite>``). A suite newer than the host's debootstrap (forky on a
bookworm host) is built with debootstrap's ``sid`` script. Release signatures are always
checked (``--force-check-gpg``), against the host's ``debian-archive-keyring`` unless a
``keyring`` is given.

Run ``python -m streams.evaluation.images --help`` (or ``swe-stream images base``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from streams.core.errors import MissingTool

if TYPE_CHECKING:
    from streams.evaluation.recipes.languages import ToolchainImages

logger = logging.getLogger("swe_stream.images")

BASE_IMAGE_PREFIX = "swe-stream/base"
DEFAULT_BASE_IMAGE = "swe-stream/base:bookworm"
DEFAULT_SUITE = "bookworm"
# Python version (major.minor) -> the Debian suite whose python3 it is.
PYTHON_SUITES: dict[str, str] = {
    "3.9": "bullseye",
    "3.11": "bookworm",
    "3.13": "trixie",
    "3.14": "forky",
}
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# debootstrap scripts of one Debian release differ only in name (they are links to ``sid``),
# so a suite released after the host's debootstrap is built with the ``sid`` script.
FALLBACK_SCRIPT = "sid"
DEFAULT_PACKAGES: tuple[str, ...] = (
    "python3",
    "python3-venv",
    "python3-pip",
    "git",
    "ca-certificates",
    "patch",  # validation's last resort for patches that need fuzz
)
BASE_LABEL = "org.swe-stream.base"
# the hash of the Dockerfile a toolchain image was built from: a changed definition (a package
# added, a variable moved) builds the image again rather than keeping the old one
DEFINITION_LABEL = "org.swe-stream.definition"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXTRA_CA_NAME = "swe-stream-extra.crt"

_CHUNK = 1 << 20  # bytes per chunk streamed from tar to the engine


def image_label(client: Any, tag: str, label: str) -> str | None:
    """The value of ``label`` on image ``tag`` (None: no such image, or no such label)."""
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (image.labels or {}).get(label)


def base_image_exists(client: Any, tag: str) -> bool:
    """True if the engine behind ``client`` (a ``docker.DockerClient``) has image ``tag``."""
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def base_image_tag(python: str, prefix: str = BASE_IMAGE_PREFIX) -> str:
    """The base image tag of Python ``python`` (major.minor): ``<prefix>:<debian suite>``."""
    try:
        suite = PYTHON_SUITES[python]
    except KeyError:
        known = ", ".join(PYTHON_SUITES)
        raise ValueError(f"no base image for Python {python!r} (known: {known})") from None
    return f"{prefix}:{suite}"


def resolve_targets(
    *,
    tag: str | None = None,
    suite: str | None = None,
    python: str | None = None,
    all_pythons: bool = False,
    default_tag: str = DEFAULT_BASE_IMAGE,
) -> list[tuple[str, str]]:
    """The (tag, suite) pairs to build for the command-line choices.

    ``all_pythons``: every suite of ``PYTHON_SUITES`` under its default tag (neither
    ``tag``, ``suite`` nor ``python`` may be given). ``python``: its suite, under ``tag`` or
    its default tag (``suite`` may not be given). Otherwise ``suite`` (default bookworm)
    under ``tag`` or ``default_tag``.
    """
    if all_pythons:
        if tag or suite or python:
            raise ValueError("--all builds every Python's default tag: drop --tag/--suite/--python")
        return [(base_image_tag(version), name) for version, name in PYTHON_SUITES.items()]
    if python is not None:
        if suite:
            raise ValueError("--python chooses the suite: drop --suite")
        return [(tag or base_image_tag(python), PYTHON_SUITES[python])]
    return [(tag or default_tag, suite or DEFAULT_SUITE)]


def debootstrap_script(suite: str) -> str | None:
    """The script path to pass debootstrap for ``suite``, or None when it has its own.

    debootstrap reads ``$DEBOOTSTRAP_DIR/scripts/<suite>`` (``/usr/share/debootstrap`` by
    default); when that is missing but the ``sid`` script exists (e.g. forky on a bookworm
    host, debootstrap 1.0.128), the ``sid`` script is used: every Debian suite since
    bullseye shares it.
    """
    scripts = Path(os.environ.get("DEBOOTSTRAP_DIR", "/usr/share/debootstrap")) / "scripts"
    if (scripts / suite).is_file() or not (scripts / FALLBACK_SCRIPT).is_file():
        return None
    return str(scripts / FALLBACK_SCRIPT)


def debootstrap_command(
    debootstrap: str,
    suite: str,
    rootfs: Path,
    *,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    mirror: str | None = None,
    keyring: Path | None = None,
    script: str | None = None,
) -> list[str]:
    """The debootstrap command line; Release signatures are always checked."""
    cmd = [
        debootstrap,
        "--variant=minbase",
        # abort, rather than warn and go on unchecked, when the keyring is missing
        "--force-check-gpg",
    ]
    if keyring is not None:
        cmd.append(f"--keyring={keyring}")
    cmd += [f"--include={','.join(packages)}", suite, str(rootfs)]
    if script:
        cmd += [mirror or DEFAULT_MIRROR, script]  # the script comes after the mirror
    elif mirror:
        cmd.append(mirror)
    return cmd


def split_tag(tag: str) -> tuple[str, str]:
    """Split ``repo[:tag]`` into (repository, tag); a registry port is not a tag."""
    repository, sep, name = tag.rpartition(":")
    if not sep or "/" in name:
        return tag, "latest"
    return repository, name


def import_changes(suite: str) -> list[str]:
    """The Dockerfile instructions applied by ``docker import``."""
    return [
        f"ENV PATH={IMAGE_PATH}",
        "ENV LANG=C.UTF-8",
        f"LABEL {BASE_LABEL}=debootstrap-{suite}",
        'CMD ["/bin/bash"]',
    ]


def _find_debootstrap() -> str:
    """debootstrap's path on ``PATH``; ``MissingTool`` (a RuntimeError) when there is none."""
    found = shutil.which("debootstrap")
    if found:
        return found
    raise MissingTool(
        "debootstrap is not installed (not found on PATH), and building the base image runs it",
        "install Debian's debootstrap (apt-get install -y debootstrap), or set "
        "docker.base_image to an image from a registry",
    )


def _require_root() -> None:
    if os.geteuid() != 0:
        raise RuntimeError(
            "building the base image runs debootstrap, which must run as root "
            f"(current euid {os.geteuid()}); re-run as root, e.g. with sudo"
        )


def _mounts_under(root: Path) -> list[str]:
    """Mount points inside ``root`` (deepest first), e.g. /proc left by a failed debootstrap."""
    prefix = str(root.resolve()).rstrip("/") + "/"
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split()
        if len(fields) < 2:
            continue
        # /proc/mounts escapes spaces etc. as octal; our temp dirs contain none.
        point = fields[1]
        if point.startswith(prefix):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def _remove_rootfs(root: Path) -> None:
    """Remove the root-owned temp tree, unmounting anything left mounted inside it first."""
    for point in _mounts_under(root):
        logger.warning("unmounting leftover mount %s", point)
        subprocess.run(["umount", "-l", point], check=False)
    if _mounts_under(root):
        logger.error("mounts remain under %s; not removing it", root)
        return
    started = time.monotonic()
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        logger.warning("could not fully remove %s", root)
    else:
        logger.info("removed %s in %.1fs", root, time.monotonic() - started)


def _install_ca_bundle(rootfs: Path, ca_bundle: Path) -> None:
    data = ca_bundle.read_bytes()
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise ValueError(f"{ca_bundle} does not look like a PEM certificate bundle")
    if not data.endswith(b"\n"):
        data += b"\n"
    local = rootfs / "usr/local/share/ca-certificates"
    local.mkdir(parents=True, exist_ok=True)
    (local / EXTRA_CA_NAME).write_bytes(data)
    bundle = rootfs / "etc/ssl/certs/ca-certificates.crt"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    existing = bundle.read_bytes() if bundle.exists() else b""
    if existing and not existing.endswith(b"\n"):
        existing += b"\n"
    bundle.write_bytes(existing + data)
    logger.info("added CA bundle %s to the image (%d bytes)", ca_bundle, len(data))


def _clean_apt(rootfs: Path) -> None:
    removed = 0
    for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"):
        for path in rootfs.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                continue  # e.g. lists/partial; keep the directory layout apt expects
            path.unlink()
            removed += 1
    for cache in ("var/cache/apt/pkgcache.bin", "var/cache/apt/srcpkgcache.bin"):
        (rootfs / cache).unlink(missing_ok=True)
    logger.info("removed %d apt cache files", removed)


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def _import_rootfs(client: Any, rootfs: Path, tag: str, suite: str) -> str:
    """Stream ``tar -C rootfs -c .`` into the engine's image import; return the image id."""
    repository, name = split_tag(tag)
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None and tar.stderr is not None
    try:
        result = client.api.import_image(
            src=_chunks(tar.stdout),
            repository=repository,
            tag=name,
            changes=import_changes(suite),
            stream_src=True,
        )
    finally:
        tar.stdout.close()
        stderr = tar.stderr.read().decode(errors="replace")
        tar.stderr.close()
        code = tar.wait()
    if code != 0:
        raise RuntimeError(f"tar of {rootfs} failed with exit code {code}: {stderr.strip()}")
    text = result if isinstance(result, str) else str(result)
    if "errorDetail" in text or '"error"' in text:
        raise RuntimeError(f"docker import of {tag} failed: {text.strip()}")
    image = client.images.get(tag)
    return str(image.id)


def build_debootstrap_base_image(
    tag: str = DEFAULT_BASE_IMAGE,
    *,
    suite: str = DEFAULT_SUITE,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    ca_bundle: Path | None = None,
    mirror: str | None = None,
    keyring: Path | None = None,
    force: bool = False,
    workdir: Path | None = None,
    client: Any | None = None,
) -> str:
    """Build the base image ``tag`` with debootstrap + ``docker import``; return ``tag``.

    Cached by tag: returns at once when the image exists, unless ``force``. ``ca_bundle``
    (off by default) is a PEM bundle added to the image's trust store, for networks that
    intercept TLS. ``keyring`` (default: debootstrap's, the host's
    ``debian-archive-keyring``) checks the suite's Release signature, e.g. the keyring of
    a newer ``debian-archive-keyring`` package when the host's lacks the suite's key.
    ``workdir`` is where the temporary root file system is made (it must allow exec and
    device files). ``client`` defaults to ``docker.from_env()``.
    """
    import docker

    own_client = client is None
    if client is None:
        client = docker.from_env(timeout=600)
    try:
        if not force and base_image_exists(client, tag):
            logger.info("base image %s exists; not rebuilding (use force to rebuild)", tag)
            return tag
        debootstrap = _find_debootstrap()
        _require_root()
        if ca_bundle is not None and not Path(ca_bundle).is_file():
            raise FileNotFoundError(f"CA bundle {ca_bundle} not found")
        if keyring is not None and not Path(keyring).is_file():
            raise FileNotFoundError(f"keyring {keyring} not found")

        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix="swe-stream-rootfs-", dir=workdir))
        rootfs = tmp / "rootfs"
        try:
            cmd = debootstrap_command(
                debootstrap,
                suite,
                rootfs,
                packages=packages,
                mirror=mirror,
                keyring=keyring,
                script=debootstrap_script(suite),
            )
            logger.info("running %s", " ".join(cmd))
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                tail = "\n".join(proc.stdout.splitlines()[-30:])
                log = rootfs / "debootstrap/debootstrap.log"
                if log.is_file():
                    log_lines = log.read_text(errors="replace").splitlines()
                    tail += "\n--- debootstrap.log ---\n" + "\n".join(log_lines[-30:])
                if "Release signed by unknown key" in proc.stdout:
                    tail += (
                        f"\nthe keyring does not have the key that signs {suite}: pass a newer "
                        "Debian keyring with --keyring, e.g. usr/share/keyrings/"
                        "debian-archive-keyring.gpg from the debian-archive-keyring package "
                        f"of {suite} (`apt-get download` it on a host that trusts {suite})"
                    )
                raise RuntimeError(f"debootstrap failed with exit code {proc.returncode}:\n{tail}")
            for line in proc.stdout.splitlines():
                if "Valid Release signature" in line:
                    logger.info("%s: %s", suite, line.removeprefix("I: "))
            logger.info("debootstrap of %s done in %.1fs", suite, time.monotonic() - started)

            if ca_bundle is not None:
                _install_ca_bundle(rootfs, Path(ca_bundle))
            _clean_apt(rootfs)

            import_started = time.monotonic()
            image_id = _import_rootfs(client, rootfs, tag, suite)
            logger.info(
                "imported %s as %s in %.1fs", tag, image_id, time.monotonic() - import_started
            )
        finally:
            _remove_rootfs(tmp)
        logger.info("built base image %s in %.1fs", tag, time.monotonic() - started)
        return tag
    finally:
        if own_client:
            client.close()


@dataclass(frozen=True)
class BuildResult:
    tag: str
    suite: str
    built: bool  # False: the tag existed and was kept
    seconds: float

    def __str__(self) -> str:
        done = f"built in {self.seconds:.0f} s" if self.built else "exists, kept"
        return f"{self.tag} (Debian {self.suite}): {done}"


def build_base_images(
    targets: Iterable[tuple[str, str]],
    *,
    ca_bundle: Path | None = None,
    mirror: str | None = None,
    keyring: Path | None = None,
    force: bool = False,
    workdir: Path | None = None,
    client: Any | None = None,
) -> Iterator[BuildResult]:
    """Build each (tag, suite) of ``targets`` in turn (existing tags kept unless ``force``),
    yielding each result as it is done."""
    import docker

    own_client = client is None
    if client is None:
        client = docker.from_env(timeout=600)
    try:
        for tag, suite in targets:
            started = time.monotonic()
            existed = not force and base_image_exists(client, tag)
            build_debootstrap_base_image(
                tag,
                suite=suite,
                ca_bundle=ca_bundle,
                mirror=mirror,
                keyring=keyring,
                force=force,
                workdir=workdir,
                client=client,
            )
            yield BuildResult(tag, suite, not existed, time.monotonic() - started)
    finally:
        if own_client:
            client.close()


def _env_value(value: str) -> str:
    """A value of a Dockerfile's ``ENV``, quoted where it has spaces or quotes."""
    return json.dumps(value) if any(c in value for c in " \t\"'\\$") else value


def toolchain_dockerfile(images: ToolchainImages, base_image: str, version: str) -> str:
    """The Dockerfile of a toolchain image on ``base_image`` (a suite's base image); its
    steps may name the suite's version as ``${TOOLCHAIN_VERSION}`` (OpenJDK's package)."""
    named = any("${TOOLCHAIN_VERSION}" in step for step in images.steps)
    return "\n".join(
        [
            f"FROM {base_image}",
            *([f"# {images.note}"] if images.note else []),
            *([f"ARG TOOLCHAIN_VERSION={version}"] if named else []),
            *(f"ENV {name}={_env_value(value)}" for name, value in images.environment),
            "RUN " + " && ".join(images.steps),
            f'LABEL {images.label}="{version}"',
            "",
        ]
    )


def registered_toolchain_images() -> dict[str, ToolchainImages]:
    """Every registered language's toolchain images, by toolchain (``node``)."""
    from streams.evaluation.recipes.languages import languages

    return {
        language.toolchain or language.name: language.toolchain_images
        for language in languages()
        if language.toolchain_images is not None
    }


def build_toolchain_images(
    images: ToolchainImages,
    suites: Mapping[str, str] | None = None,
    *,
    base_prefix: str = BASE_IMAGE_PREFIX,
    force: bool = False,
    client: Any | None = None,
) -> Iterator[BuildResult]:
    """Build the toolchain image of each suite of ``suites`` (suite -> version; default: all
    of ``images.by_suite``) on its base image ``<base_prefix>:<suite>`` (which must exist:
    ``build_base_images``), as ``images.tag(suite)``; an existing image of the same definition
    (``DEFINITION_LABEL``) is kept unless ``force``."""
    import io

    import docker

    own_client = client is None
    if client is None:
        client = docker.from_env(timeout=1800)
    try:
        for suite, version in (images.by_suite if suites is None else suites).items():
            tag = images.tag(suite)
            started = time.monotonic()
            base = f"{base_prefix}:{suite}"
            text = toolchain_dockerfile(images, base, version)
            definition = hashlib.sha256(text.encode()).hexdigest()[:16]
            if not force and image_label(client, tag, DEFINITION_LABEL) == definition:
                yield BuildResult(tag, suite, False, 0.0)
                continue
            if not base_image_exists(client, base):
                raise RuntimeError(f"{tag} needs {base}: build it first (images base --all)")
            dockerfile = f'{text}LABEL {DEFINITION_LABEL}="{definition}"\n'.encode()
            try:
                client.images.build(
                    fileobj=io.BytesIO(dockerfile), tag=tag, rm=True, forcerm=True, pull=False
                )
            except docker.errors.BuildError as exc:
                lines = [str(chunk.get("stream", "")).rstrip() for chunk in exc.build_log]
                tail = "\n".join(line for line in lines if line)[-3000:]
                raise RuntimeError(f"building {tag} failed: {exc}\n{tail}") from None
            logger.info("built %s image %s", version, tag)
            yield BuildResult(tag, suite, True, time.monotonic() - started)
    finally:
        if own_client:
            client.close()


@dataclass(frozen=True)
class ListedImage:
    """One image validation picks from: its toolchain and version, tag, and whether the
    engine has it (and its size)."""

    toolchain: str
    version: str
    tag: str
    present: bool
    megabytes: float = 0.0

    def line(self) -> str:
        state = f"{self.megabytes:7.0f} MB" if self.present else "  missing"
        return f"{self.toolchain:<8} {self.version:<8} {self.tag:<32} {state}"


def list_images(client: Any, configured: Mapping[str, Mapping[str, str]]) -> list[ListedImage]:
    """The images of every toolchain's versions (``configured``: toolchain -> version -> tag,
    as ``configured_images`` gives them), each as the engine has it or missing."""
    import docker.errors

    listed = []
    for toolchain, versions in configured.items():
        for version, tag in versions.items():
            try:
                image = client.images.get(tag)
            except docker.errors.ImageNotFound:
                listed.append(ListedImage(toolchain, version, tag, False))
                continue
            size = float(image.attrs.get("Size") or 0) / 1e6
            listed.append(ListedImage(toolchain, version, tag, True, size))
    return listed


def ensure_base_image(base_image: str) -> str | None:
    """A problem that stops the demo (no Docker, no base image and no way to build it)."""
    import docker.errors

    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types here
        return f"no Docker engine answers ({exc}); start dockerd (see README)"
    try:
        client.images.get(base_image)
        return None
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        return (
            f"the base image {base_image} is missing and debootstrap is not "
            "installed: apt-get install -y debootstrap, or run `swe-stream images base`"
        )
    logger.info("building the base image %s (debootstrap, about a minute)", base_image)
    build_debootstrap_base_image(base_image)
    return None


def ensure_toolchain_image(toolchain: str, tags: Mapping[str, str], base_image: str) -> str | None:
    """A problem that stops a demo of a language with ``toolchain``: none of ``tags`` (version
    -> tag) exists and the one of ``base_image``'s suite cannot be built on it."""
    import docker

    images = registered_toolchain_images().get(toolchain)
    if images is None:
        return None  # the base image is the toolchain's
    client = docker.from_env(timeout=1800)
    try:
        if any(base_image_exists(client, tag) for tag in tags.values()):
            return None
        for suite, version in images.by_suite.items():
            tag = images.tag(suite)
            if tags.get(version) == tag and base_image.endswith(f":{suite}"):
                logger.info("building the %s %s image %s (about a minute)", toolchain, version, tag)
                try:
                    list(build_toolchain_images(images, {suite: version}, client=client))
                except RuntimeError as exc:
                    return str(exc)
                return None
    finally:
        client.close()
    return (
        f"no {toolchain} image (docker.toolchain_images) exists: run `swe-stream images base "
        f"--toolchains`"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streams.evaluation.images``: build the base image (a no-op if the tag exists)."""
    parser = argparse.ArgumentParser(
        prog="python -m streams.evaluation.images",
        description="Build the offline Docker base image with debootstrap (needs root).",
    )
    parser.add_argument("--tag", default=None, help=f"image tag (default {DEFAULT_BASE_IMAGE})")
    parser.add_argument("--suite", default=None, help=f"Debian suite (default {DEFAULT_SUITE})")
    parser.add_argument(
        "--python",
        choices=list(PYTHON_SUITES),
        default=None,
        help="build this Python's suite (see PYTHON_SUITES) under its default tag",
    )
    parser.add_argument(
        "--all",
        dest="all_pythons",
        action="store_true",
        help="build every Python's image (" + ", ".join(PYTHON_SUITES) + "), keeping existing tags",
    )
    parser.add_argument(
        "--toolchains",
        "--node",
        dest="toolchains",
        action="store_true",
        help="build every language's toolchain images (Node.js: swe-stream/node:<suite>) on "
        "their suites' base images, keeping existing tags",
    )
    parser.add_argument(
        "--ca-bundle",
        type=Path,
        default=None,
        metavar="PATH",
        help="PEM CA bundle to trust inside the image (for TLS-intercepting networks)",
    )
    parser.add_argument("--mirror", default=None, help="Debian mirror URL for debootstrap")
    parser.add_argument(
        "--keyring",
        type=Path,
        default=None,
        metavar="PATH",
        help="keyring to check Release signatures with (default: the host's Debian keyring)",
    )
    parser.add_argument(
        "--force", action="store_true", help="rebuild even if the tag already exists"
    )
    args = parser.parse_args(argv)
    if args.toolchains:
        return main_toolchains(args.force)
    try:
        targets = resolve_targets(
            tag=args.tag, suite=args.suite, python=args.python, all_pythons=args.all_pythons
        )
    except ValueError as exc:
        parser.error(str(exc))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    import docker.errors

    try:
        for result in build_base_images(
            targets,
            ca_bundle=args.ca_bundle,
            mirror=args.mirror,
            keyring=args.keyring,
            force=args.force,
        ):
            print(result, flush=True)
    except (RuntimeError, OSError, ValueError, docker.errors.DockerException) as exc:
        logger.error("%s", exc)
        return 1
    return 0


def main_toolchains(force: bool = False) -> int:
    """Build every registered language's toolchain images (``--toolchains``); 1 when one
    fails."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    import docker.errors

    try:
        for images in registered_toolchain_images().values():
            for result in build_toolchain_images(images, force=force):
                print(result, flush=True)
    except (RuntimeError, OSError, docker.errors.DockerException) as exc:
        logger.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
