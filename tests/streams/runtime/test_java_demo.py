"""``swe-stream demo --language java``, in a file of its own so that pytest-xdist (``--dist
loadfile``) runs it beside the other demos: Maven resolves its plugins and JUnit from Maven
Central first. A check command's real run (``swe-mvn-test.py '<id>'``) is read back by the
same parser in ``tests/streams/evaluation/recipes/test_java_recipe.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.streams.runtime.test_language_demos import demo_of

pytestmark = pytest.mark.docker


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
