"""The harness engine with the real Docker engine, on a task the pipeline made from a
repository the test builds (``streams.offline.world``'s): agents that fix, do nothing, crash,
hang, reach for the network or for the hidden tests; broken tasks; ``swe-stream harness``'s JSON
(the command is the engine's thin wrapper)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from schemas.harness import HarnessReport
from streams.evaluation.harness import evaluate_all
from streams.evaluation.taskdir import find_task_dirs
from tests.conftest import REPO_ROOT, SWE_STREAM
from tests.fakes.llm_server import serve_llm, text_reply
from tests.harness_tasks import (
    TASK,
    agent_dir,
    containers_of,
    engine_for,
    evaluate,
    instance_builds,
    our_instance_images,
)
from tests.harness_tasks import made as made  # the module fixture: the exported task
from tests.workers import worker_env

pytestmark = pytest.mark.docker


def test_a_gold_agent_resolves_the_task(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    workspace = made[2]
    directory = agent_dir(tmp_path, workspace, "git apply /agent/fix.patch\n")
    engine = engine_for(
        made, docker_client, base_image, tmp_path,
        agent_dir=directory, agent_command="bash /agent/run.sh",
    )  # fmt: skip
    month = workspace.month
    counted = ("swe_stream_harness_task_month_evaluations_total", {
        "model": engine.options.model, "month": month, "resolved": "true",
    })  # fmt: skip
    before = REGISTRY.get_sample_value(*counted) or 0.0
    result = evaluate(engine, made)
    assert (result.status, result.sanity_check, result.error) == ("resolved", True, None)
    # the task's month, in its result and in the metric the contamination panel reads
    assert result.task_month == month and month and month[4] == "_"
    assert REGISTRY.get_sample_value(*counted) == before + 1
    assert [c.passed for c in result.fail_to_pass] == [True]
    assert len(result.pass_to_pass) == len(workspace.PASS_TO_PASS) >= 2
    # graded from one run of the test files per phase, not a test process per check
    assert [(run.phase, run.exit_code) for run in result.test_runs] == [
        ("sanity", 1),
        ("grading", 0),
    ]
    assert all(run.tests >= 3 and run.contradiction is None for run in result.test_runs)
    assert {c.status for c in result.pass_to_pass} == {"passed"}
    out = tmp_path / "results" / TASK
    assert (out / "model.patch").read_text().count("(fahrenheit - 32) * 5 / 9") == 1
    report = json.loads((out / "report.json").read_text())[workspace.instance_id]
    assert report["resolved"] and report["patch_successfully_applied"]
    assert report["tests_status"]["FAIL_TO_PASS"] == {
        "success": list(workspace.FAIL_TO_PASS),
        "failure": [],
    }
    # and SWE-bench's layout, the agent named after its directory
    run_id = engine.options.evaluation_run_id
    logs = tmp_path / "results" / "logs" / "run_evaluation" / run_id / "agent"
    logs = logs / workspace.instance_id
    assert json.loads((logs / "report.json").read_text()) == json.loads(
        (out / "report.json").read_text()
    )
    assert (logs / "patch.diff").read_text() == (out / "model.patch").read_text()
    assert "passed" in (logs / "test_output.txt").read_text()
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


# Run by the agent: each argument is NAME=URL, fetched as the environment says (through the
# door's proxy when there is one); a url with "chat" is a model call (a POST with a body).
# One line per argument: "NAME ok STATUS BODY" or "NAME refused ERROR".
REACH = r"""
import json, sys, urllib.request
for arg in sys.argv[1:]:
    name, url = arg.split("=", 1)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(url, data=body if "chat" in url else None,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            print(name, "ok", answer.status, answer.read()[:300].decode(errors="replace"))
    except Exception as error:
        print(name, "refused", str(error).replace("\n", " ")[:300])
"""


def bridge_gateway(client: Any) -> str:
    config = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return str(config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts()))


@pytest.mark.parametrize(
    ("network", "reached"),
    [("model", {"model"}), ("registries", {"registry"}), ("none", set())],
)
def test_the_agent_reaches_what_its_network_mode_says_and_nothing_else(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path, network: str, reached: set[str]
) -> None:
    """``model``: the model's API only (its calls go through, a code host and a registry are
    refused); ``registries``: the package registries only; ``none``: nothing."""
    with serve_llm(host="0.0.0.0") as llm:  # a model server on the host, as a user may run
        port = int(llm.base_url.rsplit(":", 1)[1].split("/")[0])
        gateway = bridge_gateway(docker_client)
        llm.default = lambda body: text_reply("the model answered")
        targets = {
            "model": f"http://{gateway}:{port}/v1/chat/completions",
            "codehost": "https://github.com/octo/hello/pull/1.diff",
            "registry": "https://pypi.org/simple/six/",
        }
        args = " ".join(f"{name}={url}" for name, url in targets.items())
        script = f"python3 - {args} <<'EOF'\n{REACH}\nEOF\n"
        directory = agent_dir(tmp_path, made[2], script)
        engine = engine_for(
            made, docker_client, base_image, tmp_path,
            agent_dir=directory, agent_command="bash /agent/run.sh",
            agent_network=network, model_endpoints=((gateway, port),),
        )  # fmt: skip
        result = evaluate(engine, made)
        model_calls = len(llm.requests)
    lines = {line.split(" ")[0]: line for line in result.agent_output.splitlines()}
    assert set(targets) <= set(lines), result.agent_output
    got = {name for name in targets if lines[name].startswith(f"{name} ok 200")}
    assert got == reached, result.agent_output
    assert ("model answered" in lines["model"]) == ("model" in reached)
    assert model_calls == (1 if "model" in reached else 0)
    if network != "none":  # refused by the door, with its reason
        assert "403" in lines["codehost"] and "swe-stream egress" in lines["codehost"]
    assert result.status == "unresolved"  # it fixed nothing; the grading ran
    assert containers_of(docker_client, engine) == []


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
        "sanity_fail", "avg_agent_time_secs", "by_month", "results",
    }  # fmt: skip
    # the four copies share the task's month
    [month] = raw["by_month"]
    assert raw["by_month"][month] == {"total": 4, "resolved": 4}
    command = raw["results"][0]["fail_to_pass"][0]
    assert {"command", "exit_code", "passed", "duration_ms"} <= set(command)
    assert len(find_task_dirs(tmp_path / "out")) == 0  # results, not tasks
    assert (tmp_path / "out" / f"{TASK}-a" / "report.json").is_file()
    # not a terminal: the live view's plain lines, tasks done / total with the ETA, and builds
    done_lines = re.findall(
        r"harness: (\d)/4 tasks done \(resolved \d\)(, ETA [^:]+)?:", done.stderr
    )
    assert [int(n) for n, _ in done_lines] == [1, 2, 3, 4], done.stderr[-3000:]
    assert all(eta for n, eta in done_lines if n != "4") and not done_lines[-1][1]
    assert "image built: instance " in done.stderr  # its start is a DEBUG line
    assert "image build started: instance " not in done.stderr
    assert "\x1b[" not in done.stderr


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
    # SWE-bench's summary of the run: an agent that changed nothing gave an empty patch
    name = f"agent.{engine.options.evaluation_run_id}.json"
    summary = json.loads((tmp_path / "results" / name).read_text())
    instance_id = made[2].instance_id
    assert (summary["total_instances"], summary["empty_patch_ids"]) == (1, [instance_id])
    assert summary["completed_ids"] == summary["error_ids"] == []


def test_tasks_evaluated_at_once_get_the_statuses_they_get_one_at_a_time(
    made: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    root, _, workspace = made
    tasks = []
    for letter in "abcd":
        data = yaml.safe_load((root / "tasks" / TASK / "workspace.yaml").read_text())
        data["id"] = f"{TASK}-{letter}"
        tasks.append(tmp_path / "tasks" / data["id"])
        shutil.copytree(root / "tasks" / TASK, tasks[-1])
        (tasks[-1] / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    # the agent fixes tasks a and c, breaks b's passing tests, leaves d alone
    script = (
        'case "$SWE_TASK_ID" in\n'
        "  *-a|*-c) git apply /agent/fix.patch ;;\n"
        "  *-b) echo 'raise RuntimeError(\"broken by the agent\")' > units/__init__.py ;;\n"
        "esac\n"
    )
    directory = agent_dir(tmp_path, workspace, script)
    seen = {}
    for parallel in (1, 4):
        engine = engine_for(
            made, docker_client, base_image, tmp_path / f"p{parallel}",
            agent_dir=directory, agent_command="bash /agent/run.sh",
        )  # fmt: skip
        report = asyncio.run(evaluate_all(engine, tasks, parallel=parallel))
        seen[parallel] = {
            r.task_id: (
                r.status,
                [(c.command, c.status) for c in r.fail_to_pass + r.pass_to_pass],
                [(run.phase, run.exit_code, run.tests) for run in r.test_runs],
            )
            for r in report.results
        }
    assert seen[1] == seen[4]
    statuses = {task: shown[0] for task, shown in seen[1].items()}
    assert statuses == {
        f"{TASK}-a": "resolved",
        f"{TASK}-b": "unresolved",
        f"{TASK}-c": "resolved",
        f"{TASK}-d": "unresolved",
    }


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


def test_the_cli_grades_predictions_as_swe_benchs_run_evaluation(made: Any, tmp_path: Path) -> None:
    """A predictions file (gold, empty, a patch that fixes nothing, an instance of no task)
    graded by ``swe-stream harness --predictions``: SWE-bench's per-instance files and its
    summary report."""
    root, pr, workspace = made
    iid, model = workspace.instance_id, "org/gold-model"
    wrong = (
        "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+not a fix\n"
    )
    tasks = tmp_path / "tasks"
    shutil.copytree(root / "tasks" / TASK, tasks / TASK)
    for letter in "ab":  # the same task under two more instance ids
        data = yaml.safe_load((root / "tasks" / TASK / "workspace.yaml").read_text())
        data["id"], data["instance_id"] = f"{TASK}-{letter}", f"{iid}{letter}"
        shutil.copytree(root / "tasks" / TASK, tasks / data["id"])
        (tasks / data["id"] / "workspace.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    rows = [
        {"instance_id": iid, "model_name_or_path": model, "model_patch": workspace.patch},
        {"instance_id": f"{iid}a", "model_name_or_path": model, "model_patch": ""},
        {"instance_id": f"{iid}b", "model_name_or_path": model, "model_patch": wrong},
        {"instance_id": "ghost__repo-1", "model_name_or_path": model, "model_patch": wrong},
    ]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    env = worker_env() | {
        "SWE_STREAM_GITHUB_GIT_URL_TEMPLATE": pr.url_template,
        "SWE_STREAM_WORKER_DATA_DIR": str(root / "data"),
    }
    out = tmp_path / "out"
    done = subprocess.run(
        [SWE_STREAM, "harness", "-i", str(tasks), "--predictions", str(predictions),
         "--run-id", "parity1", "-j", "2", "--cache-level", "env", "-o", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Instances resolved: 1" in done.stdout, done.stdout[-3000:]
    summary = json.loads((out / "org__gold-model.parity1.json").read_text())
    assert {k: v for k, v in summary.items() if k.endswith("_instances")} == {
        "total_instances": 4, "submitted_instances": 4, "completed_instances": 2,
        "resolved_instances": 1, "unresolved_instances": 1, "empty_patch_instances": 1,
        "error_instances": 1,
    }  # fmt: skip
    assert (summary["resolved_ids"], summary["unresolved_ids"]) == ([iid], [f"{iid}b"])
    assert (summary["empty_patch_ids"], summary["error_ids"]) == ([f"{iid}a"], ["ghost__repo-1"])
    logs = out / "logs" / "run_evaluation" / "parity1" / "org__gold-model"
    gold = json.loads((logs / iid / "report.json").read_text())[iid]
    assert (gold["resolved"], gold["patch_exists"], gold["patch_successfully_applied"]) == (
        True, True, True,
    )  # fmt: skip
    assert gold["tests_status"]["FAIL_TO_PASS"] == {"success": list(workspace.FAIL_TO_PASS),
                                                    "failure": []}  # fmt: skip
    assert gold["tests_status"]["PASS_TO_FAIL"] == {"success": [], "failure": []}
    assert (logs / iid / "patch.diff").read_text() == workspace.patch
    assert "passed" in (logs / iid / "test_output.txt").read_text()
    wrong_report = json.loads((logs / f"{iid}b" / "report.json").read_text())[f"{iid}b"]
    assert not wrong_report["resolved"] and wrong_report["patch_successfully_applied"]
    assert wrong_report["tests_status"]["FAIL_TO_PASS"]["failure"] == list(workspace.FAIL_TO_PASS)
    assert (logs / f"{iid}b" / "patch.diff").read_text() == wrong
    assert not (logs / f"{iid}a" / "report.json").exists()  # not graded, as in SWE-bench
    assert not (logs / "ghost__repo-1" / "report.json").exists()
    assert "no task has instance_id" in (logs / "ghost__repo-1" / "run_instance.log").read_text()
    # the harness's own outputs too
    report = HarnessReport.model_validate_json((out / "summary.json").read_text())
    statuses = {r.task_id: (r.status, r.error) for r in report.results}
    assert statuses == {
        TASK: ("resolved", None),
        f"{TASK}-a": ("unresolved", "empty patch (not graded)"),
        f"{TASK}-b": ("unresolved", None),
        "ghost__repo-1": ("setup_error", "no task has instance_id 'ghost__repo-1'"),
    }
    assert (out / TASK / "report.json").is_file()
