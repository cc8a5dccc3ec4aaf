"""Testgen on a C repository: a PR with no test of its own (a CMake project whose suite is one
runner printing a TAP line per case), a scripted conversation (a local OpenAI-compatible
server) that adds a case to the suite the build already compiles, checked in the task's Docker
container and re-run by the validator (three runs, Debian's gcc) before it is accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.extract import Extract
from agents.testgen import AgenticTestGenerator
from agents.validate import ValidateStage
from schemas import PatchSet, ValidatedTask
from streams.clients.git import RepoCache
from streams.clients.llm import LLMClient
from streams.core.settings import DockerSettings, ExtractSettings, TestgenSettings, ValidateSettings
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Validator
from tests.agents.repo_tasks import classified_for
from tests.agents.test_setup_agent import llm_settings, tool_result
from tests.fakes.llm_server import FakeLLM
from tests.git_repos import make_pull_request_repo

LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(units C)
enable_testing()
add_library(units src/units.c)
target_include_directories(units PUBLIC include)
add_executable(units_test tests/units_test.c)
target_link_libraries(units_test units)
add_test(NAME units COMMAND units_test)
"""
UNITS_C = '#include "units.h"\ndouble to_km(double miles) { return miles * 1.6; }\n'
SUITE = """\
#include <math.h>
#include <stdio.h>
#include "units.h"
static int failed, number;
static void check(int ok, const char *name) {
  printf("%s %d - %s\\n", ok ? "ok" : "not ok", ++number, name);
  failed += !ok;
}
int main(void) {
  check(to_km(0) == 0, "converts_nothing");
CASES  return failed;
}
"""
MARATHON = '  check(fabs(to_km(26.2188) - 42.195) < 0.001, "converts_a_marathon");\n'


@pytest.mark.docker
@pytest.mark.timeout(900)  # the env and instance builds, the agent's runs, three validations
async def test_testgen_adds_a_case_to_a_c_suite_with_ctests_case_ids(
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
    cxx_images: dict[str, str],
    llm_server: FakeLLM,
) -> None:
    base = {
        "CMakeLists.txt": LISTS,
        "include/units.h": "double to_km(double miles);\n",
        "src/units.c": UNITS_C,
        "tests/units_test.c": SUITE.replace("CASES", ""),
    }
    fixed = UNITS_C.replace("miles * 1.6;", "miles * 1.609344;")
    pr = make_pull_request_repo(
        tmp_path / "git", repo="swe-stream-test/units-c", base_files=base,
        pr_files={"src/units.c": fixed},
    )  # fmt: skip
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet) and patches.test_patch == ""
    suite = "tests/units_test.c"
    files = {suite: SUITE.replace("CASES", MARATHON)}
    run = "python3 /opt/swe-env/swe-ctest.py --build-dir build"
    script: list[tuple[str, dict[str, Any]]] = [
        ("shell", {"command": f"cat > {suite} <<'EOF'\n{files[suite]}EOF\n{run}"}),
        # the case's own name: not the id CTest's run gives it
        ("submit_tests", {"files": files, "fail_to_pass": ["converts_a_marathon"]}),
        ("submit_tests", {"files": files, "fail_to_pass": ["units::converts_a_marathon"]}),
    ]
    llm_server.reply_tool_calls(script)
    oldest = dict(sorted(cxx_images.items())[:1])
    docker = DockerSettings(
        base_image=base_image, toolchain_images={"gcc": oldest}, memory_mb=1024, cpus=1
    )
    llm = LLMClient(llm_settings(llm_server))
    try:
        generator = AgenticTestGenerator(
            llm, TestgenSettings(max_turns=10, command_timeout_seconds=300),
            Limits.from_settings(docker),
        )  # fmt: skip
        validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(runs=2), 1)
        outcome = await ValidateStage(validator, generator)(patches)
    finally:
        await llm.aclose()
    assert outcome.status == "accepted", f"{outcome.reason}: {outcome.detail}"
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.tests_generated
    # the suite CTest runs whole fails before the fix too: it is the case's and its own
    assert task.FAIL_TO_PASS == ["units", "units::converts_a_marathon"]
    assert task.PASS_TO_PASS == ["units::converts_nothing"]
    assert task.install_config is not None and task.install_config.test_runner == "ctest"
    ran = json.loads(tool_result(llm_server, 1))
    assert ran["exit_code"] != 0 and "1 - units (Failed)" in ran["stdout"]
    rejected = tool_result(llm_server, 2)
    assert "these claims did not hold" in rejected and "units::converts_a_marathon" in rejected
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert "C or C++ repository" in system and "pytest" not in system
    assert "Test command (run in /testbed): python3 /opt/swe-env/swe-ctest.py" in system
