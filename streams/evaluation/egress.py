"""Package registries for a sandbox that reaches nothing else: ``RegistryEgress``.

An agent setting up a repository's environment runs its commands in a ``Sandbox`` with no
network (``network_mode="none"``: loopback only, no route to the host or anywhere). What it
may reach goes through one door, owned here:

* a **proxy container** (any image with ``python3``, 3.7 or later) on the ``bridge`` network
  runs ``egress_programs/proxy.py`` (copied in; its one argument, a JSON object, says the
  socket, the log, the allowed hosts and ports and the host's networks): an asyncio HTTP
  proxy (stdlib only) serving ``CONNECT host:port`` (HTTPS) and absolute-URI requests
  (``GET http://host/...``: apt speaks plain HTTP). It forwards only to an allowed host name
  (exact, or ``*.suffix``), on port 80 or 443, when *every* address the name resolves to is
  public: loopback, private, link-local, shared, multicast and reserved addresses are
  refused, and so are the host's own addresses and the networks it sits on (read from
  ``/proc/net`` here and from the engine's networks), so a DNS answer pointing back at the
  host is refused too. It connects to the address it checked, never resolving twice. A
  refusal is a ``403`` whose reason phrase and body say why, and a line of the proxy's log
  (``RegistryEgress.refused``). The RFC 5737 documentation ranges are the one exception to
  "public": unroutable on the Internet, they are what sandboxed machines (this project's CI
  among them) reach their registry mirrors through, and the host's own networks are refused
  before they are considered;
* the proxy listens on a **Unix socket** in a Docker named volume (a 1 MiB tmpfs: nothing on
  the host's disk, nothing to fill) mounted in both containers: the sandbox reaches the proxy
  without any network interface;
* in the sandbox, ``egress_programs/forwarder.py`` (python3, stdlib) listens on
  ``127.0.0.1:3128`` and pipes each connection to that socket; the sandbox's environment
  (``sandbox_options``) points ``http_proxy``/``https_proxy`` (and the upper-case and npm
  spellings) at it, which pip, uv, apt-get, curl, git and npm honour.

The proxy container has no host mount, no environment of the host (only what its image sets),
no capabilities, 256 MiB, 64 pids and no Docker log; it and the volume carry the sandbox
labels, so ``sandbox.remove_orphans`` removes what a killed process left behind.

Blocking (the Docker SDK is synchronous): callers in the event loop use ``asyncio.to_thread``.
"""

from __future__ import annotations

import io
import ipaddress
import json
import logging
import re
import secrets
import tarfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import Any

from streams.core import metrics
from streams.core.settings import DEBIAN_REGISTRIES
from streams.evaluation.docker_exec import exec_output
from streams.evaluation.recipes.languages import registries
from streams.evaluation.sandbox import LABEL, OWNER_LABEL, Sandbox, owner_label, tar_files

log = logging.getLogger("swe_stream.egress")

EGRESS_LABEL = "org.swe-stream.egress"  # on the proxy container and its volume
MOUNT = "/run/swe-stream-egress"  # where both containers see the volume
SOCKET = f"{MOUNT}/proxy.sock"
PROXY_PORT = 3128  # the forwarder's port on the sandbox's loopback
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
_SCRIPT_PATH = "/opt/swe-stream-egress/proxy.py"  # in the proxy container
_LOG_PATH = "/tmp/swe-stream-egress.log"  # in the proxy container: "ready", refusals, errors
_HOST_PATTERN = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|[0-9a-f:.]+")


class EgressError(RuntimeError):
    """The proxy or the sandbox's forwarder could not be started."""


def program_source(name: str) -> str:
    """The source of ``egress_programs/<name>`` (``proxy.py``, ``forwarder.py``): what the
    proxy container and the sandbox run, stdlib only."""
    return files("streams.evaluation.egress_programs").joinpath(name).read_text(encoding="utf-8")


def proxy_environment(url: str = PROXY_URL) -> dict[str, str]:
    """The variables that point pip, uv, apt-get, curl, git and npm at the proxy."""
    no_proxy = "localhost,127.0.0.1"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "npm_config_proxy": url,
        "npm_config_https_proxy": url,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


def _hex_ipv4(field: str) -> str:
    return str(ipaddress.IPv4Address(bytes.fromhex(field)[::-1]))


def host_networks(proc: Path = Path("/proc/net")) -> list[str]:
    """The host's own addresses and the networks it sits on (directly connected routes of at
    least /8, resp. /32: not a tunnel's route to the whole Internet), as this process's
    network namespace sees them: what the proxy refuses besides the non-public ranges."""
    found: list[str] = []
    try:  # Iface Destination Gateway Flags RefCnt Use Metric Mask ...
        for row in (proc / "route").read_text().splitlines()[1:]:
            cells = row.split()
            if len(cells) > 7 and int(cells[2], 16) == 0:
                network = ipaddress.ip_network(f"{_hex_ipv4(cells[1])}/{_hex_ipv4(cells[7])}")
                if network.prefixlen >= 8:
                    found.append(str(network))
    except (OSError, ValueError):
        pass
    try:  # destination prefix-length source source-length next-hop metric ... device
        for row in (proc / "ipv6_route").read_text().splitlines():
            cells = row.split()
            if len(cells) > 4 and int(cells[4], 16) == 0 and int(cells[1], 16) >= 32:
                address = ipaddress.IPv6Address(bytes.fromhex(cells[0]))
                network = ipaddress.ip_network(f"{address}/{int(cells[1], 16)}", strict=False)
                found.append(str(network))
    except (OSError, ValueError):
        pass
    try:  # the local table's "|-- a.b.c.d" followed by "/32 host LOCAL"
        last = ""
        for row in (proc / "fib_trie").read_text().splitlines():
            text = row.strip()
            if text.startswith("|-- "):
                last = text[4:]
            elif text == "/32 host LOCAL" and last:
                found.append(f"{last}/32")
    except OSError:
        pass
    return list(dict.fromkeys(found))


def engine_networks(client: Any) -> list[str]:
    """The subnets of the engine's networks (the bridges' containers, the gateways)."""
    subnets: list[str] = []
    for network in client.api.networks():
        for config in (network.get("IPAM") or {}).get("Config") or []:
            if config.get("Subnet"):
                subnets.append(config["Subnet"])
    return subnets


def _valid_host(host: str) -> str:
    name = host.strip().lower().rstrip(".")
    if not _HOST_PATTERN.fullmatch(name):
        raise ValueError(f"not a host name, *.suffix pattern or IP address: {host!r}")
    return name


def endpoint(text: str, default_port: int = 443) -> tuple[str, int]:
    """(host, port) of ``host``, ``host:port``, ``[v6]:port`` or a URL; ValueError if none."""
    parsed = urllib.parse.urlsplit(text if "//" in text else f"//{text}")
    try:
        port = parsed.port
    except ValueError as error:
        raise ValueError(f"not host[:port] or a URL: {text!r} ({error})") from None
    if not parsed.hostname:
        raise ValueError(f"not host[:port] or a URL: {text!r}")
    if port is None:
        port = {"http": 80, "https": 443}.get(parsed.scheme, default_port)
    return _valid_host(parsed.hostname), port


def model_endpoints(named: Sequence[str], base_url: str) -> tuple[tuple[str, int], ...]:
    """The model APIs an agent may reach under ``agent_network=model``: the ``host[:port]``
    the user named, else the host of the LLM client's ``base_url``."""
    return tuple(endpoint(text) for text in named) if named else (endpoint(base_url),)


def package_registries(configured: Sequence[str] | None = None) -> tuple[str, ...]:
    """The hosts a sandbox of the package registries may reach: ``configured`` (the settings'
    ``setup_agent.registries``) when given, else Debian's archive and every registered
    language's registries (``Language.registries``)."""
    if configured is not None:
        return tuple(configured)
    return tuple(dict.fromkeys([*DEBIAN_REGISTRIES, *registries()]))


class RegistryEgress:
    """The proxy container and its socket volume; use as a context manager, then pass
    ``sandbox_options`` to the ``Sandbox`` and ``attach`` it once it is entered."""

    def __init__(
        self,
        client: Any,
        image: str,
        allowed_hosts: Sequence[str] | None = None,
        *,
        allowed_ports: Sequence[int] = (80, 443),
        trusted: Sequence[tuple[str, int]] = (),
        ready_seconds: float = 30.0,
    ):
        self.client = client
        self.image = image  # any image with python3
        hosts = package_registries() if allowed_hosts is None else allowed_hosts
        self.allowed_hosts = tuple(_valid_host(h) for h in hosts)
        self.allowed_ports = tuple(int(p) for p in allowed_ports)
        # (host, port) endpoints the user named (a model server on the local network): on any
        # port and any address; the pinning of names still applies
        self.trusted = tuple((_valid_host(h), int(p)) for h, p in trusted)
        self.ready_seconds = ready_seconds
        self.volume = f"swe-stream-egress-{secrets.token_hex(6)}"
        self.labels = {LABEL: "1", OWNER_LABEL: owner_label(), EGRESS_LABEL: self.volume}
        self.container: Any = None
        self._volume_made = False
        self._final_refusals: list[tuple[str, str]] = []

    @property
    def sandbox_options(self) -> dict[str, Any]:
        """Keywords for ``Sandbox(...)``: the socket volume and the proxy environment (merge
        your own ``environment`` over ``self.sandbox_options["environment"]``)."""
        return {"volumes": {self.volume: MOUNT}, "environment": proxy_environment()}

    def __enter__(self) -> RegistryEgress:
        try:
            self.client.volumes.create(
                name=self.volume,
                driver="local",
                driver_opts={"type": "tmpfs", "device": "tmpfs", "o": "size=1m,mode=1777"},
                labels=self.labels,
            )
            self._volume_made = True
            config = {
                "socket": SOCKET,
                "log": _LOG_PATH,
                "hosts": list(self.allowed_hosts),
                "ports": list(self.allowed_ports),
                "trusted": [f"{host}:{port}" for host, port in self.trusted],
                "host_networks": list(
                    dict.fromkeys([*host_networks(), *engine_networks(self.client)])
                ),
            }
            self.container = self.client.containers.create(
                self.image,
                ["python3", "-I", _SCRIPT_PATH, json.dumps(config)],
                entrypoint=[],
                name=f"{self.volume}-proxy",
                working_dir="/",
                environment={},
                network_mode="bridge",
                mem_limit="256m",
                memswap_limit="256m",
                pids_limit=64,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                labels=self.labels,
                init=True,
                volumes={self.volume: {"bind": MOUNT, "mode": "rw"}},
                log_config={"type": "none"},
            )
            script = {_SCRIPT_PATH: program_source("proxy.py")}
            if not self.container.put_archive("/", tar_files(script)):
                raise EgressError("could not copy the proxy's script into its container")
            self.container.start()
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _log_lines(self) -> list[str]:
        import docker.errors

        try:
            chunks, _ = self.container.get_archive(_LOG_PATH)
        except docker.errors.NotFound:  # nothing logged yet
            return []
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r|") as tar:
            for member in tar:
                data = tar.extractfile(member)
                if data is not None:
                    return data.read().decode("utf-8", errors="replace").splitlines()
        return []

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_seconds
        while True:
            lines = self._log_lines()
            if "ready" in lines:
                return
            self.container.reload()
            if self.container.status not in {"created", "running"}:
                code = self.container.attrs["State"].get("ExitCode")
                detail = "\n".join(lines)[-2000:] or "(nothing logged: is python3 in it?)"
                raise EgressError(f"the egress proxy ({self.image}) exited {code}: {detail}")
            if time.monotonic() > deadline:
                raise EgressError(f"the egress proxy ({self.image}) was not ready in time")
            time.sleep(0.05)

    def attach(self, sandbox: Sandbox) -> None:
        """Start the forwarder in ``sandbox`` (entered, made with ``sandbox_options``); when
        this returns, ``127.0.0.1:3128`` in it accepts connections. Again on a sandbox
        whose forwarder still listens, nothing happens."""
        if sandbox.container is None:
            raise EgressError("attach the egress to an entered sandbox")
        code, out, err = exec_output(
            sandbox.client.api,
            sandbox.container.id,
            ["python3", "-I", "-c", program_source("forwarder.py"), SOCKET, str(PROXY_PORT)],
            "/",
        )
        output = out + err
        if code == 3:
            log.debug("the sandbox's port %d is taken: the forwarder runs", PROXY_PORT)
        elif code != 0:
            text = (output or b"").decode("utf-8", errors="replace")[-2000:]
            raise EgressError(f"could not start the egress forwarder (exit {code}): {text}")

    def refusals(self) -> list[tuple[str, str]]:
        """What the proxy refused so far: (kind, ``METHOD target: reason``) each; after the
        block, what it had refused when it was removed (read once, then)."""
        if self.container is None:
            return list(self._final_refusals)
        found = []
        for line in self._log_lines():
            if line.startswith("refused "):
                kind, _, rest = line.removeprefix("refused ").partition(" ")
                found.append((kind, rest))
        return found

    def refused(self) -> list[str]:
        """What the proxy refused so far, one ``METHOD target: reason`` line each."""
        return [line for _, line in self.refusals()]

    def _count_refusals(self) -> None:
        """Keep what the proxy refused (for ``refusals`` after the block) and count it."""
        try:
            self._final_refusals = self.refusals()
        except Exception as error:  # the container may be gone with its engine
            log.debug("could not read the egress proxy's refusals: %s", error)
            return
        for kind, count in Counter(kind for kind, _ in self._final_refusals).items():
            metrics.EGRESS_REFUSED.labels(reason=kind).inc(count)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        import docker.errors

        if self.container is not None:
            self._count_refusals()
        container, self.container = self.container, None
        if container is not None:
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as error:
                log.warning("could not remove the egress proxy container: %s", error)
        if not self._volume_made:
            return
        # a sandbox removed in the background (Sandbox(remover=...)) may still hold it
        deadline = time.monotonic() + 30
        while True:
            try:
                self.client.api.remove_volume(self.volume, force=True)
                break
            except docker.errors.NotFound:
                break
            except docker.errors.APIError as error:
                if time.monotonic() > deadline:
                    log.warning("could not remove egress volume %s: %s", self.volume, error)
                    return
                time.sleep(0.2)
        self._volume_made = False
