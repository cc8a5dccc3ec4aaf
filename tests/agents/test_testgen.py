"""Agentic test generation: a scripted conversation (a local OpenAI-compatible server) drives
the loop against a repository the test makes; commands run in the task's Docker container and
submissions are re-run by the validator before they are accepted."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr

from agents.extract import Extract
from agents.testgen import (
    TIME_LIMIT,
    TOKEN_LIMIT,
    TURN_LIMIT,
    AgenticTestGenerator,
    Rejected,
    SubmitArgs,
    check_claims,
    checked_test_path,
    files_patch,
    make_test_generator,
    safe_path,
)
from agents.tool_loop import ELIDED, fit_context
from agents.validate import ValidateStage
from schemas import LedgerEntry, PatchSet, ValidatedTask, ValidationReport
from streams.clients.git import RepoCache
from streams.clients.llm import LLMClient
from streams.core.settings import (
    DockerSettings,
    ExtractSettings,
    LLMSettings,
    TestgenSettings,
    ValidateSettings,
)
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Proof, Validator
from streams.kafka.topics import LEDGER, PATCHES, VALIDATED
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage, StageRunner
from tests.agents.repo_tasks import (
    BASE_FILES,
    FIXED_OPS,
    TEST_ADD,
    classified_for,
    make_calc_repo,
)
from tests.fakes.llm_server import FakeLLM, tool_call_reply

GOOD_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PASSES_BEFORE = "from calc import sub\n\n\ndef test_sub_zero():\n    assert sub(0, 0) == 0\n"


@pytest.mark.unit
def test_submitted_files_become_a_patch_git_applies(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_old.py").write_text("def test_old():\n    pass\n")
    tar = subprocess.run(
        ["tar", "-C", str(work), "-cf", "-", "tests"], capture_output=True, check=True
    ).stdout
    files = {
        "tests/test_old.py": "def test_old():\n    assert True",  # no final newline
        "tests/test_new.py": GOOD_TEST,
    }
    patch = files_patch(TreeFiles(tar), files)
    assert "new file mode 100644" in patch and "--- /dev/null" in patch
    applied = subprocess.run(
        ["git", "apply", "-"], cwd=work, input=patch.encode(), capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    assert (work / "tests" / "test_new.py").read_text() == GOOD_TEST
    assert (work / "tests" / "test_old.py").read_text() == "def test_old():\n    assert True\n"
    with pytest.raises(Rejected, match="identical"):
        files_patch(TreeFiles(tar), {"tests/test_old.py": "def test_old():\n    pass\n"})
    for bad in ("../escape.py", "/etc/passwd", ".", "tests/a\nb.py"):
        with pytest.raises(Rejected):
            safe_path(bad)
    assert checked_test_path("tests/./test_x.py") == "tests/test_x.py"
    for not_a_test in ("calc/ops.py", "setup.py", "conftest_not/x.py"):
        with pytest.raises(Rejected, match="not a test file"):
            files_patch(TreeFiles(tar), {not_a_test: "x = 1\n"})


@pytest.mark.unit
def test_the_oldest_tool_results_are_elided_when_the_conversation_grows() -> None:
    def tool(n: int, size: int) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": f"c{n}", "content": str(n) * size}

    messages = [
        {"role": "system", "content": "s" * 100},
        {"role": "user", "content": "u" * 100},
        {"role": "assistant", "content": None, "tool_calls": []},
        tool(1, 5000),
        tool(2, 5000),
        tool(3, 5000),
    ]
    fit_context(messages, 11_000)
    assert [m["content"] == ELIDED for m in messages[3:]] == [True, False, False]
    assert messages[0]["content"] == "s" * 100 and messages[1]["content"] == "u" * 100
    fit_context(messages, 1_000_000)  # under the limit: nothing changes
    assert messages[4]["content"] == "2" * 5000


@pytest.mark.unit
def test_the_generator_is_made_only_when_asked_for_and_a_key_is_set(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = Limits()
    keyed = LLMClient(LLMSettings(api_key=SecretStr("sk-or-test-testgen")))
    keyless = LLMClient(LLMSettings(api_key=None))
    assert make_test_generator(TestgenSettings(mode="off"), keyed, limits) is None
    with caplog.at_level(logging.DEBUG, logger="swe_stream.testgen"):
        assert make_test_generator(TestgenSettings(), keyless, limits) is None
    assert "no LLM API key" in caplog.text
    fallback = make_test_generator(TestgenSettings(), keyed, limits)
    always = make_test_generator(TestgenSettings(mode="always"), keyed, limits)
    assert isinstance(fallback, AgenticTestGenerator) and not fallback.always
    assert isinstance(always, AgenticTestGenerator) and always.always


@pytest.mark.unit
def test_claims_must_hold_in_the_validators_own_run() -> None:
    report = ValidationReport(
        image="x",
        runs=2,
        duration_seconds=1,
        before={"t::a": "failed", "t::b": "passed"},
        after={"t::a": "passed", "t::b": "passed"},
    )
    proof = Proof(report, ["t::a"], ["t::b"])
    check_claims(proof, SubmitArgs(files={"t": "x"}, fail_to_pass=["t::a"], pass_to_pass=["t::b"]))
    with pytest.raises(Rejected, match="t::b: before the fix passed, after passed"):
        check_claims(proof, SubmitArgs(files={"t": "x"}, fail_to_pass=["t::a", "t::b"]))


def llm_settings(server: FakeLLM) -> LLMSettings:
    return LLMSettings(
        base_url=server.base_url,
        model="test/agent",
        api_key=SecretStr("sk-or-test-testgen"),
        backoff_seconds=0.05,
        max_backoff_seconds=0.2,
    )


async def calc_patches(
    root: Path, files: dict[str, str | None] | None = None
) -> tuple[PatchSet, RepoCache]:
    """The calc repository's PR (by default the fix and no test at all), through extract."""
    pr = make_calc_repo(root / "git", files if files is not None else {"calc/ops.py": FIXED_OPS})
    repos = RepoCache(root / "cache", pr.url_template)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet)
    return patches, repos


def validator_with_testgen(
    repos: RepoCache, docker_client: Any, base_image: str, llm: LLMClient, **testgen: Any
) -> ValidateStage:
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        memory_mb=1024,
        cpus=1,
    )
    generator = AgenticTestGenerator(
        llm,
        TestgenSettings(**({"max_turns": 20, "command_timeout_seconds": 60} | testgen)),
        Limits.from_settings(docker),
    )
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=2), 1)
    return ValidateStage(validator, generator)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0


def submissions(result: str) -> float:
    labels = {"result": result}
    return REGISTRY.get_sample_value("swe_stream_testgen_submissions_total", labels) or 0


def shell_result(server: FakeLLM, request: int) -> dict[str, Any]:
    """The ``shell`` result the model read in request ``request`` (its last tool message)."""
    content = tool_result(server, request)
    parsed = json.loads(content)
    assert isinstance(parsed, dict)
    return parsed


def tool_result(server: FakeLLM, request: int) -> str:
    messages = server.requests[request].body["messages"]
    content = [m for m in messages if m["role"] == "tool"][-1]["content"]
    assert isinstance(content, str)
    return content


@pytest.mark.docker
async def test_a_scripted_conversation_ends_with_verified_generated_tests(
    tmp_path: Path, docker_client: Any, base_image: str, llm_server: FakeLLM
) -> None:
    patches, repos = await calc_patches(tmp_path)
    assert patches.test_patch == "" and patches.title == "Fix add()"
    script: list[tuple[str, dict[str, Any]]] = [
        ("shell", {"command": "ls -R calc tests"}),  # 1
        ("shell", {"command": "cat /etc/hostname"}),  # 2
        ("shell", {"command": "python -m pytest -q tests"}),  # 3: the existing tests run
        ("shell", {"command": f"printf %b {json.dumps(GOOD_TEST)} > tests/test_generated.py"}),
        ("shell", {"command": "python -m pytest -q tests/test_generated.py"}),  # 5: fails
        ("shell", {"command": "git apply /tmp/swe-stream/fix.patch && git status --short"}),
        ("shell", {"command": "python -m pytest -q tests/test_generated.py"}),  # 7: passes
        ("shell", {"command": "git apply -R /tmp/swe-stream/fix.patch && git diff --stat"}),
        ("shell", {"command": "sleep 30", "timeout_seconds": 3}),  # 9: killed at 3 s
        (
            "submit_tests",
            {
                "files": {"tests/test_generated.py": PASSES_BEFORE},
                "fail_to_pass": ["tests/test_generated.py::test_sub_zero"],
            },
        ),
        ("submit_tests", {"files": {"calc/ops.py": FIXED_OPS}, "fail_to_pass": ["x"]}),
        (
            "submit_tests",
            {
                "files": {"tests/test_generated.py": GOOD_TEST},
                "fail_to_pass": ["tests/test_generated.py::test_add"],
                "pass_to_pass": [],
            },
        ),
    ]
    llm_server.reply_tool_calls(script)
    accepted, rejected = submissions("accepted"), submissions("rejected")
    turns = sample("swe_stream_testgen_turns_sum", outcome="accepted")
    tokens = sample("swe_stream_testgen_accepted_tokens_sum")
    llm = LLMClient(llm_settings(llm_server))
    try:
        check = validator_with_testgen(repos, docker_client, base_image, llm)
        outcome = await check(patches)
    finally:
        await llm.aclose()
    assert outcome.status == "accepted", outcome.reason
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    assert task.FAIL_TO_PASS == ["tests/test_generated.py::test_add"]
    assert task.PASS_TO_PASS == []  # the submitted file holds only the new test
    assert task.tests_generated and task.testgen_turns == len(script)
    assert task.testgen_tokens == len(script) * (120 + 30)  # the usage the server reported
    assert (submissions("accepted"), submissions("rejected")) == (accepted + 1, rejected + 2)
    assert sample("swe_stream_testgen_turns_sum", outcome="accepted") == turns + len(script)
    assert sample("swe_stream_testgen_accepted_tokens_sum") == tokens + task.testgen_tokens
    assert "+++ b/tests/test_generated.py" in task.test_patch and "test_add" in task.test_patch
    assert "calc/ops.py" not in task.test_patch
    # the validator's own re-run: failed before the fix in each of its runs, passed after
    assert task.validation.before == {"tests/test_generated.py::test_add": "failed"}
    assert task.validation.runs == 4  # 2 before + 2 after (ValidateSettings(runs=2))

    listing = shell_result(llm_server, 1)
    assert listing["exit_code"] == 0 and "ops.py" in listing["stdout"]
    hostname = shell_result(llm_server, 2)["stdout"].strip()
    assert hostname and hostname != socket.gethostname(), "the command ran on the host"
    existing = shell_result(llm_server, 3)
    assert existing["exit_code"] == 0 and "2 passed" in existing["stdout"]
    before = shell_result(llm_server, 5)
    assert before["exit_code"] == 1 and "1 failed" in before["stdout"]
    applied = shell_result(llm_server, 6)
    assert applied["exit_code"] == 0 and "M calc/ops.py" in applied["stdout"]
    after = shell_result(llm_server, 7)
    assert after["exit_code"] == 0 and "1 passed" in after["stdout"]
    assert shell_result(llm_server, 8)["stdout"].strip() == ""  # reverted: no diff
    slept = shell_result(llm_server, 9)
    assert slept["timed_out"] is True and "killed after 3 s" in slept["note"]
    assert tool_result(llm_server, 10).startswith("rejected: no_fail_to_pass")
    assert "'calc/ops.py' is not a test file" in tool_result(llm_server, 11)

    request = llm_server.requests[0].body
    assert request["tool_choice"] == "required"
    assert {t["function"]["name"] for t in request["tools"]} == {"shell", "submit_tests"}
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert "/tmp/swe-stream/fix.patch" in system and "-m pytest" in system
    assert "return a + b" in user  # the fix
    assert "Fix add()" in user and "add() subtracts" in user  # the PR's title and body
    assert "add(2, 3) returns -1" in user  # the problem statement
    assert "calc/ops.py" in user and "tests/test_ops.py" in user  # the tree


@pytest.mark.docker
async def test_tests_are_generated_when_the_prs_own_tests_prove_nothing(
    tmp_path: Path, docker_client: Any, base_image: str, llm_server: FakeLLM
) -> None:
    # the PR adds a test that passes before the fix too: no FAIL_TO_PASS from its own tests
    test_ops = BASE_FILES["tests/test_ops.py"] + (
        "\n\ndef test_sub_zero():\n    from calc import sub\n\n    assert sub(0, 0) == 0\n"
    )
    patches, repos = await calc_patches(
        tmp_path, {"calc/ops.py": FIXED_OPS, "tests/test_ops.py": test_ops}
    )
    assert patches.test_files == ["tests/test_ops.py"]
    llm_server.reply_tool_call(
        "submit_tests",
        {
            "files": {"tests/test_ops.py": test_ops + TEST_ADD},
            "fail_to_pass": ["tests/test_ops.py::test_add"],
            "pass_to_pass": ["tests/test_ops.py::test_sub"],
        },
    )
    llm = LLMClient(llm_settings(llm_server))
    try:
        outcome = await validator_with_testgen(repos, docker_client, base_image, llm)(patches)
    finally:
        await llm.aclose()
    assert outcome.status == "accepted", outcome.reason
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.tests_generated and task.testgen_turns == 1
    assert task.FAIL_TO_PASS == ["tests/test_ops.py::test_add"]
    assert task.PASS_TO_PASS == [
        "tests/test_ops.py::test_sub",
        "tests/test_ops.py::test_sub_negative",
        "tests/test_ops.py::test_sub_zero",
    ]
    assert len(llm_server.requests) == 1


@pytest.mark.docker
@pytest.mark.parametrize(
    ("limits", "reason", "requests"),
    [
        ({"max_turns": 3}, TURN_LIMIT, 3),
        ({"max_tokens": 250}, TOKEN_LIMIT, 2),  # 150 tokens a reply: over after the 2nd
        ({"max_seconds": 4, "command_timeout_seconds": 60}, TIME_LIMIT, 1),
    ],
    ids=["turns", "tokens", "time"],
)
async def test_a_conversation_that_never_submits_ends_at_its_limit(
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
    llm_server: FakeLLM,
    limits: dict[str, Any],
    reason: str,
    requests: int,
) -> None:
    patches, repos = await calc_patches(tmp_path)
    # the time case: the 60 s sleep is cut to what is left of the 4 s
    command = "sleep 60" if reason == TIME_LIMIT else "true"
    llm_server.default = lambda body: tool_call_reply("shell", {"command": command})
    llm = LLMClient(llm_settings(llm_server))
    sink = MemorySink()
    stage = Stage(
        "validate",
        PATCHES,
        VALIDATED,
        validator_with_testgen(repos, docker_client, base_image, llm, **limits),
    )
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    exhausted = sample("swe_stream_testgen_turns_count", outcome="exhausted")
    started = time.monotonic()
    try:
        outcome = await runner.process(patches.key.encode(), patches.to_json(), 0, 0)
    finally:
        await llm.aclose()
    elapsed = time.monotonic() - started
    assert outcome is not None and (outcome.status, outcome.reason) == ("rejected", reason)
    (entry,) = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    assert (entry.stage, entry.status, entry.reason) == ("validate", "rejected", reason)
    assert len(llm_server.requests) == requests and sink.on(VALIDATED.name) == []
    assert sample("swe_stream_testgen_turns_count", outcome="exhausted") == exhausted + 1
    if reason == TIME_LIMIT:  # the sleep was cut at the deadline, not run for its 60 s
        assert elapsed < 45
