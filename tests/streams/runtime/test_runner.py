"""``swe-stream mine`` end to end: the real fixture hour plus the merge of a repository the test
makes, served from 127.0.0.1 (``streams.offline.world``), every stage in one process on the embedded
broker, validation in Docker; then the ledger commands and ``swe-stream validate`` on what it
exported."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.offline.world import OfflineWorld, offline_world
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import TASK, env_for, worker_env

pytestmark = pytest.mark.docker


@pytest.fixture
def world(tmp_path: Path, fixtures_dir: Path, base_image: str) -> Iterator[OfflineWorld]:
    with offline_world(
        tmp_path / "world", fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    ) as w:
        yield w


def swe_stream(
    env: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWE_STREAM, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def mine_once(world: OfflineWorld, env: dict[str, str], out: Path) -> str:
    args = ["mine", "--once", "--from", world.hour, "-o", str(out), "--metrics-port", "0"]
    done = swe_stream(env, *args, "--no-live")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    # quiet: no library chatter (an httpx line per request), at most one line per PR
    assert "HTTP Request:" not in done.stderr, done.stderr[-3000:]
    per_pr = Counter(re.findall(r"\b[\w.-]+/[\w.-]+#\d+\b", done.stderr))
    assert max(per_pr.values(), default=0) <= 1, per_pr.most_common(3)
    return done.stdout


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(out)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(out.rglob("*"))
        if p.is_file() and ".swe-stream" not in p.parts
    }


def test_mine_once_exports_the_one_real_task_and_a_second_run_nothing_new(
    world: OfflineWorld, tmp_path: Path, bootstrap: str
) -> None:
    out, env = tmp_path / "out", env_for(world, tmp_path / "data")
    first = mine_once(world, env, out)
    assert "stopped: the requested hours are drained (--once)" in first
    assert "PullRequestEvents published: 316" in first  # 315 real + the test repository's
    assert f"tasks exported: 1 (to {out})" in first
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "dataset.jsonl",
        TASK,
    ]
    assert sorted(p.name for p in (out / TASK).iterdir()) == [
        "checks.txt",
        "prompt.md",
        "workspace.yaml",
    ]
    (row,) = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert row["instance_id"] == "swe-stream-demo__units-1"
    assert row["FAIL_TO_PASS"] == ["tests/test_temperature.py::test_fahrenheit_to_celsius"]
    assert row["base_commit"] == world.pull_request.repo.base_sha
    workspace = yaml.safe_load((out / TASK / "workspace.yaml").read_text())
    assert workspace["patch"] == row["patch"] and "(fahrenheit - 32) * 5 / 9" in row["patch"]
    prompt = (out / TASK / "prompt.md").read_text()
    assert "194.2" in prompt and "5 / 9" not in prompt and "test_fahrenheit" not in prompt
    before = snapshot(out)

    # the ledger accounts for every PullRequestEvent of the run
    log = out / ".swe-stream" / "ledger.jsonl"
    stats = swe_stream(env, "ledger", "stats", "--file", str(log))
    assert stats.returncode == 0, stats.stderr
    lines = stats.stdout.splitlines()
    assert "  prefilter: 316" in lines
    counts = {
        line.split(":")[0].strip(): int(line.split(":")[1].split("(")[0])
        for line in lines[lines.index("  prefilter: 316") + 1 :][:3]
    }
    assert sum(counts.values()) == 316 and set(counts) == {"accepted", "ignored", "rejected"}
    assert "    exported: 1" in lines

    second = mine_once(world, env, out)
    assert "tasks exported: 0" in second
    export_line = next(line for line in second.splitlines() if line.strip().startswith("export"))
    assert export_line.split()[1] == "0", export_line  # nothing reached export again
    assert snapshot(out) == before  # same bytes, files not even rewritten

    # ledger export -> import round-trips, through a file and through Kafka
    exported = tmp_path / "processed.jsonl"
    assert (
        swe_stream(
            env, "ledger", "export", "--file", str(log), "--pr-file", str(exported)
        ).returncode
        == 0
    )
    final = exported.read_text().splitlines()
    # verdicts only: the offline world's GitHubNotFound failures would be skipped forever
    assert final and {json.loads(line)["status"] for line in final} == {"rejected", "exported"}
    copy = tmp_path / "copy.jsonl"
    assert (
        swe_stream(
            env, "ledger", "import", "--pr-file", str(exported), "--file", str(copy)
        ).returncode
        == 0
    )
    assert copy.read_text().splitlines() == final
    imported = swe_stream(
        env, "ledger", "import", "--pr-file", str(exported), "--bootstrap", bootstrap
    )
    assert imported.returncode == 0, imported.stderr
    again = tmp_path / "again.jsonl"
    back = swe_stream(env, "ledger", "export", "--bootstrap", bootstrap, "--pr-file", str(again))
    assert back.returncode == 0, back.stderr
    assert sorted(again.read_text().splitlines()) == sorted(final)
    shown = swe_stream(env, "ledger", "show", "--file", str(log), "swe-stream-demo/units#1")
    assert shown.returncode == 0 and '"status": "exported"' in shown.stdout

    # swe-stream validate: the exported task is valid; one whose gold patch is gone is not
    valid = swe_stream(env, "validate", "-i", str(out))
    assert valid.returncode == 0, valid.stdout + valid.stderr[-3000:]
    assert f"{TASK}: valid" in valid.stdout
    broken = tmp_path / "broken" / TASK
    shutil.copytree(out / TASK, broken)
    data: dict[str, Any] = yaml.safe_load((broken / "workspace.yaml").read_text())
    data["patch"] = ""
    (broken / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    invalid = swe_stream(env, "validate", "-i", str(broken.parent), "--json")
    assert invalid.returncode == 1
    (report,) = json.loads(invalid.stdout)
    assert not report["valid"] and report["reason"].startswith("the gold patch does not resolve")
    assert report["gold_failing"] == row["FAIL_TO_PASS"]


def test_a_demo_of_the_whole_pipeline_runs_offline(tmp_path: Path, base_image: str) -> None:
    env = {k: v for k, v in worker_env().items() if k != "OPENROUTER_API_KEY"}
    env["SWE_STREAM_WORKER_METRICS_PORT"] = "0"
    env["SWE_STREAM_VALIDATION_RUNS"] = "1"  # three test runs, as the other demos'
    # no terminal here: no live view, its plain lines instead
    done = swe_stream(env, "demo", "--workdir", str(tmp_path / "demo"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"  {TASK}: valid; gold patch resolves: True, empty patch resolves: False" in done.stdout
    assert "demo: harness: gold-patch agent resolved, do-nothing agent unresolved" in done.stdout
    assert done.stdout.splitlines()[-1].startswith(f"demo: done: task {TASK}")
    assert "demo: gold agent: resolved 1 of 1" in done.stdout
    assert "demo: nothing agent: resolved 0 of 1" in done.stdout
    summaries = [
        json.loads((tmp_path / "demo" / "harness" / agent / "summary.json").read_text())
        for agent in ("gold", "nothing")
    ]
    assert [(s["total"], s["resolved"], s["unresolved"]) for s in summaries] == [
        (1, 1, 0),
        (1, 0, 1),
    ]
    # the live view's plain lines: a line a build (its end), the tasks done, the funnel
    built = re.findall(r"image built: instance (\S+) in \d+\.\d s", done.stderr)
    assert built and len(set(built)) == len(built), done.stderr[-3000:]
    assert "image build started" not in done.stderr  # DEBUG: a build is one line
    assert "harness: 2/2 tasks done (resolved 1, unresolved 1)" in done.stderr
    # a log at the scale of a real hour: a line for the hour, one for the PR that reached
    # validate (its verdict and why), the funnel when it changed and the run's last one;
    # the hour's 300 other PRs end at prefilter and enrich, counted there, not a line each
    everything = done.stdout.splitlines() + done.stderr.splitlines()
    assert len(everything) <= 60, "\n".join(everything)
    assert re.search(r"INFO swe_stream.ingest: hour 2015-01-01-0 done: \d+ events", done.stderr)
    verdicts = re.findall(r"INFO swe_stream.stage: (\w+): (\S+) (\w+): (.+)", done.stderr)
    assert [v[:3] for v in verdicts] == [("validate", "swe-stream-demo/units#1", "accepted")]
    assert re.fullmatch(r"1 FAIL_TO_PASS and \d+ PASS_TO_PASS test\(s\) over .+", verdicts[0][3])
    funnel = re.findall(r"INFO swe_stream.supervise: (funnel: .+)", done.stderr)
    assert funnel and "prefilter in=316 " in funnel[-1], funnel
    assert "export in=1 out=1" in funnel[-1] and len(set(funnel)) == len(funnel), funnel
    assert " rejected: not_org" not in done.stderr  # a prefilter rejection: DEBUG
    assert "\x1b[" not in done.stdout + done.stderr  # no terminal codes: no rich drawing
    assert (tmp_path / "demo" / "tasks" / TASK / "workspace.yaml").is_file()
    assert not [p for p in (tmp_path / "demo").iterdir() if p.name.startswith("world-")]
    assert os.path.exists(tmp_path / "demo" / "tasks" / "dataset.jsonl")
    # the main job again in the same folder: its new world, its task exported and valid again;
    # an earlier demo's task there (another language's, say), whose world is gone, is left be
    tasks = tmp_path / "demo" / "tasks"
    earlier = tasks / "swe-stream-demo-earlier-1"
    shutil.copytree(tasks / TASK, earlier)
    workspace = yaml.safe_load((earlier / "workspace.yaml").read_text())
    workspace["instance_id"] = earlier.name
    (earlier / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    kept = {f.name: f.read_bytes() for f in earlier.iterdir()}
    again = swe_stream(env, "demo", "--workdir", str(tmp_path / "demo"))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"  {TASK}: valid; gold patch resolves: True, empty patch resolves: False" in (
        again.stdout
    )
    assert earlier.name not in again.stdout
    assert again.stdout.splitlines()[-1].startswith(f"demo: done: task {TASK}")
    assert {f.name: f.read_bytes() for f in earlier.iterdir()} == kept


@pytest.mark.kafka  # run starts Apache Kafka when no cluster is named
def test_run_follows_new_hours_and_stops_cleanly_on_sigterm(
    world: OfflineWorld, tmp_path: Path
) -> None:
    env = env_for(world, tmp_path / "data") | {"SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1"}
    out = tmp_path / "out"
    log = tmp_path / "run.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [SWE_STREAM, "run", "--from", world.hour, "-o", str(out), "--metrics-port", "0",
             "--no-live", "--log-level", "info"],
            cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        # the served hour is exported; the next one (not published) is waited for
        while not (out / TASK / "workspace.yaml").exists():
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
        time.sleep(2)
        assert process.poll() is None, "run must keep following the next hour"
        # with Java here, run's own broker is Apache Kafka, its storage in the data directory
        broker_port = int(re.findall(r"Apache Kafka \S+ on 127\.0\.0\.1:(\d+)", log.read_text())[0])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert "stopped: interrupted" in text and "Traceback" not in text.split("stopped:")[1]
    assert "not published yet" in text  # it was following 2015-01-01-1
    with socket.socket() as probe:  # its broker is gone with the command ...
        assert probe.connect_ex(("127.0.0.1", broker_port)) != 0
    # ... and its topics are kept for the next run (no ledger file: the ledger is the topic's)
    assert (tmp_path / "data" / "kafka" / "cluster.json").is_file()
    assert not (out / ".swe-stream" / "ledger.jsonl").exists()


def test_mine_without_once_stops_at_max_tasks(world: OfflineWorld, tmp_path: Path) -> None:
    env = env_for(world, tmp_path / "data") | {"SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1"}
    out = tmp_path / "out"
    args = ["mine", "--from", world.hour, "-n", "1", "-o", str(out), "--metrics-port", "0"]
    done = swe_stream(env, *args, "--no-live", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "stopped: 1 task(s) exported (--max-tasks 1)" in done.stdout
    checks = (out / TASK / "checks.txt").read_text().splitlines()
    assert checks[0].endswith("tests/test_temperature.py::test_fahrenheit_to_celsius")
    assert "not published yet" in done.stderr  # it was following the next hour when it stopped
