"""Shared fixtures: real fixture data, the embedded broker, the Docker engine.

Under ``CI=true`` nothing that needs the broker or Docker may be skipped: a missing
engine is a test *error* there, so a broken CI machine can never look green.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas import InstallConfig, ScoredTask, ValidatedTask, ValidationReport
from schemas.swebench import SWEBenchInstance

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
BASE_IMAGE = os.environ.get("SWE_STREAM_BASE_IMAGE", "swe-stream/base:bookworm")


def unavailable(what: str) -> None:
    """Skip locally, fail loudly in CI: a missing engine must never turn CI green."""
    if IN_CI:
        pytest.fail(f"{what} (CI=true: tests needing it may not be skipped)", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        unavailable(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture(scope="session")
def gharchive_hour(fixtures_dir: Path) -> Path:
    """The real GH Archive hour 2015-01-01 00:00 UTC (full payloads)."""
    return fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types here
        unavailable(f"no Docker engine answers: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client: Any) -> str:
    """The locally built base image (`swe-stream images base`, built by .ci/run)."""
    import docker.errors

    try:
        docker_client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        unavailable(f"base image {BASE_IMAGE} is missing: run `swe-stream images base`")
    return BASE_IMAGE


@pytest.fixture
def demo_world(tmp_path: Path, fixtures_dir: Path, base_image: str) -> Iterator[Any]:
    """The offline world (``streams.offline.world``): the fixture hour plus the demo
    repository's pull request, served on 127.0.0.1 for as long as the test runs."""
    from streams.offline.world import offline_world

    with offline_world(
        tmp_path / "world", fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    ) as world:
        yield world


@pytest.fixture(scope="session")
def enriched_235(fixtures_dir: Path) -> Any:
    """sigmavirus24/github3.py#235 as enrich makes it from the decoded recordings."""
    from agents.enrich import changed_files, repository_info
    from schemas import EnrichedPullRequest

    decoded = fixtures_dir / "github_api" / "decoded"
    pr = json.loads((decoded / "pulls_235.json").read_text(encoding="utf-8"))
    files = json.loads((decoded / "pulls_235_files.json").read_text(encoding="utf-8"))
    repo = json.loads((decoded / "repos_sigmavirus24_github3.py.json").read_text(encoding="utf-8"))
    return EnrichedPullRequest(
        pipeline_version=1,
        repo=repo["full_name"],
        number=pr["number"],
        title=pr["title"],
        body=pr["body"],
        merged_at=pr["merged_at"],
        merge_commit_sha=pr["merge_commit_sha"],
        base_sha=pr["base"]["sha"],
        base_ref=pr["base"]["ref"],
        additions=pr["additions"],
        deletions=pr["deletions"],
        changed_files=pr["changed_files"],
        files=changed_files(files),
        repo_info=repository_info(repo),
        problem_statement=f"{pr['title']}\n{pr['body']}",
        created_at=pr["created_at"],
        author_login=pr["user"]["login"],
    )


SWE_STREAM = str(Path(sys.executable).with_name("swe-stream"))


@pytest.fixture
def embedded_broker() -> Iterator[Any]:
    """A fresh embedded broker per test: memory-only, so every test starts from nothing."""
    from streams.kafka.broker import BrokerError, EmbeddedBroker

    broker = EmbeddedBroker()
    try:
        broker.start()
    except BrokerError as exc:
        unavailable(f"embedded broker cannot start: {exc}")
    yield broker
    broker.stop()


@pytest.fixture
def embedded_bootstrap(embedded_broker: Any) -> str:
    """The embedded broker alone: for what is about that broker (its missing idempotence)."""
    return str(embedded_broker.bootstrap)


# The brokers every broker test runs on: the embedded one (Tansu, the default of `mine` and the
# demo) and Apache Kafka (KRaft, the production engine), a fresh one per test on both.
BROKERS = ("embedded", "kafka")


def start_kafka(nodes: int = 1, **options: Any) -> Any:
    """A fresh Apache Kafka of ``nodes`` KRaft nodes on loopback (the launcher,
    ``streams.kafka.apache``): its jars fetched once per machine, Java from .ci/prepare."""
    from streams.kafka.apache import KafkaCluster
    from streams.kafka.apache_install import KafkaInstallError
    from streams.kafka.broker import BrokerError

    cluster = KafkaCluster(nodes=nodes, **options)
    try:
        cluster.start()
    except (BrokerError, KafkaInstallError) as exc:
        cluster.stop()
        unavailable(f"Apache Kafka cannot start: {exc}")
    return cluster


@contextlib.contextmanager
def running_broker(kind: str, log_path: Path | None = None) -> Iterator[str]:
    """A fresh broker of ``kind`` (``BROKERS``) for the block: its bootstrap."""
    if kind == "embedded":
        from streams.kafka.broker import BrokerError, EmbeddedBroker

        broker = EmbeddedBroker(log_path=log_path)
        try:
            broker.start()
        except BrokerError as exc:
            unavailable(f"embedded broker cannot start: {exc}")
        try:
            yield broker.bootstrap
        finally:
            broker.stop()
        return
    cluster = start_kafka()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


@pytest.fixture(params=BROKERS)
def broker_kind(request: pytest.FixtureRequest) -> str:
    """Which broker a broker test runs on (its id: ``test_x[kafka]``)."""
    return str(request.param)


@pytest.fixture
def bootstrap(broker_kind: str) -> Iterator[str]:
    """A fresh broker's bootstrap: the embedded broker, then Apache Kafka (the parameter)."""
    with running_broker(broker_kind) as bootstrap:
        yield bootstrap


KINDS = ("unit", "integration", "docker")


def broker_of(item: pytest.Item) -> str | None:
    """The broker a collected test runs on (its ``broker_kind`` parameter), if any."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("broker_kind") if callspec is not None else None


# what a test is expected to take when it declares no timeout of its own, by kind
EXPECTED_SECONDS = {"docker": 40.0, "integration": 15.0, "unit": 0.1}


def expected_seconds(item: pytest.Item) -> float:
    """A test's expected length: the timeout it declares (long tests raise it), else its
    kind's."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0]) / 3
    return next((v for k, v in EXPECTED_SECONDS.items() if item.get_closest_marker(k)), 0.1)


def longest_files_first(items: list[pytest.Item]) -> None:
    """Files in the order of their expected length, longest first, each file's tests in their
    own order: `--dist loadfile` hands files out in this order, so the long files start at once
    and the run does not end waiting on one that started late. (Only with xdist's
    ``--no-loadscope-reorder``, in pyproject's addopts: by default it hands out the files with
    the most tests first, which left the crash test's two to start 21 min into a CI run.)"""
    weight: dict[str, float] = {}
    for item in items:
        weight[item.path.as_posix()] = weight.get(item.path.as_posix(), 0.0) + expected_seconds(
            item
        )
    position = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-weight[item.path.as_posix()], position[id(item)]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test says what it needs, so `-m unit` really is the no-broker, no-Docker set;
    a test on Apache Kafka is also marked ``kafka`` (`-m kafka`: that broker's share)."""
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(k) for k in KINDS)]
    if unmarked:
        raise pytest.UsageError(f"tests without a unit/integration/docker marker: {unmarked}")
    longest_files_first(items)
    for item in items:
        if broker_of(item) == "kafka":
            item.add_marker(pytest.mark.kafka)
        broker = broker_in(item.nodeid) or ("kafka" if item.get_closest_marker("kafka") else None)
        if broker is not None:  # for the shares: reports carry it to xdist's controller
            item.user_properties.append(("broker", broker))


BROKER_SHARES: dict[str, dict[str, float]] = {}


def broker_in(nodeid: str) -> str | None:
    """The broker named among a test id's parameters (``test_x[kafka]``), if any."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    parameters = nodeid[nodeid.rindex("[") + 1 : -1].split("-")
    return next((kind for kind in BROKERS if kind in parameters), None)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each broker's share of the run: its tests' time (set-up, call and tear-down): the
    variants of the broker tests on each broker, and every other test on Apache Kafka."""
    # (not report.keywords: they hold the names of the test's packages, tests/streams/kafka)
    kind = dict(report.user_properties).get("broker")
    if kind is not None:
        BROKER_SHARES.setdefault(kind, {}).setdefault(report.nodeid, 0.0)
        BROKER_SHARES[kind][report.nodeid] += report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The closing lines say how long each broker's tests took (summed over the workers)."""
    if BROKER_SHARES:
        terminalreporter.section("broker shares")
        for kind, tests in sorted(BROKER_SHARES.items()):
            terminalreporter.write_line(
                f"{kind}: {len(tests)} tests, {sum(tests.values()):.0f} s of test time"
            )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI=true a skip of any kind is a failure: nothing may be skipped in CI."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true: {report.longrepr}"


@pytest.fixture(scope="session")
def validated_tasks(fixtures_dir: Path) -> list[ValidatedTask]:
    """The 10 real SWE-bench rows as validated tasks (FAIL_TO_PASS failed before, passed after)."""
    tasks = []
    for name in ("swe-bench-lite-5.json", "swe-bench-dev-5.json"):
        for row in json.loads((fixtures_dir / "swebench" / name).read_text(encoding="utf-8")):
            instance = SWEBenchInstance.model_validate(row)
            report = ValidationReport(
                image=f"swe-stream/{instance.instance_id}:latest",
                runs=1,
                duration_seconds=30.0,
                before={
                    **{t: "failed" for t in instance.FAIL_TO_PASS},
                    **{t: "passed" for t in instance.PASS_TO_PASS},
                },
                after={t: "passed" for t in instance.FAIL_TO_PASS + instance.PASS_TO_PASS},
            )
            tasks.append(
                ValidatedTask(
                    pipeline_version=1,
                    number=int(instance.instance_id.rsplit("-", 1)[1]),
                    **instance.model_dump(),
                    validation=report,
                    classification="medium",
                    difficulty_score=0.5,
                )
            )
    return tasks


TEST_COMMAND = "python -m pytest -rA"


def scored_task(task: ValidatedTask, *, checks: bool = True) -> ScoredTask:
    """``task`` scored and accepted, with an install config and check commands (unless not
    ``checks``)."""
    data = task.model_dump()
    if checks:
        data["install_config"] = InstallConfig(
            language="python", base_image="base:1", env_image="env:1", instance_image="inst:1",
            install_commands=["pip install -e .", "pip install pytest"], test_command=TEST_COMMAND,
        )  # fmt: skip
        tests = data["FAIL_TO_PASS"] + data["PASS_TO_PASS"]
        data["checks"] = [f"{TEST_COMMAND} {shlex.quote(t)}" for t in tests]
    return ScoredTask(**data, quality_score=0.8, quality_reasoning="r", accepted=True)


@pytest.fixture(scope="session")
def python_images(docker_client: Any) -> dict[str, str]:
    """The base image of every Python validation picks from (`swe-stream images base --all`,
    built by .ci/run)."""
    import docker.errors

    from streams.evaluation.recipes.languages import configured_images

    images = configured_images()["python"]
    for python, tag in images.items():
        try:
            docker_client.images.get(tag)
        except docker.errors.ImageNotFound:
            unavailable(
                f"base image {tag} (Python {python}) is missing: swe-stream images base --all"
            )
    return images


def built_toolchain_images(docker_client: Any, toolchain: str) -> dict[str, str]:
    """The images of ``toolchain``'s versions validation picks from (its language's own,
    ``configured_images``), each on the engine (`swe-stream images base --toolchains`,
    run by .ci/prepare)."""
    import docker.errors

    from streams.evaluation.recipes.languages import configured_images

    images = configured_images()[toolchain]
    for version, tag in images.items():
        try:
            docker_client.images.get(tag)
        except docker.errors.ImageNotFound:
            unavailable(
                f"{toolchain} {version} image {tag} is missing: swe-stream images base --toolchains"
            )
    return images


@pytest.fixture(scope="session")
def node_images(docker_client: Any) -> dict[str, str]:
    """The Node.js image of every Debian suite (Debian's nodejs)."""
    return built_toolchain_images(docker_client, "node")


@pytest.fixture(scope="session")
def go_images(docker_client: Any) -> dict[str, str]:
    """Debian's golang image of every suite."""
    return built_toolchain_images(docker_client, "go")


@pytest.fixture(scope="session")
def rust_images(docker_client: Any) -> dict[str, str]:
    """Debian's rustc image of every suite."""
    return built_toolchain_images(docker_client, "rust")


@pytest.fixture(scope="session")
def java_images(docker_client: Any) -> dict[str, str]:
    """Debian's OpenJDK and Maven image of every suite."""
    return built_toolchain_images(docker_client, "java")


@pytest.fixture(scope="session")
def cxx_images(docker_client: Any) -> dict[str, str]:
    """Debian's gcc, CMake, Ninja and C/C++ test frameworks image of every suite."""
    return built_toolchain_images(docker_client, "gcc")


# A real HTTP server on 127.0.0.1 serving the GH Archive fixture hours (with fault injection).
from tests.fakes.gharchive_server import FakeGHArchive, gharchive_server  # noqa: E402, F401

# A real HTTP server on 127.0.0.1 serving the recorded GitHub API answers (with faults).
from tests.fakes.github_server import FakeGitHub, github_server  # noqa: E402, F401

# A real HTTP server on 127.0.0.1 answering chat completions from a per-test script.
from tests.fakes.llm_server import FakeLLM, llm_server  # noqa: E402, F401
