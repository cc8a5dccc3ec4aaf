"""The C++ and C demos (``demo --language cpp`` / ``c``) and the C++ task's check commands,
each run alone by the harness. (Apart from ``test_language_demos.py``, whose long runs they
would lengthen on one test worker: a file is one worker's.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.streams.runtime.test_language_demos import demo_of, exported_checks, grade_one_by_one

pytestmark = pytest.mark.docker


def test_a_cpp_demo_runs_offline(
    tmp_path: Path, base_image: str, cxx_images: dict[str, str]
) -> None:
    """``demo --language cpp``: CMake with Debian's GoogleTest (found by its GTestConfig.cmake
    in the suite's file list), cases CTest discovers, three runs; the task re-validated and the
    harness's two agents (a build directory's odd file names are no part of an agent's patch)."""
    workspace, _ = demo_of("cpp", "swe-stream-demo-units-cpp-1", tmp_path / "d")
    assert workspace["language"] == "C++"
    assert workspace["install_config"]["test_runner"] == "ctest"
    assert workspace["install_config"]["system_packages"] == ["libgtest-dev"]
    assert workspace["FAIL_TO_PASS"] == ["Temperature.FahrenheitBoilingPoint"]
    assert workspace["PASS_TO_PASS"] == ["Temperature.BoilingPoint", "Temperature.FreezingPoint"]


def test_a_c_demo_runs_offline(tmp_path: Path, base_image: str, cxx_images: dict[str, str]) -> None:
    """``demo --language c``: Meson, a test executable per ``test()``, the PR adding one;
    three runs, the task re-validated and the harness's two agents."""
    workspace, _ = demo_of("c", "swe-stream-demo-units-c-1", tmp_path / "d")
    assert workspace["language"] == "C"
    assert workspace["install_config"]["test_runner"] == "meson"
    assert workspace["FAIL_TO_PASS"] == ["fahrenheit"]
    assert workspace["PASS_TO_PASS"] == ["celsius"]


CTEST_CHECK = "python3 /opt/swe-env/swe-ctest.py --system cmake --build-dir build --timeout 600"


def test_the_check_commands_of_a_cpp_task_grade_one_by_one(
    tmp_path: Path, fixtures_dir: Path, cxx_images: dict[str, str]
) -> None:
    """A C++ task's check commands (checks.txt: swe-ctest with CTest's ``-R '^name$'``), each
    run alone (``harness --isolate-tests``): the gold patch resolves, the F2P ones failing at
    the base."""
    with exported_checks(tmp_path, fixtures_dir, "cpp") as (env, task_dir, workspace, checks):
        assert checks == [
            f"{CTEST_CHECK} --tests-regex '^Temperature\\.FahrenheitBoilingPoint$'",
            f"{CTEST_CHECK} --tests-regex '^Temperature\\.BoilingPoint$'",
            f"{CTEST_CHECK} --tests-regex '^Temperature\\.FreezingPoint$'",
        ]
        grade_one_by_one(env, task_dir, workspace, checks, tmp_path)
