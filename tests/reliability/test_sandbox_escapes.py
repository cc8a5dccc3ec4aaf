"""Sandbox escapes: a hostile agent in the harness tries one way out of its container per test.

The task is the one ``tests.agents.test_harness`` exports from the demo repository it builds
(the ``made`` fixture), under an instance id of its own. Each test gives the harness one
hostile script (``/agent/<marker>.sh``) under small limits (384 MB, 1 CPU, 64 pids, a 10 s
agent timeout). Where the escape spends what the host shares (processes, memory, disk, time
after the agent's end), a normal evaluation starts beside it once the hostile agent's
container is up: the gold agent applying ``/agent/fix.patch`` under the default limits, with
the same validator (one harness run evaluating two agents). Meanwhile the host watches itself and
the agent: free memory, free disk under Docker's root directory, whether it can still fork,
the agent container's pids and memory (its cgroup, through Docker's stats), the log files of
the run's containers, and the host processes carrying the agent's marker.

For every escape: the hostile evaluation ends with a status (never a hang, never an exception
out of the harness), the escape did not succeed (seen from the host where it can be), the host
was unaffected, the gold evaluation beside it (if any) resolved, and no container or instance
image of either run is left.
Each check has a control that shows it can fail (the host listener is reachable from a
container that has a network, the search finds the hidden test's name where it is planted, the
host sees the agent's processes while it runs, the fork bomb and the memory hog really reach
their limits).
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from schemas.harness import TaskEvaluation
from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.environments import INSTANCE_REPOSITORY, kept_tags
from streams.evaluation.harness import RUN_LABEL, HarnessEngine
from streams.evaluation.prebuild import prepare_task, read_task_sources
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Validator
from tests.harness_tasks import TASK, agent_dir, engine_for, our_instance_images
from tests.harness_tasks import made as made  # the module fixture: the exported task

pytestmark = pytest.mark.docker

LIMITS = Limits(memory_mb=384, cpus=1.0, pids=64)
AGENT_TIMEOUT = 10.0
MIB = 1 << 20
# what the host's disk may lose while a hostile agent runs beside the gold one (the rest of the
# machine keeps working meanwhile): well under the 10+ GiB each filler tries to take. The host's
# free memory moves with everything else the machine runs, so the memory an agent took is read
# from its own cgroup (Docker's stats); the host only has to keep this much available
DISK_SLACK = 1536 * MIB
MEMORY_FLOOR = 512 * MIB


def host_memory_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


def host_processes(marker: str) -> list[int]:
    """Processes of the host (containers' included: one kernel) whose command line names
    ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return found


@dataclass
class Watch:
    """What the host saw while the hostile agent ran."""

    docker_root: str
    marker: str
    memory_before: int = 0
    disk_before: int = 0
    memory_min: int = 0
    disk_min: int = 0
    forks: int = 0
    fork_failures: list[str] = field(default_factory=list)
    fork_seconds_max: float = 0.0
    pids_peak: int = 0
    pids_limit: int = 0
    memory_peak: int = 0
    log_peak: int = 0
    marker_processes_peak: int = 0
    agent_containers: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.memory_before = self.memory_min = host_memory_available()
        self.disk_before = self.disk_min = shutil.disk_usage(self.docker_root).free

    @property
    def memory_drop(self) -> int:
        return self.memory_before - self.memory_min

    @property
    def disk_drop(self) -> int:
        return self.disk_before - self.disk_min

    def sample(self, client: Any, run_id: str) -> None:
        self.memory_min = min(self.memory_min, host_memory_available())
        self.disk_min = min(self.disk_min, shutil.disk_usage(self.docker_root).free)
        started = time.monotonic()
        try:
            subprocess.run(["true"], check=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as error:
            self.fork_failures.append(repr(error))
        self.forks += 1
        self.fork_seconds_max = max(self.fork_seconds_max, time.monotonic() - started)
        self.marker_processes_peak = max(
            self.marker_processes_peak, len(host_processes(self.marker))
        )
        # the low-level list: the high-level one inspects each container it lists, and one
        # removed in between would fail it
        for listed in client.api.containers(filters={"label": f"{RUN_LABEL}={run_id}"}):
            try:
                container_id = listed["Id"]
                log_path = client.api.inspect_container(container_id).get("LogPath") or ""
                if log_path:  # graders' too: the agent's patch runs there
                    self.log_peak = max(self.log_peak, os.path.getsize(log_path))
                names = [name.lstrip("/") for name in listed.get("Names") or []]
                if not any(name.startswith("swe-harness-") for name in names):  # a grader's
                    continue
                self.agent_containers.add(container_id)
                stats = client.api.stats(container_id, stream=False, one_shot=True)
            except Exception:  # removed meanwhile (the engine answers 404, or an empty body)
                continue
            pids = stats.get("pids_stats") or {}
            memory = stats.get("memory_stats") or {}
            self.pids_peak = max(self.pids_peak, int(pids.get("current") or 0))
            self.pids_limit = int(pids.get("limit") or self.pids_limit)
            used = memory.get("max_usage") or memory.get("usage") or 0
            self.memory_peak = max(self.memory_peak, int(used))

    def summary(self) -> str:
        return (
            f"memory drop {self.memory_drop / MIB:.0f} MiB, disk drop {self.disk_drop / MIB:.0f}"
            f" MiB, forks {self.forks} (failed {len(self.fork_failures)}, slowest"
            f" {self.fork_seconds_max * 1000:.0f} ms), agent pids peak {self.pids_peak}/"
            f"{self.pids_limit}, agent memory peak {self.memory_peak / MIB:.0f} MiB, agent log"
            f" peak {self.log_peak} B, marker processes peak {self.marker_processes_peak}"
        )


@dataclass
class Escape:
    """One hostile run and what it left behind."""

    result: TaskEvaluation
    gold: TaskEvaluation | None  # the evaluation beside it, where one ran
    watch: Watch
    results_dir: Path
    seconds: float

    @property
    def output(self) -> str:
        return self.result.agent_output

    @property
    def patch(self) -> str:
        return (self.results_dir / TASK / "model.patch").read_text()

    def files(self) -> dict[str, str]:
        """Every file the harness wrote for the hostile run (report, patch, logs)."""
        return {
            str(p.relative_to(self.results_dir)): p.read_text(errors="replace")
            for p in sorted(self.results_dir.rglob("*"))
            if p.is_file()
        }


# this process's own (its image is removed at the module's end; another test process running
# tests of this module prebuilds its own)
ESCAPES_INSTANCE = f"swe-stream-escapes__units-{os.getpid()}"


@pytest.fixture(scope="module")
def task(
    made: Any, tmp_path_factory: pytest.TempPathFactory, docker_client: Any, base_image: str
) -> Iterator[Any]:
    """``made`` under an instance id of its own, its instance image built ahead of the
    module's evaluations (as ``swe-stream images instances`` does): each evaluation stands on
    it and leaves it in place, so the module builds it once, not once per evaluation (the
    harness's dropping of the images it builds itself is ``test_harness``'s). Removed at the
    module's end."""
    root, pr, workspace = made
    copy = tmp_path_factory.mktemp("escapes")
    shutil.copytree(root / "tasks" / TASK, copy / "tasks" / TASK)
    path = copy / "tasks" / TASK / "workspace.yaml"
    data = yaml.safe_load(path.read_text())
    data["instance_id"] = ESCAPES_INSTANCE
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    (copy / "cache").symlink_to(root / "cache")  # engine_for's clone cache
    task = copy, pr, workspace.model_copy(update={"instance_id": ESCAPES_INSTANCE})
    docker = DockerSettings(  # engine_for's, at the level that keeps the instance image
        base_image=base_image, toolchain_images={"python": {"3.11": base_image}},
        memory_mb=1024, cpus=1, cache_level="instance",
    )  # fmt: skip
    repos = RepoCache(copy / "cache", pr.url_template)
    validator = Validator(repos, lambda: docker_client, docker, ValidateSettings(), 1)
    (source,) = read_task_sources(copy / "tasks" / TASK)
    prepared = prepare_task(validator, source)
    assert prepared.status != "failed", prepared
    try:
        yield task
    finally:
        for tag in kept_tags(docker_client, ESCAPES_INSTANCE):
            if tag.startswith(f"{INSTANCE_REPOSITORY}:"):
                docker_client.images.remove(tag, force=True)


@pytest.fixture
def hostile(
    task: Any, docker_client: Any, base_image: str, tmp_path: Path
) -> Iterator[Any]:  # a function running one hostile script; checks the common promises
    runs: list[str] = []
    workspace: TaskWorkspace = task[2]

    def run(
        script: str,
        *,
        marker: str,
        timeout: float = AGENT_TIMEOUT,
        limits: Limits = LIMITS,
        beside: bool = False,
    ) -> Escape:
        name = f"hostile-{uuid.uuid4().hex[:8]}"
        (tmp_path / name).mkdir()
        directory = agent_dir(tmp_path / name, workspace, "git apply /agent/fix.patch\n")
        (directory / f"{marker}.sh").write_text(script)
        engine = engine_for(
            task, docker_client, base_image, tmp_path / name,
            agent_dir=directory, agent_command=f"bash /agent/{marker}.sh",
            agent_timeout_seconds=timeout, run_id=f"escape-{name}",
        )  # fmt: skip
        engine.limits = limits
        gold_engine = engine_for(
            task, docker_client, base_image, tmp_path / f"{name}-gold",
            agent_dir=directory, agent_command="bash /agent/run.sh",
            run_id=f"escape-{name}-gold",
        )  # fmt: skip
        gold_engine.validator = engine.validator  # one harness run evaluating two agents
        runs.extend([engine.options.run_id, gold_engine.options.run_id])
        docker_root = docker_client.info()["DockerRootDir"]
        watch = Watch(docker_root, marker)
        before = {p.name: p.read_bytes() for p in directory.iterdir()}
        images = our_instance_images(docker_client)
        escape = side_by_side(engine, gold_engine if beside else None, task, docker_client, watch)
        # the promises every escape keeps
        assert escape.result.status in {"agent_error", "unresolved"}, (
            escape.result.status,
            escape.result.error,
            escape.output[-3000:],
        )
        assert escape.result.sanity_check
        assert escape.result.agent_duration_secs <= timeout + 15, escape.result
        if beside:
            assert escape.gold is not None
            assert (escape.gold.status, escape.gold.error) == ("resolved", None), escape.gold
        assert watch.agent_containers, "the hostile agent's container was never seen"
        assert watch.fork_failures == [] and watch.fork_seconds_max < 5, watch.summary()
        assert watch.memory_min > MEMORY_FLOOR, watch.summary()  # the host was never starved
        assert watch.memory_peak <= limits.memory_mb * MIB + MIB, watch.summary()
        assert watch.disk_drop < DISK_SLACK, watch.summary()
        assert watch.log_peak < 2 * MIB, watch.summary()  # nothing piles up in its log
        time.sleep(1)
        assert host_processes(marker) == [], "a process of the agent outlived its container"
        assert {p.name: p.read_bytes() for p in directory.iterdir()} == before
        for run_id in (engine.options.run_id, gold_engine.options.run_id):
            label = f"{RUN_LABEL}={run_id}"
            assert docker_client.containers.list(all=True, filters={"label": label}) == []
        assert our_instance_images(docker_client) == images  # each run dropped its own
        tail = " | ".join(escape.output.strip().splitlines()[-4:])[-300:]
        print(
            f"\n{marker}: {escape.result.status} ({escape.result.error}); agent "
            f"{escape.result.agent_duration_secs} s, evaluation {escape.seconds:.1f} s; "
            f"{watch.summary()}; agent output ends: {tail}"
        )
        return escape

    yield run
    for run_id in runs:  # whatever happened, no container of these runs may remain
        label = f"{RUN_LABEL}={run_id}"
        left = docker_client.containers.list(all=True, filters={"label": label})
        for container in left:
            container.remove(force=True)
        assert left == [], f"containers left by {run_id}: {[c.name for c in left]}"


def side_by_side(
    engine: HarnessEngine, gold: HarnessEngine | None, task: Any, client: Any, watch: Watch
) -> Escape:
    """The hostile evaluation, and the gold one (if any) started once the hostile agent is
    up."""
    task_dir = task[0] / "tasks" / TASK
    outcome: dict[str, Any] = {}

    def evaluate(name: str, which: HarnessEngine) -> None:
        try:
            outcome[name] = which.evaluate(task_dir)
        except BaseException as error:  # a crash of the harness: reported below
            outcome[name] = error

    hostile = threading.Thread(target=evaluate, args=("hostile", engine), daemon=True)
    beside = threading.Thread(target=evaluate, args=("gold", gold), daemon=True)
    started = time.monotonic()
    hostile.start()
    while hostile.is_alive() and time.monotonic() - started < 600:
        watch.sample(client, engine.options.run_id)
        if gold and watch.agent_containers and not beside.is_alive() and "gold" not in outcome:
            beside.start()  # the normal evaluation runs while the hostile agent does
        time.sleep(0.2)
    seconds = time.monotonic() - started
    assert not hostile.is_alive(), "the harness hung on the hostile agent"
    if gold and not beside.is_alive() and "gold" not in outcome:
        beside.start()  # the hostile agent ended before its container was seen: right after
    if gold:
        beside.join(timeout=600)
        assert not beside.is_alive(), "the gold evaluation hung"
    for name, value in outcome.items():
        if isinstance(value, BaseException):
            raise AssertionError(f"the harness raised on the {name} agent") from value
    results_dir = engine.options.output_dir
    assert results_dir is not None
    return Escape(outcome["hostile"], outcome.get("gold"), watch, results_dir, seconds)


def marker_name() -> str:
    return f"swe-escape-{secrets.token_hex(6)}"


# network ------------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[Any]]]:
    """A TCP listener on every address of the host; the connections it accepted."""
    connections: list[Any] = []
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connections.append(server.accept())
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], connections
    stop.set()
    thread.join(timeout=5)
    server.close()


def host_address() -> str:
    """The host's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routing only
        except OSError:  # no default route: the address the host name has
            return socket.gethostbyname(socket.gethostname())
        return str(probe.getsockname()[0])


def bridge_gateway(docker_client: Any) -> str:
    """The host's address on Docker's default bridge. Some engines leave ``Gateway`` out of
    the network's IPAM config: then it is the bridge interface's own address, and failing
    that the subnet's first host (where dockerd puts it by default)."""
    attrs = docker_client.networks.get("bridge").attrs
    config = (attrs.get("IPAM") or {}).get("Config") or [{}]
    if config[0].get("Gateway"):
        return str(config[0]["Gateway"])
    interface = (attrs.get("Options") or {}).get("com.docker.network.bridge.name", "docker0")
    shown = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "dev", interface],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    found = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", shown)
    if found:
        return found.group(1)
    subnet = config[0].get("Subnet")
    assert subnet, f"the bridge network has neither a gateway nor a subnet: {attrs.get('IPAM')}"
    return str(next(ipaddress.ip_network(subnet).hosts()))


def test_no_network_the_hosts_listener_sees_no_connection(
    hostile: Any, listener: tuple[int, list[Any]], docker_client: Any, base_image: str
) -> None:
    port, connections = listener
    gateway = bridge_gateway(docker_client)
    targets = [
        ("127.0.0.1", port),  # the container's own loopback, not the host's
        (gateway, port),  # the host, through Docker's bridge
        (host_address(), port),  # the host, on its own address
        ("host.docker.internal", port),
        ("1.1.1.1", 443),  # outside
        ("pypi.org", 443),  # outside, by name (DNS)
    ]
    # control: from a container that has a network, the listener is reachable through the bridge
    connect = f"socket.create_connection(({gateway!r}, {port}), timeout=5).close()"
    probe = f"import socket; {connect}; print('ok')"
    out = docker_client.containers.run(
        base_image, ["python3", "-c", probe], remove=True, network_mode="bridge"
    )
    assert out.strip() == b"ok"
    deadline = time.monotonic() + 5
    while len(connections) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(connections) == 1
    marker = marker_name()
    script = (
        "python3 - <<'EOF'\n"
        "import socket\n"
        f"for host, port in {targets!r}:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close()\n"
        "        print('REACHED', host, port)\n"
        "    except OSError as error:\n"
        "        print('BLOCKED', host, port, type(error).__name__)\n"
        "    if host == '127.0.0.1':\n"  # its own loopback: a datagram goes nowhere else
        "        continue\n"
        "    try:\n"  # UDP too: a datagram to the host (DNS-style)
        "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "        s.sendto(b'x', (host, 53))\n"
        "        print('SENT-UDP', host)\n"
        "    except OSError as error:\n"
        "        print('UDP-BLOCKED', host, type(error).__name__)\n"
        "names = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]\n"
        "print('INTERFACES', ','.join(sorted(names)))\n"
        "EOF\n"
    )
    escape = hostile(script, marker=marker)
    output = escape.output
    assert escape.result.status == "unresolved", output
    assert "REACHED" not in output and "SENT-UDP" not in output, output
    for host, port in targets:
        assert f"BLOCKED {host} {port} " in output, output
        assert host == "127.0.0.1" or f"UDP-BLOCKED {host} " in output, output
    assert "INTERFACES lo\n" in output, output  # no interface but loopback
    assert len(connections) == 1  # the host saw the control's connection and nothing else


def test_the_agents_patch_gets_no_further_when_it_is_graded(
    hostile: Any, listener: tuple[int, list[Any]], docker_client: Any
) -> None:
    """The agent's patch runs in the grader's container (a ``conftest.py`` is imported by every
    check): it may not reach the host, fill the disk or flood the log from there either."""
    port, connections = listener
    gateway = bridge_gateway(docker_client)
    conftest = (
        "import socket, subprocess\n"
        f"for host in ({gateway!r}, {host_address()!r}, 'pypi.org'):\n"
        "    try:\n"
        f"        socket.create_connection((host, {port}), timeout=2).close()\n"
        "        print('GRADING-REACHED', host)\n"
        "    except OSError as error:\n"
        "        print('GRADING-BLOCKED', host, type(error).__name__)\n"
        "subprocess.run('for i in $(seq 16); do fallocate -l 1000M /var/tmp/fill$i || break; '\n"
        "               'done; head -c 1G /dev/zero > /proc/1/fd/1', shell=True)\n"
    )
    marker = marker_name()
    script = f"cat > /testbed/conftest.py <<'EOF'\n{conftest}EOF\nexit 0\n"
    escape = hostile(script, marker=marker)
    assert escape.result.status == "unresolved", escape.result
    checks = escape.result.fail_to_pass + escape.result.pass_to_pass
    assert len(checks) == 3
    assert "conftest.py" in escape.patch  # it was graded with its conftest.py
    assert connections == []  # the host saw nothing (the network test has the control)
    for check in checks:
        assert "GRADING-REACHED" not in check.stdout + check.stderr, check


# hidden tests -------------------------------------------------------------------------------


def test_the_hidden_tests_are_nowhere_in_the_agents_container(hostile: Any, task: Any) -> None:
    workspace: TaskWorkspace = task[2]
    name, body = "def test_fahrenheit_to_celsius", "fahrenheit_to_celsius(212) == 100"
    assert name in workspace.test_patch and body in workspace.test_patch  # what to look for
    for visible in (workspace.patch, workspace.prompt):
        assert name not in visible and body not in visible
    split = [f"'{s[:6]}''{s[6:]}'" for s in (name, body)]  # the script never holds them whole
    marker = marker_name()
    script = (
        f"n1={split[0]}; n2={split[1]}\n"
        'mkdir -p /var/tmp/ctl && echo "$n1" > /var/tmp/ctl/control\n'  # the search works
        'found=$(grep -rlsF -e "$n1" -e "$n2" --exclude-dir=proc --exclude-dir=sys '
        "--exclude-dir=dev / 2>/dev/null)\n"
        "echo \"$found\" | grep -c /var/tmp/ctl/control | sed 's/^/CONTROL-FILES /'\n"
        "hidden=$(echo \"$found\" | grep -v '^/var/tmp/ctl/control$' | grep -c .)\n"
        'echo "HIDDEN-FILES $hidden"; echo "$found" | sed \'s/^/  /\'\n'
        "echo GIT-COMMITS $(git -C /testbed rev-list --all --reflog | wc -l)\n"
        "echo GIT-OBJECTS-WITH-TESTS $(git -C /testbed cat-file --batch-all-objects --batch "
        '| grep -acF -e "$n1" -e "$n2")\n'
        "echo GIT-STASHES $(git -C /testbed stash list | wc -l)\n"
        "echo DOCKER-DATA $(ls /var/lib/docker 2>/dev/null | wc -l)\n"
        # whatever it found (but the control) goes into its patch, and every git object
        'mkdir -p /testbed/loot && for f in $(echo "$found" | grep -v /var/tmp/ctl/); do '
        'cp "$f" /testbed/loot/ 2>/dev/null; done\n'
        "git -C /testbed cat-file --batch-all-objects --batch > /testbed/loot/objects; exit 0\n"
    )
    escape = hostile(script, marker=marker, timeout=60)
    output = escape.output
    assert escape.result.status == "unresolved", output
    assert "CONTROL-FILES 1\n" in output, output
    assert "HIDDEN-FILES 0\n" in output, output
    assert "GIT-COMMITS 1\n" in output and "GIT-OBJECTS-WITH-TESTS 0\n" in output, output
    assert "GIT-STASHES 0\n" in output and "DOCKER-DATA 0\n" in output, output
    patch = escape.patch
    assert "loot/objects" in patch  # its loot reached its patch
    assert name not in patch and body not in patch  # and held nothing of the hidden tests


# host secrets -------------------------------------------------------------------------------


def test_the_hosts_environment_tokens_and_files_are_out_of_reach(
    hostile: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"ghp_{secrets.token_hex(18)}"
    key = f"sk-or-v1-{secrets.token_hex(24)}"
    for variable, value in (
        ("GITHUB_TOKEN", token),
        ("SWE_STREAM_GITHUB_TOKEN", token),
        ("OPENROUTER_API_KEY", key),
        ("SWE_STREAM_LLM_API_KEY", key),
    ):
        monkeypatch.setenv(variable, value)
    planted = tmp_path / "host-secrets" / "token"
    planted.parent.mkdir()
    planted.write_text(f"{token}\n{key}\n")
    marker = marker_name()
    script = (
        "{ env; tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/self/environ\n"
        "  for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done\n"
        f"  cat {planted} {planted.parent}/* /root/.docker/config.json 2>&1\n"
        "  grep -rsaohE 'gh[pousr]_[A-Za-z0-9]{16,}|sk-or-v1-[a-f0-9]{16,}' --exclude-dir=proc "
        "--exclude-dir=sys --exclude-dir=dev /\n"
        "} > /tmp/loot 2>&1\n"
        "echo ENV-ENTRIES $(grep -c '^SWE_TASK_ID=' /tmp/loot)\n"
        "echo SECRETS-FOUND $(grep -caE 'gh[pousr]_[A-Za-z0-9]{16,}|sk-or-v1-[a-f0-9]{16,}' "
        "/tmp/loot)\n"
        "for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock; do\n"
        "  [ -e $s ] && echo SOCKET-PRESENT $s || echo SOCKET-ABSENT $s; done\n"
        f"[ -e {planted.parent} ] && echo HOST-PATH-PRESENT || echo HOST-PATH-ABSENT\n"
        "cp /tmp/loot /testbed/loot.txt; exit 0\n"
    )
    escape = hostile(script, marker=marker, timeout=60)
    output = escape.output
    assert escape.result.status == "unresolved", output
    assert "ENV-ENTRIES 0\n" not in output and "ENV-ENTRIES" in output, output  # it dumped env
    assert "SECRETS-FOUND 0\n" in output, output
    assert "SOCKET-PRESENT" not in output and "HOST-PATH-ABSENT" in output, output
    assert "SWE_TASK_ID=" in escape.patch  # the control: its dump reached its patch
    for path, text in escape.files().items():  # report, patch, logs: none holds a secret
        assert token not in text and key not in text, path
    assert planted.read_text() == f"{token}\n{key}\n"  # the secrets were there to be found


# writing outside ----------------------------------------------------------------------------


def test_writes_outside_the_repository_never_reach_the_host(hostile: Any, tmp_path: Path) -> None:
    target = tmp_path / "host-target"
    target.mkdir()
    host_tmp = Path("/tmp") / f"swe-escape-{secrets.token_hex(6)}"
    marker = marker_name()
    disk = Path("/sys/block/vda/dev")
    major_minor = disk.read_text().strip() if disk.exists() else "8:0"
    major, minor = major_minor.split(":")
    script = (
        'try() { if bash -c "$2" >/dev/null 2>&1; then echo "WROTE $1"; '
        'else echo "BLOCKED $1"; fi; }\n'
        "try agent 'echo x > /agent/owned'\n"
        "try agent-remount 'mount -o remount,rw /agent && echo x > /agent/owned'\n"
        f"try host-dir 'mkdir -p {target} && echo x > {target}/owned'\n"
        f"try host-tmp 'echo x > {host_tmp}'\n"
        "try sysrq 'echo h > /proc/sysrq-trigger'\n"
        "try sysctl 'echo 1 > /proc/sys/vm/drop_caches'\n"
        "try cgroup 'echo $$ > /sys/fs/cgroup/pids/cgroup.procs'\n"
        f"try disk-device 'mknod /tmp/disk b {major} {minor} && head -c 512 /tmp/disk > /tmp/mbr "
        "&& test $(stat -c %s /tmp/mbr) = 512'\n"
        "try docker-socket 'test -S /var/run/docker.sock || test -S /run/docker.sock'\n"
        "try testbed 'echo x > /testbed/owned'\n"  # the control: its own repository is its own
        "exit 0\n"
    )
    escape = hostile(script, marker=marker)
    output = escape.output
    assert escape.result.status == "unresolved", output
    for attempt in (
        "agent", "agent-remount", "sysrq", "sysctl", "cgroup", "disk-device", "docker-socket",
    ):  # fmt: skip
        assert f"BLOCKED {attempt}\n" in output, output
    assert "WROTE testbed\n" in output and "owned" in escape.patch, output
    assert list(target.iterdir()) == [] and not host_tmp.exists()  # the host has nothing


# fork bomb, memory hog ----------------------------------------------------------------------


def test_a_fork_bomb_stops_at_the_pids_limit(hostile: Any) -> None:
    marker = marker_name()
    script = "bomb() { bomb | bomb & }; bomb\nsleep 3600\n"
    escape = hostile(script, marker=marker, beside=True)
    watch = escape.watch
    assert escape.result.status == "agent_error", escape.result
    assert watch.pids_limit == LIMITS.pids
    assert LIMITS.pids * 3 // 4 <= watch.pids_peak <= LIMITS.pids, watch.summary()  # it tried
    assert escape.result.agent_duration_secs <= AGENT_TIMEOUT + 10


def test_a_memory_hog_is_killed_at_the_memory_limit(hostile: Any) -> None:
    marker = marker_name()
    script = (
        "python3 - <<'EOF'\n"
        "chunks = []\n"
        "for i in range(1, 8 * 16 + 1):  # up to 8 GiB, 64 MiB at a time\n"
        "    chunks.append(bytearray(64 << 20))\n"
        "    print('HELD-MIB', i * 64, flush=True)\n"
        "EOF\n"
        "code=$?; sleep 3; exit $code\n"  # the host reads the container's peak meanwhile
    )
    escape = hostile(script, marker=marker, beside=True)
    watch = escape.watch
    assert escape.result.status == "agent_error", escape.result
    held = [int(m) for m in re.findall(r"HELD-MIB (\d+)", escape.output)]
    assert held and LIMITS.memory_mb // 2 <= max(held) < LIMITS.memory_mb, escape.output[-2000:]
    assert LIMITS.memory_mb * MIB // 2 < watch.memory_peak <= LIMITS.memory_mb * MIB + MIB
    assert escape.result.error == "the agent was killed (SIGKILL; its memory limit is 384 MB)"
    assert escape.result.agent_duration_secs < AGENT_TIMEOUT  # the limit, not the timeout


# disk ---------------------------------------------------------------------------------------

FILLERS = {
    # many files, each under the per-file cap (`ulimit -f`), allocated at once
    "fallocate": "for i in $(seq 16); do fallocate -l 1000M /var/tmp/fill$i 2>&1 "
    "&& echo ALLOCATED-MIB $((i * 1000)); done",
    # written: one past the per-file cap, then many under it
    "dd": "dd if=/dev/zero of=/tmp/one bs=1M count=1500 2>&1 | tail -1; "
    "for i in $(seq 16); do dd if=/dev/zero of=/tmp/fill$i bs=1M count=1000 2>/dev/null "
    "&& echo WRITTEN-MIB $((i * 1000)); done",
    # the container's own output, which Docker stores on the host
    "container-log": "head -c 12G /dev/zero | tr '\\0' x | fold -w 4096 > /proc/1/fd/1",
}


@pytest.mark.parametrize("filler", list(FILLERS))
def test_filling_the_disk_stays_bounded(hostile: Any, filler: str) -> None:
    marker = marker_name()
    escape = hostile(f"{FILLERS[filler]}\necho FILLER-DONE\n", marker=marker, beside=True)
    watch = escape.watch
    written = [int(m) for m in re.findall(r"(?:ALLOCATED|WRITTEN)-MIB (\d+)", escape.output)]
    # inside, it may hold at most what its memory limit allows; outside, nothing stays
    assert max(written, default=0) <= LIMITS.memory_mb, escape.output[-2000:]
    assert watch.disk_drop < DISK_SLACK and watch.log_peak < 2 * MIB, watch.summary()


# background processes -----------------------------------------------------------------------


@pytest.mark.parametrize("foreground", ["hangs-past-timeout", "exits-at-once"])
def test_a_background_process_cannot_outlive_the_agent(hostile: Any, foreground: str) -> None:
    marker = marker_name()
    late = AGENT_TIMEOUT + 4
    script = (
        f"setsid nohup bash -c 'sleep {late}; echo LATE > /testbed/late-marker; "
        "echo LATE > /agent/late-marker' >/dev/null 2>&1 </dev/null &\n"
        f"(exec -a {marker}-sleeper sleep 3600) &\n"
        f"setsid bash -c 'trap \"\" TERM HUP INT; exec -a {marker}-daemon sleep 3600' "
        ">/dev/null 2>&1 </dev/null &\n"
        "sleep 1; echo STARTED\n"
        + ("sleep 3600\n" if foreground == "hangs-past-timeout" else "exit 0\n")
    )
    escape = hostile(script, marker=marker, beside=True)
    assert escape.watch.marker_processes_peak >= 2  # the host saw them while they ran
    expected = "agent_error" if foreground == "hangs-past-timeout" else "unresolved"
    assert escape.result.status == expected, escape.result
    if foreground == "exits-at-once":
        assert escape.result.agent_duration_secs < AGENT_TIMEOUT
    time.sleep(max(0.0, late + 2 - escape.seconds))  # past the time the marker was due
    assert host_processes(marker) == []
    assert "late-marker" not in escape.patch
