"""Java end to end: Maven repositories the tests make with git in the set-up styles of real
Java projects, each with a PR that fixes a bug and adds the tests that show it, through
extract and the validate stage (real Docker, Debian's OpenJDK and Maven images, artifacts
from the real Maven Central), validated with three runs; exported as task directories, the
harness resolves each with the gold patch (the other gradings are ``test_go_validate.py``'s:
the same harness in every language).

The style here: a multi-module JUnit 4 build (a parent POM, a library and an application
depending on it) whose test patch does not compile without the fix (the library's old tests
are PASS_TO_PASS, not FAIL_TO_PASS, and the application's tests are not run). A single-module
JUnit 5 project at Java 8 (compiled by JDK 11) with a parameterized test (each case a test of
its own) and a nested class goes the same way through the whole runtime as ``swe-stream demo
--language java`` (``tests/streams/runtime/test_runner.py``), its check commands too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.streams.evaluation import test_go_validate

pytestmark = pytest.mark.docker


PARENT_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo.shapes</groupId>
  <artifactId>shapes-parent</artifactId>
  <version>1.0.0</version>
  <packaging>pom</packaging>
  <modules>
    <module>core</module>
    <module>app</module>
  </modules>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.13.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <pluginManagement>
      <plugins>
        <plugin>
          <groupId>org.apache.maven.plugins</groupId>
          <artifactId>maven-surefire-plugin</artifactId>
          <version>3.2.5</version>
        </plugin>
        <plugin>
          <groupId>org.apache.maven.plugins</groupId>
          <artifactId>maven-compiler-plugin</artifactId>
          <version>3.13.0</version>
        </plugin>
      </plugins>
    </pluginManagement>
  </build>
</project>
"""


def module_pom(name: str, dependency: str = "") -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>demo.shapes</groupId>
    <artifactId>shapes-parent</artifactId>
    <version>1.0.0</version>
  </parent>
  <artifactId>{name}</artifactId>
  <dependencies>{dependency}</dependencies>
</project>
"""


CORE_DEPENDENCY = """
    <dependency>
      <groupId>demo.shapes</groupId>
      <artifactId>core</artifactId>
      <version>1.0.0</version>
    </dependency>
  """
RECTANGLE = "core/src/main/java/demo/shapes/Rectangle.java"
RECTANGLE_TEST = "core/src/test/java/demo/shapes/RectangleTest.java"
MODULES_BASE = {
    "pom.xml": PARENT_POM,
    "core/pom.xml": module_pom("core"),
    "app/pom.xml": module_pom("app", CORE_DEPENDENCY),
    RECTANGLE: (
        "package demo.shapes;\n\npublic record Rectangle(double width, double height) {\n"
        "    public double area() {\n        return width * height;\n    }\n\n"
        "    public double diagonal() {\n        return width + height;\n    }\n}\n"
    ),
    RECTANGLE_TEST: (
        "package demo.shapes;\n\nimport static org.junit.Assert.assertEquals;\n\n"
        "import org.junit.Test;\n\npublic class RectangleTest {\n    @Test\n"
        "    public void area() {\n"
        "        assertEquals(6.0, new Rectangle(2, 3).area(), 1e-9);\n    }\n}\n"
    ),
    "app/src/main/java/demo/app/Report.java": (
        "package demo.app;\n\nimport demo.shapes.Rectangle;\n\npublic final class Report {\n"
        "    private Report() {}\n\n    public static String of(Rectangle r) {\n"
        '        return "area " + r.area();\n    }\n}\n'
    ),
    "app/src/test/java/demo/app/ReportTest.java": (
        "package demo.app;\n\nimport static org.junit.Assert.assertEquals;\n\n"
        "import demo.shapes.Rectangle;\nimport org.junit.Test;\n\npublic class ReportTest {\n"
        "    @Test\n    public void saysTheArea() {\n"
        '        assertEquals("area 6.0", Report.of(new Rectangle(2, 3)));\n    }\n}\n'
    ),
}
MODULES_FIX: dict[str, str | None] = {
    # the fix, and a method the new test calls: the test patch alone does not compile
    RECTANGLE: MODULES_BASE[RECTANGLE]
    .replace("return width + height;", "return Math.hypot(width, height);")
    .replace(
        "    public double diagonal() {",
        "    public double perimeter() {\n        return 2 * (width + height);\n    }\n\n"
        "    public double diagonal() {",
    ),
    RECTANGLE_TEST: MODULES_BASE[RECTANGLE_TEST].replace(
        "    }\n}\n",
        "    }\n\n    @Test\n    public void diagonal() {\n"
        "        assertEquals(5.0, new Rectangle(3, 4).diagonal(), 1e-9);\n"
        "        assertEquals(14.0, new Rectangle(3, 4).perimeter(), 1e-9);\n    }\n}\n",
    ),
}


@pytest.mark.timeout(900)  # Maven resolves its plugins and JUnit from Maven Central first
def test_a_multi_module_build_whose_test_patch_does_not_compile_without_the_fix(
    tmp_path: Path, docker_client: Any, base_image: str, java_images: dict[str, str]
) -> None:
    task = test_go_validate.validate_and_grade(
        tmp_path, "swe-stream-test/shapes", MODULES_BASE, MODULES_FIX, docker_client,
        base_image, java_images, "java",
    )  # fmt: skip
    assert task.FAIL_TO_PASS == ["demo.shapes.RectangleTest#diagonal"]
    # the module's old test passed at the base: PASS_TO_PASS; the application's is not run
    assert task.PASS_TO_PASS == ["demo.shapes.RectangleTest#area"]
    assert task.install_config is not None
    assert task.install_config.base_image == java_images["17"]  # release 17
    assert "java-level:17" in task.install_config.recipe
