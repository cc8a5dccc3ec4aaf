"""agents.ingest_scan: gzip bytes of a GH Archive hour -> normalised PullRequestEvent records."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import ingest_scan
from agents.ingest_scan import (
    HourScanner,
    ScanOutput,
    ScanProblem,
    inflated_ahead,
    quick_gil_handoff,
    scan_file,
)
from schemas import RawPullRequestEvent

pytestmark = pytest.mark.unit

HOUR0 = "2015-01-01-0"
HOUR1 = "2015-01-01-1"
PIPELINE_VERSION = 7


@pytest.fixture(scope="module")
def gharchive(fixtures_dir: Path) -> Path:
    return fixtures_dir / "gharchive"


@pytest.fixture(scope="module")
def hour0_gz(gharchive: Path) -> bytes:
    return (gharchive / f"{HOUR0}.json.gz").read_bytes()


@pytest.fixture(scope="module")
def hour0_lines(hour0_gz: bytes) -> list[bytes]:
    return gzip.decompress(hour0_gz).split(b"\n")[:-1]


@pytest.fixture(scope="module")
def hour0_records(hour0_gz: bytes) -> list[tuple[bytes, bytes]]:
    out = scan(hour0_gz)
    assert all(isinstance(item, tuple) for item in out)
    return [item for item in out if isinstance(item, tuple)]


def scan(
    data: bytes, chunk: int | None = None, hour: str = HOUR0, **kwargs: Any
) -> list[ScanOutput]:
    """All output of one scanner fed ``data`` in chunks of ``chunk`` bytes (one piece if None)."""
    scanner = HourScanner(hour, PIPELINE_VERSION, **kwargs)
    step = chunk or max(1, len(data))
    out: list[ScanOutput] = []
    for i in range(0, len(data), step):
        out.extend(scanner.feed(data[i : i + step]))
    out.extend(scanner.close())
    return out


def scan_with_stats(data: bytes, **kwargs: Any) -> tuple[list[ScanOutput], HourScanner]:
    scanner = HourScanner(HOUR0, PIPELINE_VERSION, **kwargs)
    out = scanner.feed(data)
    out.extend(scanner.close())
    return out, scanner


def records(out: list[ScanOutput]) -> list[tuple[bytes, bytes]]:
    return [item for item in out if isinstance(item, tuple)]


def problems(out: list[ScanOutput]) -> list[ScanProblem]:
    return [item for item in out if isinstance(item, ScanProblem)]


def pr_event(lines: list[bytes], index: int = 0) -> dict[str, Any]:
    """The ``index``-th PullRequestEvent of the lines, parsed."""
    events = [e for e in map(json.loads, lines) if e["type"] == "PullRequestEvent"]
    return events[index]


def compact(event: Any) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()


# -- the real hours ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hour", "events", "lines", "merged_prs"),
    [(HOUR0, 315, 7702, 126), (HOUR1, 293, 7427, 89)],
)
def test_real_hour_counts(
    gharchive: Path, hour: str, events: int, lines: int, merged_prs: int
) -> None:
    data = (gharchive / f"{hour}.json.gz").read_bytes()
    out, scanner = scan_with_stats(data)
    assert problems(out) == []
    assert len(records(out)) == events
    stats = scanner.stats
    assert (stats.lines, stats.pull_request_events) == (lines, events)
    assert stats.compressed_bytes == len(data)
    assert stats.decompressed_bytes == len(gzip.decompress(data))
    assert not stats.truncated and not stats.problems
    merged = set()
    for key, value in records(out):
        record = RawPullRequestEvent.from_json(value)
        assert record.payload_format == "full" and record.pull_request is not None
        if record.merged:
            assert record.action == "closed"
            merged.add(key)
    assert len(merged) == merged_prs


def test_slim_hour(gharchive: Path) -> None:
    data = (gharchive / f"{HOUR0}.slim.json.gz").read_bytes()
    out, scanner = scan_with_stats(data)
    assert problems(out) == []
    assert scanner.stats.lines == 7702
    got = [RawPullRequestEvent.from_json(value) for _, value in records(out)]
    assert len(got) == 315
    assert all(r.payload_format == "slim" for r in got)
    assert all(r.merged is None and r.pull_request is None for r in got)
    assert {r.action for r in got} <= {"opened", "closed", "reopened", "merged", "synchronize"}
    assert all(r.head_repo is None or "/" in r.head_repo for r in got)


@pytest.mark.parametrize("name", [f"{HOUR0}.json.gz", f"{HOUR1}.json.gz", f"{HOUR0}.slim.json.gz"])
def test_records_match_an_independent_reading(gharchive: Path, name: str) -> None:
    """Every record validates, is keyed owner/repo#number, and carries what the line said."""
    path = gharchive / name
    with gzip.open(path, "rb") as f:
        expected = [e for e in map(json.loads, f) if e["type"] == "PullRequestEvent"]
    got = list(scan_file(path, HOUR0, PIPELINE_VERSION, chunk_size=64 << 10))
    assert len(got) == len(expected)
    for item, event in zip(got, expected, strict=True):
        assert isinstance(item, tuple)
        key, value = item
        record = RawPullRequestEvent.from_json(value)
        payload, pr = event["payload"], event["payload"]["pull_request"]
        assert key == f"{record.repo}#{record.number}".encode() == record.key.encode()
        assert record.repo == event["repo"]["name"]
        assert record.number == payload["number"]
        assert record.event_id == event["id"]
        assert record.action == payload["action"]
        assert record.actor_login == event["actor"]["login"]
        assert (record.base_ref, record.base_sha) == (pr["base"]["ref"], pr["base"]["sha"])
        assert (record.head_ref, record.head_sha) == (pr["head"]["ref"], pr["head"]["sha"])
        head_repo = pr["head"].get("repo")
        assert record.head_repo == (
            (head_repo.get("full_name") or head_repo["name"]) if head_repo else None
        )
        assert record.org_login == (event.get("org") or {}).get("login")
        if record.payload_format == "full":
            assert record.merged is pr["merged"]
            assert record.pull_request == pr
        assert record.created_at.isoformat().replace("+00:00", "Z") == event["created_at"]
        assert record.gharchive_hour == HOUR0
        assert record.pipeline_version == PIPELINE_VERSION
        assert record.schema_version == RawPullRequestEvent.SCHEMA_VERSION


@pytest.mark.parametrize("chunk", [7, 4096, 100_003])
def test_chunking_does_not_change_the_output(
    hour0_gz: bytes, hour0_records: list[tuple[bytes, bytes]], chunk: int
) -> None:
    assert scan(hour0_gz, chunk) == hour0_records


def test_sha256_of_the_compressed_bytes(hour0_gz: bytes) -> None:
    scanner = HourScanner(HOUR0, PIPELINE_VERSION)
    for i in range(0, len(hour0_gz), 65536):
        scanner.feed(hour0_gz[i : i + 65536])
    assert scanner.stats.sha256 == ""
    scanner.close()
    assert scanner.stats.sha256 == hashlib.sha256(hour0_gz).hexdigest()


def test_two_gzip_members_are_one_stream(gharchive: Path, tmp_path: Path) -> None:
    hour0 = (gharchive / f"{HOUR0}.json.gz").read_bytes()
    hour1 = (gharchive / f"{HOUR1}.json.gz").read_bytes()
    both = tmp_path / "two.json.gz"
    both.write_bytes(hour0 + hour1)
    got = list(scan_file(both, HOUR0, PIPELINE_VERSION))
    assert len(got) == 608
    assert got == records(scan(hour0)) + records(scan(hour1))
    for chunk in (4096, 7777):
        assert scan(hour0 + hour1, chunk) == got
    _, scanner = scan_with_stats(hour0 + hour1)
    assert scanner.stats.lines == 7702 + 7427
    assert scanner.stats.sha256 == hashlib.sha256(hour0 + hour1).hexdigest()


# -- damaged streams -----------------------------------------------------------------------


def test_truncated_stream_keeps_the_lines_before_the_cut(
    hour0_gz: bytes, hour0_records: list[tuple[bytes, bytes]]
) -> None:
    cut = hour0_gz[: len(hour0_gz) * 6 // 10]
    for chunk in (None, 4096):
        out = scan(cut, chunk)
        got, bad = records(out), problems(out)
        assert 0 < len(got) < 315
        assert got == hour0_records[: len(got)]
        assert [p.reason for p in bad] == ["truncated-gzip"]
        assert (bad[0].line_number, bad[0].sample) == (0, b"")
        assert "partial line" in bad[0].error
    out, scanner = scan_with_stats(cut)
    assert scanner.stats.truncated
    assert scanner.stats.problems == {"truncated-gzip": 1}
    assert scanner.stats.sha256 == hashlib.sha256(cut).hexdigest()
    complete = zlib.decompressobj(wbits=31).decompress(cut).count(b"\n")
    assert scanner.stats.lines == complete  # the partial last line is not counted


def test_truncated_inside_the_header_and_empty_input() -> None:
    for data in (b"", b"\x1f", b"\x1f\x8b\x08"):
        out, scanner = scan_with_stats(data)
        assert [p.reason for p in problems(out)] == ["truncated-gzip"]
        assert scanner.stats.truncated


def test_corrupt_stream(hour0_gz: bytes, hour0_records: list[tuple[bytes, bytes]]) -> None:
    data = bytearray(hour0_gz)
    middle = len(data) // 2
    for i in range(middle, middle + 64):
        data[i] ^= 0xA5
    for chunk in (None, 4096, 7):
        scanner = HourScanner(HOUR0, PIPELINE_VERSION)
        out: list[ScanOutput] = []
        for i in range(0, len(data), chunk or len(data)):
            out.extend(scanner.feed(bytes(data[i : i + (chunk or len(data))])))
        out.extend(scanner.close())
        reasons = [p.reason for p in problems(out)]
        assert "corrupt-gzip" in reasons
        assert scanner.stats.truncated
        corrupt = next(p for p in problems(out) if p.reason == "corrupt-gzip")
        assert (corrupt.line_number, corrupt.sample) == (0, b"")
        # nothing after the corrupt-gzip report
        assert out[-1] is corrupt
        assert scanner.stats.sha256 == hashlib.sha256(data).hexdigest()
        got = records(out)
        assert len(got) < 315
        if chunk == 7:  # fine-grained feeding keeps everything before the damage
            assert len(got) > 0
            assert got[:100] == hour0_records[: min(100, len(got))]


def test_garbage_after_a_member_is_corrupt(hour0_gz: bytes) -> None:
    out, scanner = scan_with_stats(hour0_gz + b"this is not gzip")
    assert len(records(out)) == 315
    assert [p.reason for p in problems(out)] == ["corrupt-gzip"]
    assert "not a gzip member" in problems(out)[0].error
    assert scanner.stats.truncated


def test_bad_lines_are_reported_and_the_rest_kept(
    hour0_lines: list[bytes], hour0_records: list[tuple[bytes, bytes]]
) -> None:
    event = pr_event(hour0_lines)
    no_number = json.loads(compact(event))
    del no_number["payload"]["number"], no_number["payload"]["pull_request"]["number"]
    bad_repo = json.loads(compact(event))
    bad_repo["repo"]["name"] = "../etc"
    bad_sha = json.loads(compact(event))
    bad_sha["payload"]["pull_request"]["head"]["sha"] = "not-a-sha"
    injected = [
        (10, b'this is not JSON "type":"PullRequestEvent" at all', "malformed-json"),
        (200, b'[{"type":"PullRequestEvent"}]', "not-an-object"),
        (1000, compact(no_number), "missing-pr-number"),
        (2000, compact(bad_repo), "bad-repo-name"),
        (3000, b"", None),
        (4000, b"\xff\xfe\x00\x01 random bytes", None),
        (5000, b'\xff\xfe"PullRequestEvent"\xff', "malformed-json"),
        (6000, compact(bad_sha), "invalid-record"),
        (
            7000,
            b'{"id":"1","type":"IssueCommentEvent","body":"\\"type\\":\\"PullRequestEvent\\""}',
            None,
        ),
    ]
    lines = list(hour0_lines)
    expected: list[tuple[int, str, bytes]] = []
    for index, line, reason in injected:  # indexes ascending: later inserts shift nothing before
        lines.insert(index, line)
        if reason is not None:
            expected.append((index + 1, reason, line[:2048]))
    data = gzip.compress(b"\n".join(lines) + b"\n")
    for chunk in (None, 4096, 7):
        out = scan(data, chunk)
        assert records(out) == hour0_records
        got = [(p.line_number, p.reason, p.sample) for p in problems(out)]
        assert got == expected
        for p in problems(out):
            assert p.error
    out, scanner = scan_with_stats(data)
    assert scanner.stats.lines == 7702 + len(injected) - 1  # the empty line is no event
    assert scanner.stats.pull_request_events == 315
    assert dict(scanner.stats.problems) == {
        "malformed-json": 2,
        "not-an-object": 1,
        "missing-pr-number": 1,
        "bad-repo-name": 1,
        "invalid-record": 1,
    }
    assert not scanner.stats.truncated
    # problems are reported in line order, between the records around them
    order = [p.line_number for p in problems(out)]
    assert order == sorted(order)


def test_sample_is_capped(hour0_lines: list[bytes]) -> None:
    long_bad = b'"PullRequestEvent"' + b"x" * 10_000
    out = scan(gzip.compress(long_bad + b"\n"))
    (problem,) = problems(out)
    assert problem.reason == "malformed-json"
    assert problem.sample == long_bad[:2048]


def test_prefilter_false_positives_and_other_layouts(hour0_lines: list[bytes]) -> None:
    event = pr_event(hour0_lines)
    reordered = {"type": event["type"], **{k: v for k, v in event.items() if k != "type"}}
    spaced = json.dumps(event).encode()  # '"type": "PullRequestEvent"', other key order
    quoting = {"id": "42", "type": "IssueCommentEvent", "payload": {"kind": "PullRequestEvent"}}
    quoting_reordered = {"type": "IssueCommentEvent", "payload": {"kind": "PullRequestEvent"}}
    lines = [
        compact(event),
        compact(reordered),
        spaced,
        compact(quoting),
        compact(quoting_reordered),
        b'["PullRequestEvent"]',
        compact({"id": "1", "type": "PushEvent", "payload": {"ref": '"PullRequestEvent"'}}),
    ]
    out = scan(gzip.compress(b"\n".join(lines)))  # and no newline at the end
    got = records(out)
    assert len(got) == 3
    assert got[0] == got[1] == got[2]
    assert [(p.line_number, p.reason) for p in problems(out)] == [(6, "not-an-object")]


def test_last_line_without_newline(hour0_lines: list[bytes]) -> None:
    body = b"\n".join(hour0_lines[:500])
    with_nl = scan(gzip.compress(body + b"\n"))
    without = scan(gzip.compress(body))
    assert without == with_nl
    assert len(records(without)) == sum(b'"PullRequestEvent"' in line for line in hour0_lines[:500])
    _, scanner = scan_with_stats(gzip.compress(body))
    assert scanner.stats.lines == 500


@pytest.mark.parametrize("chunk", [None, 4096, 7])
def test_line_too_long(hour0_lines: list[bytes], chunk: int | None) -> None:
    limit = 15_000  # about half the PullRequestEvent lines are longer
    lines = hour0_lines[:1500]
    data = gzip.compress(b"\n".join(lines) + b"\n")
    out = scan(data, chunk, max_line_bytes=limit)
    too_long = [(i + 1, line[:2048]) for i, line in enumerate(lines) if len(line) > limit]
    assert too_long and len(too_long) < len(lines)
    assert [(p.line_number, p.sample) for p in problems(out)] == too_long
    assert {p.reason for p in problems(out)} == {"line-too-long"}
    kept = [line for line in lines if len(line) <= limit and b'"PullRequestEvent"' in line]
    assert len(records(out)) == len(kept) > 0
    assert records(out) == records(scan(gzip.compress(b"\n".join(kept) + b"\n")))


def test_too_long_last_line_and_counts() -> None:
    data = gzip.compress(b"short\n" + b"y" * 5000)  # the last line has no newline
    out, scanner = scan_with_stats(data, max_line_bytes=1000)
    assert [(p.line_number, p.reason) for p in problems(out)] == [(2, "line-too-long")]
    assert scanner.stats.lines == 2


def test_empty_lines_are_numbered_but_not_counted(hour0_lines: list[bytes]) -> None:
    event = compact(pr_event(hour0_lines))
    bad = b'["PullRequestEvent"]'
    data = gzip.compress(b"\n\n" + event + b"\n\n\n" + bad + b"\n\n")
    for chunk in (None, 1, 3):
        out = scan(data, chunk)
        assert len(records(out)) == 1
        assert [(p.line_number, p.reason) for p in problems(out)] == [(6, "not-an-object")]
    _, scanner = scan_with_stats(data)
    assert scanner.stats.lines == 2


def test_feed_after_close_and_double_close(hour0_gz: bytes) -> None:
    scanner = HourScanner(HOUR0, PIPELINE_VERSION)
    scanner.feed(hour0_gz)
    assert scanner.close() == []
    assert scanner.feed(b"more") == []
    assert scanner.close() == []
    assert scanner.stats.pull_request_events == 315


# -- the two halves: inflate (in a worker thread) and scan ---------------------------------


def damaged_inputs(hour0_gz: bytes, hour1_gz: bytes) -> dict[str, bytes]:
    corrupt = bytearray(hour0_gz)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
        corrupt[i] ^= 0xA5
    return {
        "clean": hour0_gz,
        "two members": hour0_gz + hour1_gz,
        "cut": hour0_gz[: len(hour0_gz) * 6 // 10],
        "corrupt": bytes(corrupt),
        "garbage after": hour0_gz + b"this is not gzip",
        "empty": b"",
    }


def fingerprint(scanner: HourScanner) -> tuple[Any, ...]:
    s = scanner.stats
    return (s.lines, s.pull_request_events, s.compressed_bytes, s.decompressed_bytes,
            dict(s.problems), s.truncated, s.sha256)  # fmt: skip


@pytest.mark.parametrize("chunk", [4096, 100_003, 1 << 20])
@pytest.mark.parametrize("depth", [1, 3])
def test_inflating_ahead_in_a_thread_is_feeding_in_order(
    gharchive: Path, hour0_gz: bytes, chunk: int, depth: int
) -> None:
    hour1_gz = (gharchive / f"{HOUR1}.json.gz").read_bytes()
    for name, data in damaged_inputs(hour0_gz, hour1_gz).items():
        serial = HourScanner(HOUR0, PIPELINE_VERSION)
        expected: list[ScanOutput] = []
        for i in range(0, len(data), chunk):
            expected += serial.feed(data[i : i + chunk])
        expected += serial.close()

        threaded = HourScanner(HOUR0, PIPELINE_VERSION)
        pieces = (data[i : i + chunk] for i in range(0, len(data), chunk))
        got: list[ScanOutput] = []
        for inflated in inflated_ahead(threaded, pieces, depth):
            got += threaded.scan(inflated)
        got += threaded.close()
        assert got == expected, name
        assert fingerprint(threaded) == fingerprint(serial), name


@pytest.mark.parametrize("piece", [1000, 65_537])
def test_small_inflate_pieces_change_nothing(
    gharchive: Path,
    hour0_gz: bytes,
    hour0_records: list[tuple[bytes, bytes]],
    piece: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ISA-L's output comes in pieces of at most INFLATE_PIECE bytes: many per chunk here."""
    hour1_gz = (gharchive / f"{HOUR1}.json.gz").read_bytes()
    inputs = damaged_inputs(hour0_gz, hour1_gz)
    corrupt = inputs.pop("corrupt")
    expected = {name: scan(data, 100_003) for name, data in inputs.items()}
    monkeypatch.setattr(ingest_scan, "INFLATE_PIECE", piece)
    for name, data in inputs.items():
        for chunk in (None, 100_003):
            assert scan(data, chunk) == expected[name], name
    assert records(expected["clean"]) == hour0_records
    # a corrupt stream keeps what came before the damage (in whole pieces), then stops
    out = scan(corrupt)
    got = records(out)
    assert 0 < len(got) < 315
    assert got == hour0_records[: len(got)]
    assert [p.reason for p in problems(out)] == ["corrupt-gzip"]


def test_one_byte_inflate_pieces(hour0_lines: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    data = gzip.compress(b"\n".join(hour0_lines[:300]) + b"\n")
    expected = scan(data)
    assert len(records(expected)) > 0
    monkeypatch.setattr(ingest_scan, "INFLATE_PIECE", 1)
    assert scan(data) == scan(data, 7) == expected


def test_scan_file_stops_its_worker_when_abandoned(gharchive: Path) -> None:
    before = sys.getswitchinterval()
    outputs = scan_file(gharchive / f"{HOUR0}.json.gz", HOUR0, PIPELINE_VERSION, chunk_size=4096)
    assert isinstance(next(outputs), tuple)
    assert sys.getswitchinterval() == pytest.approx(ingest_scan.GIL_SWITCH_SECONDS)
    outputs.close()
    assert sys.getswitchinterval() == pytest.approx(before)
    assert not any(t.name.startswith("swe-stream-inflate") for t in threading.enumerate())


def test_quick_gil_handoff_holds_until_the_last_overlapping_block_ends() -> None:
    before = sys.getswitchinterval()
    first, second = quick_gil_handoff(0.001), quick_gil_handoff(0.0002)
    first.__enter__()
    assert sys.getswitchinterval() == pytest.approx(0.001)
    second.__enter__()
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    first.__exit__(None, None, None)  # not the last one: stays low
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == pytest.approx(before)
    with quick_gil_handoff(), quick_gil_handoff(1.0):  # never raises the interval
        assert sys.getswitchinterval() == pytest.approx(ingest_scan.GIL_SWITCH_SECONDS)
    assert sys.getswitchinterval() == pytest.approx(before)


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_arbitrary_bytes_never_raise(chunks: list[bytes]) -> None:
    scanner = HourScanner(HOUR0, PIPELINE_VERSION)
    out: list[ScanOutput] = []
    for chunk in chunks:
        out.extend(scanner.feed(chunk))
    out.extend(scanner.close())
    assert scanner.stats.sha256 == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert scanner.stats.truncated == any(isinstance(p, ScanProblem) for p in out)


_LINE_PARTS = st.sampled_from(
    [
        b'"PullRequestEvent"',
        b'{"id":"1","type":"PullRequestEvent","payload":{"number":1}}',
        b'{"id":"2","type":"PushEvent"}',
        b"[1,2]",
        b"{",
        b"\xff",
        b"\n",
        b"",
        b" ",
        b'"repo":{"name":"a/b"}',
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(_LINE_PARTS, max_size=40),
    chunk=st.integers(min_value=1, max_value=64),
    limit=st.integers(min_value=1, max_value=200),
)
def test_arbitrary_text_in_valid_gzip(parts: list[bytes], chunk: int, limit: int) -> None:
    text = b"".join(parts)
    data = gzip.compress(text)
    whole, scanner = scan_with_stats(data, max_line_bytes=limit)
    assert scan(data, chunk, max_line_bytes=limit) == whole
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    assert scanner.stats.lines == sum(1 for line in lines if line)
    assert not scanner.stats.truncated
    assert scanner.stats.decompressed_bytes == len(text)
    assert all(p.line_number >= 1 for p in problems(whole))
