"""``go test -json`` read from real recorded runs (``tests/data/go``: go1.19 of Debian bookworm
and go1.26), one check command per id parsed back by the same parser, and the ids' parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.tasks import TestStatus
from streams.evaluation.recipes.languages.go.runners.gotest import (
    build_failures,
    check_command,
    events,
    packages_of,
    parse_go_test_json,
    run_pattern,
    running_when_killed,
    split_id,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[3] / "data" / "go"
VERSIONS = ["go119", "go126"]
CALC = "example.com/rec/calc"

ALL: dict[str, TestStatus] = {
    f"{CALC}/TestAdd": "passed",
    f"{CALC}/TestSub": "failed",
    f"{CALC}/TestSkipped": "skipped",
    f"{CALC}/TestReadsTestdata": "passed",
    f"{CALC}/TestTable": "failed",
    f"{CALC}/TestTable/positive": "passed",
    f"{CALC}/TestTable/with_space": "passed",
    f"{CALC}/TestTable/negative/nested": "passed",
    f"{CALC}/TestTable/fails": "failed",
    f"{CALC}/TestTable/deeper": "passed",
    f"{CALC}/TestTable/deeper/level_two": "passed",
    f"{CALC}/TestTable/deeper/skipped": "skipped",
    f"{CALC}/TestParallel": "passed",
    f"{CALC}/TestParallel/p1": "passed",
    f"{CALC}/TestParallel/p2": "passed",
    f"{CALC}/TestParallel/p3": "passed",
    f"{CALC}/FuzzAdd": "passed",
    f"{CALC}/FuzzAdd/seed#0": "passed",
    f"{CALC}/ExampleAdd": "passed",
    "example.com/rec/panics/TestFirst": "passed",
    "example.com/rec/panics/TestPanics": "failed",
}


def recorded(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_whole_run_gives_every_test_its_status(version: str) -> None:
    """Subtests at any depth and their parents, parallel ones, a fuzz seed, an example; the
    tests after a panic never ran and the package that did not build has none."""
    assert parse_go_test_json(recorded(f"{version}-all.jsonl")) == ALL


@pytest.mark.parametrize("version", VERSIONS)
def test_a_package_that_does_not_build_is_named_with_what_the_compiler_said(version: str) -> None:
    failures = build_failures(recorded(f"{version}-all.jsonl"))
    assert list(failures) == ["example.com/rec/broken"]
    assert "broken/broken_test.go:12:5: undefined: New" in failures["example.com/rec/broken"]
    assert build_failures(recorded(f"{version}-timeout.jsonl")) == {}


@pytest.mark.parametrize("version", VERSIONS)
def test_gos_own_timeout_fails_the_test_it_was_in(version: str) -> None:
    assert parse_go_test_json(recorded(f"{version}-timeout.jsonl")) == {
        "example.com/rec/slow/TestQuick": "passed",
        "example.com/rec/slow/TestSleeps": "failed",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_killed_from_outside_was_in_the_test_started_last(version: str) -> None:
    output = recorded(f"{version}-killed.jsonl")
    assert parse_go_test_json(output) == {"example.com/rec/slow/TestQuick": "passed"}
    assert running_when_killed(output) == "example.com/rec/slow/TestSleeps"
    assert running_when_killed(recorded(f"{version}-all.jsonl")) is None


def test_a_paused_parallel_test_is_not_the_one_running() -> None:
    lines = [
        {"Action": "run", "Package": "p", "Test": "TestP/a"},
        {"Action": "pause", "Package": "p", "Test": "TestP/a"},
        {"Action": "run", "Package": "p", "Test": "TestP/b"},
        {"Action": "pause", "Package": "p", "Test": "TestP/b"},
        {"Action": "cont", "Package": "p", "Test": "TestP/a"},
    ]
    output = "\n".join(json.dumps(line) for line in lines)
    assert running_when_killed(output) == "p/TestP/a"


def test_lines_that_are_no_events_are_passed_over() -> None:
    event = '{"Action":"pass","Package":"p","Test":"TestA"}'
    output = f'warning: x\n{{"Action": 3}}\n{{not json\n[1]\n{event}\n'
    assert list(events(output)) == [{"Action": "pass", "Package": "p", "Test": "TestA"}]
    assert parse_go_test_json(output) == {"p/TestA": "passed"}


def test_each_check_command_runs_its_one_test_and_is_read_back_by_the_parser() -> None:
    """The commands recorded were made by ``check_command``; each run's events give its id's
    status, and the exit code alone would lie for a test that is not there (go exits 0)."""
    checks = json.loads(recorded("go126-checks.json"))
    for test_id, run in checks.items():
        assert run["command"] == check_command(test_id)
    statuses = {i: parse_go_test_json(run["output"]).get(i) for i, run in checks.items()}
    assert statuses == {
        f"{CALC}/TestAdd": "passed",
        f"{CALC}/TestSub": "failed",
        f"{CALC}/TestSkipped": "skipped",
        f"{CALC}/TestTable/with_space": "passed",
        f"{CALC}/TestTable/negative/nested": "passed",
        f"{CALC}/TestTable/fails": "failed",
        f"{CALC}/FuzzAdd/seed#0": "passed",
        f"{CALC}/ExampleAdd": "passed",
        f"{CALC}/TestParallel/p2": "passed",
        "example.com/rec/broken/TestOld": None,  # its package does not build
        f"{CALC}/TestMissing": None,  # no such test
    }
    assert checks[f"{CALC}/TestMissing"]["exit_code"] == 0
    # one test each: a subtest's run holds only it and its parent
    nested = parse_go_test_json(checks[f"{CALC}/TestTable/negative/nested"]["output"])
    assert set(nested) == {f"{CALC}/TestTable", f"{CALC}/TestTable/negative/nested"}


@pytest.mark.parametrize(
    ("test_id", "package", "test"),
    [
        (f"{CALC}/TestTable/negative/nested", CALC, "TestTable/negative/nested"),
        ("github.com/o/Testing/TestA", "github.com/o/Testing", "TestA"),
        ("example.com/Test_x/Test_y", "example.com", "Test_x/Test_y"),
        ("m/ExampleAdd", "m", "ExampleAdd"),
        ("m/v2/FuzzX/seed#3", "m/v2", "FuzzX/seed#3"),
        ("m/BenchmarkX", "m", "BenchmarkX"),
    ],
)
def test_an_id_names_its_package_and_its_test(test_id: str, package: str, test: str) -> None:
    assert split_id(test_id) == (package, test)


@pytest.mark.parametrize("test_id", ["TestA", "m/Tests", "m/helper/TestingX", ""])
def test_what_names_no_test_is_refused(test_id: str) -> None:
    with pytest.raises(ValueError, match="not a Go test id"):
        split_id(test_id)


def test_a_run_pattern_is_anchored_per_level_and_literal() -> None:
    assert run_pattern("TestTable/with_space") == "^TestTable$/^with_space$"
    assert run_pattern("FuzzX/seed#0") == "^FuzzX$/^seed\\#0$"
    assert run_pattern("TestX/a.b+(c)") == "^TestX$/^a\\.b\\+\\(c\\)$"


def test_the_prs_test_files_and_test_data_name_their_packages() -> None:
    files = ["calc/calc_test.go", "calc/testdata/in/x.txt", "main_test.go", "cmd/a/a.go",
             "cmd/a/a_test.go", "calc/extra_test.go"]  # fmt: skip
    assert packages_of(files) == ["./calc", ".", "./cmd/a"]


@pytest.mark.parametrize("version", VERSIONS)
def test_parallel_tests_paused_when_a_test_panics_have_no_status(version: str) -> None:
    """``parallelpanic``: two parallel tests wait at t.Parallel() while a sequential test
    panics; the binary ends before they run. They are missing (the panic says nothing of
    them: a run with the fix may show them passing, which is PASS_TO_PASS where they passed at
    the base), not failed."""
    statuses = parse_go_test_json(recorded(f"{version}-parallel.jsonl"))
    package = "example.com/rec/parallelpanic"
    assert statuses == {f"{package}/TestFirst": "passed", f"{package}/TestPanics": "failed"}
