"""swe-cargo-index: a cargo command run against crates.io as it was on a day.

Copied into the env image (``/opt/swe-env/swe-cargo-index.py``) and run there by a Rust
recipe whose repository commits no ``Cargo.lock``: the lockfile is resolved as of the pull
request's date, as its CI resolved it then, instead of with today's releases (which may need
a newer rustc, or changed what the tests see). Usage::

    python3 swe-cargo-index.py --before 2023-05-01T12:00:00Z -- cargo generate-lockfile

How: crates.io's sparse index (the registry's own index files, one JSON line per version)
records when each version was published (``pubtime``) and the rustc it declares it needs
(``rust_version``). This serves that index on 127.0.0.1, each file with the versions
published after ``--before`` left out, and those needing a newer rustc than the image's
(``rustc --version``: a lockfile its compiler can build, as cargo 1.84's resolver does with
``incompatible-rust-versions = "fallback"``, for every cargo here), and runs the
command with crates.io replaced by it (cargo's source replacement: the lockfile still names
crates.io, and the crates download from crates.io's own host, as its ``config.json`` says).

Limits: the index keeps only today's yank state, not when a version was yanked. The command
runs first with yanked versions left out; when that fails (every version a requirement
accepted then has been yanked since: futures-util 0.3.11 to 0.3.21, say), it runs again with
the yanked versions served as not yanked, which may pick one yanked before the date. A
version without ``pubtime`` is kept; a crate none of whose versions is old enough is served
whole (a manifest naming it could not resolve otherwise).

Not imported by swe-stream itself: it runs in the container, with the standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = "https://index.crates.io"


def version_tuple(text: str) -> tuple[int, ...]:
    """``1.63.0`` -> (1, 63, 0); what is not a number ends it."""
    parts: list[int] = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def filtered(body: bytes, before: str, unyank: bool = False, rustc: tuple[int, ...] = ()) -> bytes:
    """An index file's lines (one version each) published no later than ``before`` and, when
    some of those build on ``rustc``, only those; with ``unyank`` the yanked ones served as
    not yanked."""
    dated: list[tuple[bytes, dict]] = []
    lines = [line for line in body.splitlines() if line.strip()]
    for line in lines:
        try:
            version = json.loads(line)
        except ValueError:
            continue
        published = version.get("pubtime")
        # RFC 3339 UTC times of one format compare as text
        if not isinstance(published, str) or published <= before:
            if unyank and version.get("yanked"):
                version["yanked"] = False
                line = json.dumps(version, separators=(",", ":")).encode()
            dated.append((line, version))
    needs = [(line, version_tuple(str(v.get("rust_version") or "0")) <= rustc) for line, v in dated]
    buildable = [line for line, fits in needs if fits] if rustc else []
    chosen = buildable or [line for line, _ in dated] or lines
    return b"".join(line + b"\n" for line in chosen)


def local_rustc() -> tuple[int, ...]:
    """The version of the rustc on the PATH; () when there is none."""
    try:
        out = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return ()
    words = out.stdout.split()
    return version_tuple(words[1]) if len(words) > 1 else ()


def handler(
    upstream: str, before: str, unyank: bool, rustc: tuple[int, ...]
) -> type[BaseHTTPRequestHandler]:
    class Index(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                with urllib.request.urlopen(upstream + self.path, timeout=60) as answer:
                    body = answer.read()
            except urllib.error.HTTPError as error:
                self.send_response(error.code)
                self.end_headers()
                return
            except OSError as error:
                self.send_error(502, str(error))
                return
            if not self.path.endswith("/config.json"):
                body = filtered(body, before, unyank, rustc)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # cargo reports what it fetched

    return Index


def main(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swe-cargo-index")
    parser.add_argument("--before", required=True, help="UTC time, 2023-05-01T12:00:00Z")
    parser.add_argument("--upstream", default=UPSTREAM)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args(arguments)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command or command[0] != "cargo":
        parser.error("the command to run is a cargo command")
    print(f"swe-cargo-index: crates.io as of {options.before}", flush=True)
    status = run(command, options.upstream, options.before, unyank=False)
    if status != 0:
        print(
            "swe-cargo-index: again, with the versions yanked since served as not yanked "
            "(the index keeps no yank dates)",
            flush=True,
        )
        status = run(command, options.upstream, options.before, unyank=True)
    return status


def run(command: list[str], upstream: str, before: str, unyank: bool) -> int:
    """``command`` with crates.io replaced by the index as of ``before``."""
    rustc = local_rustc()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(upstream, before, unyank, rustc))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    # a source of its own per run: cargo caches an index per source URL
    name = "as-of-date-unyanked" if unyank else "as-of-date"
    replaced = [
        "--config",
        f'source.crates-io.replace-with="{name}"',
        "--config",
        f'source.{name}.registry="sparse+http://127.0.0.1:{port}/"',
    ]
    try:
        done = subprocess.run([command[0], *replaced, *command[1:]], check=False, env=os.environ)
    finally:
        server.shutdown()
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
