"""The JavaScript / TypeScript runners' parsers (jest, vitest, mocha, node --test, node-tap, ava,
uvu) on output recorded from real runs: ``tests/data/js_runners/<runner>/`` holds each runner's
console output, its report and a README naming the version and the exact command (the test
files run are under ``project/``). Recorded in ``/tmp/jsrec/<runner>``: the reports' absolute
paths are read with that ``root``, or rewritten to the sandbox's ``/testbed`` where the
registry's defaults are used.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import (
    LOG_PARSERS,
    REPORT_PARSERS,
    RUNNER_COMMANDS,
    log_parser,
    merge_statuses,
    parse_report,
)
from streams.evaluation.recipes.languages.javascript.runners import jest as jest_parser
from streams.evaluation.recipes.languages.javascript.runners import js
from streams.evaluation.recipes.languages.javascript.runners import mocha as mocha_parser
from streams.evaluation.recipes.languages.javascript.runners import node as node_parser
from streams.evaluation.recipes.languages.javascript.runners import tap as tap_parser

DATA = Path(__file__).resolve().parents[2] / "data" / "js_runners"

JS_RUNNERS = ["jest", "vitest", "mocha", "node", "tap", "ava", "uvu"]


def recorded(runner: str, name: str) -> str:
    return (DATA / runner / name).read_text(encoding="utf-8")


def report_in_testbed(runner: str, name: str, project: str | None = None) -> bytes:
    """A recorded report with the recording's directory as the sandbox's /testbed."""
    data = (DATA / runner / name).read_bytes()
    return data.replace(f"/tmp/jsrec/{project or runner}".encode(), b"/testbed")


# jest 30.5.2 and vitest 4.1.12 ran the same two files (vitest without the broken one)
JEST_LIKE: dict[str, TestStatus] = {
    "test/math.test.js > math > adds": "passed",
    "test/math.test.js > math > subtracts wrongly": "failed",
    "test/math.test.js > math > skipped one": "skipped",
    "test/math.test.js > math > nested > multiplies": "passed",
    "test/math.test.js > top level passes": "passed",
    "test/typed.test.ts > typed > doubles": "passed",
    "test/typed.test.ts > typed > todo one": "skipped",
}
JEST_EXPECTED: dict[str, TestStatus] = {**JEST_LIKE, "test/broken.test.js": "error"}
VITEST_EXPECTED = JEST_LIKE

MOCHA_TITLES: dict[str, TestStatus] = {
    "math adds": "passed",
    "math subtracts wrongly": "failed",
    "math skipped one": "skipped",
    "math pending without body": "skipped",
    "math nested multiplies": "passed",
    "top level passes": "passed",
}
MOCHA_HOOK = 'with a broken hook "before all" hook for "never runs"'
MOCHA_REPORT_EXPECTED: dict[str, TestStatus] = {
    **{f"test/math.test.js > {title}": status for title, status in MOCHA_TITLES.items()},
    f"test/hooks.test.js > {MOCHA_HOOK}": "error",
}
MOCHA_CONSOLE_EXPECTED: dict[str, TestStatus] = {**MOCHA_TITLES, MOCHA_HOOK: "error"}

NODE_EVENTS_EXPECTED: dict[str, TestStatus] = {
    "test/math.test.js > math > adds": "passed",
    "test/math.test.js > math > subtracts wrongly": "failed",
    "test/math.test.js > math > skipped one": "skipped",
    "test/math.test.js > math > todo one": "skipped",
    "test/math.test.js > math > nested > multiplies": "passed",
    "test/math.test.js > top level passes": "passed",
    "test/math.test.js > with subtests > inner passes": "passed",
    "test/other.test.js > other passes": "passed",
    "test/other.test.js > top level passes": "failed",
}
# node's own TAP names no file: the two "top level passes" are one id, the failure winning
NODE_TAP_EXPECTED: dict[str, TestStatus] = {
    test.split(" > ", 1)[1]: status for test, status in NODE_EVENTS_EXPECTED.items()
}

TAP_EXPECTED: dict[str, TestStatus] = {
    "test/math.test.js > math > adds": "passed",
    "test/math.test.js > math > subtracts wrongly": "failed",
    "test/math.test.js > math > skipped one": "skipped",
    "test/math.test.js > math > nested > multiplies": "passed",
    "test/math.test.js > top level passes": "passed",
}

AVA_EXPECTED: dict[str, TestStatus] = {
    "math > adds": "passed",
    "math > subtracts wrongly": "failed",
    "math > skipped one": "skipped",
    "math > todo one": "skipped",
    "other > other passes": "passed",
}

UVU_EXPECTED: dict[str, TestStatus] = {"test/math.test.js > math > subtracts wrongly": "failed"}


@pytest.mark.unit
def test_the_registry_knows_the_js_runners() -> None:
    assert set(JS_RUNNERS) <= set(LOG_PARSERS)
    assert set(RUNNER_COMMANDS) == set(JS_RUNNERS)
    reports = {runner: log_parser(runner).report for runner in JS_RUNNERS}
    assert reports == {
        "jest": "jest-json",
        "vitest": "vitest-json",
        "mocha": "mocha-json",
        "node": "node-events",
        "tap": "tap",
        "ava": "ava-tap",
        "uvu": None,
    }
    assert {kind for kind in reports.values() if kind} <= set(REPORT_PARSERS)
    # every runner with a report has a way to ask for it, or writes it on its console
    for runner, kind in reports.items():
        command = RUNNER_COMMANDS[runner]
        if command.report_arguments is not None:
            assert "{path}" in command.report_arguments
            assert kind is not None


@pytest.mark.unit
def test_ids_and_paths() -> None:
    assert js.test_id("test/a.test.js", ["outer", "inner", "works"]) == (
        "test/a.test.js > outer > inner > works"
    )
    assert js.test_id(None, ["outer", "works"]) == "outer > works"
    assert js.test_id("test/a.test.js", []) == "test/a.test.js"
    assert js.relative_path("/testbed/test/a.test.js") == "test/a.test.js"
    assert js.relative_path("file:///testbed/src/x.spec.ts") == "src/x.spec.ts"
    assert js.relative_path("/elsewhere/a.test.js") == "/elsewhere/a.test.js"
    assert js.relative_path("/work/repo/t/a.js", root="/work/repo/") == "t/a.js"
    assert js.relative_path("./t/a.js") == "t/a.js"


@pytest.mark.unit
def test_runner_command_lines() -> None:
    files = ["test/a.test.js", "test/b c.test.ts"]
    lines = {
        runner: command.line(files, "/tmp/r/report") for runner, command in RUNNER_COMMANDS.items()
    }
    assert lines["jest"] == (
        "npx jest --ci --verbose --watchAll=false --coverage=false test/a.test.js "
        "'test/b c.test.ts' --json --outputFile=/tmp/r/report"
    )
    assert lines["mocha"].endswith("--reporter json --reporter-option output=/tmp/r/report")
    # node refuses options after its files: the report's come first
    reporter = f"'{node_parser.NODE_REPORTER}'"
    assert lines["node"] == (
        f"node --test '--test-reporter={node_parser.NODE_REPORTER}' "
        "--test-reporter-destination=stdout "
        f"--test-reporter={reporter} --test-reporter-destination=/tmp/r/report "
        "test/a.test.js 'test/b c.test.ts'"
    )
    assert lines["uvu"] == "npx uvu . '(?:test/a\\.test\\.js|test/b\\ c\\.test\\.ts)$'"
    assert RUNNER_COMMANDS["tap"].line(files, "/tmp/r/report") == RUNNER_COMMANDS["tap"].line(files)
    assert RUNNER_COMMANDS["jest"].line() == (
        "npx jest --ci --verbose --watchAll=false --coverage=false"
    )


@pytest.mark.unit
def test_jest_report_and_console_agree() -> None:
    report = (DATA / "jest" / "report.json").read_bytes()
    assert jest_parser.parse_jest_json(report, root="/tmp/jsrec/jest") == JEST_EXPECTED
    assert parse_report("jest-json", report_in_testbed("jest", "report.json")) == JEST_EXPECTED
    assert log_parser("jest").parse(recorded("jest", "console.txt")) == JEST_EXPECTED
    # the run that wrote the report printed the same tree on its console
    log = log_parser("jest").parse(recorded("jest", "report-console.txt"))
    assert log == JEST_EXPECTED
    assert merge_statuses(
        parse_report("jest-json", report_in_testbed("jest", "report.json")), log
    ) == (JEST_EXPECTED)


@pytest.mark.unit
def test_vitest_report_and_console_agree() -> None:
    assert parse_report("vitest-json", report_in_testbed("vitest", "report.json")) == (
        VITEST_EXPECTED
    )
    assert log_parser("vitest").parse(recorded("vitest", "console.txt")) == VITEST_EXPECTED
    assert log_parser("vitest").parse(recorded("vitest", "report-console.txt")) == (VITEST_EXPECTED)


@pytest.mark.unit
def test_mocha_report_and_console() -> None:
    report = (DATA / "mocha" / "report.json").read_bytes()
    assert mocha_parser.parse_mocha_json(report, root="/tmp/jsrec/mocha") == MOCHA_REPORT_EXPECTED
    assert parse_report("mocha-json", report_in_testbed("mocha", "report.json")) == (
        MOCHA_REPORT_EXPECTED
    )
    # the spec reporter names no file: the same names, without the file part
    assert log_parser("mocha").parse(recorded("mocha", "console.txt")) == MOCHA_CONSOLE_EXPECTED


@pytest.mark.unit
def test_mocha_before_9_prints_its_json_report_and_the_console_reader_takes_it() -> None:
    """mocha 7 (ejs's) has no ``--reporter-option output=``: the report is the console, read
    there with its file paths; the same project's tests as mocha 12's report."""
    console = report_in_testbed("mocha", "console-mocha7-json.txt").decode()
    assert log_parser("mocha").parse(console) == MOCHA_REPORT_EXPECTED
    cut = console[: len(console) // 2]  # killed mid-report: nothing, not a wrong half
    assert log_parser("mocha").parse(cut) == {}


@pytest.mark.unit
def test_node_events_report_and_console_agree() -> None:
    report = (DATA / "node" / "report-events.jsonl").read_bytes()
    assert node_parser.parse_node_events(report, root="/tmp/jsrec/nodetest") == (
        NODE_EVENTS_EXPECTED
    )
    in_testbed = report_in_testbed("node", "report-events.jsonl", "nodetest")
    assert parse_report("node-events", in_testbed) == NODE_EVENTS_EXPECTED
    console = report_in_testbed("node", "events-console.txt", "nodetest").decode()
    assert log_parser("node").parse(console) == NODE_EVENTS_EXPECTED
    assert log_parser("node").running_when_killed(console) is None


@pytest.mark.unit
def test_node_own_tap() -> None:
    assert log_parser("node").parse(recorded("node", "console.txt")) == NODE_TAP_EXPECTED
    assert log_parser("node").parse(recorded("node", "report-console.txt")) == NODE_TAP_EXPECTED
    assert parse_report("tap", (DATA / "node" / "report.tap").read_bytes()) == NODE_TAP_EXPECTED


@pytest.mark.unit
def test_the_node_reporter_is_a_data_url_module() -> None:
    assert node_parser.NODE_REPORTER.startswith("data:text/javascript;base64,")
    assert "'" not in node_parser.NODE_REPORTER  # quoted in RUNNER_COMMANDS
    source = base64.b64decode(node_parser.NODE_REPORTER.split(",", 1)[1]).decode()
    assert source.startswith("export default async function*")
    assert f"'--test-reporter={node_parser.NODE_REPORTER}'" in RUNNER_COMMANDS["node"].command


@pytest.mark.unit
def test_node_tap() -> None:
    output = recorded("tap", "console.txt")
    assert log_parser("tap").parse(output) == TAP_EXPECTED
    assert parse_report("tap", output.encode()) == TAP_EXPECTED


@pytest.mark.unit
def test_ava_console_and_tap_agree() -> None:
    assert log_parser("ava").parse(recorded("ava", "console.txt")) == AVA_EXPECTED
    tap = (DATA / "ava" / "report.tap").read_bytes()
    assert parse_report("ava-tap", tap) == AVA_EXPECTED
    assert log_parser("ava").parse(tap.decode()) == AVA_EXPECTED


@pytest.mark.unit
def test_uvu_names_only_its_failures() -> None:
    assert log_parser("uvu").parse(recorded("uvu", "console.txt")) == UVU_EXPECTED
    # run on a directory, uvu prints the files from it
    assert log_parser("uvu").parse(recorded("uvu", "console-dir.txt")) == {
        "math.test.js > math > subtracts wrongly": "failed"
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    ("runner", "name"),
    [
        ("jest", "console.txt"),
        ("vitest", "console.txt"),
        ("mocha", "console.txt"),
        ("node", "console.txt"),
        ("tap", "console.txt"),
        ("ava", "console.txt"),
        ("uvu", "console.txt"),
    ],
)
def test_a_finished_run_has_no_running_test(runner: str, name: str) -> None:
    assert log_parser(runner).running_when_killed(recorded(runner, name)) is None


def _cut_after(output: str, line: str) -> str:
    """``output`` up to and including the first line equal to ``line`` (stripped)."""
    kept: list[str] = []
    for each in output.split("\n"):
        kept.append(each)
        if each.strip() == line:
            return "\n".join(kept) + "\n"
    raise AssertionError(f"no line {line!r}")


@pytest.mark.unit
def test_running_when_killed_in_tap_output() -> None:
    node = _cut_after(recorded("node", "console.txt"), "# Subtest: multiplies")
    assert log_parser("node").running_when_killed(node) == "math > nested > multiplies"
    # what ended before the kill is read; the suites still open are no tests
    assert log_parser("node").parse(node) == {
        test: status
        for test, status in NODE_TAP_EXPECTED.items()
        if test.startswith("math > ") and test != "math > nested > multiplies"
    }
    tap = _cut_after(recorded("tap", "console.txt"), "# Subtest: subtracts wrongly")
    assert log_parser("tap").running_when_killed(tap) == (
        "test/math.test.js > math > subtracts wrongly"
    )
    assert log_parser("tap").parse(tap) == {"test/math.test.js > math > adds": "passed"}


@pytest.mark.unit
def test_running_when_killed_in_node_events() -> None:
    console = report_in_testbed("node", "events-console.txt", "nodetest").decode()
    lines = console.split("\n")
    started = next(
        i for i, line in enumerate(lines) if '"start"' in line and '"multiplies"' in line
    )
    killed = "\n".join(lines[: started + 1]) + "\n"
    assert log_parser("node").running_when_killed(killed) == (
        "test/math.test.js > math > nested > multiplies"
    )
    assert log_parser("node").parse(killed) == {
        "test/math.test.js > math > adds": "passed",
        "test/math.test.js > math > subtracts wrongly": "failed",
        "test/math.test.js > math > skipped one": "skipped",
        "test/math.test.js > math > todo one": "skipped",
    }
    # a line cut in the middle is not an event
    assert log_parser("node").parse(killed + lines[started + 1][:30]) == log_parser("node").parse(
        killed
    )


@pytest.mark.unit
@pytest.mark.parametrize("runner", ["jest", "vitest", "mocha", "ava", "uvu"])
def test_runners_that_print_tests_when_they_end_name_no_running_test(runner: str) -> None:
    output = recorded(runner, "console.txt")
    truncated = output[: len(output) // 3]
    assert log_parser(runner).running_when_killed(truncated) is None
    # the part that was printed is read, and nothing it does not show
    assert set(log_parser(runner).parse(truncated)) <= set(log_parser(runner).parse(output))


@pytest.mark.unit
def test_a_tap_suite_failing_with_no_failed_test_is_an_error() -> None:
    output = """\
TAP version 13
# Subtest: suite
    # Subtest: inner
    ok 1 - inner
    1..1
not ok 1 - suite
  ---
  error: 'before hook failed'
  ...
# Subtest: lone
    ok 1 - should be equal
    1..1
ok 2 - lone
1..2
"""
    assert tap_parser.parse_tap(output) == {
        "suite > inner": "passed",
        "suite": "error",
        "lone": "passed",
    }
    # node: every result is announced, so the same answer with points counted as tests
    assert tap_parser.parse_tap(output, points_are_tests=True)["suite"] == "error"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("jest-json", b"{not json"),
        ("jest-json", b"[]"),
        ("jest-json", b'{"testResults": 3}'),
        ("jest-json", b'{"testResults": [{"assertionResults": []}]}'),
        (
            "vitest-json",
            b'{"testResults": [{"name": "/testbed/a.test.js", "assertionResults": [{}]}]}',
        ),
        ("mocha-json", b"{}"),
        ("mocha-json", b'{"passes": [], "pending": [], "failures": [{"title": "x"}]}'),
        ("mocha-json", b"\xff\xfe"),
        ("tap", b""),
        ("tap", b"just some text\nno test anywhere\n"),
        ("ava-tap", b"ok 1 - but no version line\n"),
        ("node-events", b""),
        ("node-events", b"TAP version 13\nok 1 - a TAP report, not events\n"),
    ],
)
def test_malformed_reports_are_value_errors(kind: str, data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed"):
        parse_report(kind, data)


@pytest.mark.unit
def test_a_truncated_json_report_is_a_value_error() -> None:
    report = (DATA / "jest" / "report.json").read_bytes()
    with pytest.raises(ValueError, match="malformed jest JSON"):
        parse_report("jest-json", report[: len(report) // 2])
    mocha = (DATA / "mocha" / "report.json").read_bytes()
    with pytest.raises(ValueError, match="malformed mocha JSON"):
        parse_report("mocha-json", mocha[:-10])


@pytest.mark.unit
def test_tap_a_files_own_assertions_beside_its_tests_are_a_test_of_their_own() -> None:
    """node-semver#867: a loop of ``t.equal`` at a file's top beside one ``t.test``; the fix
    turns a failing assertion into a passing one: the file's own assertions are the test
    ``<file>``, failed before and passed after (FAIL_TO_PASS), the ``t.test`` its own."""
    report = recorded("tap", "report-16-assertions.tap")
    assert parse_report("tap", report.encode()) == {
        "test/cases.js > double of zero": "passed",
        "test/cases.js": "failed",
    }
    fixed = report.replace("not ok 3 - double 2 = 5", "ok 3 - double 2 = 5")
    assert log_parser("tap").parse(fixed)["test/cases.js"] == "passed"


@pytest.mark.unit
def test_a_title_with_a_lone_surrogate_gets_an_id_utf8_can_store() -> None:
    """eemeli/yaml's tests are titled with lone surrogates (``'\\udead'``), which a JSON report
    writes as an escape and Python reads as a code point UTF-8 cannot encode: the id keeps it
    as the text ``\\udead``."""
    report = report_in_testbed("jest", "report.json").replace(
        b'"title":"adds"', b'"title":"adds \\udead"'
    )
    statuses = parse_report("jest-json", report)
    (added,) = [test for test in statuses if "adds" in test]
    assert added.endswith("adds \\udead")
    added.encode()  # storable
