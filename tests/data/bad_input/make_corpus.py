"""Writes the bad input corpus: the files under this directory, ``cases.yaml`` (the index
``tests/reliability/test_bad_input.py`` reads) and ``README.md`` (its table of cases).

    .venv/bin/python tests/data/bad_input/make_corpus.py

Every byte is built here, gzip included (stored deflate blocks, no compressor), so the output
is the same on every machine; a test checks that the committed corpus is what this writes.
A case is one hostile input for one entry point plus the outcome it must get; a control is a
well-formed input of the same shape that must be accepted, so that each case fails for the
reason it states and not because its surroundings were broken.
"""

from __future__ import annotations

import gzip
import json
import struct
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
HOUR = "2015-01-01-0"
SHA_A, SHA_B = "a" * 40, "b" * 40
# placeholder for the test's tmp_path: absolute paths in cases stay inside the sandbox
TMP = "{tmp}"
# look-alikes of ASCII that \d or a careless isdigit() would take
FULLWIDTH_OCTO = "".join(chr(ord(c) + 0xFEE0) for c in "octo")
FULLWIDTH_2015 = "".join(chr(ord(c) + 0xFEE0) for c in "2015")
ARABIC_ONE = "\u0661"


@dataclass
class Case:
    id: str
    attacks: str
    expect: dict[str, Any]
    file: str | None = None  # relative to this directory
    content: bytes | None = None  # the file's bytes
    args: dict[str, Any] = field(default_factory=dict)  # inline inputs

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.file is not None:
            out["file"] = self.file
        out.update(self.args)
        out["attacks"] = self.attacks
        out["expect"] = self.expect
        return out


# -- bytes -----------------------------------------------------------------------------------


def gzip_member(data: bytes) -> bytes:
    """One gzip member holding ``data`` in stored (uncompressed) deflate blocks."""
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no flags, mtime 0
    pieces = [data[i : i + 0xFFFF] for i in range(0, len(data), 0xFFFF)] or [b""]
    blocks = b"".join(
        bytes([i == len(pieces) - 1]) + struct.pack("<HH", len(p), 0xFFFF ^ len(p)) + p
        for i, p in enumerate(pieces)
    )
    return header + blocks + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def deflated(data: bytes) -> bytes:
    """A compressed gzip member, for the huge inputs (equal when decompressed, whatever zlib)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def pr_event(number: Any = 7, repo: Any = "octo/hello", event_id: str = "2489651045") -> dict:
    """A PullRequestEvent as GH Archive records it (full payload, a merge)."""
    pr = {
        "url": f"https://api.github.com/repos/octo/hello/pulls/{number}",
        "number": number,
        "state": "closed",
        "title": "Fix the greeting",
        "user": {"login": "octocat"},
        "body": "Fixes #1",
        "merged": True,
        "additions": 3,
        "head": {"ref": "fix", "sha": SHA_A, "repo": {"full_name": "octocat/hello"}},
        "base": {"ref": "main", "sha": SHA_B, "repo": {"full_name": "octo/hello"}},
    }
    return {
        "id": event_id,
        "type": "PullRequestEvent",
        "actor": {"id": 1, "login": "octocat"},
        "repo": {"id": 2, "name": repo},
        "payload": {"action": "closed", "number": number, "pull_request": pr},
        "public": True,
        "created_at": "2015-01-01T00:00:01Z",
        "org": {"id": 3, "login": "octo"},
    }


PUSH = compact(
    {
        "id": "2489651044",
        "type": "PushEvent",
        "actor": {"login": "octocat"},
        "repo": {"name": "octo/hello"},
        "payload": {"size": 1},
        "created_at": "2015-01-01T00:00:00Z",
    }
)
GOOD_1 = compact(pr_event(1, event_id="2489651046"))
GOOD_2 = compact(pr_event(2, event_id="2489651047"))


def hour_body(bad: bytes) -> bytes:
    """A push, PR #1, the bad line, PR #2: two records must survive any one bad line."""
    return b"\n".join([PUSH, GOOD_1, bad, GOOD_2]) + b"\n"


def edited(change: Any) -> bytes:
    """The PR event line after ``change(event)`` edited it in place."""
    event = pr_event()
    change(event)
    return compact(event)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CLEAN = hour_body(compact(pr_event(3, event_id="2489651048")))
CLEAN_GZ = gzip_member(CLEAN)


# -- gharchive: HourScanner through Ingestor.ingest_hour ---------------------------------------


def _set(path: str, value: Any) -> Any:
    def change(event: dict) -> None:
        *parents, last = path.split(".")
        target = event
        for name in parents:
            target = target[name]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()


def _two(*changes: Any) -> Any:
    def change(event: dict) -> None:
        for each in changes:
            each(event)

    return change


def gharchive_cases() -> list[Case]:
    def hour(
        name: str, data: bytes, attacks: str, status: str, published: int, problems: dict, **kw
    ) -> Case:
        # line: where the dead letters say the problem is (0: the gzip stream as a whole)
        expect = {"status": status, "published": published, "problems": problems, "line": 0}
        expect.update(kw.pop("expect", {}))
        return Case(name, attacks, expect, f"gharchive/{HOUR}.{name}.json.gz", data, kw)

    def line(name: str, bad: bytes, attacks: str, reason: str) -> Case:
        data = gzip_member(hour_body(bad))
        return hour(name, data, attacks, "done", 2, {reason: 1}, expect={"line": 3})

    crc_at, isize_at = len(CLEAN_GZ) - 8, len(CLEAN_GZ) - 4
    first_block_len = 10 + 1  # header, then the stored block's first byte: LEN follows
    two_events = b"\n".join([PUSH, GOOD_1]) + b"\n"
    cut_inside_line = 10 + 5 + len(two_events) + 20  # 20 bytes into line 3
    flip = bytearray(CLEAN_GZ)
    flip[crc_at] ^= 0xFF
    bad_isize = bytearray(CLEAN_GZ)
    bad_isize[isize_at] ^= 0x01
    bad_nlen = bytearray(CLEAN_GZ)
    bad_nlen[first_block_len + 2] ^= 0xFF
    bad_method = bytearray(CLEAN_GZ)
    bad_method[2] = 0x07
    long_line = compact(pr_event(9) | {"padding": "x" * 4096})
    bomb = '{"PullRequestEvent":' + nested(2000) + "}"
    cases = [
        hour("empty-file", b"", "a 0-byte hour file", "partial", 0, {"truncated-gzip": 1}),
        hour(
            "plain-json-not-gzip",
            CLEAN,
            "an uncompressed hour named .json.gz",
            "partial",
            0,
            {"corrupt-gzip": 1},
            expect={"error_match": "not a gzip member"},
        ),
        hour(
            "cut-inside-header",
            CLEAN_GZ[:6],
            "a download cut inside the gzip header",
            "partial",
            0,
            {"truncated-gzip": 1},
        ),
        hour(
            "cut-inside-a-line",
            CLEAN_GZ[:cut_inside_line],
            "a download cut in the middle of a line",
            "partial",
            1,
            {"truncated-gzip": 1},
            expect={"error_match": "dropped partial line 3"},
        ),
        hour(
            "cut-before-trailer",
            CLEAN_GZ[:-8],
            "all data but no CRC32 / ISIZE trailer",
            "partial",
            3,
            {"truncated-gzip": 1},
        ),
        hour(
            "bad-crc",
            bytes(flip),
            "the CRC32 of the data does not match",
            "partial",
            2,
            {"corrupt-gzip": 1},
            expect={"error_match": "checksum"},
        ),
        hour(
            "bad-isize",
            bytes(bad_isize),
            "the ISIZE length check does not match",
            "partial",
            2,
            {"corrupt-gzip": 1},
            expect={"error_match": "checksum"},
        ),
        hour(
            "bad-stored-block-length",
            bytes(bad_nlen),
            "a deflate stored block whose NLEN is not ~LEN",
            "partial",
            0,
            {"corrupt-gzip": 1},
            expect={"error_match": "Invalid deflate block"},
        ),
        hour(
            "bad-block-type",
            CLEAN_GZ[:10] + b"\x07" + b"\x00" * 32,
            "a deflate block of the reserved type 3",
            "partial",
            0,
            {"corrupt-gzip": 1},
            expect={"error_match": "Invalid deflate block"},
        ),
        hour(
            "bad-magic",
            b"\x1f\x8c" + CLEAN_GZ[2:],
            "a gzip header with the wrong magic bytes",
            "partial",
            0,
            {"corrupt-gzip": 1},
            expect={"error_match": "not a gzip member at compressed byte 0"},
        ),
        hour(
            "bad-method",
            bytes(bad_method),
            "a gzip header naming an unknown compression method",
            "partial",
            0,
            {"corrupt-gzip": 1},
            expect={"error_match": "unsupported compress method"},
        ),
        hour(
            "garbage-after-member",
            CLEAN_GZ + b"<html>502 Bad Gateway</html>\n",
            "an error page appended to a complete member",
            "partial",
            3,
            {"corrupt-gzip": 1},
            expect={"error_match": "member 2"},
        ),
        hour(
            "second-member-cut",
            CLEAN_GZ + CLEAN_GZ[:40],
            "a second gzip member cut short",
            "partial",
            3,
            {"truncated-gzip": 1},
            expect={"error_match": "inside member 2"},
        ),
        line(
            "line-not-utf8",
            GOOD_1.replace(b"Fix the greeting", b"Fix the gr\xff\xfeeting"),
            "raw non-UTF-8 bytes inside a JSON string",
            "malformed-json",
        ),
        line(
            "line-lone-surrogate",
            GOOD_1.replace(b"Fix the greeting", b"Fix \\ud800 greeting"),
            "a JSON escape of a lone UTF-16 surrogate",
            "malformed-json",
        ),
        line(
            "line-raw-nul",
            GOOD_1.replace(b"Fix the greeting", b"Fix\x00greeting"),
            "a raw NUL byte inside a string",
            "malformed-json",
        ),
        line(
            "line-truncated-json",
            GOOD_1[: len(GOOD_1) // 2],
            "a PullRequestEvent line cut in half",
            "malformed-json",
        ),
        line(
            "line-nested-too-deep",
            bomb.encode(),
            "JSON nested 2000 levels deep, past the parser's limit",
            "malformed-json",
        ),
        line(
            "line-infinite-number",
            GOOD_1.replace(b'"additions":3', b'"additions":1e400'),
            "a number that overflows a double",
            "malformed-json",
        ),
        line(
            "line-bom",
            b"\xef\xbb\xbf" + GOOD_1,
            "a UTF-8 byte order mark before the JSON",
            "malformed-json",
        ),
        line(
            "line-json-array",
            b'["PullRequestEvent",{"number":7}]',
            "valid JSON that is an array, not an event",
            "not-an-object",
        ),
        line(
            "no-pr-number",
            edited(
                _two(_set("payload.number", _DELETE), _set("payload.pull_request.number", _DELETE))
            ),
            "a PullRequestEvent without any PR number",
            "missing-pr-number",
        ),
        line(
            "pr-number-string",
            edited(_set("payload.number", "7")),
            'a PR number given as the string "7"',
            "invalid-record",
        ),
        line(
            "pr-number-bool",
            edited(_set("payload.number", True)),
            "a PR number given as true",
            "invalid-record",
        ),
        line(
            "pr-number-float",
            edited(_set("payload.number", 7.5)),
            "a fractional PR number",
            "invalid-record",
        ),
        line(
            "pr-number-zero",
            edited(_set("payload.number", 0)),
            "PR number 0 (numbers start at 1)",
            "invalid-record",
        ),
        line(
            "pr-number-negative",
            edited(_set("payload.number", -7)),
            "a negative PR number",
            "invalid-record",
        ),
        line(
            "pr-number-over-int32",
            edited(_set("payload.number", 2**31)),
            "PR number 2**31, past GitHub's int32 ids",
            "invalid-record",
        ),
        line(
            "pr-number-huge",
            edited(_set("payload.number", 10**30)),
            "a PR number past 64 bits (parsed as a float)",
            "invalid-record",
        ),
        line(
            "repo-dotdot",
            edited(_set("repo.name", "octo/..")),
            "repository name 'octo/..'",
            "bad-repo-name",
        ),
        line(
            "repo-traversal",
            edited(_set("repo.name", "../../etc/passwd")),
            "a repository name that climbs directories",
            "bad-repo-name",
        ),
        line(
            "repo-absolute",
            edited(_set("repo.name", "/etc/passwd")),
            "an absolute path as repository name",
            "bad-repo-name",
        ),
        line(
            "repo-space",
            edited(_set("repo.name", "octo/hello world")),
            "a space in the repository name",
            "bad-repo-name",
        ),
        line(
            "repo-control-chars",
            edited(_set("repo.name", "octo/hel\x00lo\x1b[2J")),
            "NUL and a terminal escape in the repository name",
            "bad-repo-name",
        ),
        line(
            "repo-fullwidth",
            edited(_set("repo.name", FULLWIDTH_OCTO + "/hello")),
            "full-width letters that look like ASCII",
            "bad-repo-name",
        ),
        line(
            "repo-missing",
            edited(_set("repo", _DELETE)),
            "an event without a repository",
            "bad-repo-name",
        ),
        line(
            "repo-not-string",
            edited(_set("repo.name", 42)),
            "a repository name that is a number",
            "bad-repo-name",
        ),
        line(
            "pull-request-not-object",
            edited(_set("payload.pull_request", "nope")),
            "payload.pull_request that is a string",
            "invalid-record",
        ),
        line(
            "bad-base-sha",
            edited(_set("payload.pull_request.base.sha", "HEAD")),
            "a base commit that is no SHA",
            "invalid-record",
        ),
        line(
            "bad-created-at",
            edited(_set("created_at", "yesterday")),
            "a created_at that is no timestamp",
            "invalid-record",
        ),
        hour(
            "huge-line",
            gzip_member(hour_body(long_line)),
            "a line longer than max_line_bytes between good ones",
            "done",
            2,
            {"line-too-long": 1},
            max_line_bytes=1024,
            expect={"line": 3},
        ),
        hour(
            "huge-last-line-no-newline",
            gzip_member(b"\n".join([PUSH, GOOD_1, GOOD_2, long_line])),
            "a last line over max_line_bytes, without a newline",
            "done",
            2,
            {"line-too-long": 1},
            max_line_bytes=1024,
            expect={"line": 4},
        ),
    ]
    cases.append(
        Case(
            "file-name-without-hour",
            "a --source file whose name says no hour",
            {"raises": "ValueError", "match": "cannot tell which GH Archive hour"},
            "gharchive/no-hour-here.json.gz",
            CLEAN_GZ,
            {"entry": "plan_sources"},
        )
    )
    return cases


# -- records: one topic value through StageRunner ------------------------------------------------


def record_raw_cases() -> list[Case]:
    def raw(name: str, data: bytes, attacks: str, match: str, gzipped: bool = False) -> Case:
        suffix = ".json.gz" if gzipped else ".bin"
        content = deflated(data) if gzipped else data
        args = {"gzipped": True} if gzipped else {}
        expect = {"dlq": "ValidationError", "match": match}
        return Case(name, attacks, expect, f"records/raw/{name}{suffix}", content, args)

    return [
        raw("empty-value", b"", "a record with an empty value", "Invalid JSON"),
        raw("not-json", b"\xff\xfe not json", "bytes that are not JSON", "Invalid JSON"),
        raw(
            "not-utf8-in-string",
            b'{"pipeline_version":1,"repo":"octo/h\xffllo","number":1}',
            "non-UTF-8 bytes inside a JSON string",
            "Invalid JSON",
        ),
        raw(
            "lone-surrogate",
            b'{"pipeline_version":1,"repo":"octo/\\ud800","number":1}',
            "a lone UTF-16 surrogate escape",
            "Invalid JSON",
        ),
        raw(
            "truncated-object",
            b'{"pipeline_version":1,"repo":"octo/he',
            "a value cut short",
            "Invalid JSON",
        ),
        raw("json-null", b"null", "the JSON value null", "Input should be an object"),
        raw("json-array", b"[]", "a JSON array instead of an object", "Input should be an object"),
        raw(
            "json-string",
            b'"octo/hello#1"',
            "a JSON string (the key) as value",
            "Input should be an object",
        ),
        raw("empty-object", b"{}", "an object without any field", "Field required"),
        raw(
            "nested-too-deep",
            ('{"pipeline_version":' + nested(5000) + "}").encode(),
            "JSON nested 5000 levels deep",
            "recursion limit",
        ),
        raw(
            "huge-value",
            b'{"pipeline_version":1,"padding":"' + b"x" * (512 << 10) + b'"}',
            "a 512 KiB value (kept whole in its dead letter)",
            "Field required",
            gzipped=True,
        ),
        raw(
            "schema-version-99",
            b'{"schema_version":99,"pipeline_version":1}',
            "a schema version from the future",
            "schema_version 99 is not supported",
        ),
        raw(
            "pipeline-version-zero",
            b'{"pipeline_version":0}',
            "pipeline version 0",
            "pipeline_version",
        ),
        raw(
            "infinity",
            b'{"pipeline_version":Infinity}',
            "a non-JSON Infinity literal",
            "pipeline_version|Invalid JSON",
        ),
    ]


def record_field_cases() -> list[Case]:
    """One field of the topic's valid example record replaced (``set``) or added."""

    def bad(name: str, topic: str, change: dict, attacks: str, field_name: str) -> Case:
        content = json.dumps({"topic": topic, "set": change}, ensure_ascii=True, indent=1) + "\n"
        expect = {"dlq": "ValidationError", "field": field_name}
        return Case(name, attacks, expect, f"records/fields/{name}.json", content.encode())

    events, candidates = "gharchive.pull-request-events", "pr.candidates"
    return [
        bad("event-repo-dotdot", events, {"repo": "octo/.."}, "repository 'octo/..'", "repo"),
        bad("event-pr-zero", events, {"number": 0}, "PR number 0", "number"),
        bad("event-pr-over-int32", events, {"number": 2**31}, "PR number 2**31", "number"),
        bad("event-pr-bool", events, {"number": True}, "PR number true", "number"),
        bad("event-pr-string", events, {"number": "7"}, 'PR number "7"', "number"),
        bad(
            "event-hour-fullwidth-digits",
            events,
            {"gharchive_hour": FULLWIDTH_2015 + "-01-01-0"},
            "an hour name in full-width digits",
            "gharchive_hour",
        ),
        bad("candidate-repo-space", candidates, {"repo": "octo/hello world"}, "a space", "repo"),
        bad(
            "enriched-repo-control",
            "pr.enriched",
            {"repo": "octo/hel\x00lo"},
            "a NUL in the repository name",
            "repo",
        ),
        bad(
            "classified-extra-field",
            "pr.classified",
            {"__proto__": {"polluted": True}},
            "an unknown field",
            "__proto__",
        ),
        bad(
            "patches-instance-traversal",
            "pr.patches",
            {"instance_id": "../../etc-1"},
            "an instance id that climbs directories",
            "instance_id",
        ),
        bad(
            "validated-instance-absolute",
            "tasks.validated",
            {"instance_id": "/etc/passwd"},
            "an absolute path as instance id",
            "instance_id",
        ),
        bad(
            "scored-instance-dotdot-middle",
            "tasks.scored",
            {"instance_id": "a/../../b-1"},
            "'a/../../b-1' as instance id",
            "instance_id",
        ),
        bad(
            "scored-test-list-not-json",
            "tasks.scored",
            {"FAIL_TO_PASS": "[not json"},
            "a FAIL_TO_PASS string that is not a JSON list",
            "FAIL_TO_PASS",
        ),
        bad(
            "exported-instance-too-long",
            "tasks.exported",
            {"instance_id": "a" * 400},
            "a 400-character instance id",
            "instance_id",
        ),
        bad(
            "request-agent-wrong-shape",
            "harness.requests",
            {"agent": ["mini", "run"]},
            "an agent that is a list",
            "agent",
        ),
    ]


# -- tasks: export and the harness ------------------------------------------------------------


def swebench_row(instance_id: str = "octo__hello-1", **over: Any) -> dict[str, Any]:
    row = {
        "repo": "octo/hello",
        "instance_id": instance_id,
        "base_commit": SHA_B,
        "patch": "diff --git a/hello.py b/hello.py\n--- a/hello.py\n+++ b/hello.py\n"
        "@@ -1 +1 @@\n-print('helo')\n+print('hello')\n",
        "test_patch": "diff --git a/test_hello.py b/test_hello.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/test_hello.py\n@@ -0,0 +1,2 @@\n+def test_hello():\n+    pass\n",
        "problem_statement": "The greeting is misspelt.",
        "hints_text": "",
        "created_at": "2015-01-01T00:00:01Z",
        "version": "1.0",
        "FAIL_TO_PASS": ["test_hello.py::test_hello"],
        "PASS_TO_PASS": [],
        "environment_setup_commit": None,
    }
    row.update(over)
    return row


def workspace(**over: Any) -> dict[str, Any]:
    row = swebench_row()
    data = {
        "schema_version": 1,
        "id": "octo-hello-1",
        "repo": row["repo"],
        "fail_to_pass": ["python -m pytest test_hello.py::test_hello"],
        "pass_to_pass": [],
        "prompt": row["problem_statement"],
        **row,
        "number": 1,
    }
    data.update(over)
    return data


def dataset_cases() -> list[Case]:
    good = json.dumps(swebench_row()) + "\n"

    def rows(name: str, second: str | bytes, attacks: str, match: str) -> Case:
        tail = second if isinstance(second, bytes) else second.encode()
        content = good.encode() + tail + b"\n"
        expect = {"raises": "ValueError", "match": match}
        return Case(name, attacks, expect, f"tasks/dataset/{name}.jsonl", content)

    def row(name: str, attacks: str, match: str, **over: Any) -> Case:
        return rows(name, json.dumps(swebench_row(**over)), attacks, match)

    return [
        row("instance-traversal", "'../../etc-1'", "row 1", instance_id="../../etc-1"),
        row("instance-absolute", "an absolute path", "row 1", instance_id=f"{TMP}/escape-1"),
        row("instance-nul", "a NUL byte", "row 1", instance_id="octo\x00hello-1"),
        row("instance-too-long", "400 characters", "row 1", instance_id="a" * 400 + "-1"),
        row(
            "instance-without-number",
            "an id without '-<PR number>'",
            "does not end in '-<PR number>'",
            instance_id="octo__hello",
        ),
        row("pr-number-zero", "PR number 0", "row 1.*number", instance_id="octo__hello-0"),
        row(
            "pr-number-huge",
            "PR number 99999999999",
            "row 1.*number",
            instance_id="octo__hello-99999999999",
        ),
        row("repo-traversal", "repository '../x'", "row 1.*repo", repo="../x"),
        row("repo-space", "a space in the repository", "row 1.*repo", repo="octo/hello world"),
        row(
            "test-list-not-json",
            "FAIL_TO_PASS as a string that is no JSON list",
            "row 1.*test list string is not valid JSON",
            FAIL_TO_PASS="[not json",
        ),
        row(
            "created-at-garbage",
            "a created_at that is no timestamp",
            "row 1.*created_at",
            created_at="yesterday",
        ),
        row(
            "same-dir-other-task",
            "'octo__hello-1' and 'octo-hello-1' share the directory octo-hello-1",
            "another row already maps to task directory",
            instance_id="octo-hello-1",
        ),
        rows(
            "line-json-array", "[1, 2]", "a JSON array as a row", "line 2: expected a JSON object"
        ),
        rows("line-truncated", good[:60], "a row cut short", "line 2: invalid JSON"),
        rows("line-not-utf8", b'{"repo": "octo/h\xffllo"}', "non-UTF-8 bytes", "not UTF-8"),
        rows(
            "line-nested-too-deep",
            nested(10_000),
            "JSON nested 10000 levels deep",
            "line 2: .*(recursion|nested)",
        ),
    ]


def workspace_cases() -> list[Case]:
    def ws(name: str, content: bytes | str, attacks: str, match: str, **kw: Any) -> Case:
        data = content.encode() if isinstance(content, str) else content
        expect = {"raises": "ValueError", "match": match}
        return Case(name, attacks, expect, f"tasks/workspace/{name}/workspace.yaml", data, kw)

    def field(name: str, attacks: str, match: str, **over: Any) -> Case:
        return ws(name, yaml.safe_dump(workspace(**over), sort_keys=False), attacks, match)

    valid = yaml.safe_dump(workspace(), sort_keys=False)
    laughs = "".join(
        f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n"
        for b, a in zip("abcdefgh", "bcdefghi", strict=True)
    )
    return [
        field("id-traversal", "task id '../../etc'", "not a valid workspace.*id", id="../../etc"),
        field("id-absolute", "an absolute task id", "not a valid workspace.*id", id=f"{TMP}/x"),
        field(
            "id-dotdot-middle", "task id 'a/../../b'", "not a valid workspace.*id", id="a/../../b"
        ),
        field("id-nul", "a NUL in the task id", "not a valid workspace.*id", id="a\x00b"),
        field("id-too-long", "a 300-character task id", "not a valid workspace.*id", id="x" * 300),
        field(
            "instance-traversal",
            "instance id '../../etc-1'",
            "not a valid workspace.*instance_id",
            instance_id="../../etc-1",
        ),
        field(
            "repo-traversal", "repository '../../x'", "not a valid workspace.*repo", repo="../../x"
        ),
        ws(
            "python-tag",
            valid.replace(
                "prompt: ",
                "prompt: !!python/object/apply:os.system ['touch pwned-workspace']\n# ",
                1,
            ),
            "a PyYAML python/object/apply tag running a shell command",
            "could not determine a constructor",
            marker="pwned-workspace",
        ),
        ws(
            "alias-bomb",
            "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + laughs
            + "install_config: *i\n",
            "nine levels of nine aliases: 387 million values from 1 kB",
            "alias bomb",
        ),
        ws("nested-too-deep", "id: " + nested(1_500) + "\n", "YAML nested 1500 levels", "nested"),
        ws(
            "not-utf8",
            valid.encode().replace(b"misspelt", b"missp\xe9lt"),
            "Latin-1 bytes in a UTF-8 file",
            "not valid YAML.*utf-8",
        ),
        ws("not-a-mapping", "- id: octo-hello-1\n", "a YAML list", "expected a mapping, got list"),
    ]


def id_cases() -> list[Case]:
    """Task ids fed to export's task_dir_path / write_task_dir, TaskWorkspace, and the harness's
    write_task_outputs. ``export``: ValueError (refused), OSError or ``inside`` (a direct child
    of the output directory); ``harness``: ``inside`` or OSError."""

    def hostile(name: str, value: str, attacks: str, export: str, harness: str = "inside") -> Case:
        expect = {"export": export, "workspace": "ValidationError", "harness": harness}
        return Case(name, attacks, expect, args={"value": value})

    return [
        hostile("id-parent-parent", "../../etc", "climbing two directories", "ValueError"),
        hostile("id-absolute", f"{TMP}/escaped", "an absolute path", "ValueError"),
        hostile("id-dotdot-middle", "a/../../b", "a path that climbs out midway", "ValueError"),
        hostile("id-dotdot", "..", "the parent directory itself", "ValueError"),
        hostile("id-dot", ".", "the output directory itself", "ValueError"),
        hostile("id-empty", "", "an empty id", "ValueError"),
        hostile("id-nul", "a\x00b", "a NUL byte", "ValueError"),
        hostile("id-subdirectory", "sub/dir", "a nested path", "ValueError"),
        hostile("id-newline", "a\nb", "a line break", "inside"),
        hostile("id-backslashes", "..\\..\\windows", "Windows separators", "inside"),
        hostile("id-too-long", "x" * 300, "a 300-character name", "OSError", "inside"),
    ]


def request_cases() -> list[Case]:
    def request(name: str, attacks: str, expect: dict, **over: Any) -> Case:
        value = {
            "pipeline_version": 1,
            "request_id": "req-1",
            "instance_id": "octo__gone-1",
            "agent": {"name": "idle", "command": "true"},
        }
        value.update(over)
        content = json.dumps(value, indent=1) + "\n"
        return Case(name, attacks, expect, f"tasks/requests/{name}.json", content.encode())

    def refused(name: str, attacks: str, field_name: str, **over: Any) -> Case:
        return request(name, attacks, {"dlq": "ValidationError", "field": field_name}, **over)

    return [
        refused(
            "request-id-traversal",
            "request id '../../escape' (the harness's output subdirectory)",
            "request_id",
            request_id="../../escape",
        ),
        refused(
            "request-id-absolute",
            "an absolute request id",
            "request_id",
            request_id=f"{TMP}/escape",
        ),
        refused("request-id-dotdot", "request id '..'", "request_id", request_id=".."),
        refused("request-id-subdirectory", "request id 'a/b'", "request_id", request_id="a/b"),
        refused(
            "request-instance-traversal",
            "instance id '../../etc-1'",
            "instance_id",
            instance_id="../../etc-1",
        ),
        request(
            "request-missing-task",
            "a well-formed request for a task that is not there",
            {"status": "setup_error", "match": "unreadable task"},
        ),
    ]


def planted_cases() -> list[Case]:
    """Links planted in the export directory before a task is exported."""

    def planted(name: str, link: str, target: str, attacks: str, match: str) -> Case:
        expect = {"raises": "OSError|ValueError", "match": match}
        return Case(name, attacks, expect, args={"link": link, "target": target})

    return [
        planted(
            "dataset-symlink",
            "dataset.jsonl",
            "empty-file",
            "dataset.jsonl is a symlink to an (empty) file outside",
            "symbolic links",
        ),
        planted(
            "dataset-dangling-symlink",
            "dataset.jsonl",
            "missing",
            "dataset.jsonl is a symlink to a path outside that does not exist yet",
            "symbolic links",
        ),
        planted(
            "task-dir-symlink",
            "octo-hello-1",
            "directory",
            "the task directory is a symlink to a directory outside",
            "would not be inside",
        ),
    ]


# -- pr-files: streams.pipeline.ledger.read_pr_file --------------------------------------


def pr_file_cases() -> list[Case]:
    good = b'{"repo": "octo/hello", "pr": 1}\n'

    def line(name: str, bad: bytes | str, attacks: str, match: str, gzipped: bool = False) -> Case:
        data = good + (bad.encode() if isinstance(bad, str) else bad) + b"\n"
        suffix, content, args = ".jsonl", data, {}
        if gzipped:
            suffix, content, args = ".jsonl.gz", deflated(data), {"gzipped": True}
        expect = {"raises": "PrFileError", "match": f":2: .*{match}"}
        return Case(name, attacks, expect, f"pr_files/{name}{suffix}", content, args)

    def pr(name: str, value: str, attacks: str) -> Case:
        return line(name, f'{{"repo": "octo/hello", "pr": {value}}}', attacks, "number")

    def repo(name: str, value: str, attacks: str) -> Case:
        return line(name, json.dumps({"repo": value, "pr": 1}), attacks, "repo")

    return [
        line("not-utf8", b'{"repo": "octo/h\xe9llo", "pr": 1}', "Latin-1 bytes", "utf-8"),
        line("nested-too-deep", nested(10_000), "JSON nested 10000 levels", "recursion"),
        line("json-array", "[1, 2]", "a JSON array", 'expected a JSON object with "repo" and "pr"'),
        line("missing-pr", '{"repo": "octo/hello"}', "no PR number", '"pr"'),
        line(
            "truncated",
            '{"repo": "octo/hel',
            "a line cut short",
            "Invalid control character|Unterminated string",
        ),
        line(
            "unknown-status",
            json.dumps({"repo": "octo/hello", "pr": 2, "stage": "export", "status": "done!"}),
            "a swe-stream line with an unknown status",
            "status",
        ),
        repo("repo-traversal", "../../etc", "a repository that climbs directories"),
        repo("repo-space", "octo/hello world", "a space in the repository"),
        repo("repo-control", "octo/hel\x07lo", "a BEL character in the repository"),
        pr("pr-zero", "0", "PR number 0"),
        pr("pr-negative", "-1", "a negative PR number"),
        pr("pr-over-int32", str(2**31), "PR number 2**31"),
        pr("pr-bool", "true", "PR number true"),
        pr("pr-string", '"7"', 'PR number "7"'),
        pr("pr-fraction", "7.5", "a fractional PR number"),
        line(
            "huge-line",
            "x" * (2 << 20),
            "a 2 MiB line of garbage",
            "Expecting value",
            gzipped=True,
        ),
    ]


# -- config: streams.core.settings.load_settings ----------------------------------------


def config_cases() -> list[Case]:
    def config(name: str, text: str | bytes, attacks: str, raises: str, match: str, **kw) -> Case:
        data = text.encode() if isinstance(text, str) else text
        expect = {"raises": raises, "match": match}
        return Case(name, attacks, expect, f"config/{name}.yaml", data, kw)

    def tag(name: str, text: str, attacks: str, marker: str | None = None) -> Case:
        kw = {"marker": marker} if marker else {}
        return config(
            name, text, attacks, "ConfigFileError", "could not determine a constructor", **kw
        )

    laughs = "".join(
        f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n"
        for b, a in zip("abcdefgh", "bcdefghi", strict=True)
    )
    return [
        tag(
            "python-object-apply",
            "kafka:\n  bootstrap: !!python/object/apply:os.system ['touch pwned-apply']\n",
            "a tag that would run os.system",
            "pwned-apply",
        ),
        tag(
            "python-object-new",
            "kafka:\n  bootstrap: !!python/object/new:subprocess.Popen [[touch, pwned-new]]\n",
            "a tag that would start a process",
            "pwned-new",
        ),
        tag(
            "python-name", "worker:\n  app_id: !!python/name:os.system\n", "a tag naming a function"
        ),
        tag("python-module", "worker:\n  app_id: !!python/module:os\n", "a tag importing a module"),
        tag("custom-tag", "github:\n  token: !vault ghp_secret\n", "an application-specific tag"),
        config(
            "alias-bomb",
            "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + laughs
            + "prefilter:\n  bots: *i\n",
            "a billion laughs: 387 million values from 1 kB",
            "ConfigFileError",
            "alias bomb",
        ),
        config(
            "alias-loop",
            "prefilter:\n  bots: &loop [*loop]\n",
            "a list that contains itself",
            "ConfigFileError",
            "alias bomb",
        ),
        config(
            "nested-too-deep",
            "kafka: " + nested(1_500) + "\n",
            "YAML nested 1500 levels",
            "ConfigFileError",
            "nested too deeply",
        ),
        config(
            "not-utf8",
            b"kafka:\n  bootstrap: caf\xe9:9092\n",
            "Latin-1 bytes",
            "ConfigFileError",
            "not UTF-8",
        ),
        config(
            "nul-byte",
            "kafka:\n  bootstrap: a\x00b\n",
            "a raw NUL character",
            "ConfigFileError",
            "not valid YAML",
        ),
        config(
            "tab-indent",
            "kafka:\n\tbootstrap: x:9092\n",
            "tab indentation",
            "ConfigFileError",
            "not valid YAML",
        ),
        config(
            "a-list", "- kafka\n- worker\n", "a list, not a mapping", "ConfigFileError", "not list"
        ),
        config("a-string", "kafka\n", "a scalar, not a mapping", "ConfigFileError", "not str"),
        config(
            "unknown-section",
            "kafak:\n  bootstrap: x:9092\n",
            "a misspelt section",
            "ValidationError",
            "kafak",
        ),
        config(
            "wrong-type",
            "kafka:\n  partitions: many\n",
            "a word where a number goes",
            "ValidationError",
            "kafka.partitions",
        ),
        config(
            "out-of-range",
            "kafka:\n  partitions: 1000000\n",
            "a partition count past the limit",
            "ValidationError",
            "kafka.partitions",
        ),
    ]


# -- keys: the schemas helpers -------------------------------------------------------------------


def key_cases() -> list[Case]:
    def key(name: str, call: str, args: list, attacks: str, match: str) -> Case:
        expect = {"raises": "ValueError", "match": match}
        return Case(name, attacks, expect, args={"call": call, "args": args})

    parse, make, repo = "parse_pr_key", "pr_key", "validate_repo_name"
    hour = "parse_gharchive_hour"
    return [
        key("key-traversal", parse, ["../../etc#1"], "a key that climbs directories", "invalid"),
        key("key-repo-dotdot", parse, ["octo/..#1"], "repository '..'", "'.' or '..'"),
        key("key-pr-zero", parse, ["octo/hello#0"], "PR number 0", "invalid PR key"),
        key("key-pr-negative", parse, ["octo/hello#-1"], "a negative number", "invalid PR key"),
        key("key-pr-over-int32", parse, ["octo/hello#2147483648"], "2**31", "out of range"),
        key("key-space", parse, ["octo/hello world#1"], "a space", "invalid PR key"),
        key("key-nul", parse, ["octo/hel\x00lo#1"], "a NUL byte", "invalid PR key"),
        key("key-trailing-newline", parse, ["octo/hello#1\n"], "a trailing newline", "invalid"),
        key("key-no-number", parse, ["octo/hello"], "no '#number'", "invalid PR key"),
        key("key-two-numbers", parse, ["octo/hello#1#2"], "two '#'", "invalid PR key"),
        key(
            "key-fullwidth",
            parse,
            [FULLWIDTH_OCTO + "/hello#1"],
            "full-width letters",
            "invalid PR key",
        ),
        key(
            "key-arabic-digit",
            parse,
            ["octo/hello#" + ARABIC_ONE],
            "an Arabic-Indic digit",
            "invalid",
        ),
        key("make-pr-zero", make, ["octo/hello", 0], "PR number 0", "out of range"),
        key("make-pr-bool", make, ["octo/hello", True], "PR number true", "must be an int"),
        key("make-pr-over-int32", make, ["octo/hello", 2**31], "2**31", "out of range"),
        key("make-repo-traversal", make, ["../x", 1], "repository '../x'", "invalid repository"),
        key("repo-dot", repo, ["octo/."], "repository '.'", "'.' or '..'"),
        key("repo-absolute", repo, ["/etc/passwd"], "an absolute path", "invalid repository"),
        key("repo-three-parts", repo, ["octo/hello/extra"], "three path parts", "invalid"),
        key("repo-backslash", repo, ["octo\\hello"], "a backslash separator", "invalid"),
        key("repo-owner-dash", repo, ["-octo/hello"], "an owner starting with '-'", "invalid"),
        key("repo-owner-too-long", repo, ["o" * 40 + "/x"], "a 40-character owner", "invalid"),
        key(
            "hour-fullwidth",
            hour,
            [FULLWIDTH_2015 + "-01-01-0"],
            "full-width digits",
            "invalid GH Archive hour",
        ),
        key("hour-feb-30", hour, ["2015-02-30-0"], "February 30th", "invalid GH Archive hour"),
        key("hour-24", hour, ["2015-01-01-24"], "hour 24", "invalid GH Archive hour"),
        key("hour-traversal", hour, ["../2015-01-01-0"], "a path", "invalid GH Archive hour"),
    ]


# -- controls: the same shapes, well formed ------------------------------------------------------


def control_cases() -> list[Case]:
    row = json.dumps(swebench_row()) + "\n"
    return [
        Case(
            "clean-hour",
            "control: three PullRequestEvents and a push",
            {"status": "done", "published": 3, "problems": {}},
            f"controls/{HOUR}.clean.json.gz",
            CLEAN_GZ,
        ),
        Case(
            "dataset",
            "control: one SWE-bench row",
            {"task_dirs": 1},
            "controls/dataset.jsonl",
            row.encode(),
        ),
        Case(
            "workspace",
            "control: a complete workspace.yaml",
            {"id": "octo-hello-1"},
            "controls/workspace.yaml",
            yaml.safe_dump(workspace(), sort_keys=False).encode(),
        ),
        Case(
            "pr-file",
            "control: a swe-forge pr-file line",
            {"entries": 1},
            "controls/pr-file.jsonl",
            b'{"repo": "octo/hello", "pr": 1}\n',
        ),
        Case(
            "config",
            "control: a settings file",
            {"partitions": 6},
            "controls/config.yaml",
            b"kafka:\n  partitions: 6\nprefilter:\n  bots: [dependabot, renovate]\n",
        ),
    ]


SECTIONS: dict[str, tuple[str, Any]] = {
    "gharchive": (
        "GH Archive hour: `Ingestor.ingest_hour` (HourScanner), `plan_sources`",
        gharchive_cases,
    ),
    "records_raw": ("every consumed topic: `StageRunner` + `MemorySink`", record_raw_cases),
    "records_fields": ("one topic's value model: `StageRunner` + `MemorySink`", record_field_cases),
    "tasks_dataset": ("`read_dataset` + `dataset_to_task_dirs`", dataset_cases),
    "tasks_workspace": (
        "`load_workspace`, `task_dirs_to_dataset`, `HarnessEngine.evaluate`",
        workspace_cases,
    ),
    "tasks_ids": (
        "`task_dir_path`, `write_task_dir`, `TaskWorkspace`, harness `write_task_outputs`",
        id_cases,
    ),
    "tasks_requests": ("the harness stage (`harness_stages`) in `StageRunner`", request_cases),
    "tasks_planted": ("`TaskExporter.export` into a prepared output directory", planted_cases),
    "pr_files": ("`streams.pipeline.ledger.read_pr_file`", pr_file_cases),
    "config": ("`streams.core.settings.load_settings`", config_cases),
    "keys": ("`parse_pr_key`, `pr_key`, `validate_repo_name`, `parse_gharchive_hour`", key_cases),
}


def build() -> tuple[dict[str, bytes], dict[str, list[dict[str, Any]]], list[Case]]:
    """(relative path -> bytes of every corpus file, the index, the controls)."""
    files: dict[str, bytes] = {}
    index: dict[str, list[dict[str, Any]]] = {}
    for section, (_, make) in SECTIONS.items():
        index[section] = []
        ids: set[str] = set()
        for case in make():
            if case.id in ids:
                raise ValueError(f"duplicate case id {section}/{case.id}")
            ids.add(case.id)
            index[section].append(case.entry())
            if case.file is not None:
                assert case.content is not None, case.id
                files[case.file] = case.content
    controls = control_cases()
    index["controls"] = [case.entry() for case in controls]
    for case in controls:
        assert case.file is not None and case.content is not None
        files[case.file] = case.content
    return files, index, controls


HEADER = "# Generated by make_corpus.py, which also writes the files: edit that, not this.\n"


def render_index(index: dict[str, list[dict[str, Any]]]) -> str:
    return HEADER + yaml.safe_dump(index, sort_keys=False, allow_unicode=False, width=100)


def render_readme(index: dict[str, list[dict[str, Any]]]) -> str:
    total = sum(len(cases) for section, cases in index.items() if section != "controls")
    lines = [
        "# Bad input corpus",
        "",
        f"{total} hostile inputs, each fed to the real entry point it attacks by",
        "`tests/reliability/test_bad_input.py`, which asserts its outcome: a clear error (type and",
        "message), or a counted rejection (metric, hour ledger status, dead letter), and for",
        "anything that writes, that nothing appeared outside the output directory. `controls`",
        "are well-formed inputs of the same shapes, which must be accepted.",
        "",
        "`make_corpus.py` builds every file byte by byte (gzip in stored blocks; only the two huge",
        "inputs are deflated) and writes `cases.yaml`, the index the tests read, and this file; a",
        "test fails when they differ from what it writes. `{tmp}` in a value is the test's",
        "temporary directory. GH Archive hours are read in 64-byte chunks; `published` counts the",
        "records sent to Kafka; `line` is the line the dead letters name (0: the whole stream).",
        "",
    ]
    for section, cases in index.items():
        if section == "controls":
            title = "well-formed inputs that must be accepted"
        else:
            title = SECTIONS[section][0]
        lines += [f"## {section} ({len(cases)}): {title}", "", "| case | attacks | expected |"]
        lines.append("|---|---|---|")
        for case in cases:
            expect = ", ".join(f"{k}: {_short(v)}" for k, v in case["expect"].items())
            lines.append(f"| `{case['id']}` | {case['attacks']} | {expect} |")
        lines.append("")
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else value
    return text.replace("|", "\\|")


def main() -> int:
    files, index, _ = build()
    for relative, data in files.items():
        path = HERE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (HERE / "cases.yaml").write_text(render_index(index), encoding="utf-8")
    (HERE / "README.md").write_text(render_readme(index), encoding="utf-8")
    print(f"wrote {len(files)} files and {sum(map(len, index.values()))} index entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
