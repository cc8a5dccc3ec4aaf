"""The tools people already run, on swe-stream's tasks as they are (README "Use the tasks with
other tools"): the task the pipeline made from a repository the test builds is pushed to a real
registry on loopback (Debian's docker-registry), exported as a Hugging Face dataset folder,
loaded with ``datasets``; mini-swe-agent from PyPI, unmodified, runs on the loaded rows through
its own Python API (its SWE-bench runner's ``process_instance`` and default SWE-bench config)
with its own deterministic test model, pulling the image the row names; then ``swe-stream
harness --predictions`` grades its predictions on the task folders the dataset folder turns
back into: the scripted fix resolves, a scripted no-op does not."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation.taskdir import WORKSPACE, load_workspace
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.harness_tasks import TASK, task_copy
from tests.harness_tasks import kept_instances as kept_instances  # the fixture
from tests.harness_tasks import made as made  # the module fixture: the exported task
from tests.registries import registry
from tests.workers import worker_env

pytestmark = pytest.mark.docker

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"


def swe_stream(made: Any, base_image: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    root, pr, _ = made
    env = worker_env() | {
        "SWE_STREAM_DOCKER_BASE_IMAGE": base_image,
        "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
    }
    done = subprocess.run(
        [SWE_STREAM, *arguments], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, (arguments, done.stdout, done.stderr)
    return done


def scripted(name: str, commands: list[str]) -> dict[str, Any]:
    """mini-swe-agent's deterministic test model answering with ``commands``, one a step."""
    from minisweagent.models.test_models import make_output

    outputs = [make_output(f"step {n}", [{"command": c}]) for n, c in enumerate(commands)]
    return {"model_class": "deterministic", "model_name": name, "outputs": outputs}


def run_mini_swe_agent(instances: list[dict[str, Any]], model: dict[str, Any], out: Path) -> Any:
    """mini-swe-agent's SWE-bench batch runner, one instance at a time, as its CLI runs it."""
    from minisweagent.config import get_config_from_spec
    from minisweagent.run.benchmarks.swebench import DEFAULT_CONFIG_FILE, process_instance
    from minisweagent.run.benchmarks.utils.batch_progress import RunBatchProgressManager
    from minisweagent.utils.serialize import recursive_merge

    config = recursive_merge(get_config_from_spec(str(DEFAULT_CONFIG_FILE)), {"model": model})
    progress = RunBatchProgressManager(len(instances), out / "exit_statuses.yaml")
    for instance in instances:
        process_instance(instance, out, config, progress)
    return json.loads((out / "preds.json").read_text())


def test_mini_swe_agent_runs_on_the_hf_dataset_and_the_harness_grades_it(
    made: Any,
    base_image: str,
    docker_client: Any,
    tmp_path: Path,
    monkeypatch: Any,
    kept_instances: list[str],
) -> None:
    from datasets import load_dataset

    tasks = tmp_path / "tasks"
    workspace = load_workspace(task_copy(made, tasks, TASK) / WORKSPACE)
    kept_instances.append(workspace.instance_id)
    with registry(tmp_path / "registry") as served:
        swe_stream(made, base_image, "images", "push", "--registry", f"{served.address}/swe",
                   "-i", str(tasks))  # fmt: skip
        image = load_workspace(tasks / TASK / WORKSPACE).image_name
        assert image and image.startswith(served.address)
        folder = tmp_path / "hf"
        swe_stream(
            made, base_image, "export", "--format", "hf", "-i", str(tasks), "-o", str(folder)
        )
        # what a reader has: the registry and the folder, no image on the engine
        docker_client.images.remove(image, force=True)

        for variable in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
            monkeypatch.setenv(variable, "1")
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mswea"))
        # the cache named: datasets read HF_HOME when first imported, and its key for a local
        # folder is the card (folder name, row and byte counts), not the content, so another
        # run's export of a same-sized task came back from ~/.cache/huggingface
        cache = str(tmp_path / "hf-cache")
        instances = list(load_dataset(str(folder), split="test", cache_dir=cache))
        assert [row["instance_id"] for row in instances] == [workspace.instance_id]
        assert instances[0]["image_name"] == instances[0]["docker_image"] == image

        fix = base64.b64encode(workspace.patch.encode()).decode()
        apply = f"echo {fix} | base64 -d > /tmp/fix.patch && git apply /tmp/fix.patch"
        fixed = run_mini_swe_agent(
            instances,
            scripted("scripted-fix", [apply, "git diff > patch.txt", SUBMIT]),
            tmp_path / "fix",
        )
        noop = run_mini_swe_agent(
            instances,
            scripted("scripted-noop", ["git diff > patch.txt", SUBMIT]),
            tmp_path / "noop",
        )
        assert "(fahrenheit - 32) * 5 / 9" in fixed[workspace.instance_id]["model_patch"]
        assert noop[workspace.instance_id]["model_patch"] == ""

        # the folder back into task folders, graded with the image the rows name (pulled)
        back = tmp_path / "back"
        swe_stream(made, base_image, "export", "-i", str(folder), "-o", str(back))
        docker_client.images.remove(image, force=True)
        verdicts = {}
        for name in ("fix", "noop"):
            out = tmp_path / f"graded-{name}"
            predictions = str(tmp_path / name / "preds.json")
            swe_stream(made, base_image, "harness", "-i", str(back), "-o", str(out),
                       "--predictions", predictions, "--no-live")  # fmt: skip
            # SWE-bench's summary report, named after the predictions' model
            [summary] = out.glob(f"scripted-{name}.*.json")
            verdicts[name] = json.loads(summary.read_text())
        # the harness took the image the rows name from the registry: it is on the engine again
        assert docker_client.images.get(image)
        assert verdicts["fix"]["resolved_ids"] == [workspace.instance_id]
        assert verdicts["noop"]["resolved_ids"] == []
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
