"""The offline world of ``swe-stream demo`` (and of the end-to-end tests of ``mine``).

Without internet access or tokens the pipeline still runs for real, against local services:

- a **repository** made with git on this machine: a small package (Python, or JavaScript
  with ``--language javascript``) with a bug, and a merged pull request that fixes it and
  adds a test; published as a bare remote over
  ``file://``, so extract clones it as it would clone GitHub;
- a **GH Archive** server on 127.0.0.1 serving a real hour (the 2015-01-01 00:00 UTC hour
  shipped with the package, or any hour file) with one more PullRequestEvent appended: the
  merge of that pull request, shaped like the events GitHub published then;
- a **GitHub API** server on 127.0.0.1 answering for that repository (the pull request, its
  changed files, the repository) and ``404`` for everything else, so the real PRs of the hour
  fail at enrich, at once, with their reason in the ledger - as expected offline.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from importlib import resources
from pathlib import Path
from typing import Any

from isal import igzip

from streams.offline.demo_native import C_BASE, C_FIX, CPP_BASE, CPP_FIX
from streams.offline.local_http import LocalServer, running
from streams.offline.local_repo import PullRequestRepo, make_pull_request_repo, run_git

DEMO_HOUR = "2015-01-01-0"
DEMO_NUMBER = 1  # the local remote keeps the merged PR as refs/pull/1/head


@dataclass(frozen=True)
class DemoProject:
    """A small project with a bug and the pull request that fixes it and adds the test that
    shows it, in one language."""

    repo: str
    language: str  # as GitHub names it
    base_files: dict[str, str]
    fix_files: dict[str, str | None]
    title: str
    body: str


PYTHON_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "pyproject.toml": '[project]\nname = "units"\nversion = "0.1.0"\n',
    "units/__init__.py": (
        "from units.temperature import celsius_to_fahrenheit, fahrenheit_to_celsius\n\n"
        "__all__ = ['celsius_to_fahrenheit', 'fahrenheit_to_celsius']\n"
    ),
    "units/temperature.py": (
        '"""Temperature scales."""\n\n\n'
        "def celsius_to_fahrenheit(celsius):\n"
        "    return celsius * 9 / 5 + 32\n\n\n"
        "def fahrenheit_to_celsius(fahrenheit):\n"
        "    return fahrenheit - 32 * 5 / 9\n"
    ),
    "tests/__init__.py": "",
    "tests/test_temperature.py": (
        "from units import celsius_to_fahrenheit\n\n\n"
        "def test_freezing_point():\n"
        "    assert celsius_to_fahrenheit(0) == 32\n\n\n"
        "def test_boiling_point():\n"
        "    assert celsius_to_fahrenheit(100) == 212\n"
    ),
}
PYTHON_FIX: dict[str, str | None] = {
    "units/temperature.py": PYTHON_BASE["units/temperature.py"].replace(
        "return fahrenheit - 32 * 5 / 9", "return (fahrenheit - 32) * 5 / 9"
    ),
    "tests/test_temperature.py": PYTHON_BASE["tests/test_temperature.py"].replace(
        "from units import celsius_to_fahrenheit\n",
        "from units import celsius_to_fahrenheit, fahrenheit_to_celsius\n",
    )
    + (
        "\n\ndef test_fahrenheit_to_celsius():\n"
        "    assert fahrenheit_to_celsius(212) == 100\n"
        "    assert fahrenheit_to_celsius(32) == 0\n"
    ),
}
TITLE = "Fix fahrenheit_to_celsius operator precedence"
BODY = (
    "fahrenheit_to_celsius(212) returns 194.2 instead of 100: the subtraction of 32 must "
    "happen before the scaling by 5/9."
)
# the JavaScript twin: npm with a lockfile (npm ci), Node's own test runner, no dependencies
# (the demo installs nothing from a registry)
JS_LOCK = (
    '{\n  "name": "units",\n  "version": "0.1.0",\n  "lockfileVersion": 3,\n'
    '  "requires": true,\n  "packages": {\n    "": {\n      "name": "units",\n'
    '      "version": "0.1.0",\n      "license": "MIT"\n    }\n  }\n}\n'
)
JS_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "package.json": (
        '{\n  "name": "units",\n  "version": "0.1.0",\n  "license": "MIT",\n'
        '  "main": "src/temperature.js",\n  "scripts": {\n    "lint": "eslint .",\n'
        '    "test": "npm run lint && node --test test/"\n  }\n}\n'
    ),
    "package-lock.json": JS_LOCK,
    "src/temperature.js": (
        "'use strict';\n\n"
        "function celsiusToFahrenheit(celsius) {\n  return celsius * 9 / 5 + 32;\n}\n\n"
        "function fahrenheitToCelsius(fahrenheit) {\n  return fahrenheit - 32 * 5 / 9;\n}\n\n"
        "module.exports = { celsiusToFahrenheit, fahrenheitToCelsius };\n"
    ),
    "test/temperature.test.js": (
        "'use strict';\n\nconst assert = require('node:assert');\n"
        "const { describe, it } = require('node:test');\n"
        "const { celsiusToFahrenheit } = require('../src/temperature');\n\n"
        "describe('celsiusToFahrenheit', () => {\n"
        "  it('freezing point', () => {\n"
        "    assert.strictEqual(celsiusToFahrenheit(0), 32);\n  });\n"
        "  it('boiling point', () => {\n"
        "    assert.strictEqual(celsiusToFahrenheit(100), 212);\n  });\n});\n"
    ),
}
JS_FIX: dict[str, str | None] = {
    "src/temperature.js": JS_BASE["src/temperature.js"].replace(
        "return fahrenheit - 32 * 5 / 9", "return (fahrenheit - 32) * 5 / 9"
    ),
    "test/temperature.test.js": JS_BASE["test/temperature.test.js"].replace(
        "const { celsiusToFahrenheit } =", "const { celsiusToFahrenheit, fahrenheitToCelsius } ="
    )
    + (
        "\ndescribe('fahrenheitToCelsius', () => {\n"
        "  it('boiling point', () => {\n"
        "    assert.strictEqual(fahrenheitToCelsius(212), 100);\n  });\n});\n"
    ),
}
# the Go twin: a module of the standard library alone (the demo downloads nothing), a table
# test with subtests
GO_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "go.mod": "module example.com/units\n\ngo 1.19\n",
    "temperature.go": (
        "// Package units converts between units of measure.\npackage units\n\n"
        "// CelsiusToFahrenheit converts degrees Celsius to Fahrenheit.\n"
        "func CelsiusToFahrenheit(c float64) float64 { return c*9/5 + 32 }\n\n"
        "// FahrenheitToCelsius converts degrees Fahrenheit to Celsius.\n"
        "func FahrenheitToCelsius(f float64) float64 { return f - 32*5/9 }\n"
    ),
    "temperature_test.go": (
        'package units\n\nimport "testing"\n\n'
        "func TestCelsiusToFahrenheit(t *testing.T) {\n"
        "\tfor name, c := range map[string][2]float64{\n"
        '\t\t"freezing point": {0, 32},\n\t\t"boiling point": {100, 212},\n\t} {\n'
        "\t\tc := c\n\t\tt.Run(name, func(t *testing.T) {\n"
        "\t\t\tif got := CelsiusToFahrenheit(c[0]); got != c[1] {\n"
        '\t\t\t\tt.Errorf("CelsiusToFahrenheit(%v) = %v, want %v", c[0], got, c[1])\n'
        "\t\t\t}\n\t\t})\n\t}\n}\n"
    ),
}
GO_FIX: dict[str, str | None] = {
    "temperature.go": GO_BASE["temperature.go"].replace(
        "return f - 32*5/9", "return (f - 32) * 5 / 9"
    ),
    "temperature_test.go": GO_BASE["temperature_test.go"]
    + (
        "\nfunc TestFahrenheitToCelsius(t *testing.T) {\n"
        "\tif got := FahrenheitToCelsius(212); got != 100 {\n"
        '\t\tt.Errorf("FahrenheitToCelsius(212) = %v, want 100", got)\n\t}\n}\n'
    ),
}
# the Rust twin: a crate of the standard library alone (no crate to fetch), a doc test, unit
# tests in src/ and an integration test
RUST_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "Cargo.toml": (
        '[package]\nname = "units"\nversion = "0.1.0"\nedition = "2021"\nrust-version = "1.60"\n'
    ),
    "src/lib.rs": (
        "//! Conversions between units of measure.\n\n"
        "/// Converts degrees Celsius to Fahrenheit.\n///\n/// ```\n"
        "/// assert_eq!(units::celsius_to_fahrenheit(100.0), 212.0);\n/// ```\n"
        "pub fn celsius_to_fahrenheit(c: f64) -> f64 {\n    c * 9.0 / 5.0 + 32.0\n}\n\n"
        "/// Converts degrees Fahrenheit to Celsius.\n"
        "pub fn fahrenheit_to_celsius(f: f64) -> f64 {\n    f - 32.0 * 5.0 / 9.0\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
        "    fn freezing_point() {\n        assert_eq!(celsius_to_fahrenheit(0.0), 32.0);\n"
        "    }\n}\n"
    ),
    "tests/temperature.rs": (
        "use units::celsius_to_fahrenheit;\n\n#[test]\nfn boiling_point() {\n"
        "    assert_eq!(celsius_to_fahrenheit(100.0), 212.0);\n}\n"
    ),
}
RUST_FIX: dict[str, str | None] = {
    # the fix, and a unit test in the same file (extract splits the two by hunk)
    "src/lib.rs": RUST_BASE["src/lib.rs"]
    .replace("f - 32.0 * 5.0 / 9.0", "(f - 32.0) * 5.0 / 9.0")
    .replace(
        "32.0);\n    }\n}\n",
        "32.0);\n    }\n\n    #[test]\n    fn fahrenheit_freezing_point() {\n"
        "        assert_eq!(fahrenheit_to_celsius(32.0), 0.0);\n    }\n}\n",
    ),
    "tests/temperature.rs": RUST_BASE["tests/temperature.rs"].replace(
        "use units::celsius_to_fahrenheit;",
        "use units::{celsius_to_fahrenheit, fahrenheit_to_celsius};",
    )
    + (
        "\n#[test]\nfn fahrenheit_boiling_point() {\n"
        "    assert_eq!(fahrenheit_to_celsius(212.0), 100.0);\n}\n"
    ),
}
# the Java twin: a Maven project with JUnit 5 from Maven Central, a parameterized test and a
# nested class
JAVA_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId>
  <artifactId>units</artifactId>
  <version>0.1.0</version>
  <properties>
    <maven.compiler.source>1.8</maven.compiler.source>
    <maven.compiler.target>1.8</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.10.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
    </plugins>
  </build>
</project>
"""
JAVA_TEMPERATURE = "src/main/java/demo/Temperature.java"
JAVA_TEST = "src/test/java/demo/TemperatureTest.java"
JAVA_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "pom.xml": JAVA_POM,
    JAVA_TEMPERATURE: (
        "package demo;\n\n/** Conversions between temperature scales. */\n"
        "public final class Temperature {\n    private Temperature() {}\n\n"
        "    public static double celsiusToFahrenheit(double c) {\n"
        "        return c * 9 / 5 + 32;\n    }\n\n"
        "    public static double fahrenheitToCelsius(double f) {\n"
        "        return f - 32 * 5 / 9;\n    }\n}\n"
    ),
    JAVA_TEST: (
        "package demo;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\n"
        "import org.junit.jupiter.api.Nested;\nimport org.junit.jupiter.api.Test;\n"
        "import org.junit.jupiter.params.ParameterizedTest;\n"
        "import org.junit.jupiter.params.provider.CsvSource;\n\n"
        "class TemperatureTest {\n    @Test\n    void freezingPoint() {\n"
        "        assertEquals(32.0, Temperature.celsiusToFahrenheit(0), 1e-9);\n    }\n\n"
        '    @ParameterizedTest\n    @CsvSource({"100, 212", "-40, -40"})\n'
        "    void toFahrenheit(double c, double f) {\n"
        "        assertEquals(f, Temperature.celsiusToFahrenheit(c), 1e-9);\n    }\n\n"
        "    @Nested\n    class Body {\n        @Test\n        void normal() {\n"
        "            assertEquals(98.6, Temperature.celsiusToFahrenheit(37), 1e-9);\n"
        "        }\n    }\n}\n"
    ),
}
JAVA_FIX: dict[str, str | None] = {
    JAVA_TEMPERATURE: JAVA_BASE[JAVA_TEMPERATURE].replace(
        "return f - 32 * 5 / 9;", "return (f - 32) * 5 / 9;"
    ),
    JAVA_TEST: JAVA_BASE[JAVA_TEST].replace(
        "    @Nested\n",
        '    @ParameterizedTest\n    @CsvSource({"212, 100", "32, 0"})\n'
        "    void toCelsius(double f, double c) {\n"
        "        assertEquals(c, Temperature.fahrenheitToCelsius(f), 1e-9);\n    }\n\n"
        "    @Nested\n",
    ),
}
DEMO_PROJECTS: dict[str, DemoProject] = {
    "python": DemoProject("swe-stream-demo/units", "Python", PYTHON_BASE, PYTHON_FIX, TITLE, BODY),
    "javascript": DemoProject(
        "swe-stream-demo/units-js",
        "JavaScript",
        JS_BASE,
        JS_FIX,
        "Fix fahrenheitToCelsius operator precedence",
        BODY.replace("fahrenheit_to_celsius", "fahrenheitToCelsius"),
    ),
    "go": DemoProject(
        "swe-stream-demo/units-go",
        "Go",
        GO_BASE,
        GO_FIX,
        "Fix FahrenheitToCelsius operator precedence",
        BODY.replace("fahrenheit_to_celsius", "FahrenheitToCelsius"),
    ),
    "rust": DemoProject(
        "swe-stream-demo/units-rs",
        "Rust",
        RUST_BASE,
        RUST_FIX,
        "Fix fahrenheit_to_celsius operator precedence",
        BODY,
    ),
    "java": DemoProject(
        "swe-stream-demo/units-java",
        "Java",
        JAVA_BASE,
        JAVA_FIX,
        "Fix fahrenheitToCelsius operator precedence",
        BODY.replace("fahrenheit_to_celsius", "fahrenheitToCelsius"),
    ),
    "cpp": DemoProject(
        "swe-stream-demo/units-cpp",
        "C++",
        CPP_BASE,
        CPP_FIX,
        "Fix fahrenheit_to_celsius operator precedence",
        BODY,
    ),
    "c": DemoProject(
        "swe-stream-demo/units-c", "C", C_BASE, C_FIX, "Fix fahrenheit_to_celsius precedence", BODY
    ),
}
DEMO_REPO = DEMO_PROJECTS["python"].repo
# the Python project's files, as tests name them
BASE_FILES = PYTHON_BASE
FIX_FILES = PYTHON_FIX


def shipped_hour() -> Path:
    """The real GH Archive hour the package ships for the demo (see streams/offline/demo_data)."""
    return Path(str(resources.files("streams.offline") / "demo_data" / f"{DEMO_HOUR}.json.gz"))


def make_demo_repository(
    root: Path, repo: str | None = None, language: str = "python"
) -> PullRequestRepo:
    """The demo repository of ``language`` (a key of ``DEMO_PROJECTS``) with its merged pull
    request, published under ``root``."""
    project = DEMO_PROJECTS[language]
    return make_pull_request_repo(
        root,
        repo=repo or project.repo,
        base_files=project.base_files,
        pr_files=project.fix_files,
        main_files_after_branch={},
    )


def _diff_files(pr: PullRequestRepo) -> list[dict[str, Any]]:
    """The PR's changed files as GitHub's ``/pulls/N/files`` lists them (base...head)."""
    numstat = run_git(pr.remote, "diff", "--numstat", pr.base_sha, pr.head_sha)
    files = []
    for line in numstat.splitlines():
        added, removed, name = line.split("\t", 2)
        patch = run_git(pr.remote, "diff", pr.base_sha, pr.head_sha, "--", name)
        hunks = patch[patch.index("@@") :] if "@@" in patch else ""
        files.append(
            {
                "filename": name,
                "status": "modified",
                "additions": int(added),
                "deletions": int(removed),
                "changes": int(added) + int(removed),
                "patch": hunks,
            }
        )
    return files


@dataclass
class DemoPullRequest:
    """The demo PR as GitHub's API and events show it."""

    repo: PullRequestRepo
    number: int
    files: list[dict[str, Any]]
    merged_at: str
    project: DemoProject = DEMO_PROJECTS["python"]

    @property
    def owner(self) -> str:
        return self.repo.repo.split("/")[0]

    def repository(self) -> dict[str, Any]:
        owner, name = self.repo.repo.split("/")
        return {
            "id": 900_000_001,
            "name": name,
            "full_name": self.repo.repo,
            "owner": {"login": owner, "id": 900_000_000, "type": "Organization"},
            "private": False,
            "fork": False,
            "archived": False,
            "language": self.project.language,
            "stargazers_count": 321,
            "watchers_count": 321,
            "default_branch": "main",
            "license": {"key": "mit", "spdx_id": "MIT"},
        }

    def pull_request(self) -> dict[str, Any]:
        repository = self.repository()
        return {
            "url": f"https://api.github.com/repos/{self.repo.repo}/pulls/{self.number}",
            "id": 900_000_100 + self.number,
            "number": self.number,
            "state": "closed",
            "title": self.project.title,
            "body": self.project.body,
            "user": {"login": "demo-contributor", "id": 900_000_002, "type": "User"},
            "created_at": "2014-12-31T22:00:00Z",
            "updated_at": self.merged_at,
            "closed_at": self.merged_at,
            "merged_at": self.merged_at,
            "merged": True,
            "merge_commit_sha": self.repo.merge_sha,
            "commits": 1,
            "additions": sum(f["additions"] for f in self.files),
            "deletions": sum(f["deletions"] for f in self.files),
            "changed_files": len(self.files),
            "head": {"ref": "fix", "sha": self.repo.head_sha, "repo": repository},
            "base": {"ref": "main", "sha": self.repo.base_sha, "repo": repository},
        }

    def event(self) -> dict[str, Any]:
        """The PullRequestEvent of the merge, as GH Archive recorded events in 2015."""
        owner = self.owner
        return {
            "id": "9000000001",
            "type": "PullRequestEvent",
            "actor": {"id": 900_000_003, "login": "demo-maintainer"},
            "repo": {"id": 900_000_001, "name": self.repo.repo},
            "public": True,
            "created_at": self.merged_at,
            "org": {"id": 900_000_000, "login": owner},
            "payload": {
                "action": "closed",
                "number": self.number,
                "pull_request": self.pull_request(),
            },
        }


def demo_pull_request(
    pr: PullRequestRepo, merged_at: str = "2015-01-01T00:59:00Z", language: str = "python"
) -> DemoPullRequest:
    return DemoPullRequest(pr, DEMO_NUMBER, _diff_files(pr), merged_at, DEMO_PROJECTS[language])


def hour_with_events(hour_file: Path, events: list[dict[str, Any]]) -> bytes:
    """The hour's gzip bytes with ``events`` appended as more lines."""
    data = igzip.decompress(hour_file.read_bytes())
    if data and not data.endswith(b"\n"):
        data += b"\n"
    data += b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
    return igzip.compress(data, compresslevel=1)


# the servers --------------------------------------------------------------------------------


class _ArchiveHandler(BaseHTTPRequestHandler):
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, body: bool) -> None:
        files: dict[str, bytes] = self.server.fake
        data = files.get(self.path.split("?")[0].lstrip("/"))
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)


_PULL = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<number>\d+)(?P<files>/files)?$")
_REPO = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)$")


@dataclass
class GitHubData:
    """What the GitHub stand-in answers (keys in lower case): pull requests, their changed
    files and repositories; ``404`` for everything else."""

    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    files: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    repositories: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_found: str = "Not Found (offline: only the demo repository is served)"

    def add(
        self,
        repo: str,
        number: int,
        pull: dict[str, Any],
        files: list[dict[str, Any]],
        repository: dict[str, Any],
    ) -> None:
        self.pulls[(repo.lower(), number)] = pull
        self.files[(repo.lower(), number)] = files
        self.repositories[repo.lower()] = repository

    def answer(self, path: str) -> Any:
        """The JSON body for ``path``, or None (404)."""
        if match := _PULL.match(path):
            key = (match["repo"].lower(), int(match["number"]))
            return self.files.get(key) if match["files"] else self.pulls.get(key)
        if match := _REPO.match(path):
            return self.repositories.get(match["repo"].lower())
        return None


class GitHubStandIn(LocalServer):
    """The GitHub API stand-in; ``authorizations`` holds the ``Authorization`` header of each
    request (tests check which token was sent, and that it went nowhere else)."""

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], fake: GitHubData, host: str = "127.0.0.1"
    ) -> None:
        super().__init__(handler, fake, host)
        self.authorizations: list[str] = []


class _GitHubHandler(BaseHTTPRequestHandler):
    server: GitHubStandIn

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.count_request()
        self.server.authorizations.append(self.headers.get("Authorization", ""))
        data: GitHubData = self.server.fake
        answer = data.answer(self.path.split("?")[0])
        status = 200 if answer is not None else 404
        body = json.dumps(
            answer
            if answer is not None
            else {"message": data.not_found, "documentation_url": "https://docs.github.com/rest"}
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "4999")
        self.send_header("X-RateLimit-Reset", "4102444800")
        self.send_header("X-RateLimit-Resource", "core")
        self.end_headers()
        self.wfile.write(body)


def serve_github(data: GitHubData, host: str = "127.0.0.1") -> GitHubStandIn:
    """A GitHub stand-in answering from ``data`` (start it with ``running``)."""
    return GitHubStandIn(_GitHubHandler, data, host)


def serve_hours(files: dict[str, bytes], host: str = "127.0.0.1") -> LocalServer:
    """A GH Archive stand-in serving ``files`` (name -> gzip bytes; start it with ``running``)."""
    return LocalServer(_ArchiveHandler, files, host)


@dataclass
class OfflineWorld:
    """Where the pipeline's settings should point while the world is up."""

    gharchive_url: str
    github_url: str
    git_url_template: str
    hour: str
    pull_request: DemoPullRequest
    github: GitHubStandIn | None = None  # the GitHub stand-in (its ``requests`` count calls)

    def overrides(self) -> dict[str, Any]:
        """Settings overrides that send the pipeline to the local services."""
        return {
            "gharchive": {"base_url": self.gharchive_url},
            "github": {
                "api_url": self.github_url,
                "git_url_template": self.git_url_template,
                "max_attempts": 1,
            },
        }


@contextlib.contextmanager
def offline_world(
    root: Path,
    hour_file: Path | None = None,
    hour: str = DEMO_HOUR,
    language: str = "python",
    host: str = "127.0.0.1",
) -> Iterator[OfflineWorld]:
    """Make the demo repository of ``language`` under ``root`` and serve the hour and the API
    until the block ends, on ``host`` (0.0.0.0: containers reach them through the host's
    gateway too)."""
    made = make_demo_repository(root / "git", language=language)
    pr = demo_pull_request(made, language=language)
    served = {f"{hour}.json.gz": hour_with_events(hour_file or shipped_hour(), [pr.event()])}
    archive = serve_hours(served, host)
    data = GitHubData()
    data.add(pr.repo.repo, pr.number, pr.pull_request(), pr.files, pr.repository())
    github = serve_github(data, host)
    with running(archive, "demo-gharchive"), running(github, "demo-github"):
        yield OfflineWorld(
            archive.base_url, github.base_url, pr.repo.url_template, hour, pr, github
        )


def git_available() -> bool:
    try:
        subprocess.run(["git", "--version"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True
