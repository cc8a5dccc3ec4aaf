"""The registry egress: a sandbox without network reaches the allowed registries through the
proxy container, and nothing of the host (its services, its environment, its files); the
programs run in the containers (``egress_programs``) are the stdlib-only modules tested here."""

from __future__ import annotations

import ast
import http.server
import ipaddress
import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from streams.evaluation.egress import MOUNT, RegistryEgress, package_registries, program_source
from streams.evaluation.egress_programs import forwarder, proxy
from streams.evaluation.sandbox import OWNER_LABEL, Limits, Sandbox, remove_orphans

PROGRAMS = {"proxy.py": proxy, "forwarder.py": forwarder}

# Run in the sandbox: each argument is MODE:TARGET, the answer one JSON object per argument.
# direct: urllib without a proxy; env: urllib as the environment says (the proxy);
# post / body: a POST, resp. a GET with a body, through the proxy; get / connect: the raw
# request to the forwarder, whatever NO_PROXY says; the answer is the status line, or the error.
PROBE = r"""
import json, socket, sys, urllib.error, urllib.request

def direct(url):
    return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=10)

def env(url):
    return urllib.request.urlopen(url, timeout=30)

def raw(line):
    with socket.create_connection(("127.0.0.1", 3128), timeout=30) as s:
        s.sendall(line.encode() + b"\r\nHost: x\r\n\r\n")
        return s.makefile("rb").readline().decode().strip()

answers = {}
for arg in sys.argv[1:]:
    mode, target = arg.split(":", 1)
    try:
        if mode in ("direct", "env"):
            answer = "ok %d" % (direct if mode == "direct" else env)(target).status
        elif mode in ("post", "body"):  # through the proxy, with a body
            method = "POST" if mode == "post" else "GET"
            request = urllib.request.Request(target, data=b"uploaded", method=method)
            answer = "ok %d" % urllib.request.urlopen(request, timeout=30).status
        else:
            answer = raw("%s %s HTTP/1.1" % ("GET" if mode == "get" else "CONNECT", target))
    except urllib.error.HTTPError as error:
        answer = "http %d %s" % (error.code, error.reason)
    except Exception as error:
        answer = "error %s" % error
    answers[arg] = answer
print(json.dumps(answers))
"""


def probe(box: Sandbox, *requests: str) -> dict[str, str]:
    box.put_file("/tmp/probe.py", PROBE)
    args = " ".join(f"'{r}'" for r in requests)
    result = box.run(f"python3 /tmp/probe.py {args}", timeout=120)
    assert result.exit_code == 0, result.output
    answers: dict[str, str] = json.loads(result.stdout)
    return answers


@pytest.fixture
def attached(docker_client: Any, base_image: str) -> Iterator[tuple[RegistryEgress, Sandbox]]:
    """The default registries, and a sandbox attached to them."""
    with RegistryEgress(docker_client, base_image) as egress:
        limits = Limits(512, 1.0, 64)
        with Sandbox(
            docker_client, base_image, limits, workdir="/", **egress.sandbox_options
        ) as box:
            egress.attach(box)
            yield egress, box


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server of the host on every interface (0.0.0.0), and the paths it served."""
    hits: list[str] = []

    class Hits(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()


def bridge_gateway(client: Any) -> str:
    """The host's address on the Docker bridge (the engine may not say: its subnet's first)."""
    config = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return str(config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts()))


def host_address() -> str:
    """The host's address on the way out (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.connect(("192.0.2.1", 9))
        return str(udp.getsockname()[0])


@pytest.mark.docker
def test_no_service_of_the_host_is_reachable_even_when_allowed(
    docker_client: Any, base_image: str, host_server: tuple[int, list[str]]
) -> None:
    port, hits = host_server
    gateway, host_ip = bridge_gateway(docker_client), host_address()
    allowed = (gateway, "127.0.0.1", "localhost", host_ip, "::1")
    with (
        RegistryEgress(docker_client, base_image, allowed, allowed_ports=(80, 443, port)) as egress,
        Sandbox(docker_client, base_image, workdir="/", **egress.sandbox_options) as box,
    ):
        egress.attach(box)
        answers = probe(
            box,
            f"direct:http://{gateway}:{port}/direct",
            f"direct:http://127.0.0.1:{port}/loopback",
            f"env:http://{gateway}:{port}/env",
            f"get:http://{gateway}:{port}/get",
            f"connect:{gateway}:{port}",
            f"get:http://127.0.0.1:{port}/get",
            f"connect:localhost:{port}",
            f"connect:[::1]:{port}",
            f"get:http://{host_ip}:{port}/get",
            f"connect:{host_ip}:{port}",
        )
        refused = egress.refused()
    # no route out of the sandbox, and its loopback is its own
    assert "unreachable" in answers[f"direct:http://{gateway}:{port}/direct"]
    assert "refused" in answers[f"direct:http://127.0.0.1:{port}/loopback"].lower()
    # through the proxy: allowed names, allowed port, refused for the address
    assert answers[f"env:http://{gateway}:{port}/env"].startswith("http 403 Forbidden")
    for request, answer in answers.items():
        if request.startswith(("get:", "connect:")):
            assert answer.startswith("HTTP/1.1 403 Forbidden"), (request, answer)
            assert "not a public address" in answer or "network of the host" in answer
    assert len(refused) == 8, refused
    assert hits == []
    # the check can fail: the server does answer a container on the bridge network
    reached = docker_client.containers.run(
        base_image,
        ["python3", "-c", f"import urllib.request as u; u.urlopen('http://{gateway}:{port}/c')"],
        remove=True,
        network_mode="bridge",
    )
    assert reached == b"" and hits == ["/c"]


@pytest.mark.docker
def test_a_host_not_allowed_is_refused_with_its_reason(
    attached: tuple[RegistryEgress, Sandbox],
) -> None:
    egress, box = attached
    answers = probe(
        box,
        "env:https://example.org/",
        "env:http://example.org/",
        "connect:pythonhosted.org.evil.example:443",
        "connect:pypi.org:22",
        "get:/relative",
    )
    assert (
        "403 Forbidden (swe-stream egress: example.org is not an allowed host)"
        in (answers["env:https://example.org/"])
    )
    assert answers["env:http://example.org/"] == (
        "http 403 Forbidden (swe-stream egress: example.org is not an allowed host)"
    )
    assert "is not an allowed host" in answers["connect:pythonhosted.org.evil.example:443"]
    assert "port 22 is not allowed" in answers["connect:pypi.org:22"]
    assert answers["get:/relative"].startswith("HTTP/1.1 400")
    assert egress.refused()[:2] == [
        "CONNECT example.org:443: example.org is not an allowed host",
        "GET http://example.org/: example.org is not an allowed host",
    ]


@pytest.mark.unit
def test_the_default_door_lets_through_every_languages_registries_and_debians() -> None:
    from streams.evaluation.recipes.languages import languages

    hosts = package_registries()
    assert {"deb.debian.org", "*.debian.org"} <= set(hosts)
    for language in languages():  # each prompt's promise: its registries are reachable
        assert language.registries and set(language.registries) <= set(hosts), language.name
    # among them the Rust crate registry and Maven Central, which the setup agent once lacked
    assert {"index.crates.io", "static.crates.io", "repo.maven.apache.org"} <= set(hosts)
    assert len(hosts) == len(set(hosts))
    assert package_registries(["pypi.org"]) == ("pypi.org",)  # the settings' list alone
    assert package_registries([]) == ()


@pytest.mark.docker
@pytest.mark.parametrize("writable_mb", [None, 64], ids=["writable", "read-only"])
def test_the_registries_are_reachable(
    docker_client: Any, base_image: str, writable_mb: int | None
) -> None:
    with RegistryEgress(docker_client, base_image, ["pypi.org", "*.debian.org"]) as egress:
        limits = Limits(512, 1.0, 64, writable_mb=writable_mb)
        with Sandbox(
            docker_client, base_image, limits, workdir="/", **egress.sandbox_options
        ) as box:
            egress.attach(box)
            pypi = box.run(
                "python3 -c 'import urllib.request; "
                'urllib.request.urlopen("https://pypi.org/simple/six/")\'',
                timeout=60,
            )
            assert pypi.exit_code == 0, pypi.output
            # apt's plain HTTP: an absolute-URI request
            answers = probe(box, "env:http://deb.debian.org/debian/dists/bookworm/Release")
            assert answers == {"env:http://deb.debian.org/debian/dists/bookworm/Release": "ok 200"}
            egress.attach(box)  # again: the forwarder already listens
            assert egress.refused() == []


@pytest.mark.docker
def test_pip_npm_and_apt_install_through_the_pinned_door(
    docker_client: Any, node_images: dict[str, str]
) -> None:
    """The package managers as they are (their own Host headers, SNI and methods): pip and
    npm over CONNECT, apt over plain HTTP, each fetching a package; nothing refused."""
    image = node_images[max(node_images, key=int)]  # Debian with python3, pip, npm and apt
    with RegistryEgress(docker_client, image) as egress:
        limits = Limits(1024, 1.0, 256)
        with Sandbox(docker_client, image, limits, workdir="/tmp", **egress.sandbox_options) as box:
            egress.attach(box)
            steps = {
                "pip": "pip3 download --no-deps -q -d /tmp/pip six && ls /tmp/pip",
                "npm": "mkdir -p /tmp/n && cd /tmp/n && npm install --no-audit --no-fund"
                " is-number >/dev/null && ls node_modules",
                # (a mirror may serve a suite's Release past its Valid-Until: not the door's doing)
                "apt": "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get"
                " install -y -qq --no-install-recommends hello >/dev/null && hello",
            }
            results = {name: box.run(command, timeout=300) for name, command in steps.items()}
            refused = egress.refused()
    for name, result in results.items():
        assert result.exit_code == 0, (name, result.output[-2000:])
    assert "six-" in results["pip"].stdout and "is-number" in results["npm"].stdout
    assert "Hello, world!" in results["apt"].stdout
    assert refused == []


@pytest.mark.docker
def test_refusals_are_counted_by_reason(docker_client: Any, base_image: str) -> None:
    def count(reason: str) -> float:
        return REGISTRY.get_sample_value("swe_stream_egress_refused_total", {"reason": reason}) or 0

    before = {r: count(r) for r in ("host_not_allowed", "method_not_allowed", "request_body")}
    with RegistryEgress(docker_client, base_image, ["deb.debian.org"]) as egress:
        with Sandbox(docker_client, base_image, workdir="/", **egress.sandbox_options) as box:
            egress.attach(box)
            answers = probe(
                box,
                "env:http://example.org/",
                "env:http://deb.debian.org/debian/",
                "post:http://deb.debian.org/debian/",
                "body:http://deb.debian.org/debian/",
            )
        kinds = [kind for kind, _ in egress.refusals()]
    assert answers["env:http://deb.debian.org/debian/"] == "ok 200"  # the check can pass
    assert kinds == ["host_not_allowed", "method_not_allowed", "request_body"], answers
    assert "only GET and HEAD" in answers["post:http://deb.debian.org/debian/"]
    assert "request body" in answers["body:http://deb.debian.org/debian/"]
    assert {r: count(r) - n for r, n in before.items()} == dict.fromkeys(before, 1)


@pytest.mark.docker
def test_nothing_of_the_host_is_in_either_container(
    docker_client: Any,
    base_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret-xyz")
    with (
        RegistryEgress(docker_client, base_image) as egress,
        Sandbox(docker_client, base_image, workdir="/", **egress.sandbox_options) as box,
    ):
        egress.attach(box)
        env = box.run("env", timeout=10).stdout
        assert "secret-xyz" not in env and "GITHUB_TOKEN" not in env
        assert "https_proxy=http://127.0.0.1:3128" in env.splitlines()
        # every process of the proxy container (init, the proxy) and its exec
        proxy_env = egress.container.exec_run(["sh", "-c", "cat /proc/[0-9]*/environ; env"])
        assert proxy_env.exit_code == 0 and b"PATH=" in proxy_env.output
        assert b"secret-xyz" not in proxy_env.output
        for container, network in ((box.container, "none"), (egress.container, "bridge")):
            attrs = docker_client.api.inspect_container(container.id)
            assert [(m["Type"], m["Name"], m["Destination"], m["RW"]) for m in attrs["Mounts"]] == [
                ("volume", egress.volume, MOUNT, True)
            ]
            assert attrs["HostConfig"]["NetworkMode"] == network
            assert attrs["HostConfig"]["LogConfig"]["Type"] == "none"
            assert "GITHUB_TOKEN" not in " ".join(attrs["Config"]["Env"] or [])
        host_config = docker_client.api.inspect_container(egress.container.id)["HostConfig"]
        assert (host_config["Memory"], host_config["PidsLimit"], host_config["Init"]) == (
            256 << 20,
            64,
            True,
        )
        assert host_config["CapDrop"] == ["ALL"]


@pytest.mark.docker
def test_the_proxy_and_its_volume_are_gone_after_the_block(
    docker_client: Any, base_image: str
) -> None:
    import docker.errors

    with (
        pytest.raises(RuntimeError, match="boom"),
        RegistryEgress(docker_client, base_image) as egress,
    ):
        container_id, volume = egress.container.id, egress.volume
        assert docker_client.volumes.get(volume).attrs["Labels"][OWNER_LABEL]
        raise RuntimeError("boom")
    assert not [c for c in docker_client.api.containers(all=True) if c["Id"] == container_id]
    with pytest.raises(docker.errors.NotFound):
        docker_client.volumes.get(volume)


@pytest.mark.docker
def test_a_dead_process_volumes_are_removed_with_its_containers(docker_client: Any) -> None:
    import docker.errors

    dead_owner = f"{socket.gethostname()}:{2**22 + 1}:-"  # above pid_max: never alive
    orphan = docker_client.volumes.create(labels={OWNER_LABEL: dead_owner}).name
    live = RegistryEgress(docker_client, "unused").labels[OWNER_LABEL]
    kept = docker_client.volumes.create(labels={OWNER_LABEL: live}).name
    try:
        remove_orphans(docker_client)
        with pytest.raises(docker.errors.NotFound):
            docker_client.volumes.get(orphan)
        assert docker_client.volumes.get(kept).name == kept
    finally:
        docker_client.api.remove_volume(kept, force=True)


@pytest.mark.unit
def test_which_addresses_and_names_the_proxy_allows() -> None:
    refusal, allowed = proxy.refusal, proxy.allowed
    host = [ipaddress.ip_network("192.0.2.0/24"), ipaddress.ip_network("172.17.0.0/16")]
    for address in (
        "127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.2", "::1", "::", "fe80::1",
        "fd00::2", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1",
    ):  # fmt: skip
        assert refusal(address, host), address
    for address in ("151.101.0.223", "2a04:4e42::223", "203.0.113.80", "::ffff:151.101.0.223"):
        assert refusal(address, host) is None, address
    patterns = ["pypi.org", "*.pythonhosted.org"]
    assert allowed("pypi.org", patterns) and allowed("files.pythonhosted.org", patterns)
    for name in ("pythonhosted.org", "evilpythonhosted.org", "pypi.org.evil.example", "pypi.or"):
        assert not allowed(name, patterns), name


def outside_the_stdlib(source: str) -> list[str]:
    """What ``source`` imports from outside the standard library: modules not in
    ``sys.stdlib_module_names``, relative imports (a program shipped alone has no package
    around it) and imports by name at run time (``__import__``, ``import_module``)."""

    def outside(name: str) -> bool:
        return name.split(".")[0] not in sys.stdlib_module_names

    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if outside(alias.name))
        elif isinstance(node, ast.ImportFrom):
            name = "." * node.level + (node.module or "")
            if outside(name):
                found.append(name)
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "__import__")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
        ):
            found.append(f"{ast.unparse(node.func)}(...)")  # a module named at run time
    return found


@pytest.mark.unit
def test_the_check_of_imports_can_fail() -> None:
    source = (
        "import os, yaml\n"
        "from json import loads\n"
        "from streams.core import settings\n"
        "from . import forwarder\n"
        "from .proxy import refusal\n"
        "import importlib\n"
        "importlib.import_module('docker')\n"
        "__import__('os')\n"
    )
    assert outside_the_stdlib(source) == [
        "yaml",
        "streams.core",
        ".",
        ".proxy",
        "importlib.import_module(...)",
        "__import__(...)",
    ]


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_programs_import_only_the_stdlib(name: str) -> None:
    assert outside_the_stdlib(program_source(name)) == []


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_containers_get_the_modules_source(name: str) -> None:
    module = PROGRAMS[name]
    assert module.__file__ is not None
    source = program_source(name)
    assert source == Path(module.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 7))  # any python3 from 3.7 on runs it
    assert ast.unparse(tree.body[-1]) == "if __name__ == '__main__':\n    main()"
