"""Instance images in a registry: ``swe-stream images push`` and the harness's pull.

A task's instance image is pushed as ``REGISTRY/<owner>__<repo>:pr-<number>`` (lower case, as
references must be): one repository per source repository, so the env and tools layers its
tasks share are sent once and every later task of the repository sends only its own layer
(the registry answers "Layer already exists"; layers of another repository's tools image
are mounted across repositories, not sent). The name goes into the task's rows as
``image_name`` and ``docker_image``, the columns mini-swe-agent, SWE-agent and SWE-rebench read.

Credentials are Docker's own: the engine's client reads ``~/.docker/config.json`` (or
``$DOCKER_CONFIG``), where ``docker login`` wrote them; nothing of them passes through
swe-stream's settings, and a push's report never carries them.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from streams.evaluation.sandbox import OWNER_LABEL

log = logging.getLogger("swe_stream.registry")

# a reference's path component (distribution's grammar): lower-case alphanumerics joined by
# one '.', one or two '_', or dashes
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9-]+)*(?::\d+)?")
_OUTSIDE = re.compile(r"[^a-z0-9.]+")
_MIXED = re.compile(r"[.-]+")  # a run of separators: one '.' stays, any other run is '-'
TAG_PREFIX = "pr-"


class RegistryError(ValueError):
    """A registry name that cannot prefix an image reference, or a push that failed."""


def parse_registry(text: str) -> str:
    """``HOST[:PORT][/NAMESPACE]`` checked and normalized (no trailing slash); RegistryError
    saying what is wrong otherwise. A first part without a dot, a port or ``localhost`` is a
    namespace of Docker Hub, as Docker reads it."""
    value = text.strip().rstrip("/")
    if not value or "://" in value or "@" in value:
        raise RegistryError(
            f"--registry {text!r}: expected HOST[:PORT][/NAMESPACE], e.g. 127.0.0.1:5000/swe"
        )
    first, *path = value.split("/")
    is_host = "." in first or ":" in first or first == "localhost"
    if is_host and not _HOST.fullmatch(first):
        raise RegistryError(f"--registry {text!r}: {first!r} is not a host[:port]")
    for part in path if is_host else [first, *path]:
        if not _COMPONENT.fullmatch(part):
            raise RegistryError(
                f"--registry {text!r}: {part!r} is not a repository path part (lower-case "
                "letters and digits, joined by '.', '_', '__' or '-')"
            )
    return value


def repository_component(repo: str) -> str:
    """``Owner/Socket.IO`` -> ``owner__socket.io``: a source repository as one path component
    (GitHub's names are case-insensitive, so lowering them joins no two repositories; '_'
    becomes '-', as a path part takes no single '_' next to another separator)."""
    owner, _, name = repo.partition("/")
    parts = []
    for part in (owner, name):
        text = _OUTSIDE.sub("-", part.lower())
        text = _MIXED.sub(lambda run: "." if run.group() == "." else "-", text)
        parts.append(text.strip(".-") or "x")
    return "__".join(parts)


def image_reference(registry: str, repo: str, number: int) -> str:
    """Where the instance image of ``repo``'s PR ``number`` goes: ``REGISTRY/owner__repo:pr-N``."""
    return f"{parse_registry(registry)}/{repository_component(repo)}:{TAG_PREFIX}{number}"


@dataclass
class LayerPush:
    """One layer of a push: what the engine said last of it, and how many bytes it sent."""

    status: str = ""
    sent: int = 0


@dataclass
class PushedImage:
    """A pushed image: its reference and digest, its layers, what was sent."""

    reference: str
    digest: str = ""
    layers_sent: int = 0
    layers_present: int = 0  # already in the registry, or mounted from another repository
    bytes_sent: int = 0
    seconds: float = 0.0
    layers: dict[str, LayerPush] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("layers")
        data["push_seconds"] = data.pop("seconds")
        return data

    def line(self) -> str:
        return (
            f"{self.reference}: {self.layers_sent} layer(s) sent ({self.bytes_sent:,} bytes), "
            f"{self.layers_present} already there"
        )


def summarize_push(reference: str, events: Iterable[Mapping[str, Any]]) -> PushedImage:
    """What the engine's push progress says was sent: a layer ``Pushed`` sent its bytes (the
    last ``Pushing`` progress of it); ``Layer already exists`` and ``Mounted from`` sent none.
    RegistryError on an error event (its message, which never holds a credential)."""
    pushed = PushedImage(reference)
    for event in events:
        if event.get("error") or event.get("errorDetail"):
            detail = event.get("errorDetail") or {}
            message = event.get("error") or detail.get("message") or "push failed"
            raise RegistryError(f"push of {reference} failed: {message}")
        aux = event.get("aux")
        if isinstance(aux, Mapping) and aux.get("Digest"):
            pushed.digest = str(aux["Digest"])
        layer_id, status = event.get("id"), str(event.get("status") or "")
        if not layer_id or layer_id == reference.rsplit(":", 1)[-1]:
            continue  # the tag's own lines ("The push refers to", "pr-1: digest: ...")
        layer = pushed.layers.setdefault(str(layer_id), LayerPush())
        progress = event.get("progressDetail") or {}
        if status == "Pushing" and isinstance(progress, Mapping):
            layer.sent = max(layer.sent, int(progress.get("current") or 0))
        if status in ("Pushed", "Layer already exists") or status.startswith("Mounted from"):
            layer.status = status
    for layer in pushed.layers.values():
        if layer.status == "Pushed":
            pushed.layers_sent += 1
            pushed.bytes_sent += layer.sent
        elif layer.status:
            pushed.layers_present += 1
    return pushed


def push_image(client: Any, image: str, reference: str) -> PushedImage:
    """Blocking: tag ``image`` as ``reference`` and push it with the engine's credentials for
    its registry (Docker's config); RegistryError when the push fails."""
    import docker.errors

    started = time.monotonic()
    repository, _, tag = reference.rpartition(":")
    try:
        local = client.images.get(image)
        if (local.labels or {}).get(OWNER_LABEL):
            # a dropped layer's image names the process that built it: pulled on this host
            # after that process ended, the orphan sweep would remove it from under its user
            raise RegistryError(f"{image} is one build's own image (dropped after its task)")
        local.tag(repository, tag)
        events = client.api.push(repository, tag=tag, stream=True, decode=True)
        pushed = summarize_push(reference, events)
    except docker.errors.APIError as exc:
        raise RegistryError(f"push of {reference} failed: {exc.explanation or exc}") from None
    if not pushed.digest:
        raise RegistryError(f"push of {reference} ended without a digest")
    pushed.seconds = round(time.monotonic() - started, 1)
    log.info("images: pushed %s", pushed.line())
    return pushed


def local_or_pulled(client: Any, reference: str) -> Any | None:
    """Blocking: the image ``reference`` from the engine, pulled from its registry when it is
    not there (with Docker's credentials); None when neither has it, so the caller builds."""
    import docker.errors

    try:
        return client.images.get(reference)
    except docker.errors.ImageNotFound:
        pass
    started = time.monotonic()
    try:
        image = client.images.pull(reference)
    except docker.errors.APIError as exc:
        log.info("images: %s cannot be pulled (%s); building it", reference, exc.explanation)
        return None
    log.info("images: pulled %s in %.1f s", reference, time.monotonic() - started)
    return image
