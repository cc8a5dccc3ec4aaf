"""The hot path of ingest: gzip bytes of one GH Archive hour -> normalised PullRequestEvents.

``HourScanner`` is fed the compressed bytes of one hour as they arrive (a download or a file)
and returns, per chunk, the ``(key, value)`` records of the PullRequestEvents that chunk
completed, plus ``ScanProblem`` for every line or stream fault, in line order. Nothing ever
raises out of ``feed`` / ``close`` for bad input.

Why it is fast (see the "Parsing GH Archive" figures in the design notes):

* decompression is ISA-L (``isal.igzip_lib``), ~3x zlib, and is the floor of the whole scan;
* lines are never split or decoded: one ``find(b"\\n")`` per line walks the decompressed buffer
  and the event type is read in place, right after ``{"id":"...",``; only the lines that may
  be PullRequestEvents (~4% of lines) are parsed (orjson, from a memoryview: not copied),
  every other line is only counted;
* per PullRequestEvent: one orjson parse, one pydantic validation, one orjson dump.

``feed`` is ``scan(inflate(chunk))``, and the two halves run on two cores where it matters
(``scan_file`` and the ingest stage): ``inflate`` (sha256 and ISA-L, both of which release the
GIL) touches only the hash and decompression state, so a worker thread inflates the next
chunks while this thread scans. ISA-L is called with a fixed output size (``INFLATE_PIECE``,
4 MiB): one GIL release per piece. (Its ``decompressobj`` grows the output from 16 KiB,
doubling, and takes the GIL back at every step; 8 MiB pieces and more cost ~50% more CPU, in
fresh pages.) The worker still needs the GIL after each piece, each hash and each result,
while the scanning thread holds it nearly all the time: each time it waits for a forced
switch. At the default 5 ms switch interval that wait, not inflating, paced the worker (the
benchmark's 352 MB: 0.60 s, 2.1x ``gzip -dc``, no faster than one thread);
``quick_gil_handoff`` lowers the interval to 0.25 ms while the pipeline runs (0.38 s, 3.3x).

A file of several concatenated gzip members is one stream, as for ``gzip -dc``. Line numbers
are 1-based physical lines of the decompressed stream (empty lines are numbered but are not
counted as events).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
from isal import igzip_lib, isal_zlib
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from schemas.gharchive import RawPullRequestEvent

__all__ = [
    "HourScanner",
    "Inflated",
    "ScanOutput",
    "ScanProblem",
    "ScanStats",
    "inflated_ahead",
    "quick_gil_handoff",
    "scan_file",
]

SAMPLE_BYTES = 2048
GZIP_MAGIC = b"\x1f\x8b"
# GH Archive writes compact JSON ('"type":"PullRequestEvent"', full and slim files alike);
# the needle leaves out '"type":' so spaced JSON is caught too, at the same cost. A line that
# holds it for another reason (a comment quoting it) is parsed and then dropped, not reported.
NEEDLE = b'"PullRequestEvent"'
PR_EVENT_TYPE = "PullRequestEvent"
_ID_KEY = b'{"id":"'
_TYPE_KEY = b'","type":"'
_PR_TYPE_VALUE = b'PullRequestEvent"'
_TYPE_WINDOW = 64  # '{"id":"' + the id digits + '","type":"' fit in it
_SCHEMA_VERSION = RawPullRequestEvent.SCHEMA_VERSION
_validate = RawPullRequestEvent.model_validate
# Stands in for a full payload's pull_request object while the record is validated: the field
# is ``dict[str, Any]``, which the parsed object is (orjson gives str keys), so copying its
# ~60 keys through pydantic would check nothing more; the record written carries the object.
_PR_PLACEHOLDER: dict[str, Any] = {}
# isal's stubs declare ``error`` as an instance; it is the exception class (IsalError).
_GZIP_ERROR = cast("type[Exception]", isal_zlib.error)
# Decompressed bytes per ISA-L call (one GIL release each): ~600 KiB of GH Archive gzip.
INFLATE_PIECE = 4 << 20
# The interpreter's thread switch interval while a worker inflates (see quick_gil_handoff).
GIL_SWITCH_SECONDS = 0.00025


@dataclass(slots=True)
class ScanProblem:
    """A line (or the stream) the scanner could not use."""

    line_number: int  # 1-based line in the decompressed hour; 0 for stream-level problems
    reason: str  # low-cardinality, see HourScanner
    error: str  # human message
    sample: bytes  # first <= 2048 bytes of the offending line (b"" for stream-level)


ScanOutput = tuple[bytes, bytes] | ScanProblem
_Line = bytes | memoryview


@dataclass(slots=True)
class Inflated:
    """What ``HourScanner.inflate`` made of one compressed chunk, for ``HourScanner.scan``."""

    compressed: int  # bytes of the chunk
    texts: list[bytes]  # its decompressed pieces, in order
    error: str | None = None  # the stream fault that stopped decompression in this chunk


@dataclass(slots=True)
class ScanStats:
    """Running counts of one hour's scan."""

    lines: int = 0  # events seen (non-empty lines)
    pull_request_events: int = 0  # records produced
    compressed_bytes: int = 0
    decompressed_bytes: int = 0
    problems: collections.Counter[str] = field(default_factory=collections.Counter)
    truncated: bool = False  # the gzip stream ended early / was corrupt: the hour is partial
    sha256: str = ""  # hex sha256 of the compressed bytes fed (filled at close())


def _obj(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


class HourScanner:
    """Incremental gzip -> PullRequestEvent scanner for one GH Archive hour.

    Problem reasons: ``truncated-gzip``, ``corrupt-gzip`` (stream level, line 0; the hour is
    partial), ``malformed-json``, ``not-an-object``, ``missing-pr-number``, ``bad-repo-name``,
    ``invalid-record``, ``line-too-long``.
    """

    def __init__(self, hour: str, pipeline_version: int, *, max_line_bytes: int = 64 << 20) -> None:
        self.hour = hour
        self.pipeline_version = pipeline_version
        self.max_line_bytes = max(1, max_line_bytes)
        # An incomplete line is known to be too long past this: it then holds a full sample.
        self._tail_cap = max(self.max_line_bytes, SAMPLE_BYTES)
        self.stats = ScanStats()
        self._sha = hashlib.sha256()
        self._decompressor: Any = None  # the current member's decompressobj, None between
        self._member_head = b""  # the current member's first (up to 2) bytes, for the magic
        self._members = 0  # gzip members completed
        self._tail: list[bytes] = []  # pieces of the incomplete last line so far
        self._tail_len = 0
        self._skipping = False  # inside a line already reported as too long
        self._line_no = 0  # physical lines completed so far
        self._dead = False  # corrupt stream: nothing more is produced
        self._closed = False
        self._inflate_error: str | None = None
        self._inflated_bytes = 0  # compressed bytes handed to the decompressors

    # -- public API ----------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[ScanOutput]:
        """Take the next compressed bytes; return the records and problems they completed."""
        return self.scan(self.inflate(chunk))

    def inflate(self, chunk: bytes) -> Inflated:
        """The first half of ``feed``: hash and decompress ``chunk``.

        It touches only the hash and decompression state, so it may run in another thread
        while ``scan`` handles earlier chunks, provided that calls are made one at a time, in
        chunk order, that every result goes to ``scan`` in that order, and that ``close`` comes
        after the last ``scan``. Never raises for bad input or a bug: it returns the error.
        """
        if not chunk or self._closed:
            return Inflated(0, [])
        self._sha.update(chunk)
        if self._dead or self._inflate_error is not None:  # nothing more is decompressed
            return Inflated(len(chunk), [])
        try:
            texts, error = self._inflate(chunk)
        except Exception as exc:  # a bug must not lose the hour silently: report, stop
            self._inflate_error = f"scanner error: {type(exc).__name__}: {exc}"
            return Inflated(len(chunk), [], self._inflate_error)
        return Inflated(len(chunk), texts, error)

    def scan(self, inflated: Inflated) -> list[ScanOutput]:
        """The second half of ``feed``: the records and problems ``inflated`` completed."""
        out: list[ScanOutput] = []
        if self._closed:
            return out
        self.stats.compressed_bytes += inflated.compressed
        if self._dead:
            return out
        try:
            self._use(inflated, out)
        except Exception as exc:  # a bug must not lose the hour silently: report, stop
            self._fail("corrupt-gzip", f"scanner error: {type(exc).__name__}: {exc}", out)
        return out

    def close(self) -> list[ScanOutput]:
        """End of input: flush the last line, or report a stream cut short."""
        out: list[ScanOutput] = []
        if self._closed:
            return out
        self._closed = True
        self.stats.sha256 = self._sha.hexdigest()
        if self._dead:
            return out
        try:
            if self._decompressor is not None or self._members == 0:
                if self.stats.compressed_bytes == 0:
                    detail = "no gzip data at all"
                else:
                    detail = (
                        f"gzip stream ended inside member {self._members + 1} after "
                        f"{self.stats.compressed_bytes} compressed bytes"
                    )
                if self._tail_len:
                    detail += f"; dropped partial line {self._line_no + 1} ({self._tail_len} bytes)"
                self._fail("truncated-gzip", detail, out)
                return out
            if self._skipping:
                self._skipping = False
                self._line_no += 1
            elif self._tail_len:  # a last line without newline
                self._tail.append(b"\n")
                self._scan_lines(self._take_tail(), 0, out)
        except Exception as exc:
            self._fail("corrupt-gzip", f"scanner error: {type(exc).__name__}: {exc}", out)
        return out

    # -- decompression -------------------------------------------------------------------

    def _fail(self, reason: str, error: str, out: list[ScanOutput]) -> None:
        self._dead = True
        self._take_tail()
        self.stats.truncated = True
        self.stats.problems[reason] += 1
        out.append(ScanProblem(0, reason, error, b""))

    def _use(self, inflated: Inflated, out: list[ScanOutput]) -> None:
        """Scan what ``_inflate`` produced, in order; then report its stream error, if any."""
        for text in inflated.texts:
            if self._dead:
                return
            self.stats.decompressed_bytes += len(text)
            self._consume(text, out)
        if inflated.error is not None and not self._dead:
            self._fail("corrupt-gzip", inflated.error, out)

    def _inflate(self, data: bytes) -> tuple[list[bytes], str | None]:
        """Decompress compressed bytes (any number of gzip members): the decompressed pieces,
        and the error that stopped the stream (then nothing more is decompressed)."""
        texts: list[bytes] = []
        piece = INFLATE_PIECE
        while data:
            if self._decompressor is None:
                self._decompressor = igzip_lib.IgzipDecompressor(flag=igzip_lib.DECOMP_GZIP)
                self._member_head = b""
            if len(self._member_head) < 2:
                self._member_head += data[: 2 - len(self._member_head)]
                if not GZIP_MAGIC.startswith(self._member_head):
                    self._inflate_error = (
                        f"not a gzip member at compressed byte {self._inflated_bytes} "
                        f"(member {self._members + 1})"
                    )
                    return texts, self._inflate_error
            decompressor = self._decompressor
            try:
                text = decompressor.decompress(data, piece)
                # Output stops at ``piece`` bytes: go on while input is left, or while the
                # piece came back full (ISA-L may hold more output of the input it took).
                while True:
                    if text:
                        texts.append(text)
                    if decompressor.eof or (len(text) < piece and decompressor.needs_input):
                        break
                    if not text:  # no progress: wait for more input
                        break
                    text = decompressor.decompress(b"", piece)
            except _GZIP_ERROR as exc:
                self._inflate_error = (
                    f"corrupt gzip data in member {self._members + 1}, at or before compressed "
                    f"byte {self._inflated_bytes + len(data)}: {exc}"
                )
                return texts, self._inflate_error
            if not decompressor.eof:
                self._inflated_bytes += len(data)
                return texts, None
            unused = decompressor.unused_data
            self._inflated_bytes += len(data) - len(unused)
            data = unused
            self._decompressor = None
            self._members += 1
        return texts, None

    # -- lines ---------------------------------------------------------------------------

    def _consume(self, buf: bytes, out: list[ScanOutput]) -> None:
        """Scan decompressed bytes: complete lines now, keep the incomplete tail."""
        pos = 0
        if self._skipping or self._tail_len:
            # The line running in from before this buffer.
            nl = buf.find(b"\n")
            if nl == -1:
                if not self._skipping:
                    self._tail.append(buf)
                    self._tail_len += len(buf)
                    if self._tail_len > self._tail_cap:
                        self._too_long(self._take_tail(), out)
                return
            if self._skipping:
                self._skipping = False
                self._line_no += 1
            else:  # the same checks as any line
                self._tail.append(buf[: nl + 1])
                self._scan_lines(self._take_tail(), 0, out)
            pos = nl + 1
        pos = self._scan_lines(buf, pos, out)
        if pos < len(buf):
            rest = buf[pos:]
            if len(rest) > self._tail_cap:
                self._too_long(rest, out)
            else:
                self._tail.append(rest)
                self._tail_len = len(rest)

    def _scan_lines(self, buf: bytes, pos: int, out: list[ScanOutput]) -> int:
        """Every complete line of ``buf`` from ``pos``; returns where the incomplete tail starts.

        A GH Archive line starts ``{"id":"<digits>","type":"<Type>"``: the event type is read
        right there (inside a JSON string every quote is escaped, so the first ``","type":"``
        after ``{"id":"`` is the top-level key). A line shaped otherwise is searched whole for
        the needle. Only lines that may be PullRequestEvents are parsed, from a view of
        ``buf``.
        """
        find, startswith = buf.find, buf.startswith
        view = memoryview(buf)
        limit = self.max_line_bytes
        line_no = self._line_no
        lines = 0
        while (nl := find(b"\n", pos)) != -1:
            line_no += 1
            if nl == pos:  # an empty line: numbered, not an event
                pos += 1
                continue
            lines += 1
            if nl - pos > limit:
                self.stats.problems["line-too-long"] += 1
                out.append(
                    ScanProblem(
                        line_no,
                        "line-too-long",
                        f"line longer than max_line_bytes={limit}",
                        buf[pos : min(nl, pos + SAMPLE_BYTES)],
                    )
                )
            elif startswith(_ID_KEY, pos):
                t = find(_TYPE_KEY, pos + 7, nl if nl - pos < _TYPE_WINDOW else pos + _TYPE_WINDOW)
                if t != -1:
                    if startswith(_PR_TYPE_VALUE, t + 10):
                        self._parse_line(view[pos:nl], line_no, out)
                elif find(NEEDLE, pos, nl) != -1:
                    self._parse_line(view[pos:nl], line_no, out)
            elif find(NEEDLE, pos, nl) != -1:
                self._parse_line(view[pos:nl], line_no, out)
            pos = nl + 1
        self._line_no = line_no
        self.stats.lines += lines
        return pos

    def _take_tail(self) -> bytes:
        line = b"".join(self._tail)
        self._tail.clear()
        self._tail_len = 0
        return line

    def _too_long(self, line: bytes, out: list[ScanOutput]) -> None:
        """Report the current line (the tail, taken) as too long; skip the rest of it."""
        self._skipping = True
        self.stats.lines += 1
        self.stats.problems["line-too-long"] += 1
        out.append(
            ScanProblem(
                self._line_no + 1,
                "line-too-long",
                f"line longer than max_line_bytes={self.max_line_bytes}",
                line[:SAMPLE_BYTES],
            )
        )

    # -- records -------------------------------------------------------------------------

    def _problem(
        self, out: list[ScanOutput], line_no: int, reason: str, error: str, line: _Line
    ) -> None:
        self.stats.problems[reason] += 1
        out.append(ScanProblem(line_no, reason, error, bytes(line[:SAMPLE_BYTES])))

    def _parse_line(self, line: _Line, line_no: int, out: list[ScanOutput]) -> None:
        """One line holding the needle (a view of the buffer: not copied to parse it): parse,
        keep it if it is a PullRequestEvent."""
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            self._problem(out, line_no, "malformed-json", str(exc), line)
            return
        if type(event) is not dict:
            self._problem(
                out, line_no, "not-an-object", f"a JSON {type(event).__name__}, not an object", line
            )
            return
        if event.get("type") != PR_EVENT_TYPE:
            return  # the needle was quoted inside another event
        try:
            record = self._normalise(event, line, line_no, out)
        except Exception as exc:  # defensive: a bad event must never stop the hour
            self._problem(out, line_no, "invalid-record", f"{type(exc).__name__}: {exc}", line)
            return
        if record is not None:
            out.append(record)
            self.stats.pull_request_events += 1

    def _normalise(
        self, event: dict[str, Any], line: _Line, line_no: int, out: list[ScanOutput]
    ) -> tuple[bytes, bytes] | None:
        """A parsed PullRequestEvent (full or slim payload) -> (key, RawPullRequestEvent JSON)."""
        repo = _obj(event.get("repo")).get("name")
        payload = _obj(event.get("payload"))
        pr = payload.get("pull_request")
        number = payload.get("number")
        if number is None and type(pr) is dict:
            number = pr.get("number")
        if number is None:
            self._problem(
                out,
                line_no,
                "missing-pr-number",
                "neither payload.number nor payload.pull_request.number is present",
                line,
            )
            return None
        if type(number) is not int:
            self._problem(
                out, line_no, "invalid-record", f"PR number {number!r} is not an integer", line
            )
            return None
        if type(pr) is not dict:
            self._problem(
                out,
                line_no,
                "invalid-record",
                "payload.pull_request is missing or not an object",
                line,
            )
            return None
        full = "merged" in pr or "title" in pr or "user" in pr  # keys only a full PR object has
        head = _obj(pr.get("head"))
        base = _obj(pr.get("base"))
        head_repo_obj = _obj(head.get("repo"))
        head_repo = head_repo_obj.get("full_name") or head_repo_obj.get("name") or None
        actor = event.get("actor")
        event_id = event.get("id")
        record = {
            "schema_version": _SCHEMA_VERSION,
            "pipeline_version": self.pipeline_version,
            "repo": repo,
            "number": number,
            "event_id": str(event_id) if type(event_id) is int else event_id,
            "created_at": event.get("created_at"),
            "action": payload.get("action"),
            "payload_format": "full" if full else "slim",
            "merged": pr.get("merged") if full else None,
            "actor_login": actor if type(actor) is str else _obj(actor).get("login"),
            "base_ref": base.get("ref"),
            "base_sha": base.get("sha"),
            "head_ref": head.get("ref"),
            "head_sha": head.get("sha"),
            "head_repo": head_repo,
            "org_login": _obj(event.get("org")).get("login"),
            "pull_request": _PR_PLACEHOLDER if full else None,
            "gharchive_hour": self.hour,
        }
        try:
            _validate(record)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False)
            if any(err["loc"][:1] == ("repo",) for err in errors):
                self._problem(out, line_no, "bad-repo-name", _brief(errors, "repo"), line)
            else:
                self._problem(out, line_no, "invalid-record", _brief(errors), line)
            return None
        if full:
            record["pull_request"] = pr
        return f"{repo}#{number}".encode(), orjson.dumps(record)


def _brief(errors: list[ErrorDetails], only: str | None = None) -> str:
    """A one-line summary of validation errors (field: message; ...)."""
    parts = []
    for err in errors:
        where = ".".join(str(p) for p in err["loc"]) or "record"
        if only is None or where == only:
            parts.append(f"{where}: {err['msg']}")
    return "RawPullRequestEvent: " + "; ".join(parts)


_handoff_lock = threading.Lock()
_handoff_users = 0
_handoff_restore = 0.005


@contextlib.contextmanager
def quick_gil_handoff(seconds: float | None = None) -> Iterator[None]:
    """Lower the interpreter's thread switch interval (``sys.setswitchinterval``) to at most
    ``seconds`` (default ``GIL_SWITCH_SECONDS``) while the block runs, so that an inflate
    worker waiting for the GIL gets it soon; the interval is put back when the last of the
    overlapping blocks ends (several hours of one ingest run overlap). Process-wide, as the
    interval is."""
    global _handoff_users, _handoff_restore
    seconds = GIL_SWITCH_SECONDS if seconds is None else seconds
    with _handoff_lock:
        if _handoff_users == 0:
            _handoff_restore = sys.getswitchinterval()
        _handoff_users += 1
        sys.setswitchinterval(min(seconds, sys.getswitchinterval()))
    try:
        yield
    finally:
        with _handoff_lock:
            _handoff_users -= 1
            if _handoff_users == 0:
                sys.setswitchinterval(_handoff_restore)


def inflated_ahead(
    scanner: HourScanner, chunks: Iterable[bytes], depth: int = 2
) -> Iterator[Inflated]:
    """``scanner.inflate`` of every chunk, in order, computed in a worker thread up to ``depth``
    chunks ahead of the caller (who scans one while the next ones inflate on another core)."""
    with (
        quick_gil_handoff(),
        ThreadPoolExecutor(1, thread_name_prefix="swe-stream-inflate") as worker,
    ):
        ahead: collections.deque[Future[Inflated]] = collections.deque()
        try:
            for chunk in chunks:
                ahead.append(worker.submit(scanner.inflate, chunk))
                if len(ahead) > depth:
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:
            for future in ahead:
                future.cancel()


def scan_file(
    path: Path, hour: str, pipeline_version: int, chunk_size: int = 1 << 20
) -> Iterator[ScanOutput]:
    """Feed a local (possibly multi-member) gzip file through a HourScanner, the next chunks
    inflating in a worker thread while this one scans."""
    scanner = HourScanner(hour, pipeline_version)
    with open(path, "rb") as f:
        chunks = iter(lambda: f.read(chunk_size), b"")
        for inflated in inflated_ahead(scanner, chunks):
            yield from scanner.scan(inflated)
    yield from scanner.close()
