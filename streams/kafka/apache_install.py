"""Apache Kafka's broker, installed from Maven Central into the host's package cache, once.

The broker is the published ``org.apache.kafka:kafka_2.13`` artifact with its runtime
dependencies, resolved by Maven itself (a generated ``pom.xml`` and the dependency plugin's
``copy-dependencies``: Maven's own rules for versions, scopes and exclusions, its checksums
checked with ``--strict-checksums``) into ``<cache>/<version>/libs``. A manifest written last
marks an install complete, so a resolution killed half-way is redone, not half-used; a lock
lets three test processes install one version once.

Starting a JVM with Kafka's 45 jars costs about 2.5 s of CPU; a class-data-sharing archive made
once per version and JDK (``-XX:ArchiveClassesAtExit`` on a throwaway node) halves it, which
the tests, starting a node per test, feel most.

Only the standard library is used here: the Kafka image of ``infra/`` runs this module to
install its broker before the project's dependencies exist in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from streams.core.locks import file_lock

log = logging.getLogger("swe_stream.kafka.apache")

# The lines users run: 4.x, the current one (KRaft only), and 3.9, the last with ZooKeeper,
# which many clusters still are. DEFAULT_VERSION is what the tests, `run` and infra/ use.
KAFKA_VERSIONS = ("4.4.0", "3.9.2")
DEFAULT_VERSION = KAFKA_VERSIONS[0]
SCALA = "2.13"
# slf4j's simple binding: the broker's log on stderr (Kafka ships none in its POM)
SLF4J_BINDING = ("org.slf4j", "slf4j-simple", "1.7.36")
DEPENDENCY_PLUGIN = "3.8.1"  # the newest that runs on Debian bookworm's Maven 3.8
MANIFEST = "install.json"
MAIN_CLASS = "kafka.Kafka"
FORMAT_CLASS = "kafka.tools.StorageTool"


class KafkaInstallError(RuntimeError):
    """Java or Maven is missing, or Maven Central did not give the broker's jars."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/swe-stream/kafka`` (``~/.cache/...``): the host's package cache."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "swe-stream" / "kafka"


def required_java(version: str) -> int:
    """The oldest Java major that runs the broker of ``version`` (4.x needs 17)."""
    return 17 if int(version.split(".", 1)[0]) >= 4 else 11


JAVA_VERSION_LINE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_major(version_output: str) -> int | None:
    """The major of ``java -version``'s first line: ``"17.0.15"`` -> 17, ``"1.8.0"`` -> 8."""
    found = JAVA_VERSION_LINE.search(version_output)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


@dataclass(frozen=True)
class Java:
    path: str
    major: int
    build: str  # the whole ``java -version`` text: a CDS archive is valid for one JDK build

    @property
    def build_id(self) -> str:
        return hashlib.sha256(self.build.encode()).hexdigest()[:12]


def find_java(version: str = DEFAULT_VERSION) -> Java:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH, new enough for the broker of ``version``."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not os.access(candidate, os.X_OK):
        raise KafkaInstallError(
            "Apache Kafka needs Java, and none was found (JAVA_HOME or java on PATH); on "
            "Debian: apt-get install -y default-jre-headless (bash .ci/prepare does it)"
        )
    try:
        said = subprocess.run(
            [candidate, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KafkaInstallError(f"{candidate} -version failed: {exc}") from exc
    text = (said.stderr or said.stdout).strip()
    major = java_major(text)
    needed = required_java(version)
    if major is None or major < needed:
        raise KafkaInstallError(
            f"Apache Kafka {version} needs Java {needed} or newer; {candidate} is "
            f"{text.splitlines()[0] if text else 'unknown'}"
        )
    return Java(candidate, major, text)


def broker_pom(version: str) -> str:
    """The ``pom.xml`` whose runtime dependencies are the broker of ``version``."""
    artifacts = [("org.apache.kafka", f"kafka_{SCALA}", version), SLF4J_BINDING]
    dependencies = "\n".join(
        f"    <dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
        f"<version>{escape(v)}</version></dependency>"
        for g, a, v in artifacts
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>swe-stream</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>{escape(version)}</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>{DEPENDENCY_PLUGIN}</version>
      </plugin>
    </plugins>
  </build>
</project>
"""


@dataclass(frozen=True)
class KafkaInstall:
    """One version's broker, ready to run."""

    version: str
    home: Path  # <cache>/<version>
    java: Java

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")  # java expands the wildcard itself

    @property
    def archive(self) -> Path:
        """The class-data-sharing archive for this JDK build (may not exist)."""
        return self.home / f"classes-{self.java.build_id}.jsa"

    def java_command(
        self, main: str, *args: str, quick: bool = True, heap_mb: int = 512
    ) -> list[str]:
        """``java ... main args``: a small heap; ``quick`` starts on the C1 compiler alone
        (a test's node lives seconds; a long-lived one wants the optimising compiler)."""
        command = [self.java.path, f"-Xms{min(128, heap_mb)}m", f"-Xmx{heap_mb}m"]
        command += ["-XX:+UseG1GC", "-Djava.awt.headless=true", "-XX:-UsePerfData"]
        if quick:
            command.append("-XX:TieredStopAtLevel=1")
        if self.archive.is_file():
            command.append(f"-XX:SharedArchiveFile={self.archive}")
        command += [
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-Dlog4j2.level=WARN",
        ]
        return [*command, "-cp", self.classpath, main, *args]


def read_manifest(home: Path) -> dict[str, str] | None:
    """The install's jars and their sha256, or None when the install is not complete."""
    try:
        manifest = json.loads((home / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    jars = manifest.get("jars") if isinstance(manifest, dict) else None
    if not isinstance(jars, dict) or not jars:
        return None
    if not all((home / "libs" / name).is_file() for name in jars):
        return None
    return {str(k): str(v) for k, v in jars.items()}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_with_maven(version: str, home: Path, timeout: float = 900) -> dict[str, str]:
    """Maven's resolution of the broker's runtime jars into ``home/libs``; their sha256."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaInstallError(
            "fetching Apache Kafka's jars from Maven Central needs Maven once (mvn on PATH); "
            "on Debian: apt-get install -y maven (bash .ci/prepare does it)"
        )
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(broker_pom(version), encoding="utf-8")
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
    command = [
        mvn, "-B", "-q", "-C", "-Dstyle.color=never", "-f", str(home / "pom.xml"),
        "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]  # fmt: skip
    log.info("kafka: fetching Apache Kafka %s's jars from Maven Central", version)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaInstallError(
            f"Maven did not resolve Kafka {version} in {timeout:.0f} s"
        ) from exc
    jars = sorted(staging.glob("*.jar"))
    if done.returncode != 0 or not any(j.name.startswith(f"kafka_{SCALA}-") for j in jars):
        shutil.rmtree(staging, ignore_errors=True)
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise KafkaInstallError(f"Maven could not resolve Apache Kafka {version}:\n{said}")
    libs = home / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    return {jar.name: _sha256(libs / jar.name) for jar in jars}


@contextlib.contextmanager
def installed(
    version: str = DEFAULT_VERSION, cache_dir: Path | None = None
) -> Iterator[KafkaInstall]:
    """The broker of ``version``, fetched once into ``cache_dir`` (default: the host's package
    cache); the install's lock is held inside the block (other processes wait for it)."""
    if version not in KAFKA_VERSIONS:
        log.warning("kafka: %s is not a tested version (tested: %s)", version, KAFKA_VERSIONS)
    java = find_java(version)
    home = (cache_dir or default_cache_dir()) / version
    with file_lock(home.parent / f".{version}.lock"):
        if read_manifest(home) is None:
            jars = resolve_with_maven(version, home)
            manifest = {"version": version, "scala": SCALA, "jars": jars}
            (home / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            log.info("kafka: Apache Kafka %s installed in %s (%d jars)", version, home, len(jars))
        yield KafkaInstall(version, home, java)
