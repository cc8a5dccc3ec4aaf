"""node's built-in runner (``node --test``), read two ways.

**Its own TAP** (node 20's default reporter when stdout is not a terminal, or
``--test-reporter=tap``; a report of kind ``tap``), read by ``tap.parse_tap``: every test and
suite is announced with ``# Subtest:``, ``# SKIP`` / ``# TODO`` are skipped. node 20's TAP
(and its ``junit`` reporter) names no file for a test, so these ids are the title path
alone (``math > nested > multiplies``), and two files' tests of one name are one id.

**swe-stream's reporter** (``NODE_REPORTER``: a module in a ``data:`` URL, nothing to install
or write, node >= 20), kind ``node-events``: one JSON line per test event, ``{"event":
"start"|"pass"|"fail", "file", "path": [suites..., title], "skip", "todo"}``, the file from
node's own event. Ids: ``<file> > <suites> > <title>``, as the other JS runners'. Given as
both reporters (stdout and the report file, ``RUNNER_COMMANDS["node"]``), the console and
the report have the same ids. A test or suite holding other tests is no test (left out,
unless it failed with no failed test inside: a failing hook, its ``error``); pass -> passed,
fail -> failed, skip / todo -> skipped. A run killed at its timeout was in the test started
last and not ended.

``parse_node_output`` reads the events when the output has any, the TAP otherwise.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from schemas.tasks import TestStatus
from streams.evaluation.recipes.languages.javascript.runners import tap
from streams.evaluation.recipes.languages.javascript.runners.js import (
    REPO_ROOT,
    record,
    relative_path,
    test_id,
)

_REPORTER_SOURCE = (
    "export default async function*(s){const k={};for await(const e of s){const d=e.data;"
    'const t={"test:start":"start","test:pass":"pass","test:fail":"fail"}[e.type];'
    "if(!t||d.file===undefined)continue;const p=(k[d.file]??=[]);"
    'if(t==="start")p[d.nesting]=d.name;'
    "yield JSON.stringify({event:t,file:d.file,path:[...p.slice(0,d.nesting),d.name],"
    'skip:d.skip!==undefined,todo:d.todo!==undefined})+"\\n"}}'
)

# the reporter as a module specifier for ``--test-reporter=`` (quote it for a shell)
NODE_REPORTER = "data:text/javascript;base64," + base64.b64encode(_REPORTER_SOURCE.encode()).decode(
    "ascii"
)

_Key = tuple[str, tuple[str, ...]]


@dataclass
class _Events:
    ended: dict[_Key, TestStatus] = field(default_factory=dict)
    started: dict[_Key, None] = field(default_factory=dict)  # in order, not yet ended
    seen: int = 0


def _event(line: str) -> dict[str, object] | None:
    line = line.strip()
    if not line.startswith('{"event":'):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _read_events(output: str, root: str) -> _Events:
    events = _Events()
    for line in output.split("\n"):
        event = _event(line)
        if event is None:
            continue
        file, path = event.get("file"), event.get("path")
        if not isinstance(file, str) or not isinstance(path, list):
            continue
        events.seen += 1
        key = (relative_path(file, root), tuple(str(name) for name in path))
        kind = event.get("event")
        if kind == "start":
            events.started.pop(key, None)
            events.started[key] = None
            continue
        events.started.pop(key, None)
        status: TestStatus = "failed" if kind == "fail" else "passed"
        if event.get("skip") or event.get("todo"):
            status = "skipped"
        events.ended[key] = status
    return events


def _statuses(ended: dict[_Key, TestStatus]) -> dict[str, TestStatus]:
    parents: set[_Key] = set()
    failed_inside: set[_Key] = set()
    for (file, path), status in ended.items():
        for end in range(1, len(path)):
            parents.add((file, path[:end]))
            if status == "failed":
                failed_inside.add((file, path[:end]))
    statuses: dict[str, TestStatus] = {}
    for key, status in ended.items():
        file, path = key
        if key in parents:
            if status == "failed" and key not in failed_inside:
                record(statuses, test_id(file, list(path)), "error")
            continue
        record(statuses, test_id(file, list(path)), status)
    return statuses


def parse_node_events(data: str | bytes, root: str = REPO_ROOT) -> dict[str, TestStatus]:
    """Per-test statuses from ``NODE_REPORTER``'s lines; ValueError when there are none."""
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    events = _read_events(text, root)
    if not events.seen:
        raise ValueError("malformed node-events report: no event line")
    return _statuses(events.ended)


def parse_node_output(output: str) -> dict[str, TestStatus]:
    """Per-test statuses from ``node --test`` output: ``NODE_REPORTER``'s lines, else TAP."""
    events = _read_events(output, REPO_ROOT)
    if events.seen:
        return _statuses(events.ended)
    return tap.parse_tap(output)


def running_when_killed(output: str) -> str | None:
    """The test started last and not ended (``NODE_REPORTER``), else the innermost test
    announced in the TAP (``# Subtest:``) and not ended."""
    events = _read_events(output, REPO_ROOT)
    if events.seen:
        if not events.started:
            return None
        file, path = next(reversed(events.started))
        return test_id(file, list(path))
    return tap.running_when_killed(output)
