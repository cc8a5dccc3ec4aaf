"""The demos of the other languages (``demo --language``) and their tasks' check commands, each
run alone by the harness: the one task ``mine --once`` exports from the offline world of the
language, served from 127.0.0.1, validated in Docker. (Apart from ``test_runner.py``, so that
test workers share these long runs.)"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.offline.world import offline_world
from tests.streams.runtime.test_runner import mine_once, swe_stream
from tests.workers import env_for, worker_env

pytestmark = pytest.mark.docker


def demo_of(language: str, task: str, workdir: Path) -> tuple[dict[str, Any], str]:
    """``demo --language <language>`` run to its end: the task valid (gold resolves, empty
    does not) and the harness's two agents graded; its workspace.yaml and the output."""
    env = {k: v for k, v in worker_env().items() if k != "OPENROUTER_API_KEY"}
    env["SWE_STREAM_WORKER_METRICS_PORT"] = "0"
    # three test runs (the base, before the fix, after it), not five: flaky tests are dropped
    # over repeated runs in the prover's tests
    env["SWE_STREAM_VALIDATION_RUNS"] = "1"
    done = swe_stream(env, "demo", "--language", language, "--workdir", str(workdir))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"  {task}: valid; gold patch resolves: True, empty patch resolves: False" in (
        done.stdout
    )
    assert "demo: harness: gold-patch agent resolved, do-nothing agent unresolved" in done.stdout
    workspace = yaml.safe_load((workdir / "tasks" / task / "workspace.yaml").read_text())
    return workspace, done.stdout


@contextlib.contextmanager
def exported_checks(
    tmp_path: Path, fixtures_dir: Path, language: str
) -> Iterator[tuple[dict[str, str], Path, dict[str, Any], list[str]]]:
    """The one task ``mine --once`` exports from the offline world of ``language`` (served
    while the context lasts): its environment, directory, workspace.yaml and checks.txt."""
    hour = fixtures_dir / "gharchive" / "2015-01-01-0.json.gz"
    with offline_world(tmp_path / "world", hour, language=language) as world:
        out, env = tmp_path / "out", env_for(world, tmp_path / "data")
        assert "tasks exported: 1" in mine_once(world, env, out)
        (task_dir,) = [p for p in out.iterdir() if (p / "workspace.yaml").is_file()]
        workspace = yaml.safe_load((task_dir / "workspace.yaml").read_text())
        yield env, task_dir, workspace, (task_dir / "checks.txt").read_text().splitlines()


def test_a_javascript_demo_runs_offline(tmp_path: Path, base_image: str) -> None:
    """``demo --language javascript``: npm ci, node's test runner, the same pipeline."""
    task = "swe-stream-demo-units-js-1"
    workspace, output = demo_of("javascript", task, tmp_path / "d")
    assert output.splitlines()[-1].startswith(f"demo: done: task {task}")
    assert workspace["language"] == "JavaScript"
    assert workspace["install_config"]["test_runner"] == "node"
    assert workspace["FAIL_TO_PASS"] == [
        "test/temperature.test.js > fahrenheitToCelsius > boiling point"
    ]


def grade_one_by_one(
    env: dict[str, str], task_dir: Path, workspace: dict[str, Any], checks: list[str], out: Path
) -> None:
    """``harness --predictions --isolate-tests`` on the task: the gold patch resolved, its
    sanity run (``checks`` at the base: each F2P one fails, each P2P one passes, so no check
    passes whatever the code) and graded run made of ``checks``, each passing. (An empty
    patch's grading is the sanity run's: left to the harness tests.)"""
    for model, patch in (("gold", workspace["patch"]),):
        predictions = out / f"{model}.jsonl"
        row = {"instance_id": workspace["instance_id"], "model_name_or_path": model,
               "model_patch": patch}  # fmt: skip
        predictions.write_text(json.dumps(row) + "\n")
        graded = swe_stream(
            env, "harness", "-i", str(task_dir), "--predictions", str(predictions),
            "--isolate-tests", "-o", str(out / model), "--json",
        )  # fmt: skip
        (result,) = json.loads(graded.stdout)["results"]
        expected = "resolved" if patch else "unresolved"
        assert result["status"] == expected, graded.stdout[-3000:] + graded.stderr[-3000:]
        if patch:
            assert result["sanity_check"] is True
            ran = [c["command"] for c in result["fail_to_pass"] + result["pass_to_pass"]]
            assert ran == checks
            assert all(c["passed"] for c in result["fail_to_pass"] + result["pass_to_pass"])


def test_the_check_commands_of_a_javascript_task_grade_one_by_one(
    tmp_path: Path, fixtures_dir: Path, node_images: dict[str, str]
) -> None:
    """A JS task's exported check commands (checks.txt: the runner on the test's file, its
    title selected), each run alone (``harness --isolate-tests``), grade the gold patch
    resolved, the F2P ones failing at the base."""
    with exported_checks(tmp_path, fixtures_dir, "javascript") as (
        env,
        task_dir,
        workspace,
        checks,
    ):
        assert len(checks) == 3, checks
        # the file, the title selected, and the reporter's line of that title path passing
        assert all("' test/temperature.test.js | grep " in c for c in checks), checks
        assert all("--test-name-pattern=" in c for c in checks), checks
        grade_one_by_one(env, task_dir, workspace, checks, tmp_path)


GO_UNITS = "example.com/units"


def test_a_go_demo_runs_offline(tmp_path: Path, base_image: str) -> None:
    """``demo --language go``: a module of the standard library alone, go test -json, three
    runs; the task re-validated (gold resolves, empty does not) and the harness's two agents."""
    workspace, _ = demo_of("go", "swe-stream-demo-units-go-1", tmp_path / "d")
    assert workspace["language"] == "Go"
    assert workspace["install_config"]["test_runner"] == "go-test"
    assert workspace["FAIL_TO_PASS"] == [f"{GO_UNITS}/TestFahrenheitToCelsius"]
    assert workspace["PASS_TO_PASS"] == [
        f"{GO_UNITS}/TestCelsiusToFahrenheit",
        f"{GO_UNITS}/TestCelsiusToFahrenheit/boiling_point",
        f"{GO_UNITS}/TestCelsiusToFahrenheit/freezing_point",
    ]


def test_the_check_commands_of_a_go_task_grade_one_by_one(
    tmp_path: Path, fixtures_dir: Path, go_images: dict[str, str]
) -> None:
    """A Go task's check commands (checks.txt: ``go test -run '^T$/^sub$' <package>``), each
    run alone (``harness --isolate-tests``) and read by the same parser: the gold patch
    resolves, the F2P ones failing at the base."""
    with exported_checks(tmp_path, fixtures_dir, "go") as (env, task_dir, workspace, checks):
        assert checks == [
            "go test -count=1 -json -vet=off '-run=^TestFahrenheitToCelsius$' " + GO_UNITS,
            "go test -count=1 -json -vet=off '-run=^TestCelsiusToFahrenheit$' " + GO_UNITS,
            "go test -count=1 -json -vet=off '-run=^TestCelsiusToFahrenheit$/^boiling_point$' "
            + GO_UNITS,
            "go test -count=1 -json -vet=off '-run=^TestCelsiusToFahrenheit$/^freezing_point$' "
            + GO_UNITS,
        ]
        grade_one_by_one(env, task_dir, workspace, checks, tmp_path)


RUST_CHECK = "python3 /opt/swe-env/swe-cargo-test.py --tests -p units"


def test_a_rust_demo_runs_offline(
    tmp_path: Path, base_image: str, rust_images: dict[str, str]
) -> None:
    """``demo --language rust``: a crate of the standard library alone with unit, integration
    and doc tests, cargo test, three runs; the task re-validated and the harness's agents."""
    workspace, _ = demo_of("rust", "swe-stream-demo-units-rs-1", tmp_path / "d")
    assert workspace["language"] == "Rust"
    assert workspace["install_config"]["test_runner"] == "cargo-test"
    assert workspace["FAIL_TO_PASS"] == [
        "units::lib::tests::fahrenheit_freezing_point",
        "units::temperature::fahrenheit_boiling_point",
    ]
    assert workspace["PASS_TO_PASS"] == [  # doc tests are not run
        "units::lib::tests::freezing_point",
        "units::temperature::boiling_point",
    ]


def test_the_check_commands_of_a_rust_task_grade_one_by_one(
    tmp_path: Path, fixtures_dir: Path, rust_images: dict[str, str]
) -> None:
    """A Rust task's check commands (checks.txt: ``swe-cargo-test.py -p <package> --test <t>
    -- --exact <path>``), each run alone (``harness --isolate-tests``) and read by the same
    parser: the gold patch resolves, the F2P ones failing at the base."""
    with exported_checks(tmp_path, fixtures_dir, "rust") as (env, task_dir, workspace, checks):
        assert checks == [
            f"{RUST_CHECK} --lib -- --exact tests::fahrenheit_freezing_point",
            f"{RUST_CHECK} --test temperature -- --exact fahrenheit_boiling_point",
            f"{RUST_CHECK} --lib -- --exact tests::freezing_point",
            f"{RUST_CHECK} --test temperature -- --exact boiling_point",
        ]
        grade_one_by_one(env, task_dir, workspace, checks, tmp_path)
