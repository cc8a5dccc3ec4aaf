"""The test-log parsers: the registry (``LOG_PARSERS`` / ``log_parser``) and pytest's parser on
output captured from a real ``pytest -v -rA`` run (pytest 9; the skip's verbose line in the
reason-less form older pytest prints, see the xfail below).
"""

from __future__ import annotations

import pytest

from streams.evaluation.log_parsers import LOG_PARSERS, LogParser, log_parser
from streams.evaluation.log_parsers import pytest as pytest_parser

# `pytest -v -rA tests/test_ops.py` on a file with one test of each outcome (header trimmed)
EVERY_OUTCOME = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /usr/bin/python
collecting ... collected 8 items

tests/test_ops.py::test_add PASSED                                       [ 12%]
tests/test_ops.py::test_sub FAILED                                       [ 25%]
tests/test_ops.py::test_uses_broken ERROR                                [ 37%]
tests/test_ops.py::test_skipped SKIPPED                                  [ 50%]
tests/test_ops.py::test_xfail XFAIL (known bug)                          [ 62%]
tests/test_ops.py::test_xpass XPASS (fixed already)                      [ 75%]
tests/test_ops.py::test_param[1-2] PASSED                                [ 87%]
tests/test_ops.py::test_param[x y-z] PASSED                              [100%]

==================================== ERRORS ====================================
______________________ ERROR at setup of test_uses_broken ______________________

    @pytest.fixture
    def broken():
>       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_ops.py:5: RuntimeError
=================================== FAILURES ===================================
___________________________________ test_sub ___________________________________

    def test_sub():
>       assert 1 - 1 == 5
E       assert (1 - 1) == 5

tests/test_ops.py:11: AssertionError
==================================== PASSES ====================================
=================================== XPASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_ops.py::test_add
PASSED tests/test_ops.py::test_param[1-2]
PASSED tests/test_ops.py::test_param[x y-z]
SKIPPED [1] tests/test_ops.py:16: unconditional skip
XFAIL tests/test_ops.py::test_xfail - known bug
XPASS tests/test_ops.py::test_xpass - fixed already
ERROR tests/test_ops.py::test_uses_broken - RuntimeError: boom
FAILED tests/test_ops.py::test_sub - assert (1 - 1) == 5
==== 1 failed, 3 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in 0.79s =====
"""

# a test whose fixture fails in teardown: pytest reports it PASSED, then ERROR
TEARDOWN_ERROR = """\
collecting ... collected 2 items

tests/test_teardown.py::test_leaks PASSED                                [ 50%]
tests/test_teardown.py::test_leaks ERROR                                 [ 50%]
tests/test_teardown.py::test_fine PASSED                                 [100%]

==================================== ERRORS ====================================
_______________________ ERROR at teardown of test_leaks ________________________
E       RuntimeError: teardown boom
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_teardown.py::test_leaks
PASSED tests/test_teardown.py::test_fine
ERROR tests/test_teardown.py::test_leaks - RuntimeError: teardown boom
========================== 2 passed, 1 error in 0.62s ==========================
"""


@pytest.mark.unit
def test_the_registry_knows_pytest() -> None:
    assert "pytest" in LOG_PARSERS
    parser = log_parser("pytest")
    assert isinstance(parser, LogParser)
    assert parser is LOG_PARSERS["pytest"]
    assert parser.parse is pytest_parser.parse_pytest_output
    assert parser.running_when_killed is pytest_parser.running_when_killed


@pytest.mark.unit
def test_every_registered_parser_reads_empty_output_as_nothing() -> None:
    for runner, parser in LOG_PARSERS.items():
        assert parser.parse("") == {}, runner
        assert parser.running_when_killed("") is None, runner


@pytest.mark.unit
@pytest.mark.parametrize("runner", ["unittest", "", "PYTEST", "jest"])
def test_an_unknown_runner_is_an_error_naming_the_known_ones(runner: str) -> None:
    with pytest.raises(ValueError) as raised:
        log_parser(runner)
    message = str(raised.value)
    assert repr(runner) in message
    for known in LOG_PARSERS:
        assert known in message


@pytest.mark.unit
def test_pytest_every_outcome() -> None:
    assert log_parser("pytest").parse(EVERY_OUTCOME) == {
        "tests/test_ops.py::test_add": "passed",
        "tests/test_ops.py::test_sub": "failed",
        "tests/test_ops.py::test_uses_broken": "error",
        "tests/test_ops.py::test_skipped": "skipped",
        "tests/test_ops.py::test_xfail": "skipped",  # an expected failure is not a pass
        "tests/test_ops.py::test_xpass": "passed",
        "tests/test_ops.py::test_param[1-2]": "passed",
        "tests/test_ops.py::test_param[x y-z]": "passed",
    }


@pytest.mark.unit
def test_pytest_verbose_lines_alone_are_enough() -> None:
    """Without ``-rA`` there is no summary: the verbose lines still give every status."""
    output = (
        "tests/a.py::test_one PASSED [ 25%]\n"
        "tests/a.py::TestK::test_two FAILED [ 50%]\n"
        "tests/a.py::test_three ERROR [ 75%]\n"
        "tests/a.py::test_four SKIPPED [100%]\n"
    )
    assert log_parser("pytest").parse(output) == {
        "tests/a.py::test_one": "passed",
        "tests/a.py::TestK::test_two": "failed",
        "tests/a.py::test_three": "error",
        "tests/a.py::test_four": "skipped",
    }


@pytest.mark.unit
def test_pytest_the_summary_wins_over_the_verbose_line() -> None:
    # a teardown error: PASSED then ERROR on the verbose lines and in the summary; the
    # summary's ERROR comes last and decides
    assert log_parser("pytest").parse(TEARDOWN_ERROR) == {
        "tests/test_teardown.py::test_leaks": "error",
        "tests/test_teardown.py::test_fine": "passed",
    }
    # the summary decides even when the verbose line comes after it in the text
    output = (
        "=========================== short test summary info ============================\n"
        "FAILED tests/b.py::test_x - AssertionError\n"
        "tests/b.py::test_x PASSED [100%]\n"
    )
    assert log_parser("pytest").parse(output) == {"tests/b.py::test_x": "failed"}


@pytest.mark.unit
def test_pytest_lines_that_are_not_results_are_ignored() -> None:
    output = (
        "tests/c.py:12: AssertionError\n"
        "E       assert 'PASSED' == 'FAILED'\n"
        "    def test_x():  # PASSED\n"
        "SKIPPED [1] tests/c.py:16: unconditional skip\n"
        "==== 1 failed, 3 passed in 0.1s ====\n"
    )
    assert log_parser("pytest").parse(output) == {}


@pytest.mark.unit
@pytest.mark.xfail(
    strict=True,
    reason="known gap: a parametrize id holding ' - ' is cut at it in the summary line, "
    "which adds a bogus test id ('...::test_expr[a')",
)
def test_pytest_a_parameter_id_with_a_spaced_dash() -> None:
    output = (
        "tests/d.py::test_expr[a - b] FAILED                              [ 50%]\n"
        "tests/d.py::test_expr[c] PASSED                                  [100%]\n"
        "=========================== short test summary info ============================\n"
        "PASSED tests/d.py::test_expr[c]\n"
        "FAILED tests/d.py::test_expr[a - b] - AssertionError: assert 'a - b' ...\n"
    )
    assert log_parser("pytest").parse(output) == {
        "tests/d.py::test_expr[a - b]": "failed",
        "tests/d.py::test_expr[c]": "passed",
    }


@pytest.mark.unit
@pytest.mark.xfail(
    strict=True,
    reason="known gap: pytest >= 7 prints a skip's reason on the verbose line "
    "('SKIPPED (reason)') and the summary names no test id, so the skip is not seen",
)
def test_pytest_a_skip_with_its_reason() -> None:
    output = (
        "tests/e.py::test_skipped SKIPPED (not today)                      [100%]\n"
        "=========================== short test summary info ============================\n"
        "SKIPPED [1] tests/e.py:16: not today\n"
    )
    assert log_parser("pytest").parse(output) == {"tests/e.py::test_skipped": "skipped"}


@pytest.mark.unit
def test_pytest_the_test_running_when_killed() -> None:
    killed = (
        "collecting ... collected 3 items\n"
        "\n"
        "tests/test_ops.py::test_add PASSED                                       [ 33%]\n"
        "tests/test_ops.py::test_sub FAILED                                       [ 66%]\n"
        "tests/test_ops.py::test_param[slow-case] \n"
        "bash: line 1:    46 Killed                  timeout -s KILL 5 pytest -v -rA\n"
    )
    running_when_killed = log_parser("pytest").running_when_killed
    assert running_when_killed(killed) == "tests/test_ops.py::test_param[slow-case]"
    hung = "tests/x.py::test_a PASSED [ 50%]\ntests/x.py::test_hangs"
    assert running_when_killed(hung) == "tests/x.py::test_hangs"


@pytest.mark.unit
def test_pytest_nothing_was_running_when_every_test_finished() -> None:
    running_when_killed = log_parser("pytest").running_when_killed
    assert running_when_killed(EVERY_OUTCOME) is None
    assert running_when_killed(TEARDOWN_ERROR) is None
    # killed before any test was announced (during collection)
    assert running_when_killed("collecting ... \nKilled\n") is None


PYTEST_OUTPUT = """\
============================= test session starts ==============================
collecting ... collected 4 items

tests/test_ops.py::test_sub PASSED                                       [ 25%]
tests/test_ops.py::test_add FAILED                                       [ 50%]
tests/test_ops.py::test_param[a - b] PASSED                              [ 75%]
tests/test_ops.py::test_skip SKIPPED (no reason)                         [100%]

=========================== short test summary info ============================
PASSED tests/test_ops.py::test_sub
FAILED tests/test_ops.py::test_add - assert -1 == 5
========================= 1 failed, 2 passed, 1 skipped in 0.03s =========================
"""


@pytest.mark.unit
def test_pytest_output_is_read_per_test() -> None:
    assert pytest_parser.parse_pytest_output(PYTEST_OUTPUT) == {
        "tests/test_ops.py::test_sub": "passed",
        "tests/test_ops.py::test_add": "failed",
        "tests/test_ops.py::test_param[a - b]": "passed",
    }
    killed = (
        "tests/test_ops.py::test_add PASSED [ 50%]\n"
        "tests/test_ops.py::test_zz_hangs bash: line 1:    46 Killed    timeout -s KILL 5 ...\n"
    )
    assert pytest_parser.running_when_killed(killed) == "tests/test_ops.py::test_zz_hangs"
    assert pytest_parser.running_when_killed(PYTEST_OUTPUT) is None
