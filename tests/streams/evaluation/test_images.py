"""The offline base image: sandboxed containers run from it, and building it is cached by tag."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation import images

PROBE = r"""
import json, os, socket, sys
out = {"python": list(sys.version_info[:2]), "interfaces": sorted(os.listdir("/sys/class/net"))}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    out["connect"] = "OK"
except OSError as exc:
    out["connect"] = "FAILED: " + type(exc).__name__
try:
    socket.getaddrinfo("pypi.org", 443)
    out["resolve"] = "OK"
except OSError as exc:
    out["resolve"] = "FAILED: " + type(exc).__name__
print(json.dumps(out))
"""


@pytest.fixture
def run_container(docker_client: Any) -> Iterator[Any]:
    """Run a detached container, wait for it, return (exit code, logs); always remove it."""
    started: list[Any] = []

    def run(image: str, command: list[str], **kwargs: Any) -> tuple[int, str]:
        container = docker_client.containers.run(image, command, detach=True, **kwargs)
        started.append(container)
        status = container.wait(timeout=120)
        logs = container.logs(stdout=True, stderr=True).decode(errors="replace")
        return int(status["StatusCode"]), logs

    yield run
    for container in started:
        container.remove(force=True)


@pytest.mark.docker
def test_sandboxed_container_has_python_and_no_network(
    docker_client: Any, base_image: str, run_container: Any
) -> None:
    code, logs = run_container(
        base_image,
        ["python3", "-c", PROBE],
        network_mode="none",
        mem_limit="256m",
        pids_limit=64,
        nano_cpus=1_000_000_000,
    )
    assert code == 0, logs
    out = json.loads(logs.strip().splitlines()[-1])
    assert out["python"] == [3, 11]  # bookworm's python3
    assert out["interfaces"] == ["lo"]
    assert out["connect"].startswith("FAILED"), out
    assert out["resolve"].startswith("FAILED"), out


@pytest.mark.docker
def test_limits_are_applied(docker_client: Any, base_image: str) -> None:
    container = docker_client.containers.create(
        base_image,
        ["true"],
        network_mode="none",
        mem_limit="256m",
        pids_limit=64,
        nano_cpus=500_000_000,
    )
    try:
        host_config = docker_client.api.inspect_container(container.id)["HostConfig"]
    finally:
        container.remove(force=True)
    assert host_config["Memory"] == 256 * 1024 * 1024
    assert host_config["PidsLimit"] == 64
    assert host_config["NanoCpus"] == 500_000_000
    assert host_config["NetworkMode"] == "none"


@pytest.mark.docker
def test_git_works_in_base_image(base_image: str, run_container: Any) -> None:
    code, logs = run_container(base_image, ["git", "--version"], network_mode="none")
    assert code == 0, logs
    assert logs.startswith("git version 2."), logs


@pytest.mark.docker
def test_base_image_config(docker_client: Any, base_image: str) -> None:
    config = docker_client.images.get(base_image).attrs["Config"]
    assert config["Labels"][images.BASE_LABEL].startswith("debootstrap-")
    assert "LANG=C.UTF-8" in config["Env"]
    assert f"PATH={images.IMAGE_PATH}" in config["Env"]
    assert config["Cmd"] == ["/bin/bash"]


@pytest.mark.docker
def test_build_is_cached_by_tag(
    docker_client: Any, base_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_debootstrap(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"debootstrap must not run for an existing tag: {args}")

    monkeypatch.setattr(images.subprocess, "run", no_debootstrap)
    monkeypatch.setattr(images.subprocess, "Popen", no_debootstrap)
    assert images.base_image_exists(docker_client, base_image)
    before = docker_client.images.get(base_image).id
    started = time.monotonic()
    assert images.build_debootstrap_base_image(base_image, client=docker_client) == base_image
    assert time.monotonic() - started < 5
    assert docker_client.images.get(base_image).id == before


@pytest.mark.docker
def test_base_image_exists_false_for_unknown_tag(docker_client: Any) -> None:
    assert not images.base_image_exists(docker_client, "swe-stream/no-such-image:never")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("swe-stream/base:bookworm", ("swe-stream/base", "bookworm")),
        ("swe-stream/base", ("swe-stream/base", "latest")),
        ("localhost:5000/base", ("localhost:5000/base", "latest")),
        ("localhost:5000/base:v1", ("localhost:5000/base", "v1")),
    ],
)
def test_split_tag(tag: str, expected: tuple[str, str]) -> None:
    assert images.split_tag(tag) == expected


@pytest.mark.unit
def test_import_changes_label_the_suite() -> None:
    changes = images.import_changes("trixie")
    assert "LABEL org.swe-stream.base=debootstrap-trixie" in changes
    assert "ENV LANG=C.UTF-8" in changes
    assert 'CMD ["/bin/bash"]' in changes


@pytest.mark.unit
def test_ca_bundle_is_installed_and_appended(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    system = rootfs / "etc/ssl/certs/ca-certificates.crt"
    system.parent.mkdir(parents=True)
    system.write_text("-----BEGIN CERTIFICATE-----\nSYSTEM\n-----END CERTIFICATE-----")
    extra = tmp_path / "proxy.pem"
    extra.write_text("-----BEGIN CERTIFICATE-----\nPROXY\n-----END CERTIFICATE-----\n")

    images._install_ca_bundle(rootfs, extra)

    installed = rootfs / "usr/local/share/ca-certificates" / images.EXTRA_CA_NAME
    assert installed.read_text() == extra.read_text()
    merged = system.read_text()
    assert merged.index("SYSTEM") < merged.index("PROXY")
    assert "-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----" in merged


@pytest.mark.unit
def test_ca_bundle_must_be_pem(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.crt"
    bogus.write_text("not a certificate")
    with pytest.raises(ValueError, match="PEM"):
        images._install_ca_bundle(tmp_path / "rootfs", bogus)


@pytest.mark.unit
def test_apt_caches_are_cleaned(tmp_path: Path) -> None:
    archives = tmp_path / "var/cache/apt/archives"
    lists = tmp_path / "var/lib/apt/lists"
    (archives / "partial").mkdir(parents=True)
    (lists / "partial").mkdir(parents=True)
    (archives / "git_2.39_amd64.deb").write_bytes(b"x")
    (archives / "lock").write_bytes(b"")
    (lists / "deb.debian.org_dists_bookworm_InRelease").write_bytes(b"x")

    images._clean_apt(tmp_path)

    assert sorted(p.name for p in archives.iterdir()) == ["lock", "partial"]
    assert [p.name for p in lists.iterdir()] == ["partial"]


@pytest.mark.unit
def test_python_suites_and_default_tags() -> None:
    assert images.PYTHON_SUITES == {
        "3.9": "bullseye",
        "3.11": "bookworm",
        "3.13": "trixie",
        "3.14": "forky",
    }
    assert images.base_image_tag("3.11") == images.DEFAULT_BASE_IMAGE == "swe-stream/base:bookworm"
    assert images.base_image_tag("3.14") == "swe-stream/base:forky"
    assert images.base_image_tag("3.9", prefix="registry:5000/b") == "registry:5000/b:bullseye"
    with pytest.raises(ValueError, match=r"3\.10.*known: 3\.9, 3\.11, 3\.13, 3\.14"):
        images.base_image_tag("3.10")


@pytest.mark.unit
def test_the_python_images_are_the_built_base_image_tags_unless_the_settings_name_others() -> None:
    from streams.core.settings import DockerSettings, load_settings
    from streams.evaluation.recipes.languages import configured_images

    docker = DockerSettings()
    assert docker.base_image == images.DEFAULT_BASE_IMAGE and docker.toolchain_images == {}
    own = configured_images(docker.toolchain_images)
    assert own["python"] == {v: images.base_image_tag(v) for v in images.PYTHON_SUITES}
    # the setting's name of old is one toolchain's entry: that toolchain's images alone
    custom = DockerSettings(python_images={"3.12": "python:3.12-slim"})  # type: ignore[call-arg]
    assert custom.toolchain_images == {"python": {"3.12": "python:3.12-slim"}}
    mine = configured_images(custom.toolchain_images)
    assert mine["python"] == {"3.12": "python:3.12-slim"} and mine["node"] == own["node"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWE_STREAM_DOCKER_RUST_IMAGES", '{"1.85": "r:1"}')
        assert load_settings().docker.toolchain_images == {"rust": {"1.85": "r:1"}}
    with pytest.raises(ValueError, match="rust_image"):
        DockerSettings(rust_image={"1.85": "r:1"})  # type: ignore[call-arg]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        ({}, [("swe-stream/base:bookworm", "bookworm")]),
        ({"default_tag": "x:y"}, [("x:y", "bookworm")]),
        ({"suite": "trixie", "tag": "t:1"}, [("t:1", "trixie")]),
        ({"python": "3.14"}, [("swe-stream/base:forky", "forky")]),
        ({"python": "3.9", "tag": "old:py"}, [("old:py", "bullseye")]),
        (
            {"all_pythons": True},
            [
                ("swe-stream/base:bullseye", "bullseye"),
                ("swe-stream/base:bookworm", "bookworm"),
                ("swe-stream/base:trixie", "trixie"),
                ("swe-stream/base:forky", "forky"),
            ],
        ),
    ],
)
def test_resolve_targets(choices: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert images.resolve_targets(**choices) == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    "choices",
    [
        {"all_pythons": True, "tag": "x:y"},
        {"all_pythons": True, "python": "3.9"},
        {"python": "3.13", "suite": "bookworm"},
    ],
)
def test_resolve_targets_rejects_conflicts(choices: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="drop"):
        images.resolve_targets(**choices)


@pytest.mark.unit
def test_debootstrap_script_falls_back_to_sid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "sid").write_text("mirror_style release\n")
    (scripts / "trixie").symlink_to("sid")
    monkeypatch.setenv("DEBOOTSTRAP_DIR", str(tmp_path))
    assert images.debootstrap_script("trixie") is None  # the host's debootstrap knows it
    assert images.debootstrap_script("forky") == str(scripts / "sid")
    (scripts / "sid").unlink()
    assert images.debootstrap_script("forky") is None  # nothing to fall back on


@pytest.mark.unit
def test_debootstrap_command_checks_signatures(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    plain = images.debootstrap_command("debootstrap", "bookworm", rootfs, packages=["git"])
    assert plain == [
        "debootstrap",
        "--variant=minbase",
        "--force-check-gpg",
        "--include=git",
        "bookworm",
        str(rootfs),
    ]
    forky = images.debootstrap_command(
        "debootstrap",
        "forky",
        rootfs,
        keyring=Path("/k.gpg"),
        script="/usr/share/debootstrap/scripts/sid",
    )
    assert "--force-check-gpg" in forky and "--keyring=/k.gpg" in forky
    # positional: suite, target, mirror (the default one when none is given), script
    assert forky[-4:] == [
        "forky",
        str(rootfs),
        images.DEFAULT_MIRROR,
        "/usr/share/debootstrap/scripts/sid",
    ]
    mirrored = images.debootstrap_command("d", "trixie", rootfs, mirror="http://m/debian")
    assert mirrored[-1] == "http://m/debian"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], [("swe-stream/base:bookworm", "bookworm")]),
        (["--python", "3.13"], [("swe-stream/base:trixie", "trixie")]),
        (["--suite", "bullseye", "--tag", "b:1"], [("b:1", "bullseye")]),
        (["--all"], [(images.base_image_tag(v), s) for v, s in images.PYTHON_SUITES.items()]),
    ],
)
def test_cli_images_base_flags(
    argv: list[str], expected: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from streams.cli import evaluate
    from streams.cli.main import build_parser
    from streams.core.settings import Settings

    args = build_parser().parse_args(["images", "base", *argv])
    assert args.handler is evaluate.cmd_images
    calls: list[tuple[list[tuple[str, str]], dict[str, Any]]] = []

    def fake_build(targets: Any, **kwargs: Any) -> Iterator[images.BuildResult]:
        calls.append((list(targets), kwargs))
        return iter([])

    monkeypatch.setattr(evaluate, "build_base_images", fake_build)
    assert evaluate.cmd_images(args, Settings()) == 0
    assert calls == [(expected, {"ca_bundle": None, "keyring": None, "force": False})]


@pytest.mark.unit
def test_cli_images_base_rejects_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from streams.cli import evaluate
    from streams.cli.main import build_parser
    from streams.core.settings import Settings

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["images", "base", "--python", "3.10"])
    args = parser.parse_args(["images", "base", "--all", "--tag", "x:y"])
    assert evaluate.cmd_images(args, Settings()) == 2
    assert "--all" in capsys.readouterr().err


@pytest.mark.unit
def test_module_main_rejects_all_with_tag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        images.main(["--all", "--tag", "x:y"])
    assert exc.value.code == 2
    assert "--all" in capsys.readouterr().err


@pytest.mark.docker
@pytest.mark.parametrize("python", list(images.PYTHON_SUITES))
def test_python_image_has_its_python_and_makes_a_venv(
    python: str, docker_client: Any, run_container: Any
) -> None:
    import docker.errors

    from tests.conftest import unavailable

    tag = images.base_image_tag(python)
    try:
        config = docker_client.images.get(tag).attrs["Config"]
    except docker.errors.ImageNotFound:
        unavailable(f"base image {tag} is missing: run `swe-stream images base --python {python}`")
    assert config["Labels"][images.BASE_LABEL] == f"debootstrap-{images.PYTHON_SUITES[python]}"
    script = "python3 --version && python3 -m venv /opt/venv && /opt/venv/bin/pip --version"
    code, logs = run_container(tag, ["sh", "-c", script], network_mode="none")
    assert code == 0, logs
    lines = logs.strip().splitlines()
    assert lines[0].startswith(f"Python {python}."), logs
    assert lines[-1].startswith("pip ") and f"(python {python})" in lines[-1], logs


@pytest.mark.unit
def test_node_dockerfile_stands_on_the_suite_base_image() -> None:
    node = images.registered_toolchain_images()["node"]
    text = images.toolchain_dockerfile(node, "swe-stream/base:bookworm", "18")
    assert text.startswith("FROM swe-stream/base:bookworm\n")
    assert "apt-get install -y --no-install-recommends nodejs npm" in text
    assert "npm install --global --no-audit --no-fund corepack" in text  # bookworm lacks it
    assert "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" in text
    assert f'LABEL {node.label}="18"' in text
    assert node.tag("trixie") == "swe-stream/node:trixie"


@pytest.mark.unit
def test_node_images_setting_names_each_suite_major() -> None:
    from streams.core.settings import DockerSettings
    from streams.evaluation.recipes.languages import configured_images
    from streams.evaluation.recipes.languages.javascript.versions import (
        DEBIAN_NODE,
        node_images_by_suite,
    )

    tags = configured_images(DockerSettings().toolchain_images)["node"]
    assert node_images_by_suite(tags.values()) == tags
    node = images.registered_toolchain_images()["node"]
    assert {node.tag(suite): major for suite, major in DEBIAN_NODE.items()} == {
        tag: major for major, tag in tags.items()
    }


@pytest.mark.docker
def test_node_images_have_their_suites_node_npm_and_corepack(
    node_images: dict[str, str], run_container: Any
) -> None:
    for major, tag in node_images.items():
        code, logs = run_container(
            tag,
            ["sh", "-c", "node --version && npm --version && corepack --version"],
            network_mode="none",
        )
        assert code == 0, logs
        node, npm, corepack = logs.split()
        assert node.startswith(f"v{major}."), (tag, logs)
        assert npm[0].isdigit() and corepack[0].isdigit(), logs
