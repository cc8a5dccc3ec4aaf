"""swe-stream's registry egress proxy (streams/evaluation/egress.py).

Run by the proxy container's python3 (3.7 or later, stdlib only): ``python3 -I proxy.py
CONFIG``, CONFIG a JSON object: socket, log, hosts (allowlist), ports, host_networks.
"""

# asyncio.TimeoutError is what asyncio raises before 3.11 (the builtin only since): UP041 off
# ruff: noqa: UP041

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import re
import socket
import sys
import traceback
from typing import Any

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 60
CONNECT_SECONDS = 15
IDLE_SECONDS = 300
MAX_CONNECTIONS = 256
LOG_LINES = 2000
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
}
HOST_RE = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?|[0-9a-f:.]+")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
GLOBAL_V6 = ipaddress.ip_network("2000::/3")
# never reachable, whatever the allowlist says (the RFC 5737 documentation ranges are not
# here: sandboxed machines reach their registry mirrors through them)
REFUSED = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "224.0.0.0/4", "240.0.0.0/4",
        "2001::/23", "2002::/16", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", "ff00::/8",
    )
]  # fmt: skip

CONFIG: dict[str, Any] = {}
HOST_NETWORKS: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
LOGGED = [0]


def log(line: str) -> None:
    if LOGGED[0] > LOG_LINES:
        return
    LOGGED[0] += 1
    if LOGGED[0] > LOG_LINES:
        line = "(no more lines logged)"
    with open(CONFIG["log"], "a", encoding="utf-8") as out:
        out.write(line.replace("\n", " ") + "\n")


def refusal(
    address: str, host_networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> str | None:
    """Why ``address`` may not be connected to, or None."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    elif isinstance(ip, ipaddress.IPv6Address) and ip in NAT64:
        ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    for network in host_networks:
        if ip.version == network.version and ip in network:
            return f"{ip} is on a network of the host ({network})"
    if (ip.version == 6 and ip not in GLOBAL_V6) or any(
        ip.version == n.version and ip in n for n in REFUSED
    ):
        return f"{ip} is not a public address"
    return None


def allowed(host: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """(host, port) of ``host[:port]`` or ``[v6][:port]``; ValueError if malformed."""
    if authority.startswith("["):
        end = authority.index("]")
        host, rest = authority[1:end], authority[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(authority)
        digits = rest[1:]
    else:
        host, _, digits = authority.partition(":")
    if digits:
        if not digits.isdigit():
            raise ValueError(authority)
        port = int(digits)
    elif default_port is None:
        raise ValueError(authority)
    else:
        port = default_port
    host = host.lower().rstrip(".")
    if not HOST_RE.fullmatch(host):
        raise ValueError(authority)
    return host, port


async def vet(host: str, port: int) -> tuple[str | None, list[str] | Exception | None]:
    """(refusal, None), (None, the resolver's error) or (None, the checked addresses to
    connect to)."""
    if not allowed(host, CONFIG["hosts"]):
        return f"{host} is not an allowed host", None
    if port not in CONFIG["ports"]:
        ports = " and ".join(str(p) for p in CONFIG["ports"])
        return f"port {port} is not allowed (only {ports})", None
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        return None, error
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])  # a str: getaddrinfo of a name, AF_INET or AF_INET6
        reason = refusal(address, HOST_NETWORKS)
        if reason:
            return f"{host} resolves to {reason}", None
        if address not in addresses:
            addresses.append(address)
    return None, addresses


async def reply(writer: asyncio.StreamWriter, status: int, phrase: str, text: str) -> None:
    body = (text + "\n").encode("utf-8", "replace")
    phrase = re.sub(r"[^ -~]", "?", phrase)[:300]
    head = f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode("latin-1") + body)
    with contextlib.suppress(OSError):
        await writer.drain()


async def connect(
    addresses: list[str], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    error: BaseException | None = None
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=HEAD_LIMIT), CONNECT_SECONDS
            )
        except (OSError, asyncio.TimeoutError) as failed:
            error = failed
    raise OSError(f"could not connect: {error or 'no address'}")


async def pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, activity: list[float]
) -> None:
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


def forwarded_head(
    method: str, path: str, version: str, header_lines: list[str], host: str, port: int
) -> bytes:
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
        shown = f"[{host}]" if ":" in host else host
        value = shown if port == 80 else f"{shown}:{port}"
        headers.append(f"Host: {value}")
    headers.append("Connection: close")
    joined = "\r\n".join(headers)
    return f"{method} {path} {version}\r\n{joined}\r\n\r\n".encode("latin-1")


async def relay_response(upstream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The response, its head saying ``Connection: close`` (one request per connection)."""
    try:
        head = await asyncio.wait_for(upstream.readuntil(b"\r\n\r\n"), IDLE_SECONDS)
    except (
        asyncio.IncompleteReadError,
        asyncio.LimitOverrunError,
        asyncio.TimeoutError,
        OSError,
    ):
        return
    lines = head.decode("latin-1").split("\r\n")[:-2]
    if lines[0].split(" ")[1:2] != ["100"]:
        kept = [
            line for line in lines[1:] if line.partition(":")[0].strip().lower() not in HOP_BY_HOP
        ]
        lines = [lines[0], *kept, "Connection: close"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    await pipe(upstream, writer, [asyncio.get_running_loop().time()])


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    upstream_writer = None
    try:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.TimeoutError,
            OSError,
        ):
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
            log(f"refused {method} {target[:200]}: {reason}")
            await reply(writer, 400, f"Bad Request (swe-stream egress: {reason})", reason)
            return
        refused, addresses = await vet(host, port)
        if refused:
            log(f"refused {method} {target[:200]}: {refused}")
            await reply(
                writer,
                403,
                f"Forbidden (swe-stream egress: {refused})",
                f"swe-stream egress refused {target[:200]}: {refused}",
            )
            return
        if isinstance(addresses, Exception):
            text = f"{host} does not resolve ({addresses})"
            await reply(writer, 502, f"Bad Gateway (swe-stream egress: {text})", text)
            return
        body_length = 0
        if method != "CONNECT":
            fields = {
                line.partition(":")[0].strip().lower(): line.partition(":")[2].strip()
                for line in lines[1:]
            }
            if "transfer-encoding" in fields:
                text = "request bodies must have a Content-Length"
                await reply(writer, 411, "Length Required (swe-stream egress)", text)
                return
            body_length = int(fields.get("content-length") or 0)
        try:
            # not None: vet gives addresses when it gives no refusal and no error
            upstream_reader, upstream_writer = await connect(addresses or [], port)
        except OSError as error:
            text = f"{host}:{port}: {error}"
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
        log(f"error {type(error).__name__}: {error}")
    finally:
        for each in (upstream_writer, writer):
            if each is not None:
                each.close()


async def serve() -> None:
    slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def limited(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if slots.locked():
            await reply(
                writer,
                503,
                "Service Unavailable (swe-stream egress: too many connections)",
                "too many connections",
            )
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


def main() -> None:
    CONFIG.update(json.loads(sys.argv[1]))
    HOST_NETWORKS.extend(ipaddress.ip_network(n) for n in CONFIG["host_networks"])
    try:
        asyncio.run(serve())
    except BaseException:
        log("error " + traceback.format_exc())
        raise


if __name__ == "__main__":
    main()
