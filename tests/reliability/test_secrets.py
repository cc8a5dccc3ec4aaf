"""Secrets: the whole pipeline runs offline with recognisable fake credentials (two GitHub
tokens and an OpenRouter key, set the usual ways through the environment), and neither appears
in any log line, metric, topic record, file or Docker image it leaves, nor in the environment
of the harness's agent container. Each credential was really in use: the GitHub stand-in got
the tokens in ``Authorization``, the LLM stand-in the key, and nothing else of them.

The run: ``swe-stream run`` (every stage, DEBUG logs) over the demo's offline world on the
embedded broker, with the LLM backends on (classify and score answered by the LLM stand-in)
and ``harness.agent_command`` set to an agent that prints its whole environment (``env``,
``/proc/self/environ``, ``/proc/1/environ``), so that every exported task is also evaluated;
then ``swe-stream harness`` on the exported task with the same agent, and ``swe-stream config
show``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import yaml

from streams.core.settings import KafkaSettings
from streams.kafka.broker import free_port
from streams.kafka.client import TopicAdmin, read_topic_to_end
from streams.kafka.topics import ALL_TOPICS
from streams.offline.world import offline_world
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.llm_server import requested_tool, status_reply, tool_call_reply
from tests.workers import TASK, env_for

pytestmark = pytest.mark.docker

# the agent: its whole environment, three ways, then a line to find it by
DUMP_ENV = (
    "env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; "
    "tr '\\0' '\\n' < /proc/1/environ; echo; echo ENV-DUMPED"
)
ANSWERS = {  # the LLM stand-in's answers: a medium task, accepted by score
    "classify_difficulty": {"classification": "medium", "score": 0.5, "reasoning": "fake"},
    "score_task": {"classification": "medium", "score": 0.9, "reasoning": "fake"},
}


def answer(body: Any) -> Any:
    name = requested_tool(body)
    if name not in ANSWERS:
        return status_reply(500)
    return tool_call_reply(name, ANSWERS[name])


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def evaluations(text: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "swe_stream_harness_evaluations_total"
    )


async def every_record(bootstrap: str) -> dict[str, list[bytes]]:
    """Every record (key, value and headers, as bytes) of every topic the broker has: the
    catalog's and Faust's own (changelogs, assignor)."""
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        names = set(await admin.partitions())
    assert {spec.name for spec in ALL_TOPICS} <= names, sorted(names)
    found: dict[str, list[bytes]] = {}
    for name in sorted(names):
        found[name] = [
            b"\0".join(
                [record.key or b"", record.value or b""]
                + [bytes(k, "utf-8") + b"=" + (v or b"") for k, v in record.headers or ()]
            )
            async for record in read_topic_to_end(bootstrap, name)
        ]
    return found


def test_no_credential_reaches_logs_metrics_topics_files_or_the_agent(
    tmp_path: Path,
    fixtures_dir: Path,
    base_image: str,
    embedded_bootstrap: str,
    llm_server: Any,
    docker_client: Any,
) -> None:
    # what reaches the topics is the same bytes on either broker: the embedded one only
    bootstrap = embedded_bootstrap
    github_token = f"ghp_{secrets.token_hex(18)}"  # GitHub's shape: ghp_ and 36 characters
    pool_token = f"ghp_{secrets.token_hex(18)}"
    llm_key = f"sk-or-v1-{secrets.token_hex(32)}"  # OpenRouter's shape
    credentials = {"GITHUB_TOKEN": github_token, "pool token": pool_token, "LLM key": llm_key}
    llm_server.default = answer
    out, data, harness_out = tmp_path / "out", tmp_path / "data", tmp_path / "harness"
    logs: dict[str, str] = {}
    with offline_world(
        tmp_path / "world", fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    ) as world:
        env = {
            k: v
            for k, v in env_for(world, data).items()
            if k not in {"SWE_STREAM_CLASSIFY_BACKEND", "SWE_STREAM_SCORE_BACKEND"}
        } | {
            "GITHUB_TOKEN": github_token,
            "SWE_STREAM_GITHUB_TOKENS": pool_token,
            "OPENROUTER_API_KEY": llm_key,
            "SWE_STREAM_LLM_BASE_URL": llm_server.base_url,
            "SWE_STREAM_GHARCHIVE_POLL_SECONDS": "1",
            "SWE_STREAM_HARNESS_AGENT_COMMAND": DUMP_ENV,
            "SWE_STREAM_HARNESS_OUTPUT_DIR": str(harness_out),
        }
        metrics_port = free_port()
        stdout, stderr = tmp_path / "run.out", tmp_path / "run.err"
        with open(stdout, "wb") as out_file, open(stderr, "wb") as err_file:
            run = subprocess.Popen(
                [SWE_STREAM, "run", "--from", world.hour, "-o", str(out), "--bootstrap",
                 bootstrap, "--metrics-port", str(metrics_port), "--no-live",
                 "--log-level", "debug"],
                cwd=REPO_ROOT, env=env, stdout=out_file, stderr=err_file,
            )  # fmt: skip
        scrapes: list[str] = []
        try:
            deadline = time.monotonic() + 400
            while not scrapes or evaluations(scrapes[-1]) < 1:
                assert run.poll() is None, stderr.read_text()[-3000:]
                assert time.monotonic() < deadline, stderr.read_text()[-3000:]
                time.sleep(1)
                try:
                    scrapes.append(scrape(metrics_port))
                except OSError:
                    continue
            scrapes.append(scrape(metrics_port))
        finally:
            if run.poll() is None:
                run.send_signal(signal.SIGTERM)
            code = run.wait(timeout=120)
        logs["run"] = stdout.read_text() + stderr.read_text()
        assert code == 0, logs["run"][-3000:]

        # the harness command on the exported task, the same agent, the same environment
        (tmp_path / "agent").mkdir()
        done = subprocess.run(
            [SWE_STREAM, "harness", "-i", str(out), "--agent-dir", str(tmp_path / "agent"),
             "--agent-cmd", DUMP_ENV, "--json",
             "-o", str(tmp_path / "cli-harness"), "--log-level", "debug"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        logs["harness"] = done.stdout + done.stderr
        assert done.returncode == 0, logs["harness"][-3000:]
        shown = subprocess.run(
            [SWE_STREAM, "config", "show"], cwd=REPO_ROOT, env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        logs["config show"] = shown.stdout + shown.stderr
        assert shown.returncode == 0, shown.stderr
        assert world.github is not None
        github_authorizations = list(world.github.authorizations)

    # each credential was in use, where it belongs and nowhere else
    assert {f"Bearer {github_token}", f"Bearer {pool_token}"} == set(github_authorizations)
    chats = llm_server.chat_requests()
    assert {requested_tool(r.body) for r in chats} == set(ANSWERS)  # classify and score
    assert {r.headers.get("authorization") for r in chats} == {f"Bearer {llm_key}"}
    for request in chats:
        sent = json.dumps(request.body) + json.dumps(
            {k: v for k, v in request.headers.items() if k != "authorization"}
        )
        assert all(secret not in sent for secret in credentials.values())

    # the run did what it should: the task exported, scored by the LLM, evaluated twice
    workspace = yaml.safe_load((out / TASK / "workspace.yaml").read_text())
    assert (workspace["difficulty"], workspace["quality_score"]) == ("medium", 0.9)  # the LLM's
    report = json.loads(done.stdout)
    assert report["total"] == 1 and report["results"][0]["status"] == "unresolved"

    # log lines (DEBUG included) and metrics
    lines = [line for text in logs.values() for line in text.splitlines()]
    assert any(" DEBUG " in line for line in lines)  # the debug level was on
    assert "**********" in logs["config show"]  # masked there
    metric_lines = [line for text in scrapes for line in text.splitlines()]
    # topics, internal ones included
    records = asyncio.run(every_record(bootstrap))
    assert sum(map(len, records.values())) > 300
    assert any(name.endswith("-changelog") for name in records), sorted(records)
    # every file the run and the harness left (the world's git repositories aside)
    files = {
        p: p.read_bytes()
        for p in sorted(tmp_path.rglob("*"))
        if p.is_file() and (tmp_path / "world") not in p.parents
    }
    assert len(files) > 10 and any(p.name == "agent.log" for p in files)
    # the agents' environments, as the agents printed them
    agent_logs = [text for p, text in files.items() if p.name == "agent.log"]
    assert len(agent_logs) == 2, [p for p in files if p.name == "agent.log"]
    entries = 0
    for text in agent_logs:
        dump = text.decode()
        assert "ENV-DUMPED" in dump and "SWE_TASK_ID=" in dump
        entries += sum(1 for line in dump.splitlines() if "=" in line)
    # the images the run built (their environment, labels and history)
    images = []
    for listed in docker_client.api.images():  # low-level: images come and go meanwhile
        if not any(tag.startswith("swe-stream/") for tag in listed.get("RepoTags") or []):
            continue
        try:
            image = docker_client.images.get(listed["Id"])
            images.append(json.dumps(image.attrs) + json.dumps(image.history()))
        except docker.errors.NotFound:  # another test's image, removed meanwhile
            continue
    assert images

    def where(text: str) -> dict[str, list[str]]:
        """The places ``text`` appears, per kind of place."""
        needle = text.encode()
        return {
            "log lines": [line for line in lines if text in line],
            "metric lines": [line for line in metric_lines if text in line],
            "topics": [t for t, values in records.items() if any(needle in v for v in values)],
            "files": [str(p) for p, content in files.items() if needle in content],
            "images": [image[:200] for image in images if text in image],
        }

    # the search finds what is there: the repository's name (and, in the metrics, the GitHub
    # token's label) where it is expected
    controls = where("swe-stream-demo") | {"metric lines": where('token="token-1"')["metric lines"]}
    assert all(controls.values()), {kind: len(found) for kind, found in controls.items()}
    for name, secret in credentials.items():
        leaks = {kind: found for kind, found in where(secret).items() if found}
        assert leaks == {}, f"the {name} leaked: {leaks}"
    print(
        f"searched: {len(lines)} log lines, {len(metric_lines)} metric lines "
        f"({len(scrapes)} scrapes), {sum(map(len, records.values()))} records of "
        f"{len(records)} topics, {len(files)} files, {entries} environment entries of "
        f"{len(agent_logs)} agents, {len(images)} images; GitHub stand-in: "
        f"{len(github_authorizations)} requests, LLM stand-in: {len(chats)} requests"
    )
