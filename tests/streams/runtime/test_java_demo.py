"""``swe-stream demo --language java`` and the check commands of the Java task it exports, in
a file of their own so that pytest-xdist (``--dist loadfile``) runs them beside the other
demos: Maven resolves its plugins and JUnit from Maven Central first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.streams.runtime.test_runner import demo_of, exported_checks, grade_one_by_one

pytestmark = pytest.mark.docker

JAVA_CHECK = "python3 /opt/swe-env/swe-mvn-test.py"


@pytest.mark.timeout(900)  # Maven resolves its plugins and JUnit from Maven Central first
def test_a_java_demo_runs_offline(
    tmp_path: Path, base_image: str, java_images: dict[str, str]
) -> None:
    """``demo --language java``: a Maven project with JUnit 5 from Maven Central, a
    parameterized test and a nested class, Surefire's reports, three runs; the task re-validated
    and the harness's agents."""
    workspace, _ = demo_of("java", "swe-stream-demo-units-java-1", tmp_path / "d")
    assert workspace["language"] == "Java"
    assert workspace["install_config"]["test_runner"] == "surefire"
    assert workspace["FAIL_TO_PASS"] == [
        "demo.TemperatureTest#toCelsius(double, double)[1]",
        "demo.TemperatureTest#toCelsius(double, double)[2]",
    ]
    assert workspace["PASS_TO_PASS"] == [
        "demo.TemperatureTest#freezingPoint",
        "demo.TemperatureTest#toFahrenheit(double, double)[1]",
        "demo.TemperatureTest#toFahrenheit(double, double)[2]",
        "demo.TemperatureTest$Body#normal",
    ]
    assert workspace["install_config"]["base_image"] == java_images["11"]  # Java 8: JDK 11


@pytest.mark.timeout(900)
def test_the_check_commands_of_a_java_task_grade_one_by_one(
    tmp_path: Path, fixtures_dir: Path, java_images: dict[str, str]
) -> None:
    """A Java task's check commands (checks.txt: ``swe-mvn-test.py '<Class>#<method>'``,
    which runs ``mvn -o test -Dtest=<Class>#<method>*``), each run alone (``harness
    --isolate-tests``) and read by the same parser: the gold patch resolves, an empty one does
    not."""
    with exported_checks(tmp_path, fixtures_dir, "java") as (env, task_dir, workspace, checks):
        assert checks[:2] == [
            f"{JAVA_CHECK} 'demo.TemperatureTest#toCelsius(double, double)[1]'",
            f"{JAVA_CHECK} 'demo.TemperatureTest#toCelsius(double, double)[2]'",
        ]
        assert len(checks) == 6
        grade_one_by_one(env, task_dir, workspace, checks, tmp_path)
