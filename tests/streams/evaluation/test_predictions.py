"""SWE-bench parity without Docker: predictions files read (and refused, naming file and line),
SWE-bench's per-instance report and its ``tests_status``, how its summary counts an instance,
the summary itself, the files of ``logs/run_evaluation/``, and ``swe-stream harness``'s
refusals before anything runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from schemas.harness import CommandResult, TaskEvaluation
from schemas.workspace import TaskWorkspace
from streams.cli.main import main
from streams.evaluation.harness import (
    Evaluated,
    HarnessOptions,
    instance_log_dir,
    report_tests_status,
    swebench_outcome,
    swebench_report,
    write_instance_logs,
)
from streams.evaluation.harness_status import AgentRun, Graded, Phases
from streams.evaluation.predictions import (
    Prediction,
    PredictionsError,
    default_run_id,
    load_predictions,
    model_dir_name,
    run_summary,
    summary_name,
)

pytestmark = pytest.mark.unit

PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
F2P = ["tests/test_x.py::test_fixed"]
P2P = ["tests/test_x.py::test_kept", "tests/test_x.py::test_other"]


def line(instance_id: str, patch: Any = PATCH, model: str = "org/model-7b") -> dict[str, Any]:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# loading predictions -----------------------------------------------------------------------


def test_jsonl_predictions_in_order_with_missing_and_null_patches_as_none(tmp_path: Path) -> None:
    rows = [line("a__b-1"), "", line("a__b-2", patch=None), {"instance_id": "a__b-3",
            "model_name_or_path": "m"}, line("a__b-4", patch="")]  # fmt: skip
    predictions = load_predictions(write_jsonl(tmp_path / "preds.jsonl", rows))
    assert [(p.instance_id, p.model_patch) for p in predictions] == [
        ("a__b-1", PATCH),
        ("a__b-2", None),
        ("a__b-3", None),
        ("a__b-4", ""),
    ]
    assert [p.empty for p in predictions] == [False, True, True, True]
    assert predictions[0].model_name_or_path == "org/model-7b"
    assert predictions[1].where == f"{tmp_path / 'preds.jsonl'}:3"  # the blank line counts


def test_a_json_list_and_a_json_dict_by_instance_id_are_read_too(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([line("a__b-1"), line("a__b-2", patch="  \n")]))
    assert [(p.instance_id, p.empty) for p in load_predictions(listed)] == [
        ("a__b-1", False),
        ("a__b-2", True),  # whitespace alone is no patch
    ]
    keyed = tmp_path / "dict.json"
    without_id = {"model_name_or_path": "m", "model_patch": PATCH}
    keyed.write_text(json.dumps({"a__b-1": line("a__b-1"), "a__b-2": without_id}))
    assert [p.instance_id for p in load_predictions(keyed)] == ["a__b-1", "a__b-2"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([line("a__b-1"), '{"instance_id": "a__b-2",'], ":2: not JSON"),
        ([line("a__b-1"), "[1, 2]"], ":2: a prediction is a JSON object, not list"),
        ([{"model_name_or_path": "m", "model_patch": PATCH}], ":1: no instance_id"),
        ([{"instance_id": "a__b-1", "model_patch": PATCH}], ":1: no model_name_or_path"),
        ([line("a__b-1", model="..")], ":1: model_name_or_path '..' cannot name a directory"),
        ([line("a__b-1", patch=7)], ":1: model_patch is a string, not int"),
        ([line("a__b-1"), line("a__b-1")], ":2: instance_id 'a__b-1' is also predicted at"),
        (["", "  "], ": no predictions"),
    ],
    ids=["not-json", "not-object", "no-id", "no-model", "bad-model", "patch-int", "twice", "empty"],
)
def test_a_malformed_predictions_file_names_its_file_and_line(
    tmp_path: Path, rows: list[Any], message: str
) -> None:
    path = write_jsonl(tmp_path / "preds.jsonl", rows)
    with pytest.raises(PredictionsError) as caught:
        load_predictions(path)
    text = str(caught.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_a_json_file_of_neither_list_nor_dict_or_a_key_not_its_id_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "preds.json"
    path.write_text('"a string"')
    with pytest.raises(PredictionsError, match="a list of predictions or a dict"):
        load_predictions(path)
    path.write_text(json.dumps({"a__b-1": line("a__b-2")}))
    with pytest.raises(PredictionsError, match="key 'a__b-1': instance_id 'a__b-2' is not its key"):
        load_predictions(path)
    with pytest.raises(PredictionsError, match="cannot read predictions"):
        load_predictions(tmp_path / "missing.jsonl")


def test_names_are_swe_benchs() -> None:
    assert model_dir_name("org/model-7b") == "org__model-7b"
    assert summary_name("org/model-7b", "run1") == "org__model-7b.run1.json"
    for bad in ("", ".", "..", "a\0b", "x" * 256):
        with pytest.raises(ValueError):
            model_dir_name(bad)
    assert default_run_id(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "20260102T030405Z"


# the summary -----------------------------------------------------------------------------


def test_the_summary_counts_each_instance_once_as_swe_bench_does() -> None:
    summary = run_summary(
        ["t-1", "t-2", "t-3", "t-4", "t-5"],
        {"t-1": "resolved", "t-2": "unresolved", "t-3": "empty_patch", "t-4": "error",
         "ghost-9": "error"},
    )  # fmt: skip
    assert summary == {
        "total_instances": 6,  # the five tasks and the prediction of none
        "submitted_instances": 5,
        "completed_instances": 2,
        "resolved_instances": 1,
        "unresolved_instances": 1,
        "empty_patch_instances": 1,
        "error_instances": 2,
        "completed_ids": ["t-1", "t-2"],
        "incomplete_ids": ["t-5"],
        "empty_patch_ids": ["t-3"],
        "submitted_ids": ["ghost-9", "t-1", "t-2", "t-3", "t-4"],
        "resolved_ids": ["t-1"],
        "unresolved_ids": ["t-2"],
        "error_ids": ["ghost-9", "t-4"],
        "schema_version": 2,
    }


# the per-instance report -------------------------------------------------------------------


def check(passed: bool) -> CommandResult:
    return CommandResult(command="c", exit_code=0 if passed else 1, passed=passed, duration_ms=0)


def graded(f2p: list[bool], p2p: list[bool], applied: bool = True) -> Graded:
    return Graded(applied, [check(x) for x in f2p], [check(x) for x in p2p], 1.0, output="out")


def test_tests_status_splits_each_list_and_never_invents_to_fail_categories() -> None:
    status = report_tests_status(F2P, P2P, graded([True], [True, False]))
    assert status == {
        "FAIL_TO_PASS": {"success": F2P, "failure": []},
        "PASS_TO_PASS": {"success": P2P[:1], "failure": P2P[1:]},
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }
    # a patch that did not apply ran no check, and no grading at all: every test failed
    for nothing in (graded([], [], applied=False), None):
        status = report_tests_status(F2P, P2P, nothing)
        assert status["FAIL_TO_PASS"] == {"success": [], "failure": F2P}
        assert status["PASS_TO_PASS"] == {"success": [], "failure": P2P}


@pytest.mark.parametrize(
    ("status", "patch", "checks", "outcome"),
    [
        ("resolved", PATCH, graded([True], [True]), "resolved"),
        ("unresolved", PATCH, graded([False], [True]), "unresolved"),
        ("unresolved", "", None, "empty_patch"),  # a prediction's, not graded
        ("unresolved", " \n", graded([False], [True]), "empty_patch"),  # an idle agent's
        ("unresolved", PATCH, graded([], [], applied=False), "error"),  # SWE-bench's too
        ("sanity_fail", PATCH, None, "error"),
        ("setup_error", PATCH, None, "error"),
        ("test_error", PATCH, graded([False], [False]), "error"),
        ("agent_error", "", None, "error"),
    ],
)
def test_how_the_summary_counts_an_evaluation(
    status: Any, patch: str, checks: Graded | None, outcome: str
) -> None:
    assert swebench_outcome(status, patch, checks) == outcome


def workspace() -> TaskWorkspace:
    return TaskWorkspace.model_validate(
        {
            "id": "octo-units-7",
            "instance_id": "octo__units-7",
            "repo": "octo/units",
            "base_commit": "a" * 40,
            "patch": PATCH,
            "test_patch": PATCH,
            "prompt": "fix it",
            "problem_statement": "it is broken",
            "created_at": "2026-01-01T00:00:00Z",
            "number": 7,
            "FAIL_TO_PASS": F2P,
            "PASS_TO_PASS": P2P,
        }
    )


def evaluation(status: Any) -> TaskEvaluation:
    return TaskEvaluation(
        task_id="octo-units-7",
        repo="octo/units",
        status=status,
        sanity_check=True,
        agent_duration_secs=0,
        total_duration_secs=1,
    )


def test_the_report_is_swe_benchs_per_instance_shape() -> None:
    task = workspace()
    report = swebench_report(evaluation("resolved"), task, graded([True], [True, True]), PATCH)
    assert list(report) == ["octo__units-7"]
    instance = report["octo__units-7"]
    assert {k: instance[k] for k in list(instance)[:4]} == {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": True,
    }
    assert set(instance["tests_status"]) == {
        "FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"
    }  # fmt: skip
    missing = swebench_report(evaluation("unresolved"), task, None, None)["octo__units-7"]
    assert (missing["patch_is_None"], missing["patch_exists"], missing["resolved"]) == (
        True,
        False,
        False,
    )


def test_the_instance_files_are_swe_benchs_and_an_ungraded_one_has_no_report(
    tmp_path: Path,
) -> None:
    task = workspace()
    phases = Phases(
        agent=AgentRun(0, False, 0.0, "", PATCH, None), graded=graded([False], [True, True])
    )
    done = Evaluated(evaluation("unresolved"), task.instance_id, "unresolved")
    directory = write_instance_logs(tmp_path, "run1", "org/model", done, task, phases)
    assert directory == tmp_path / "logs" / "run_evaluation" / "run1" / "org__model" / (
        "octo__units-7"
    )
    assert (directory / "patch.diff").read_text() == PATCH
    assert (directory / "test_output.txt").read_text() == "out"
    report = json.loads((directory / "report.json").read_text())["octo__units-7"]
    assert report["tests_status"]["FAIL_TO_PASS"] == {"success": [], "failure": F2P}
    assert not report["resolved"] and report["patch_successfully_applied"]
    # the patch did not apply: an error for SWE-bench, which writes no report.json then
    failed = Evaluated(evaluation("unresolved"), task.instance_id, "error")
    phases.graded = graded([], [], applied=False)
    directory = write_instance_logs(tmp_path / "2", "run1", "m", failed, task, phases)
    assert not (directory / "report.json").exists()
    assert "outcome: error" in (directory / "run_instance.log").read_text()
    # a hostile instance id of no task stays inside its run's directory
    ghost = instance_log_dir(tmp_path, "run1", "m", "..")
    assert ghost.parent == tmp_path / "logs" / "run_evaluation" / "run1" / "m"


def test_an_agents_model_name_is_its_name_or_its_directorys(tmp_path: Path) -> None:
    assert HarnessOptions(model_name="team/agent").model == "team/agent"
    assert HarnessOptions(agent_dir=tmp_path / "my-agent").model == "my-agent"
    assert HarnessOptions().model == "agent"
    assert HarnessOptions(model_name="..").model == "agent"


# the command's refusals, before anything runs -----------------------------------------------


def harness(tmp_path: Path, *arguments: str) -> list[str]:
    return ["harness", "-i", str(tmp_path / "tasks"), "-o", str(tmp_path / "out"), *arguments]


def test_a_malformed_predictions_file_is_exit_2_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "preds.jsonl", [line("a__b-1"), "{oops"])
    assert main(harness(tmp_path, "--predictions", str(path))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"swe-stream harness: {path}:2: not JSON") and "\n" not in err
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--agent-dir", "."], "drop --agent-dir"),
        (["--agent-cmd", "true"], "drop --agent-cmd"),
        ([], None),
    ],
)
def test_predictions_and_an_agent_are_mutually_exclusive(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str | None,
) -> None:
    path = write_jsonl(tmp_path / "preds.jsonl", [line("a__b-1")])
    code = main(harness(tmp_path, "--predictions", str(path), *arguments))
    err = capsys.readouterr().err
    assert code == 2
    if message:
        assert message in err
    else:  # valid arguments: refused only for the tasks directory that does not exist
        assert "no such directory" in err


def test_an_agent_or_predictions_is_required_and_the_run_id_must_be_a_safe_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(harness(tmp_path)) == 2
    assert "--agent-dir (an agent to run) or --predictions" in capsys.readouterr().err
    path = write_jsonl(tmp_path / "preds.jsonl", [line("a__b-1")])
    assert main(harness(tmp_path, "--predictions", str(path), "--run-id", "../up")) == 2
    assert "--run-id '../up' is not a safe name" in capsys.readouterr().err


def test_cache_level_and_j_are_harness_options() -> None:
    from streams.cli.main import build_parser
    from streams.cli.options import settings_from_args

    args = build_parser().parse_args(["harness", "--predictions", "p.jsonl", "-j", "3",
                                      "--cache-level", "none", "--run-id", "r1"])  # fmt: skip
    assert (args.parallel, args.cache_level, args.run_id) == (3, "none", "r1")
    assert settings_from_args(args).docker.cache_level == "none"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["harness", "--cache-level", "all"])


def test_a_prediction_is_frozen_data() -> None:
    prediction = Prediction("a__b-1", "m", None)
    assert prediction.empty and prediction.where == ""
