"""swe-stream's egress forwarder (streams/evaluation/egress.py), run in the sandbox.

Run by the sandbox's python3 (stdlib only): ``python3 -I -c SOURCE SOCKET PORT`` binds
``127.0.0.1:PORT``, then detaches (so the port accepts connections once the exec returns) and
pipes each connection to the proxy's Unix socket SOCKET. Exits 3 if the port is taken (already
attached).
"""

# No ``from __future__ import annotations``: this runs on whichever python3 the sandbox has,
# so its annotations are names every version evaluates.

import asyncio
import errno
import os
import socket
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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


async def handle(path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(path)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
    finally:
        upstream_writer.close()
        writer.close()


async def serve(listener: socket.socket, path: str) -> None:
    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handle(path, reader, writer)

    server = await asyncio.start_server(connected, sock=listener)
    async with server:
        await server.serve_forever()


def main() -> None:
    path, port = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
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
    asyncio.run(serve(listener, path))


if __name__ == "__main__":
    main()
