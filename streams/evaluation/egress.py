"""Package registries for a sandbox that reaches nothing else: ``RegistryEgress``.

An agent setting up a repository's environment runs its commands in a ``Sandbox`` with no
network (``network_mode="none"``: loopback only, no route to the host or anywhere). What it
may reach goes through one door, owned here:

* a **proxy container** (any image with ``python3``) on the ``bridge`` network runs
  ``PROXY_SCRIPT``: an asyncio HTTP proxy (stdlib only) serving ``CONNECT host:port`` (HTTPS)
  and absolute-URI requests (``GET http://host/...``: apt speaks plain HTTP). It forwards only
  to an allowed host name (exact, or ``*.suffix``), on port 80 or 443, when *every* address
  the name resolves to is public: loopback, private, link-local, shared, multicast and
  reserved addresses are refused, and so are the host's own addresses and the networks it
  sits on (read from ``/proc/net`` here and from the engine's networks), so a DNS answer
  pointing back at the host is refused too. It connects to the address it checked, never
  resolving twice. A refusal is a ``403`` whose reason phrase and body say why, and a line
  of the proxy's log (``RegistryEgress.refused``). The RFC 5737 documentation ranges are the
  one exception to "public": unroutable on the Internet, they are what sandboxed machines
  (this project's CI among them) reach their registry mirrors through, and the host's own
  networks are refused before they are considered;
* the proxy listens on a **Unix socket** in a Docker named volume (a 1 MiB tmpfs: nothing on
  the host's disk, nothing to fill) mounted in both containers: the sandbox reaches the proxy
  without any network interface;
* in the sandbox, ``FORWARDER_SCRIPT`` (python3, stdlib) listens on ``127.0.0.1:3128`` and
  pipes each connection to that socket; the sandbox's environment (``sandbox_options``) points
  ``http_proxy``/``https_proxy`` (and the upper-case and npm spellings) at it, which pip, uv,
  apt-get, curl, git and npm honour.

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
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from streams.core.settings import DEFAULT_REGISTRIES
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


# The proxy, run by the image's python3 (3.7 or later) in the proxy container. Its one
# argument is a JSON object: socket, log, hosts (allowlist), ports, host_networks.
PROXY_SCRIPT = r'''
"""swe-stream's registry egress proxy (streams/evaluation/egress.py)."""
import asyncio
import ipaddress
import json
import os
import re
import socket
import sys
import time
import traceback

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 60
CONNECT_SECONDS = 15
IDLE_SECONDS = 300
MAX_CONNECTIONS = 256
LOG_LINES = 2000
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
              "proxy-authenticate", "te", "trailer", "upgrade"}
HOST_RE = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?|[0-9a-f:.]+")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
GLOBAL_V6 = ipaddress.ip_network("2000::/3")
# never reachable, whatever the allowlist says (the RFC 5737 documentation ranges are not
# here: sandboxed machines reach their registry mirrors through them)
REFUSED = [ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
    "224.0.0.0/4", "240.0.0.0/4",
    "2001::/23", "2002::/16", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", "ff00::/8",
)]

CONFIG = {}
HOST_NETWORKS = []
LOGGED = [0]


def log(line):
    if LOGGED[0] > LOG_LINES:
        return
    LOGGED[0] += 1
    if LOGGED[0] > LOG_LINES:
        line = "(no more lines logged)"
    with open(CONFIG["log"], "a", encoding="utf-8") as out:
        out.write(line.replace("\n", " ") + "\n")


def refusal(address, host_networks):
    """Why ``address`` may not be connected to, or None."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    elif ip.version == 6 and ip in NAT64:
        ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    for network in host_networks:
        if ip.version == network.version and ip in network:
            return "%s is on a network of the host (%s)" % (ip, network)
    if (ip.version == 6 and ip not in GLOBAL_V6) or any(
        ip.version == n.version and ip in n for n in REFUSED
    ):
        return "%s is not a public address" % ip
    return None


def allowed(host, patterns):
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def split_authority(authority, default_port):
    """(host, port) of ``host[:port]`` or ``[v6][:port]``; ValueError if malformed."""
    if authority.startswith("["):
        end = authority.index("]")
        host, rest = authority[1:end], authority[end + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError(authority)
        port = rest[1:]
    else:
        host, _, port = authority.partition(":")
    if port:
        if not port.isdigit():
            raise ValueError(authority)
        port = int(port)
    elif default_port is None:
        raise ValueError(authority)
    else:
        port = default_port
    host = host.lower().rstrip(".")
    if not HOST_RE.fullmatch(host):
        raise ValueError(authority)
    return host, port


async def vet(host, port):
    """(refusal, None) or (None, the checked addresses to connect to)."""
    if not allowed(host, CONFIG["hosts"]):
        return "%s is not an allowed host" % host, None
    if port not in CONFIG["ports"]:
        ports = " and ".join(str(p) for p in CONFIG["ports"])
        return "port %d is not allowed (only %s)" % (port, ports), None
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        return None, error
    addresses = []
    for info in infos:
        address = info[4][0]
        reason = refusal(address, HOST_NETWORKS)
        if reason:
            return "%s resolves to %s" % (host, reason), None
        if address not in addresses:
            addresses.append(address)
    return None, addresses


async def reply(writer, status, phrase, text):
    body = (text + "\n").encode("utf-8", "replace")
    phrase = re.sub(r"[^ -~]", "?", phrase)[:300]
    head = "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n" % (status, phrase)
    head += "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    writer.write(head.encode("latin-1") + body)
    try:
        await writer.drain()
    except OSError:
        pass


async def connect(addresses, port):
    error = None
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=HEAD_LIMIT), CONNECT_SECONDS
            )
        except (OSError, asyncio.TimeoutError) as failed:
            error = failed
    raise OSError("could not connect: %s" % (error or "no address"))


async def pipe(reader, writer, activity):
    """Copy until EOF (then half-close) or until neither direction moved for IDLE_SECONDS."""
    loop = asyncio.get_running_loop()
    try:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(65536), 30)
            except asyncio.TimeoutError:
                if loop.time() - activity[0] > IDLE_SECONDS:
                    break
                continue
            if not data:
                break
            activity[0] = loop.time()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except Exception:
        pass


def forwarded_head(method, path, version, header_lines, host, port):
    """The request head to send upstream: origin-form, hop-by-hop headers dropped."""
    headers = []
    drop = set(HOP_BY_HOP)
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "connection":
            drop.update(token.strip().lower() for token in value.split(","))
    for line in header_lines:
        name = line.partition(":")[0].strip().lower()
        if name and name not in drop:
            headers.append(line)
    if not any(line.partition(":")[0].strip().lower() == "host" for line in headers):
        shown = "[%s]" % host if ":" in host else host
        headers.append("Host: %s" % (shown if port == 80 else "%s:%d" % (shown, port)))
    headers.append("Connection: close")
    return ("%s %s %s\r\n%s\r\n\r\n" % (method, path, version, "\r\n".join(headers))).encode(
        "latin-1"
    )


async def relay_response(upstream, writer):
    """The response, its head saying ``Connection: close`` (one request per connection)."""
    try:
        head = await asyncio.wait_for(upstream.readuntil(b"\r\n\r\n"), IDLE_SECONDS)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
            OSError):
        return
    lines = head.decode("latin-1").split("\r\n")[:-2]
    if not lines[0].split(" ")[1:2] == ["100"]:
        kept = [l for l in lines[1:] if l.partition(":")[0].strip().lower() not in HOP_BY_HOP]
        lines = [lines[0]] + kept + ["Connection: close"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    await pipe(upstream, writer, [asyncio.get_running_loop().time()])


async def handle(reader, writer):
    upstream_writer = None
    try:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                OSError):
            return
        lines = head.decode("latin-1").split("\r\n")[:-2]
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            await reply(writer, 400, "Bad Request", "not an HTTP request line")
            return
        method, target, version = parts
        try:
            if method == "CONNECT":
                host, port = split_authority(target, None)
                path = ""
            elif target[:7].lower() == "http://":
                rest = target[7:]
                cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0] or [len(rest)])
                authority, path = rest[:cut], rest[cut:] or "/"
                if path.startswith("?"):
                    path = "/" + path
                if "@" in authority:
                    raise ValueError(authority)
                host, port = split_authority(authority, 80)
            else:
                raise ValueError(target)
        except ValueError:
            reason = "only CONNECT host:port and absolute http:// requests are served"
            log("refused %s %s: %s" % (method, target[:200], reason))
            await reply(writer, 400, "Bad Request (swe-stream egress: %s)" % reason, reason)
            return
        reason, addresses = await vet(host, port)
        if reason:
            log("refused %s %s: %s" % (method, target[:200], reason))
            await reply(writer, 403, "Forbidden (swe-stream egress: %s)" % reason,
                        "swe-stream egress refused %s: %s" % (target[:200], reason))
            return
        if isinstance(addresses, Exception):
            text = "%s does not resolve (%s)" % (host, addresses)
            await reply(writer, 502, "Bad Gateway (swe-stream egress: %s)" % text, text)
            return
        body_length = 0
        if method != "CONNECT":
            fields = {l.partition(":")[0].strip().lower(): l.partition(":")[2].strip()
                      for l in lines[1:]}
            if "transfer-encoding" in fields:
                text = "request bodies must have a Content-Length"
                await reply(writer, 411, "Length Required (swe-stream egress)", text)
                return
            body_length = int(fields.get("content-length") or 0)
        try:
            upstream_reader, upstream_writer = await connect(addresses, port)
        except OSError as error:
            text = "%s:%d: %s" % (host, port, error)
            await reply(writer, 502, "Bad Gateway (swe-stream egress)", text)
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            activity = [asyncio.get_running_loop().time()]
            await asyncio.gather(
                pipe(reader, upstream_writer, activity), pipe(upstream_reader, writer, activity)
            )
            return
        upstream_writer.write(forwarded_head(method, path, version, lines[1:], host, port))
        while body_length > 0:
            chunk = await asyncio.wait_for(reader.read(min(body_length, 65536)), IDLE_SECONDS)
            if not chunk:
                return
            upstream_writer.write(chunk)
            body_length -= len(chunk)
        await upstream_writer.drain()
        await relay_response(upstream_reader, writer)
    except Exception as error:
        log("error %s: %s" % (type(error).__name__, error))
    finally:
        for each in (upstream_writer, writer):
            if each is not None:
                each.close()


async def serve():
    slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def limited(reader, writer):
        if slots.locked():
            await reply(writer, 503, "Service Unavailable (swe-stream egress: too many "
                        "connections)", "too many connections")
            writer.close()
            return
        async with slots:
            await handle(reader, writer)

    if os.path.exists(CONFIG["socket"]):
        os.unlink(CONFIG["socket"])
    server = await asyncio.start_unix_server(limited, path=CONFIG["socket"], limit=HEAD_LIMIT)
    os.chmod(CONFIG["socket"], 0o666)
    log("ready")
    async with server:
        await server.serve_forever()


def main():
    CONFIG.update(json.loads(sys.argv[1]))
    HOST_NETWORKS.extend(ipaddress.ip_network(n) for n in CONFIG["host_networks"])
    try:
        asyncio.run(serve())
    except BaseException:
        log("error " + traceback.format_exc())
        raise


if __name__ == "__main__":
    main()
'''

# The forwarder, run by the sandbox's python3: binds 127.0.0.1:PORT, then detaches (so the
# port accepts connections once the exec returns) and pipes each connection to the socket.
# Exits 3 if the port is taken (already attached).
FORWARDER_SCRIPT = r"""
import asyncio, errno, os, socket, sys

SOCKET, PORT = sys.argv[1], int(sys.argv[2])


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except Exception:
        pass


async def handle(reader, writer):
    try:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(SOCKET)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
    finally:
        upstream_writer.close()
        writer.close()


async def serve(listener):
    server = await asyncio.start_server(handle, sock=listener)
    async with server:
        await server.serve_forever()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    listener.bind(("127.0.0.1", PORT))
except OSError as error:
    if error.errno == errno.EADDRINUSE:
        sys.exit(3)
    raise
listener.listen(128)
if os.fork():
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
asyncio.run(serve(listener))
"""


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


class RegistryEgress:
    """The proxy container and its socket volume; use as a context manager, then pass
    ``sandbox_options`` to the ``Sandbox`` and ``attach`` it once it is entered."""

    def __init__(
        self,
        client: Any,
        image: str,
        allowed_hosts: Sequence[str] = DEFAULT_REGISTRIES,
        *,
        allowed_ports: Sequence[int] = (80, 443),
        ready_seconds: float = 30.0,
    ):
        self.client = client
        self.image = image  # any image with python3
        self.allowed_hosts = tuple(_valid_host(h) for h in allowed_hosts)
        self.allowed_ports = tuple(int(p) for p in allowed_ports)
        self.ready_seconds = ready_seconds
        self.volume = f"swe-stream-egress-{secrets.token_hex(6)}"
        self.labels = {LABEL: "1", OWNER_LABEL: owner_label(), EGRESS_LABEL: self.volume}
        self.container: Any = None
        self._volume_made = False

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
            if not self.container.put_archive("/", tar_files({_SCRIPT_PATH: PROXY_SCRIPT})):
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
        code, output = sandbox.container.exec_run(
            ["python3", "-I", "-c", FORWARDER_SCRIPT, SOCKET, str(PROXY_PORT)], workdir="/"
        )
        if code == 3:
            log.debug("the sandbox's port %d is taken: the forwarder runs", PROXY_PORT)
        elif code != 0:
            text = (output or b"").decode("utf-8", errors="replace")[-2000:]
            raise EgressError(f"could not start the egress forwarder (exit {code}): {text}")

    def refused(self) -> list[str]:
        """What the proxy refused so far, one ``METHOD target: reason`` line each."""
        if self.container is None:
            return []
        prefix = "refused "
        return [line[len(prefix) :] for line in self._log_lines() if line.startswith(prefix)]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        import docker.errors

        container, self.container = self.container, None
        if container is not None:
            try:
                container.remove(force=True)
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
