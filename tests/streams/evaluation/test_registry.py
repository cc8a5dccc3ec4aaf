"""The pure parts of pushing images: registry names, image references, and what a push's
progress says was sent (the engine's own event shapes, as ``docker push`` streams them)."""

from __future__ import annotations

import pytest

from streams.evaluation.registry import (
    RegistryError,
    image_reference,
    parse_registry,
    repository_component,
    summarize_push,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("127.0.0.1:5000", "127.0.0.1:5000"),
        ("127.0.0.1:5000/swe/", "127.0.0.1:5000/swe"),
        ("localhost:5000/a/b", "localhost:5000/a/b"),
        ("ghcr.io/org", "ghcr.io/org"),
        ("myuser", "myuser"),  # a namespace of Docker Hub, as Docker reads it
    ],
)
def test_registry_names_that_prefix_a_reference(given: str, expected: str) -> None:
    assert parse_registry(given) == expected


@pytest.mark.parametrize(
    "given", ["", "http://127.0.0.1:5000", "ghcr.io/Org", "user:pw@host:5000", "host:5000/a b"]
)
def test_registry_names_refused_with_a_reason(given: str) -> None:
    with pytest.raises(RegistryError, match="--registry"):
        parse_registry(given)


@pytest.mark.parametrize(
    ("repo", "component"),
    [
        ("Psf/Requests", "psf__requests"),
        ("socketio/socket.io", "socketio__socket.io"),
        ("a_b/.github", "a-b__github"),
        ("x/a..b", "x__a-b"),
        ("x/-a-", "x__a"),
    ],
)
def test_a_source_repository_becomes_one_valid_path_component(repo: str, component: str) -> None:
    assert repository_component(repo) == component
    reference = image_reference("127.0.0.1:5000/swe", repo, 7)
    assert reference == f"127.0.0.1:5000/swe/{component}:pr-7"
    parse_registry(reference.rsplit(":", 1)[0])  # the repository is itself a valid name


def layer(layer_id: str, status: str, current: int | None = None) -> dict[str, object]:
    event: dict[str, object] = {"status": status, "id": layer_id}
    if current is not None:
        event["progressDetail"] = {"current": current, "total": current * 2}
    return event


def test_a_push_counts_the_bytes_of_the_layers_it_sent() -> None:
    events = [
        {"status": "The push refers to repository [127.0.0.1:5000/swe/o__r]"},
        layer("aaa", "Preparing"),
        layer("bbb", "Preparing"),
        layer("ccc", "Preparing"),
        layer("aaa", "Layer already exists"),
        layer("bbb", "Mounted from swe/other__repo"),
        layer("ccc", "Pushing", 512),
        layer("ccc", "Pushing", 4096),
        layer("ccc", "Pushed"),
        {"status": "pr-7: digest: sha256:abc size: 1234", "progressDetail": {}},
        {"progressDetail": {}, "aux": {"Tag": "pr-7", "Digest": "sha256:abc", "Size": 1234}},
    ]
    pushed = summarize_push("127.0.0.1:5000/swe/o__r:pr-7", events)
    assert (pushed.layers_sent, pushed.layers_present) == (1, 2)
    assert (pushed.bytes_sent, pushed.digest) == (4096, "sha256:abc")


def test_a_refused_push_says_why() -> None:
    events = [
        layer("aaa", "Preparing"),
        {
            "errorDetail": {"message": "no basic auth credentials"},
            "error": "no basic auth credentials",
        },
    ]
    with pytest.raises(RegistryError, match="no basic auth credentials"):
        summarize_push("127.0.0.1:5000/swe/o__r:pr-7", events)
