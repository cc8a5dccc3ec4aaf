"""A real image registry on loopback for the tests: Debian's ``docker-registry`` (the CNCF
distribution server), started by the test on a free port with its storage in a temporary
directory, optionally behind htpasswd (Basic) auth. The Docker engine pushes to and pulls from
127.0.0.1 over plain HTTP without configuration (loopback registries are trusted insecure).
``.ci/run`` installs the package; a machine without it fails the tests that need it."""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

REGISTRY_BINARY = "docker-registry"


@dataclass
class RunningRegistry:
    address: str  # 127.0.0.1:PORT
    storage: Path
    log: Path
    credentials: tuple[str, str] | None = None

    def get(self, path: str) -> dict[str, object]:
        """A JSON answer of the registry's HTTP API (``/v2/...``), with the credentials."""
        request = urllib.request.Request(f"http://{self.address}{path}")
        if self.credentials:
            token = base64.b64encode(":".join(self.credentials).encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as answer:
            return dict(json.load(answer))

    def tags(self, repository: str) -> list[str]:
        return sorted(self.get(f"/v2/{repository}/tags/list").get("tags") or [])  # type: ignore[arg-type]

    def blob_bytes(self) -> int:
        """The bytes of every blob the registry stores (layers and configs, each once)."""
        blobs = self.storage / "docker" / "registry" / "v2" / "blobs"
        return sum(path.stat().st_size for path in blobs.rglob("data") if path.is_file())


def docker_config(directory: Path, registry: str, user: str, password: str) -> Path:
    """A Docker client config (what ``docker login`` writes) holding ``user``'s credentials
    for ``registry``; point ``DOCKER_CONFIG`` at the returned directory."""
    directory.mkdir(parents=True, exist_ok=True)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (directory / "config.json").write_text(json.dumps({"auths": {registry: {"auth": auth}}}))
    return directory


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def registry(root: Path, credentials: tuple[str, str] | None = None) -> Iterator[RunningRegistry]:
    """A registry serving on 127.0.0.1 until the block ends (its log in ``root``)."""
    binary = shutil.which(REGISTRY_BINARY) or f"/usr/bin/{REGISTRY_BINARY}"
    if not Path(binary).is_file():
        raise AssertionError(
            f"{REGISTRY_BINARY} is not installed: apt-get install docker-registry (.ci/run does)"
        )
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    config: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "info"},
        "storage": {"filesystem": {"rootdirectory": str(root / "storage")}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": "test-only-upload-state-secret"},
    }
    if credentials:
        import bcrypt

        user, password = credentials
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
        (root / "htpasswd").write_text(f"{user}:{hashed}\n")
        config["auth"] = {"htpasswd": {"realm": "swe-stream-tests", "path": str(root / "htpasswd")}}
    (root / "config.yml").write_text(yaml.safe_dump(config))
    log = root / "registry.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [binary, "serve", str(root / "config.yml")], stdout=output, stderr=subprocess.STDOUT
        )
    running = RunningRegistry(f"127.0.0.1:{port}", root / "storage", log, credentials)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"the registry exited: {log.read_text()}"
            try:
                running.get("/v2/")
                break
            except (OSError, urllib.error.URLError):
                assert time.monotonic() < deadline, f"no answer in 30 s: {log.read_text()}"
                time.sleep(0.2)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
