"""swe-stream's registry egress proxy (streams/evaluation/egress.py).

Run by the proxy container's python3 (3.7 or later, stdlib only): ``python3 -I proxy.py
CONFIG``, CONFIG a JSON object: socket, log, hosts (allowlist), ports, host_networks, trusted
(``host:port`` endpoints the user named, such as a model server on the local network: the
private-address rule does not apply to them; everything else does).

What goes through is pinned to the name that was vetted, so a shared CDN address admits no
other site (domain fronting) and nothing is uploaded: a plain-HTTP request is GET or HEAD,
without a body, its ``Host`` (when given) the URL's, and the ``Host`` sent on is always the
checked name; a CONNECT tunnel carries TLS only, and its ClientHello must name the CONNECT host
(SNI) before any byte of it goes on (else the client gets a TLS ``access_denied`` alert).
Each refusal is one log line ``refused KIND METHOD TARGET: REASON``.
"""

# asyncio.TimeoutError is what asyncio raises before 3.11 (the builtin only since): UP041 off;
# typing.Tuple for a type alias evaluated at run time (3.7 and 3.8 have no tuple[...]): UP035
# ruff: noqa: UP041, UP035, UP006

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
from typing import Any, Tuple

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


async def resolve(host: str, port: int) -> list[str]:
    """The addresses of ``host`` (the system's resolver)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]  # a str: AF_INET or AF_INET6


Refusal = Tuple[str, str]  # (kind, reason): the kind is what the refusals are counted by


async def vet(host: str, port: int) -> tuple[Refusal | None, list[str] | Exception | None]:
    """(refusal, None), (None, the resolver's error) or (None, the checked addresses to
    connect to)."""
    trusted = is_trusted(host, port)
    if not trusted and not allowed(host, CONFIG["hosts"]):
        return ("host_not_allowed", f"{host} is not an allowed host"), None
    if not trusted and port not in CONFIG["ports"]:
        ports = " and ".join(str(p) for p in CONFIG["ports"])
        return ("port_not_allowed", f"port {port} is not allowed (only {ports})"), None
    try:
        resolved = await resolve(host, port)
    except (OSError, UnicodeError) as error:
        return None, error
    addresses: list[str] = []
    for address in resolved:
        reason = None if trusted else refusal(address, HOST_NETWORKS)
        if reason:
            return ("address_not_public", f"{host} resolves to {reason}"), None
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


def shown_authority(host: str, port: int, default_port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == default_port else f"{shown}:{port}"


def forwarded_head(
    method: str, path: str, version: str, header_lines: list[str], host: str, port: int
) -> bytes:
    """The request head to send upstream: origin-form, hop-by-hop headers dropped, and the
    ``Host`` the checked name whatever the client said (a CDN serves by it)."""
    headers = []
    drop = set(HOP_BY_HOP) | {"host"}
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "connection":
            drop.update(token.strip().lower() for token in value.split(","))
    for line in header_lines:
        name = line.partition(":")[0].strip().lower()
        if name and name not in drop:
            headers.append(line)
    headers += [f"Host: {shown_authority(host, port, 80)}", "Connection: close"]
    joined = "\r\n".join(headers)
    return f"{method} {path} {version}\r\n{joined}\r\n\r\n".encode("latin-1")


def is_trusted(host: str, port: int) -> bool:
    """An endpoint the user named (a model's API): any method, and a body, may go to it."""
    return f"{host}:{port}" in CONFIG.get("trusted", [])


def body_length(header_lines: list[str]) -> int:
    """The request body's Content-Length (0 without one); ValueError if it is not a number."""
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value.strip())
    return 0


def plain_request_refusal(
    method: str, header_lines: list[str], host: str, port: int
) -> Refusal | None:
    """Why a plain-HTTP request to the vetted ``host:port`` is not sent on, or None: only GET
    and HEAD (a package manager's plain-HTTP requests; nothing is uploaded), no body, and a
    ``Host`` header, if any, naming the URL's host (not another site on the same address).
    To a trusted endpoint (a model's API) any method and a Content-Length body go."""
    trusted = is_trusted(host, port)
    if method not in ("GET", "HEAD") and not trusted:
        return "method_not_allowed", f"{method[:20]} is not allowed (only GET and HEAD)"
    hosts = []
    for line in header_lines:
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip()
        if name == "transfer-encoding":
            return "request_body", "a request body is not allowed (nor a chunked one anywhere)"
        if name == "content-length" and value != "0" and not trusted:
            return "request_body", "a request body is not allowed"
        if name == "host":
            hosts.append(value)
    try:
        if body_length(header_lines) < 0:
            raise ValueError("negative")
    except ValueError:
        return "malformed_request", "the Content-Length is not a number"
    for value in hosts:
        try:
            named = split_authority(value, 80)
        except ValueError:
            named = None
        if named != (host, port):
            return "host_header_mismatch", f"the Host header {value[:100]!r} is not {host}"
    return None


TLS_HANDSHAKE = 22
CLIENT_HELLO = 1
SERVER_NAME = 0
HELLO_LIMIT = 64 * 1024
# a fatal access_denied alert (TLS 1.0 record version: any client reads it)
ACCESS_DENIED_ALERT = bytes([21, 3, 1, 0, 2, 2, 49])


def server_name(hello: bytes) -> str | None:
    """The host name (SNI) of a TLS ClientHello handshake message (type, length, body), or
    None when it names none; ValueError when it is not one."""
    if len(hello) < 4 or hello[0] != CLIENT_HELLO:
        raise ValueError("not a TLS ClientHello")
    body = hello[4 : 4 + int.from_bytes(hello[1:4], "big")]
    at = 2 + 32  # client_version, random
    at += 1 + body[at]  # session_id
    at += 2 + int.from_bytes(body[at : at + 2], "big")  # cipher_suites
    at += 1 + body[at]  # compression_methods
    if at >= len(body):
        return None  # no extensions
    end = min(len(body), at + 2 + int.from_bytes(body[at : at + 2], "big"))
    at += 2
    while at + 4 <= end:
        kind = int.from_bytes(body[at : at + 2], "big")
        size = int.from_bytes(body[at + 2 : at + 4], "big")
        data = body[at + 4 : at + 4 + size]
        at += 4 + size
        if kind != SERVER_NAME:
            continue
        place = 2  # server_name_list length, then (name_type, length, name) entries
        while place + 3 <= len(data):
            name_type = data[place]
            length = int.from_bytes(data[place + 1 : place + 3], "big")
            name = data[place + 3 : place + 3 + length]
            place += 3 + length
            if name_type == 0:
                return name.decode("ascii").lower().rstrip(".")
        return None
    return None


async def read_client_hello(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(the TLS records read, the ClientHello handshake message they carry); ValueError when
    the client does not start a TLS handshake."""
    records, handshake = b"", b""
    while len(handshake) < 4 or len(handshake) < 4 + int.from_bytes(handshake[1:4], "big"):
        head = await reader.readexactly(5)
        if head[0] != TLS_HANDSHAKE or head[1] != 3:
            raise ValueError("not a TLS handshake")
        body = await reader.readexactly(int.from_bytes(head[3:5], "big"))
        records += head + body
        handshake += body
        if len(records) > HELLO_LIMIT:
            raise ValueError("a ClientHello larger than 64 KiB")
    return records, handshake


async def hello_refusal(reader: asyncio.StreamReader, host: str) -> tuple[Refusal | None, bytes]:
    """(why the tunnel to ``host`` is refused, or None; the bytes read): the client's first
    bytes must be a TLS ClientHello naming ``host``."""
    try:
        records, handshake = await asyncio.wait_for(read_client_hello(reader), HEAD_SECONDS)
        name = server_name(handshake)
    except (asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):
        return ("not_tls", "the client sent no TLS ClientHello"), b""
    except (ValueError, IndexError, UnicodeError) as error:
        return ("not_tls", f"the tunnel does not start with a TLS ClientHello ({error})"), b""
    if name is None:
        return ("sni_missing", "the TLS ClientHello names no server (SNI)"), records
    if name != host:
        return ("sni_mismatch", f"the TLS server name {name[:100]} is not {host}"), records
    return None, records


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


def log_refusal(kind: str, method: str, target: str, reason: str) -> None:
    log(f"refused {kind} {method[:20]} {target[:200]}: {reason}")


async def refuse(
    writer: asyncio.StreamWriter, status: int, refusal: Refusal, method: str, target: str
) -> None:
    kind, reason = refusal
    log_refusal(kind, method, target, reason)
    phrase = "Bad Request" if status == 400 else "Forbidden"
    await reply(
        writer,
        status,
        f"{phrase} (swe-stream egress: {reason})",
        f"swe-stream egress refused {target[:200]}: {reason}",
    )


def request_target(method: str, target: str) -> tuple[str, int, str]:
    """(host, port, origin-form path) of a CONNECT authority or an absolute http:// URL;
    ValueError for anything else."""
    if method == "CONNECT":
        host, port = split_authority(target, None)
        return host, port, ""
    if target[:7].lower() != "http://":
        raise ValueError(target)
    rest = target[7:]
    cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0] or [len(rest)])
    authority, path = rest[:cut], rest[cut:] or "/"
    if path.startswith("?"):
        path = "/" + path
    if "@" in authority:
        raise ValueError(authority)
    host, port = split_authority(authority, 80)
    return host, port, path


async def tunnel(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    host: str,
    target: str,
) -> None:
    """A CONNECT tunnel, once its ClientHello names ``host``."""
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    refused, hello = await hello_refusal(reader, host)
    if refused:
        log_refusal(refused[0], "CONNECT", target, refused[1])
        if hello:  # a TLS client: it reads the alert and says why it stops
            writer.write(ACCESS_DENIED_ALERT)
            with contextlib.suppress(OSError):
                await writer.drain()
        return
    upstream_reader, upstream_writer = upstream
    upstream_writer.write(hello)
    activity = [asyncio.get_running_loop().time()]
    await asyncio.gather(
        pipe(reader, upstream_writer, activity), pipe(upstream_reader, writer, activity)
    )


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
            host, port, path = request_target(method, target)
        except ValueError:
            reason = "only CONNECT host:port and absolute http:// requests are served"
            await refuse(writer, 400, ("malformed_request", reason), method, target)
            return
        refused, addresses = await vet(host, port)
        if not refused and method != "CONNECT":
            refused = plain_request_refusal(method, lines[1:], host, port)
        if refused:
            await refuse(writer, 403, refused, method, target)
            return
        if isinstance(addresses, Exception):
            text = f"{host} does not resolve ({addresses})"
            await reply(writer, 502, f"Bad Gateway (swe-stream egress: {text})", text)
            return
        try:
            # not None: vet gives addresses when it gives no refusal and no error
            upstream_reader, upstream_writer = await connect(addresses or [], port)
        except OSError as error:
            text = f"{host}:{port}: {error}"
            await reply(writer, 502, "Bad Gateway (swe-stream egress)", text)
            return
        if method == "CONNECT":
            await tunnel(reader, writer, (upstream_reader, upstream_writer), host, target)
            return
        upstream_writer.write(forwarded_head(method, path, version, lines[1:], host, port))
        remaining = body_length(lines[1:])  # 0 but to a trusted endpoint (checked above)
        while remaining > 0:
            chunk = await asyncio.wait_for(reader.read(min(remaining, 65536)), IDLE_SECONDS)
            if not chunk:
                return
            upstream_writer.write(chunk)
            remaining -= len(chunk)
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
