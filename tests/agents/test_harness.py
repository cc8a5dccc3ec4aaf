"""The harness stages: a request on the broker evaluated by a worker (real Docker, on the task
``tests.harness_tasks`` makes), and the request ids of exported tasks. The engine's own tests
are ``tests/streams/evaluation/test_harness.py``."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from agents.harness import exported_request_id
from schemas import (
    AgentSpec,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
)
from streams.kafka.topics import HARNESS_REQUESTS, HARNESS_RESULTS
from tests.agents.conftest import start_stage_worker, wait_for
from tests.harness_tasks import TASK, agent_dir
from tests.harness_tasks import made as made  # the module fixture: the exported task
from tests.workers import stop, wait_for_metrics

pytestmark = pytest.mark.docker


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
