"""The evaluation harness with the real Docker engine, on a task the pipeline made from a
repository the test builds (``streams.demo``'s): agents that fix, do nothing, crash, hang,
reach for the network or for the hidden tests; broken tasks; the CLI's JSON; Kafka."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiokafka import AIOKafkaProducer
from prometheus_client import REGISTRY

from agents.export import find_task_dirs, write_task_dir
from agents.extract import Extract
from agents.harness import (
    RUN_LABEL,
    HarnessEngine,
    HarnessOptions,
    evaluate_all,
    exported_request_id,
)
from agents.validate import Validator
from schemas import (
    AgentSpec,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
    PatchSet,
    ScoredTask,
    ValidatedTask,
)
from schemas.harness import HarnessReport
from schemas.workspace import TaskWorkspace
from streams.demo import make_demo_repository
from streams.environments import INSTANCE_REPOSITORY, process_tag
from streams.git import RepoCache
from streams.sandbox import Limits
from streams.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.topics import HARNESS_REQUESTS, HARNESS_RESULTS
from tests.agents.conftest import start_stage_worker, wait_for
from tests.agents.repo_tasks import classified_for
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.workers import stop, wait_for_metrics, worker_env

pytestmark = pytest.mark.docker

TASK = "swe-stream-demo-units-1"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, base_image: str, docker_client: Any) -> Any:
    """The demo repository's PR through extract and validate, exported as a task directory."""
    root = tmp_path_factory.mktemp("harness")
    pr = make_demo_repository(root / "git")
    repos = RepoCache(root / "cache", pr.url_template)

    async def validated() -> ValidatedTask:
        (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
        assert isinstance(patches, PatchSet)
        docker = DockerSettings(base_image=base_image, memory_mb=1024, cpus=1)
        check = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=1), 1)
        (task,) = (await check(patches)).outputs
        assert isinstance(task, ValidatedTask)
        return task

    loop = asyncio.new_event_loop()  # not asyncio.run: it would unset the tests' event loop
    try:
        task = loop.run_until_complete(validated())
    finally:
        loop.close()
    scored = ScoredTask(
        **task.model_dump(), quality_score=0.9, quality_reasoning="r", accepted=True
    )
    workspace = TaskWorkspace.from_scored(scored, TASK)
    write_task_dir(root / "tasks", workspace)
    return root, pr, workspace


def engine_for(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path, **options: Any
) -> HarnessEngine:
    root, pr, _ = made
    docker = DockerSettings(base_image=base_image, memory_mb=1024, cpus=1)
    repos = RepoCache(root / "cache", pr.url_template)
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(), 1)
    settings = {"agent_timeout_seconds": 60.0, "test_timeout_seconds": 60.0} | options
    return HarnessEngine(
        validator,
        HarnessOptions(output_dir=tmp_path / "results", **settings),
        Limits.from_settings(docker),
    )


def agent_dir(tmp_path: Path, workspace: TaskWorkspace, script: str) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir(exist_ok=True)
    (directory / "fix.patch").write_text(workspace.patch)
    (directory / "run.sh").write_text(script)
    return directory


def evaluate(engine: HarnessEngine, made: Any) -> Any:
    return engine.evaluate(made[0] / "tasks" / TASK)


def containers_of(docker_client: Any, engine: HarnessEngine) -> list[Any]:
    label = f"{RUN_LABEL}={engine.options.run_id}"
    return list(docker_client.containers.list(all=True, filters={"label": label}))


def test_a_gold_agent_resolves_the_task(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    workspace = made[2]
    directory = agent_dir(tmp_path, workspace, "git apply /agent/fix.patch\n")
    engine = engine_for(
        made, docker_client, base_image, tmp_path,
        agent_dir=directory, agent_command="bash /agent/run.sh",
    )  # fmt: skip
    result = evaluate(engine, made)
    assert (result.status, result.sanity_check, result.error) == ("resolved", True, None)
    assert [c.passed for c in result.fail_to_pass] == [True]
    assert len(result.pass_to_pass) == len(workspace.PASS_TO_PASS) >= 2
    out = tmp_path / "results" / TASK
    assert (out / "model.patch").read_text().count("(fahrenheit - 32) * 5 / 9") == 1
    report = json.loads((out / "report.json").read_text())[workspace.instance_id]
    assert report["resolved"] and report["patch_successfully_applied"]
    assert report["tests_status"]["FAIL_TO_PASS"] == {
        "success": list(workspace.FAIL_TO_PASS),
        "failure": [],
    }
    assert containers_of(docker_client, engine) == []


@pytest.mark.parametrize(
    ("command", "status", "error"),
    [
        ("true", "unresolved", None),
        ("echo crashing; exit 1", "agent_error", "the agent exited with 1"),
        ("sleep 120", "agent_error", "the agent was killed at its timeout (3 s)"),
    ],
    ids=["does-nothing", "exits-1", "sleeps-past-timeout"],
)
def test_agents_that_do_not_fix_it(
    made: Any,
    docker_client: Any,
    base_image: str,
    tmp_path: Path,
    command: str,
    status: str,
    error: str | None,
) -> None:
    engine = engine_for(
        made, docker_client, base_image, tmp_path, agent_command=command, agent_timeout_seconds=3
    )
    result = evaluate(engine, made)
    assert (result.status, result.error) == (status, error)
    assert result.sanity_check
    if status == "unresolved":
        assert [c.passed for c in result.fail_to_pass] == [False]
        assert all(c.passed for c in result.pass_to_pass)
    assert containers_of(docker_client, engine) == []  # removed, timeout included


def test_the_agent_has_no_network_no_hidden_tests_and_no_unnamed_secrets(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connections: list[Any] = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def accept() -> None:
        server.settimeout(30)
        try:
            while True:
                connections.append(server.accept())
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    workspace = made[2]
    hidden = 'def test_fahrenheit_to_""celsius'  # the shell joins it; this script lacks it
    script = (
        "python3 - <<'EOF'\n"
        "import socket\n"
        f"for host in ('127.0.0.1', 'pypi.org'):\n"
        "    try:\n"
        f"        socket.create_connection((host, {port}), timeout=3)\n"
        "        print('CONNECTED', host)\n"
        "    except OSError as error:\n"
        "        print('BLOCKED', host, type(error).__name__)\n"
        "EOF\n"
        f'grep -rl "{hidden}" /testbed /tmp /run /agent /root 2>/dev/null && echo HIDDEN-FOUND '
        "|| echo HIDDEN-ABSENT\n"
        # the search works: the same pattern is found where a file holds it
        "echo 'def test_fahrenheit_to_''celsius' > /var/tmp/control\n"
        f'grep -l "{hidden}" /var/tmp/control && echo CONTROL-FOUND\n'
        "echo PROMPT-FILE $(wc -c < $SWE_PROMPT_FILE)\n"
        "env | sort\n"
    )
    directory = agent_dir(tmp_path, workspace, script)
    monkeypatch.setenv("SWE_STREAM_TEST_SECRET", "s3cret-named")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_hostsecretnotpassed")
    engine = engine_for(
        made, docker_client, base_image, tmp_path,
        agent_dir=directory, agent_command="bash /agent/run.sh",
        agent_env={"SWE_STREAM_TEST_SECRET": "s3cret-named"},
    )  # fmt: skip
    result = evaluate(engine, made)
    server.close()
    output = result.agent_output
    assert result.status == "unresolved", output
    assert "BLOCKED 127.0.0.1" in output and "BLOCKED pypi.org" in output
    assert "CONNECTED" not in output and connections == []  # the host saw nothing
    assert "HIDDEN-ABSENT" in output and "HIDDEN-FOUND" not in output
    assert "CONTROL-FOUND" in output
    assert f"PROMPT-FILE {len(workspace.prompt.encode())}" in output
    assert "SWE_STREAM_TEST_SECRET=s3cret-named" in output  # named: passed
    assert "ghp_hostsecretnotpassed" not in output and "GITHUB_TOKEN" not in output


def test_broken_tasks_are_sanity_fail_and_setup_error(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    root = made[0]
    # a FAIL_TO_PASS check that already passes before any agent
    data = yaml.safe_load((root / "tasks" / TASK / "workspace.yaml").read_text())
    data["fail_to_pass"] = data["fail_to_pass"] + data["pass_to_pass"][:1]
    broken = tmp_path / "broken" / TASK
    shutil.copytree(root / "tasks" / TASK, broken)
    (broken / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    engine = engine_for(made, docker_client, base_image, tmp_path, agent_command="true")
    result = engine.evaluate(broken)
    assert (result.status, result.sanity_check) == ("sanity_fail", False)
    assert "FAIL_TO_PASS already passing" in (result.error or "")
    # an environment that cannot be built
    engine = engine_for(made, docker_client, "swe-stream/no-such-base:0", tmp_path)
    result = evaluate(engine, made)
    assert result.status == "setup_error" and result.error


def test_the_cli_runs_tasks_in_parallel_and_prints_swe_forges_json(
    made: Any, tmp_path: Path, base_image: str
) -> None:
    root, pr, workspace = made
    tasks = tmp_path / "tasks"
    for letter in "abcd":  # four tasks, one each
        data = yaml.safe_load((root / "tasks" / TASK / "workspace.yaml").read_text())
        data["id"] = f"{TASK}-{letter}"
        target = tasks / data["id"]
        shutil.copytree(root / "tasks" / TASK, target)
        (target / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    directory = agent_dir(tmp_path, workspace, "git apply /agent/fix.patch\n")
    env = worker_env() | {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
    }
    done = subprocess.run(
        [SWE_STREAM, "harness", "-i", str(tasks), "--agent-dir", str(directory),
         "--agent-cmd", "bash /agent/run.sh", "--parallel", "2", "--json",
         "-o", str(tmp_path / "out")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = HarnessReport.model_validate_json(done.stdout)
    assert (report.total, report.resolved) == (4, 4), done.stdout[-4000:]
    assert sorted(r.task_id for r in report.results) == [f"{TASK}-{x}" for x in "abcd"]
    raw = json.loads(done.stdout)
    assert set(raw) == {
        "total", "resolved", "unresolved", "agent_error", "test_error", "setup_error",
        "sanity_fail", "avg_agent_time_secs", "results",
    }  # fmt: skip
    command = raw["results"][0]["fail_to_pass"][0]
    assert {"command", "exit_code", "passed", "duration_ms"} <= set(command)
    assert len(find_task_dirs(tmp_path / "out")) == 0  # results, not tasks
    assert (tmp_path / "out" / f"{TASK}-a" / "report.json").is_file()


def test_a_request_on_the_broker_gets_the_same_status(
    made: Any, bootstrap: str, tmp_path: Path, base_image: str
) -> None:
    root, pr, workspace = made
    directory = agent_dir(tmp_path, workspace, "git apply /agent/fix.patch\n")
    log = tmp_path / "worker.log"
    env = {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_EXPORT_OUTPUT_DIR": str(root / "tasks"),
        "SWE_STREAM_HARNESS_OUTPUT_DIR": str(tmp_path / "results"),
        "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
    }
    requests = [
        HarnessRequest(
            pipeline_version=1,
            request_id=f"{name}-{uuid.uuid4().hex[:8]}",
            instance_id=workspace.instance_id,
            agent=AgentSpec(name=name, command=command, agent_dir=str(directory)),
        )
        for name, command in (("gold", "bash /agent/run.sh"), ("idle", "true"))
    ]

    async def send() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for request in requests:
                value, key = request.to_json(), request.key.encode()
                await producer.send_and_wait(HARNESS_REQUESTS.name, value, key)
        finally:
            await producer.stop()

    process, metrics_port = start_stage_worker(bootstrap, "harness", log, env)
    try:
        wait_for_metrics(metrics_port, process, log)
        asyncio.run(send())
        values = asyncio.run(wait_for(bootstrap, HARNESS_RESULTS.name, 2, process, log, 300))
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()[-3000:]
    results = {r.agent_name: r for r in map(HarnessResult.from_json, values)}
    assert (results["gold"].status, results["idle"].status) == ("resolved", "unresolved")
    assert results["gold"].request_id == requests[0].request_id
    assert all(s == "passed" for s in results["gold"].fail_to_pass.values())
    assert (tmp_path / "results" / requests[0].request_id / TASK / "report.json").is_file()


def test_evaluate_all_reports_each_task_once(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    engine = engine_for(made, docker_client, base_image, tmp_path, agent_command="true")
    seen: list[str] = []
    report = asyncio.run(
        evaluate_all(
            engine,
            [made[0] / "tasks" / TASK] * 2,
            parallel=2,
            on_done=lambda r: seen.append(r.status),
        )
    )
    assert report.total == 2 and report.unresolved == 2 and seen == ["unresolved"] * 2


def our_instance_images(docker_client: Any) -> set[str]:
    """The instance images this process built and has not dropped."""
    return {
        tag
        for image in docker_client.images.list(name=INSTANCE_REPOSITORY)
        for tag in image.tags
        if tag.endswith(process_tag())
    }


def instance_builds() -> float:
    labels = {"layer": "instance", "result": "built"}
    return REGISTRY.get_sample_value("swe_stream_images_total", labels) or 0.0


def test_evaluations_of_one_task_at_once_each_drop_their_own_images(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    """At the default cache level an instance image belongs to the evaluation that built it:
    three at once build three, and drop all three (one CI run's escape tests left 11 behind,
    children of the env image that slowed every later build's cache probe)."""
    before = our_instance_images(docker_client)
    engine = engine_for(made, docker_client, base_image, tmp_path, agent_command="true")
    builds = instance_builds()
    report = asyncio.run(evaluate_all(engine, [made[0] / "tasks" / TASK] * 3, parallel=3))
    assert report.total == 3 and report.unresolved == 3
    assert instance_builds() - builds == 3  # each its own
    assert our_instance_images(docker_client) == before


def test_keep_containers_leaves_the_agents_container(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    engine = engine_for(
        made, docker_client, base_image, tmp_path, agent_command="touch kept", keep_containers=True
    )
    try:
        result = evaluate(engine, made)
        (kept,) = containers_of(docker_client, engine)  # the agent's; the graders' are gone
        assert result.container_id == kept.id and result.status == "unresolved"
        assert kept.attrs["HostConfig"]["NetworkMode"] == "none"
    finally:
        assert engine.abort() == 1  # and Ctrl-C's clean-up removes it
    assert containers_of(docker_client, engine) == []


def test_an_exported_tasks_request_id_is_always_a_safe_name() -> None:
    long_id = "o" + "x" * 299  # the longest instance id the schema allows
    task = ExportedTask(
        pipeline_version=1,
        repo="octo/hello",
        number=1,
        instance_id=long_id,
        export_dir="/tmp/x",
        dataset_path="/tmp/x/dataset.jsonl",
        exported_at="2026-01-01T00:00:00Z",
        content_sha256="ab" * 32,
    )
    request_id = exported_request_id(task, "my agent / v2 (beta)")
    assert len(request_id) <= 200 and request_id.endswith("-my-agent-v2-beta-abababababab")
    HarnessRequest(  # validates: a safe name, accepted by the schema
        pipeline_version=1,
        request_id=request_id,
        instance_id=long_id,
        agent=AgentSpec(name="a", command="true"),
    )
