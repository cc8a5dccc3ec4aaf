"""The JUnit XML reader (``parse_report("junit", ...)``) on reports pytest writes at test time
for the sample tests of ``test_log_parsers`` (xunit1, xunit1 with a ``--junit-prefix``, xunit2),
checked against the text parser's reading of the same run; its refusals (DOCTYPE, entities,
malformed XML); and ``merge_statuses``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers import REPORT_PARSERS, merge_statuses, parse_report
from streams.evaluation.recipes.languages.python.runners.junit import (
    dotted_path_and_classes,
    junit_node_id,
    parse_junit_xml,
)
from streams.evaluation.recipes.languages.python.runners.pytest import parse_pytest_output
from streams.evaluation.validator import REPORT_MARKER, read_report, split_report
from tests.streams.evaluation.test_log_parsers import (
    PLUGIN_SUBTESTS,
    SAMPLE_EXPECTED,
    SAMPLE_TESTS,
    SUB_EXPECTED,
    run,
    write_tree,
)

RUNS = {
    "xunit1": ["-o", "junit_family=xunit1"],
    "xunit1-prefix": ["-o", "junit_family=xunit1", "--junit-prefix=suite"],
    "xunit2": ["-o", "junit_family=xunit2"],
}


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("junit")
    # and a module that fails to import: a collection error, which names no test
    write_tree(root, {**SAMPLE_TESTS, "tests/test_broken.py": "import nonexistent_module_xyz\n"})
    return root


@pytest.fixture(scope="module")
def reports(sample_root: Path) -> dict[str, tuple[str, bytes]]:
    """A pytest run of the sample tests per kind of report: its output and its report."""
    runs: dict[str, tuple[str, bytes]] = {}
    for kind, options in RUNS.items():
        report = sample_root / f"{kind}.xml"
        output = run(
            sample_root,
            "-m",
            "pytest",
            "-v",
            "-rA",
            "-p",
            "no:cacheprovider",
            "--continue-on-collection-errors",
            f"--junitxml={report}",
            *options,
            "tests",
        )
        runs[kind] = output, report.read_bytes()
    return runs


@pytest.fixture(params=sorted(RUNS))
def pytest_run(
    request: pytest.FixtureRequest, reports: dict[str, tuple[str, bytes]]
) -> tuple[str, bytes]:
    return reports[request.param]


@pytest.mark.unit
def test_a_report_of_every_outcome(pytest_run: tuple[str, bytes]) -> None:
    _, report = pytest_run
    assert parse_report("junit", report) == SAMPLE_EXPECTED


@pytest.mark.unit
def test_the_report_and_the_log_of_one_run_agree(pytest_run: tuple[str, bytes]) -> None:
    output, report = pytest_run
    assert parse_junit_xml(report) == parse_pytest_output(output)
    assert merge_statuses(parse_junit_xml(report), parse_pytest_output(output)) == (SAMPLE_EXPECTED)


@pytest.mark.unit
def test_text_or_bytes(pytest_run: tuple[str, bytes]) -> None:
    _, report = pytest_run
    assert parse_junit_xml(report.decode("utf-8")) == parse_junit_xml(report)


@pytest.mark.unit
def test_a_teardown_error_after_a_failure_is_a_second_testcase(
    reports: dict[str, tuple[str, bytes]],
) -> None:
    """What the sample's report holds for its teardown errors (read as one status above)."""
    _, report = reports["xunit1"]
    children = [
        [child.tag for child in case]
        for case in ElementTree.fromstring(report).iter("testcase")
        if case.get("name") in ("test_leaks", "test_fails_and_leaks")
    ]
    assert children == [["error"], ["failure"], ["error"]]


@pytest.mark.unit
def test_an_error_in_any_phase_makes_the_test_error_unless_it_failed() -> None:
    # a passing testcase, then a second one of the same id with the teardown error (the shape
    # of pytest < 9 for a passing call, see pytest issue #3850)
    report = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_t" name="test_leaks" file="tests/test_t.py" line="3"/>
<testcase classname="tests.test_t" name="test_leaks" file="tests/test_t.py" line="3">
<error message="failed on teardown with &quot;RuntimeError: boom&quot;">boom</error></testcase>
<testcase classname="tests.test_t" name="test_f" file="tests/test_t.py" line="5">
<failure message="assert 0">assert 0</failure></testcase>
<testcase classname="tests.test_t" name="test_f" file="tests/test_t.py" line="5">
<error message="failed on teardown with &quot;RuntimeError: boom&quot;">boom</error></testcase>
<testcase classname="tests.test_t" name="test_s" file="tests/test_t.py" line="7">
<skipped type="pytest.skip" message="no">no</skipped></testcase>
<testcase classname="tests.test_t" name="test_s" file="tests/test_t.py" line="7">
<error message="failed on teardown with &quot;RuntimeError: boom&quot;">boom</error></testcase>
</testsuite></testsuites>"""
    assert parse_junit_xml(report) == {
        "tests/test_t.py::test_leaks": "error",
        "tests/test_t.py::test_f": "failed",
        "tests/test_t.py::test_s": "error",
    }


@pytest.mark.unit
def test_a_bare_testsuite_and_several_testsuites(pytest_run: tuple[str, bytes]) -> None:
    _, report = pytest_run
    suite = ElementTree.fromstring(report).find("testsuite")
    assert suite is not None
    # <testsuite> as the root (pytest < 5.1)
    assert parse_junit_xml(ElementTree.tostring(suite)) == SAMPLE_EXPECTED
    # <testsuites> holding several: the sample's testcases split over two suites
    first, second = ElementTree.Element("testsuite"), ElementTree.Element("testsuite")
    for case in suite.iter("testcase"):
        (first if "test_odd" in case.get("classname", "") else second).append(case)
    wrapper = ElementTree.Element("testsuites")
    wrapper.extend([first, second])
    assert parse_junit_xml(ElementTree.tostring(wrapper)) == SAMPLE_EXPECTED


# `pytest --junitxml=st.xml -o junit_family=xunit1 tests/test_sub.py` with pytest 8.4.2 and the
# pytest-subtests 0.15.0 plugin (the failures' text trimmed)
PLUGIN_SUBTESTS_REPORT = b"""\
<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" \
errors="0" failures="2" skipped="1" tests="14" time="0.345" \
timestamp="2026-11-25T10:55:01.283685+00:00" hostname="vm">\
<testcase classname="tests.test_sub.TestX" name="test_all_pass" file="tests/test_sub.py" \
line="11" time="0.010" />\
<testcase classname="tests.test_sub.TestX" name="test_y" file="tests/test_sub.py" line="6" \
time="0.039"><failure message="AssertionError: 1 == 1">tests/test_sub.py:10: AssertionError\
</failure></testcase>\
<testcase classname="tests.test_sub" name="test_fixture" file="tests/test_sub.py" line="17" \
time="0.012"><failure message="assert 2 != 2">tests/test_sub.py:21: AssertionError</failure>\
<skipped type="pytest.skip" message="sub skip">/tmp/gen/tests/test_sub.py:23: sub skip\
</skipped></testcase>\
<testcase classname="tests.test_sub" name="test_fixture_ok" file="tests/test_sub.py" \
line="25" time="0.001" /></testsuite></testsuites>"""


@pytest.mark.unit
def test_the_subtests_plugin_reports_a_failed_subtest_as_a_failure() -> None:
    assert parse_junit_xml(PLUGIN_SUBTESTS_REPORT) == SUB_EXPECTED
    log = parse_pytest_output(PLUGIN_SUBTESTS)
    assert merge_statuses(parse_junit_xml(PLUGIN_SUBTESTS_REPORT), log) == SUB_EXPECTED


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
]>
<testsuites><testsuite><testcase classname="a.test_b" name="&lol2;"/></testsuite></testsuites>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE testsuites [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite><testcase classname="a.test_b" name="&secret;"/></testsuite></testsuites>"""

A_DOCTYPE_ALONE = b"""<?xml version="1.0"?>
<!DOCTYPE testsuites SYSTEM "http://example.invalid/junit.dtd">
<testsuites/>"""


@pytest.mark.unit
@pytest.mark.parametrize("report", [BILLION_LAUGHS, EXTERNAL_ENTITY, A_DOCTYPE_ALONE])
def test_a_doctype_or_entity_is_refused(report: bytes) -> None:
    with pytest.raises(ValueError, match="DOCTYPE"):
        parse_junit_xml(report)
    with pytest.raises(ValueError, match="DOCTYPE"):
        parse_junit_xml(report.decode())


@pytest.mark.unit
def test_malformed_xml_is_a_clear_value_error(pytest_run: tuple[str, bytes]) -> None:
    _, report = pytest_run
    for broken in (report[: len(report) // 2], b"", b"not xml at all", b"<a><b></a>"):
        with pytest.raises(ValueError, match="malformed JUnit XML"):
            parse_junit_xml(broken)
    with pytest.raises(ValueError, match="undefined entity"):
        parse_junit_xml(b"<testsuites>&nope;</testsuites>")
    with pytest.raises(ValueError, match="not a JUnit XML report: root element <html>"):
        parse_junit_xml(b"<html><body/></html>")


@pytest.mark.unit
def test_node_ids() -> None:
    # xunit1: the file tells where the module path ends
    assert junit_node_id("tests.test_ops.TestA", "test_b[1]", "tests/test_ops.py") == (
        "tests/test_ops.py::TestA::test_b[1]"
    )
    assert junit_node_id("tests.v1.2.test_x", "test_y[1.5]", "tests/v1.2/test_x.py") == (
        "tests/v1.2/test_x.py::test_y[1.5]"
    )
    assert junit_node_id("suite.tests.test_ops.TestA", "test_b", "tests/test_ops.py") == (
        "tests/test_ops.py::TestA::test_b"  # a --junit-prefix
    )
    assert junit_node_id("README.rst", "README.rst", "README.rst") == "README.rst::README.rst"
    # xunit2, or a test inherited from another file: from the dotted classname
    assert junit_node_id("tests.test_ops.TestA", "test_b[x - y]") == (
        "tests/test_ops.py::TestA::test_b[x - y]"
    )
    assert junit_node_id("tests.test_b.TestB", "test_inherited", "tests/base.py") == (
        "tests/test_b.py::TestB::test_inherited"
    )
    assert junit_node_id("a.b.test_c", "test_d") == "a/b/test_c.py::test_d"
    # no classname: a module (a collection error), not a test
    assert junit_node_id("", "tests.test_broken", "tests/test_broken.py") is None


@pytest.mark.unit
def test_dotted_path_and_classes() -> None:
    assert dotted_path_and_classes("a.b.test_c") == ("a/b/test_c.py", [])
    assert dotted_path_and_classes("a.b.test_c.TestD.TestE") == (
        "a/b/test_c.py",
        ["TestD", "TestE"],
    )
    assert dotted_path_and_classes("Tests.Integration.test_x.TestA") == (
        "Tests/Integration/test_x.py",
        ["TestA"],
    )
    assert dotted_path_and_classes("test_c") == ("test_c.py", [])
    assert dotted_path_and_classes("TestOnly") == ("TestOnly.py", [])
    assert dotted_path_and_classes("a.test_c.lower", min_classes=1) == ("a/test_c.py", ["lower"])
    # the documented limit: an uppercase module name is taken for a class
    assert dotted_path_and_classes("tests.TestModule") == ("tests.py", ["TestModule"])


@pytest.mark.unit
def test_parse_report_knows_its_kinds_only() -> None:
    # junit, the JS runners' (tests/streams/evaluation/test_js_log_parsers.py) and swe-ctest's
    assert sorted(REPORT_PARSERS) == [
        "ava-tap",
        "jest-json",
        "junit",
        "mocha-json",
        "node-events",
        "swe-ctest",
        "tap",
        "vitest-json",
    ]
    with pytest.raises(ValueError) as raised:
        parse_report("cobertura", b"<coverage/>")
    assert "'cobertura'" in str(raised.value)
    assert "junit" in str(raised.value)


@pytest.mark.unit
def test_merge_statuses() -> None:
    log: dict[str, TestStatus] = {
        "t.py::only_in_log": "passed",
        "t.py::both_agree": "passed",
        "t.py::report_fails": "passed",
        "t.py::log_fails": "failed",  # e.g. a subtest's SUBFAIL the report did not record
        "t.py::report_errors": "failed",
        "t.py::report_skips": "failed",
    }
    report: dict[str, TestStatus] = {
        "t.py::only_in_report": "skipped",
        "t.py::both_agree": "passed",
        "t.py::report_fails": "failed",
        "t.py::log_fails": "passed",
        "t.py::report_errors": "error",
        "t.py::report_skips": "skipped",
    }
    assert merge_statuses(report, log) == {
        "t.py::only_in_log": "passed",  # kept
        "t.py::only_in_report": "skipped",
        "t.py::both_agree": "passed",
        "t.py::report_fails": "failed",  # the report wins
        "t.py::log_fails": "failed",  # a failure is not turned into a pass
        "t.py::report_errors": "error",  # the report wins
        "t.py::report_skips": "skipped",  # the report wins
    }
    assert merge_statuses(None, log) == log
    assert merge_statuses(None, log) is not log
    assert merge_statuses({}, {}) == {}


REPORT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
    '<testcase classname="tests.test_x" name="test_a" file="tests/test_x.py" time="0.1"/>'
    "</testsuite></testsuites>"
)


@pytest.mark.unit
def test_a_runs_report_comes_after_its_log_in_one_output() -> None:
    log = "tests/test_x.py::test_a PASSED\n== 1 passed ==\n"
    stdout = f"{log}\n{REPORT_MARKER}\n{REPORT}\n"
    assert split_report(stdout) == (log + "\n", REPORT + "\n")
    assert read_report("junit", split_report(stdout)[1]) == {"tests/test_x.py::test_a": "passed"}
    # killed before the marker: all of it is log, and there is no report
    assert split_report(log) == (log, "")
    assert read_report("junit", "") is None
    assert read_report("junit", "<testsuites><oops") is None  # unreadable: no report either
    # a marker the tests themselves print is not the last one
    twice = f"x\n{REPORT_MARKER}\ny\n{REPORT_MARKER}\n{REPORT}"
    assert split_report(twice) == (f"x\n{REPORT_MARKER}\ny\n", REPORT)
