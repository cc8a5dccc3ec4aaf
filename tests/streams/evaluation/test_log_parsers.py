"""The test-log parsers: the registry (``LOG_PARSERS`` / ``log_parser``), pytest's parser and
unittest's, on output captured from real runs (each constant names the command that printed
it, on the sample test files given here) or produced at test time by running them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streams.evaluation.log_parsers import LOG_PARSERS, LogParser, log_parser
from streams.evaluation.recipes.languages.python.runners import pytest as pytest_parser
from streams.evaluation.recipes.languages.python.runners import unittest as unittest_parser

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
@pytest.mark.parametrize("runner", ["nose", "", "PYTEST", "karma"])
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
        "tests/test_ops.py::test_skip": "skipped",
    }
    killed = (
        "tests/test_ops.py::test_add PASSED [ 50%]\n"
        "tests/test_ops.py::test_zz_hangs bash: line 1:    46 Killed    timeout -s KILL 5 ...\n"
    )
    assert pytest_parser.running_when_killed(killed) == "tests/test_ops.py::test_zz_hangs"
    assert pytest_parser.running_when_killed(PYTEST_OUTPUT) is None


# --- real runs of sample tests ------------------------------------------------------------
#
# The outputs below were printed by the command noted above each, run in a directory holding
# the sample files given here (pytest 9.2 unless noted, COLUMNS=80). Tracebacks are trimmed;
# in the triple-quoted outputs the trailing spaces are too (pytest ends an announced line
# with one), the parenthesised ones are verbatim.

ODD_PY = """\
import pytest


@pytest.mark.parametrize(
    "e", ["a - b", "c", "\u00e9\u00e8", "x::y", "[nested]", "a] - [b", "tab\\there", "  sp  "]
)
def test_expr(e):
    assert e != "a - b"


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


def test_skip_inside():
    pytest.skip("inside (paren)")


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    pass


@pytest.mark.xfail(reason="strict one", strict=True)
def test_xpass_strict():
    pass


class TestC:
    @pytest.mark.parametrize("v", [1, 2])
    def test_m(self, v):
        assert v == 1

    class TestInner:
        def test_i(self):
            pass


@pytest.fixture
def leaky():
    yield
    raise RuntimeError("teardown boom")


def test_leaks(leaky):
    pass


def test_fails_and_leaks(leaky):
    assert 0
"""

SUB_PY = """\
import unittest

import pytest


class TestX(unittest.TestCase):
    def test_y(self):
        for i in range(3):
            with self.subTest("custom message", i=i):
                self.assertNotEqual(i, 1)

    def test_all_pass(self):
        for i in range(2):
            with self.subTest(i=i):
                pass


def test_fixture(subtests):
    for i in range(3):
        with subtests.test(msg="m", i=i):
            assert i != 2
    with subtests.test():
        pytest.skip("sub skip")


def test_fixture_ok(subtests):
    with subtests.test(msg="only"):
        pass
"""

PRINT_PY = """\
def test_print():
    print("hello", end="")


def test_print_nl():
    print("hello")
    print("world")
    assert 0
"""

SAMPLE_TESTS = {
    "tests/__init__.py": "",
    "tests/test_odd.py": ODD_PY,
    "tests/test_sub.py": SUB_PY,
    "tests/test_print.py": PRINT_PY,
}

ODD_EXPECTED: dict[str, str] = {
    "tests/test_odd.py::test_expr[a - b]": "failed",
    "tests/test_odd.py::test_expr[c]": "passed",
    "tests/test_odd.py::test_expr[\\xe9\\xe8]": "passed",  # pytest escapes non-ASCII ids
    "tests/test_odd.py::test_expr[x::y]": "passed",
    "tests/test_odd.py::test_expr[[nested]]": "passed",
    "tests/test_odd.py::test_expr[a] - [b]": "passed",
    "tests/test_odd.py::test_expr[tab\\there]": "passed",
    "tests/test_odd.py::test_expr[  sp  ]": "passed",
    "tests/test_odd.py::test_skipped": "skipped",
    "tests/test_odd.py::test_skip_inside": "skipped",
    "tests/test_odd.py::test_xfail": "skipped",
    "tests/test_odd.py::test_xpass": "passed",
    "tests/test_odd.py::test_xpass_strict": "failed",
    "tests/test_odd.py::TestC::test_m[1]": "passed",
    "tests/test_odd.py::TestC::test_m[2]": "failed",
    "tests/test_odd.py::TestC::TestInner::test_i": "passed",
    "tests/test_odd.py::test_leaks": "error",  # passed, then an error at teardown
    "tests/test_odd.py::test_fails_and_leaks": "failed",  # failed, then an error at teardown
}

SUB_EXPECTED: dict[str, str] = {
    "tests/test_sub.py::TestX::test_all_pass": "passed",
    # pytest says PASSED (verbose line and summary) around the failed subTest
    "tests/test_sub.py::TestX::test_y": "failed",
    "tests/test_sub.py::test_fixture": "failed",
    "tests/test_sub.py::test_fixture_ok": "passed",
}

PRINT_EXPECTED: dict[str, str] = {
    "tests/test_print.py::test_print": "passed",
    "tests/test_print.py::test_print_nl": "failed",
}

SAMPLE_EXPECTED = {**ODD_EXPECTED, **SUB_EXPECTED, **PRINT_EXPECTED}

HANGING_TEST = {
    "tests/test_hang.py": """\
import time
import pytest

def test_a():
    pass

@pytest.mark.parametrize("p", ["slow case - x"])
def test_hangs(p):
    time.sleep(60)

def test_z():
    pass
""",
}

# `pytest -v -rA tests` (pytest 9.2) on SAMPLE_TESTS (the tracebacks trimmed)
PYTEST_9 = """\
collecting ... collected 24 items
tests/test_odd.py::test_expr[a - b] FAILED                               [  4%]
tests/test_odd.py::test_expr[c] PASSED                                   [  8%]
tests/test_odd.py::test_expr[\\xe9\\xe8] PASSED                            [ 12%]
tests/test_odd.py::test_expr[x::y] PASSED                                [ 16%]
tests/test_odd.py::test_expr[[nested]] PASSED                            [ 20%]
tests/test_odd.py::test_expr[a] - [b] PASSED                             [ 25%]
tests/test_odd.py::test_expr[tab\\there] PASSED                           [ 29%]
tests/test_odd.py::test_expr[  sp  ] PASSED                              [ 33%]
tests/test_odd.py::test_skipped SKIPPED (not today)                      [ 37%]
tests/test_odd.py::test_skip_inside SKIPPED (inside (paren))             [ 41%]
tests/test_odd.py::test_xfail XFAIL (known bug)                          [ 45%]
tests/test_odd.py::test_xpass XPASS (fixed already)                      [ 50%]
tests/test_odd.py::test_xpass_strict FAILED                              [ 54%]
tests/test_odd.py::TestC::test_m[1] PASSED                               [ 58%]
tests/test_odd.py::TestC::test_m[2] FAILED                               [ 62%]
tests/test_odd.py::TestC::TestInner::test_i PASSED                       [ 66%]
tests/test_odd.py::test_leaks PASSED                                     [ 70%]
tests/test_odd.py::test_leaks ERROR                                      [ 70%]
tests/test_odd.py::test_fails_and_leaks FAILED                           [ 75%]
tests/test_odd.py::test_fails_and_leaks ERROR                            [ 75%]
tests/test_print.py::test_print PASSED                                   [ 79%]
tests/test_print.py::test_print_nl FAILED                                [ 83%]
tests/test_sub.py::TestX::test_all_pass
tests/test_sub.py::TestX::test_all_pass PASSED                           [ 87%]
tests/test_sub.py::TestX::test_y
tests/test_sub.py::TestX::test_y PASSED                                  [ 91%]
tests/test_sub.py::test_fixture SUBPASSED[m] (i=0)                       [ 95%]
tests/test_sub.py::test_fixture SUBPASSED[m] (i=1)                       [ 95%]
tests/test_sub.py::test_fixture SUBFAILED[m] (i=2)                       [ 95%]
tests/test_sub.py::test_fixture SUBSKIPPED(<subtest>) (sub skip)         [ 95%]
tests/test_sub.py::test_fixture FAILED                                   [ 95%]
tests/test_sub.py::test_fixture_ok SUBPASSED[only]                       [100%]
tests/test_sub.py::test_fixture_ok PASSED                                [100%]
==================================== ERRORS ====================================
_______________________ ERROR at teardown of test_leaks ________________________
tests/test_odd.py:48: RuntimeError
__________________ ERROR at teardown of test_fails_and_leaks ___________________
tests/test_odd.py:48: RuntimeError
=================================== FAILURES ===================================
_______________________________ test_expr[a - b] _______________________________
tests/test_odd.py:8: AssertionError
______________________________ test_xpass_strict _______________________________
[XPASS(strict)] strict one
_______________________________ TestC.test_m[2] ________________________________
tests/test_odd.py:38: AssertionError
_____________________________ test_fails_and_leaks _____________________________
tests/test_odd.py:56: AssertionError
________________________________ test_print_nl _________________________________
tests/test_print.py:8: AssertionError
hello
world
_____________________ TestX.test_y [custom message] (i=1) ______________________
tests/test_sub.py:10: AssertionError
____________________________ test_fixture [m] (i=2) ____________________________
tests/test_sub.py:21: AssertionError
_________________________________ test_fixture _________________________________
contains 1 failed subtest
==================================== PASSES ====================================
__________________________________ test_print __________________________________
hello
_____________________________ TestX.test_all_pass ______________________________
SUBPASSED(i=0)                   [ 87%]
tests/test_sub.py::TestX::test_all_pass SUBPASSED(i=1)                   [ 87%]
_________________________________ TestX.test_y _________________________________
SUBPASSED[custom message] (i=0)         [ 91%]
tests/test_sub.py::TestX::test_y SUBFAILED[custom message] (i=1)         [ 91%]
tests/test_sub.py::TestX::test_y SUBPASSED[custom message] (i=2)         [ 91%]
=================================== XPASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_odd.py::test_expr[c]
PASSED tests/test_odd.py::test_expr[\\xe9\\xe8]
PASSED tests/test_odd.py::test_expr[x::y]
PASSED tests/test_odd.py::test_expr[[nested]]
PASSED tests/test_odd.py::test_expr[a] - [b]
PASSED tests/test_odd.py::test_expr[tab\\there]
PASSED tests/test_odd.py::test_expr[  sp  ]
PASSED tests/test_odd.py::TestC::test_m[1]
PASSED tests/test_odd.py::TestC::TestInner::test_i
PASSED tests/test_odd.py::test_leaks
PASSED tests/test_print.py::test_print
PASSED tests/test_sub.py::TestX::test_all_pass
PASSED tests/test_sub.py::TestX::test_y
PASSED tests/test_sub.py::test_fixture_ok
SKIPPED [1] tests/test_odd.py:11: not today
SKIPPED [1] tests/test_odd.py:17: inside (paren)
SKIPPED [1] tests/test_sub.py:23: sub skip
XFAIL tests/test_odd.py::test_xfail - known bug
XPASS tests/test_odd.py::test_xpass - fixed already
ERROR tests/test_odd.py::test_leaks - RuntimeError: teardown boom
ERROR tests/test_odd.py::test_fails_and_leaks - RuntimeError: teardown boom
FAILED tests/test_odd.py::test_expr[a - b] - AssertionError: assert 'a - b' !...
FAILED tests/test_odd.py::test_xpass_strict - [XPASS(strict)] strict one
FAILED tests/test_odd.py::TestC::test_m[2] - assert 2 == 1
FAILED tests/test_odd.py::test_fails_and_leaks - assert 0
FAILED tests/test_print.py::test_print_nl - assert 0
SUBFAILED[custom message] (i=1) tests/test_sub.py::TestX::test_y - AssertionE...
SUBFAILED[m] (i=2) tests/test_sub.py::test_fixture - assert 2 != 2
FAILED tests/test_sub.py::test_fixture - contains 1 failed subtest
= 8 failed, 14 passed, 3 skipped, 1 xfailed, 1 xpassed, 2 errors, 7 subtests passed in 0.08s =
"""

# `script -qec 'pytest -v -rA -p terminalprogress tests/test_odd.py tests/test_sub.py'` (a
# terminal: colours, CRLF line ends, OSC 9;4 progress sequences): the lines naming tests
PYTEST_9_TERMINAL = (
    "tests/test_odd.py::test_expr[a - b] \x1b]9;4;2;0\x1b\\\x1b[31mFAILED\x1b[0m\x1b[31m     "
    "                          [  4%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[c] \x1b]9;4;2;4\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m         "
    "                          [  9%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[\\xe9\\xe8] \x1b]9;4;2;9\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m  "
    "                          [ 13%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[x::y] \x1b]9;4;2;13\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m     "
    "                           [ 18%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[[nested]] \x1b]9;4;2;18\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m "
    "                           [ 22%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[a] - [b] \x1b]9;4;2;22\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m  "
    "                           [ 27%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[tab\\there] "
    "\x1b]9;4;2;27\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m                           [ 31%]\x1b[0m\r\n"
    "tests/test_odd.py::test_expr[  sp  ] \x1b]9;4;2;31\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m   "
    "                           [ 36%]\x1b[0m\r\n"
    "tests/test_odd.py::test_skipped \x1b[33mSKIPPED\x1b[0m (not today)\x1b[31m       "
    "               [ 40%]\x1b[0m\r\n"
    "tests/test_odd.py::test_skip_inside \x1b]9;4;2;40\x1b\\\x1b[33mSKIPPED\x1b[0m "
    "(inside (paren))\x1b[31m             [ 45%]\x1b[0m\r\n"
    "tests/test_odd.py::test_xfail \x1b]9;4;2;45\x1b\\\x1b[33mXFAIL\x1b[0m (known "
    "bug)\x1b[31m                          [ 50%]\x1b[0m\r\n"
    "tests/test_odd.py::test_xpass \x1b]9;4;2;50\x1b\\\x1b[33mXPASS\x1b[0m (fixed "
    "already)\x1b[31m                      [ 54%]\x1b[0m\r\n"
    "tests/test_odd.py::test_xpass_strict \x1b]9;4;2;54\x1b\\\x1b[31mFAILED\x1b[0m\x1b[31m   "
    "                           [ 59%]\x1b[0m\r\n"
    "tests/test_odd.py::TestC::test_m[1] \x1b]9;4;2;59\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m    "
    "                           [ 63%]\x1b[0m\r\n"
    "tests/test_odd.py::TestC::test_m[2] \x1b]9;4;2;63\x1b\\\x1b[31mFAILED\x1b[0m\x1b[31m    "
    "                           [ 68%]\x1b[0m\r\n"
    "tests/test_odd.py::TestC::TestInner::test_i "
    "\x1b]9;4;2;68\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m                       [ 72%]\x1b[0m\r\n"
    "tests/test_odd.py::test_leaks \x1b]9;4;2;72\x1b\\\x1b[32mPASSED\x1b[0m\x1b[31m          "
    "                           [ 77%]\x1b[0m\r\n"
    "tests/test_odd.py::test_leaks \x1b[31mERROR\x1b[0m\x1b[31m                       "
    "               [ 77%]\x1b[0m\r\n"
    "tests/test_odd.py::test_fails_and_leaks "
    "\x1b]9;4;2;77\x1b\\\x1b[31mFAILED\x1b[0m\x1b[31m                           [ 81%]\x1b[0m\r\n"
    "tests/test_odd.py::test_fails_and_leaks \x1b[31mERROR\x1b[0m\x1b[31m             "
    "               [ 81%]\x1b[0m\r\n"
    "tests/test_sub.py::TestX::test_all_pass \x1b]9;4;2;86\x1b\\\r\n"
    "tests/test_sub.py::TestX::test_all_pass \x1b[32mPASSED\x1b[0m\x1b[31m            "
    "               [ 86%]\x1b[0m\r\n"
    "tests/test_sub.py::TestX::test_y \x1b]9;4;2;90\x1b\\\r\n"
    "tests/test_sub.py::TestX::test_y \x1b[32mPASSED\x1b[0m\x1b[31m                   "
    "               [ 90%]\x1b[0m\r\n"
    "tests/test_sub.py::test_fixture \x1b]9;4;2;90\x1b\\\x1b[32mSUBPASSED[m] "
    "(i=0)\x1b[0m\x1b[31m                       [ 95%]\x1b[0m\x1b]9;4;2;95\x1b\\\r\n"
    "tests/test_sub.py::test_fixture \x1b[32mSUBPASSED[m] (i=1)\x1b[0m\x1b[31m        "
    "               [ 95%]\x1b[0m\x1b]9;4;2;95\x1b\\\r\n"
    "tests/test_sub.py::test_fixture \x1b[31mSUBFAILED[m] (i=2)\x1b[0m\x1b[31m        "
    "               [ 95%]\x1b[0m\x1b]9;4;2;95\x1b\\\r\n"
    "tests/test_sub.py::test_fixture \x1b[33mSUBSKIPPED(<subtest>)\x1b[0m (sub "
    "skip)\x1b[31m         [ 95%]\x1b[0m\x1b]9;4;2;95\x1b\\\r\n"
    "tests/test_sub.py::test_fixture \x1b[31mFAILED\x1b[0m\x1b[31m                    "
    "               [ 95%]\x1b[0m\r\n"
    "tests/test_sub.py::test_fixture_ok "
    "\x1b]9;4;2;95\x1b\\\x1b[32mSUBPASSED[only]\x1b[0m\x1b[31m                       "
    "[100%]\x1b[0m\x1b]9;4;2;100\x1b\\\r\n"
    "tests/test_sub.py::test_fixture_ok \x1b[32mPASSED\x1b[0m\x1b[31m                 "
    "               [100%]\x1b[0m\x1b]9;4;0;\x1b\\\r\n"
    "tests/test_sub.py::TestX::test_all_pass \x1b[32mSUBPASSED(i=1)\x1b[0m\x1b[31m    "
    "               [ 86%]\x1b[0m\r\n"
    "tests/test_sub.py::TestX::test_y \x1b[31mSUBFAILED[custom message] "
    "(i=1)\x1b[0m\x1b[31m         [ 90%]\x1b[0m\x1b]9;4;2;90\x1b\\\r\n"
    "tests/test_sub.py::TestX::test_y \x1b[32mSUBPASSED[custom message] "
    "(i=2)\x1b[0m\x1b[31m         [ 90%]\x1b[0m\r\n"
    "\x1b[36m\x1b[1m=========================== short test summary info "
    "============================\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[c]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[\\xe9\\xe8]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[x::y]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[[nested]]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[a] - [b]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[tab\\there]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[  sp  ]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mTestC::test_m[1]\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mTestC::TestInner::test_i\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_odd.py::\x1b[1mtest_leaks\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_sub.py::\x1b[1mTestX::test_all_pass\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_sub.py::\x1b[1mTestX::test_y\x1b[0m\r\n"
    "\x1b[32mPASSED\x1b[0m tests/test_sub.py::\x1b[1mtest_fixture_ok\x1b[0m\r\n"
    "\x1b[33mXFAIL\x1b[0m tests/test_odd.py::\x1b[1mtest_xfail\x1b[0m - known bug\r\n"
    "\x1b[33mXPASS\x1b[0m tests/test_odd.py::\x1b[1mtest_xpass\x1b[0m - fixed already\r\n"
    "\x1b[31mERROR\x1b[0m tests/test_odd.py::\x1b[1mtest_leaks\x1b[0m - RuntimeError: "
    "teardown boom\r\n"
    "\x1b[31mERROR\x1b[0m tests/test_odd.py::\x1b[1mtest_fails_and_leaks\x1b[0m - "
    "RuntimeError: teardown boom\r\n"
    "\x1b[31mFAILED\x1b[0m tests/test_odd.py::\x1b[1mtest_expr[a - b]\x1b[0m - "
    "AssertionError: assert 'a - b' != 'a - b'\r\n"
    "\x1b[31mFAILED\x1b[0m tests/test_odd.py::\x1b[1mtest_xpass_strict\x1b[0m - "
    "[XPASS(strict)] strict one\r\n"
    "\x1b[31mFAILED\x1b[0m tests/test_odd.py::\x1b[1mTestC::test_m[2]\x1b[0m - assert 2 "
    "== 1\r\n"
    "\x1b[31mFAILED\x1b[0m tests/test_odd.py::\x1b[1mtest_fails_and_leaks\x1b[0m - "
    "assert 0\r\n"
    "\x1b[31mSUBFAILED[custom message] (i=1)\x1b[0m "
    "tests/test_sub.py::\x1b[1mTestX::test_y\x1b[0m - AssertionError: 1 == 1\r\n"
    "\x1b[31mSUBFAILED[m] (i=2)\x1b[0m tests/test_sub.py::\x1b[1mtest_fixture\x1b[0m - "
    "assert 2 != 2\r\n"
    "\x1b[31mFAILED\x1b[0m tests/test_sub.py::\x1b[1mtest_fixture\x1b[0m - contains 1 "
    "failed subtest\r\n"
)

# `pytest -v -rA -n 2 tests` (pytest-xdist 3.8): the result lines
PYTEST_9_XDIST = """\
created: 2/2 workers
2 workers [24 items]
tests/test_odd.py::test_expr[x::y]
tests/test_odd.py::test_expr[a - b]
[gw1] [  4%] PASSED tests/test_odd.py::test_expr[x::y]
tests/test_odd.py::test_expr[[nested]]
[gw1] [  8%] PASSED tests/test_odd.py::test_expr[[nested]]
tests/test_odd.py::test_expr[a] - [b]
[gw1] [ 12%] PASSED tests/test_odd.py::test_expr[a] - [b]
tests/test_odd.py::test_expr[tab\\there]
[gw1] [ 16%] PASSED tests/test_odd.py::test_expr[tab\\there]
tests/test_odd.py::test_expr[  sp  ]
[gw1] [ 20%] PASSED tests/test_odd.py::test_expr[  sp  ]
tests/test_odd.py::test_skipped
[gw1] [ 25%] SKIPPED tests/test_odd.py::test_skipped
tests/test_odd.py::test_skip_inside
[gw1] [ 29%] SKIPPED tests/test_odd.py::test_skip_inside
tests/test_odd.py::test_xfail
[gw0] [ 33%] FAILED tests/test_odd.py::test_expr[a - b]
tests/test_odd.py::test_expr[c]
[gw0] [ 37%] PASSED tests/test_odd.py::test_expr[c]
tests/test_odd.py::test_expr[\\xe9\\xe8]
[gw0] [ 41%] PASSED tests/test_odd.py::test_expr[\\xe9\\xe8]
tests/test_odd.py::TestC::test_m[1]
[gw0] [ 45%] PASSED tests/test_odd.py::TestC::test_m[1]
tests/test_odd.py::TestC::test_m[2]
[gw0] [ 50%] FAILED tests/test_odd.py::TestC::test_m[2]
[gw1] [ 54%] XFAIL tests/test_odd.py::test_xfail
tests/test_odd.py::test_xpass
[gw1] [ 58%] XPASS tests/test_odd.py::test_xpass
tests/test_odd.py::TestC::TestInner::test_i
tests/test_odd.py::test_xpass_strict
[gw0] [ 62%] PASSED tests/test_odd.py::TestC::TestInner::test_i
[gw1] [ 66%] FAILED tests/test_odd.py::test_xpass_strict
tests/test_odd.py::test_fails_and_leaks
tests/test_odd.py::test_leaks
[gw0] [ 70%] PASSED tests/test_odd.py::test_leaks
[gw0] [ 70%] ERROR tests/test_odd.py::test_leaks
[gw1] [ 75%] FAILED tests/test_odd.py::test_fails_and_leaks
tests/test_print.py::test_print_nl
[gw1] [ 75%] ERROR tests/test_odd.py::test_fails_and_leaks
tests/test_print.py::test_print
[gw1] [ 79%] PASSED tests/test_print.py::test_print
tests/test_sub.py::TestX::test_y
[gw0] [ 83%] FAILED tests/test_print.py::test_print_nl
[gw1] [ 87%] SUBPASSED[custom message] (i='0') tests/test_sub.py::TestX::test_y
tests/test_sub.py::TestX::test_all_pass
[gw1] [ 87%] SUBFAILED[custom message] (i='1') tests/test_sub.py::TestX::test_y
[gw1] [ 87%] SUBPASSED[custom message] (i='2') tests/test_sub.py::TestX::test_y
[gw1] [ 87%] PASSED tests/test_sub.py::TestX::test_y
[gw0] [ 91%] SUBPASSED(i='0') tests/test_sub.py::TestX::test_all_pass
[gw0] [ 91%] SUBPASSED(i='1') tests/test_sub.py::TestX::test_all_pass
[gw0] [ 91%] PASSED tests/test_sub.py::TestX::test_all_pass
tests/test_sub.py::test_fixture
[gw1] [ 95%] SUBPASSED[m] (i='0') tests/test_sub.py::test_fixture
[gw1] [ 95%] SUBPASSED[m] (i='1') tests/test_sub.py::test_fixture
tests/test_sub.py::test_fixture_ok
[gw0] [100%] SUBPASSED[only] tests/test_sub.py::test_fixture_ok
[gw0] [100%] PASSED tests/test_sub.py::test_fixture_ok
[gw1] [100%] SUBFAILED[m] (i='2') tests/test_sub.py::test_fixture
[gw1] [100%] SUBSKIPPED(<subtest>) tests/test_sub.py::test_fixture
[gw1] [100%] FAILED tests/test_sub.py::test_fixture
tests/test_sub.py::TestX::test_y SUBFAILED[custom message] (i=1)         [ 54%]
tests/test_sub.py::TestX::test_y SUBPASSED[custom message] (i=2)         [ 54%]
tests/test_sub.py::TestX::test_all_pass SUBPASSED(i=1)                   [ 37%]
PASSED tests/test_odd.py::test_expr[x::y]
PASSED tests/test_odd.py::test_expr[[nested]]
PASSED tests/test_odd.py::test_expr[a] - [b]
PASSED tests/test_odd.py::test_expr[tab\\there]
PASSED tests/test_odd.py::test_expr[  sp  ]
PASSED tests/test_odd.py::test_expr[c]
PASSED tests/test_odd.py::test_expr[\\xe9\\xe8]
PASSED tests/test_odd.py::TestC::test_m[1]
PASSED tests/test_odd.py::TestC::TestInner::test_i
PASSED tests/test_odd.py::test_leaks
PASSED tests/test_print.py::test_print
PASSED tests/test_sub.py::TestX::test_y
PASSED tests/test_sub.py::TestX::test_all_pass
PASSED tests/test_sub.py::test_fixture_ok
SKIPPED [1] tests/test_odd.py:11: not today
SKIPPED [1] tests/test_odd.py:17: inside (paren)
SKIPPED [1] tests/test_sub.py:23: sub skip
XFAIL tests/test_odd.py::test_xfail - known bug
XPASS tests/test_odd.py::test_xpass - fixed already
ERROR tests/test_odd.py::test_leaks - RuntimeError: teardown boom
ERROR tests/test_odd.py::test_fails_and_leaks - RuntimeError: teardown boom
FAILED tests/test_odd.py::test_expr[a - b] - AssertionError: assert 'a - b' !...
FAILED tests/test_odd.py::TestC::test_m[2] - assert 2 == 1
FAILED tests/test_odd.py::test_xpass_strict - [XPASS(strict)] strict one
FAILED tests/test_odd.py::test_fails_and_leaks - assert 0
FAILED tests/test_print.py::test_print_nl - assert 0
SUBFAILED[custom message] (i='1') tests/test_sub.py::TestX::test_y - Assertio...
SUBFAILED[m] (i='2') tests/test_sub.py::test_fixture - assert 2 != 2
FAILED tests/test_sub.py::test_fixture - contains 1 failed subtest
"""

# `pytest -v -s tests/test_print.py tests/test_sub.py`: the tests' output among the lines
PYTEST_9_CAPTURE_OFF = """\
collecting ... collected 6 items
tests/test_print.py::test_print helloPASSED
tests/test_print.py::test_print_nl hello
world
FAILED
tests/test_sub.py::TestX::test_all_pass SUBPASSED(i=0)
tests/test_sub.py::TestX::test_all_pass SUBPASSED(i=1)
tests/test_sub.py::TestX::test_all_pass PASSED
tests/test_sub.py::TestX::test_y SUBPASSED[custom message] (i=0)
tests/test_sub.py::TestX::test_y SUBFAILED[custom message] (i=1)
tests/test_sub.py::TestX::test_y SUBPASSED[custom message] (i=2)
tests/test_sub.py::TestX::test_y PASSED
tests/test_sub.py::test_fixture SUBPASSED[m] (i=0)
tests/test_sub.py::test_fixture SUBPASSED[m] (i=1)
tests/test_sub.py::test_fixture SUBFAILED[m] (i=2)
tests/test_sub.py::test_fixture SUBSKIPPED(<subtest>) (sub skip)
tests/test_sub.py::test_fixture FAILED
tests/test_sub.py::test_fixture_ok SUBPASSED[only]
tests/test_sub.py::test_fixture_ok PASSED
=================================== FAILURES ===================================
________________________________ test_print_nl _________________________________
tests/test_print.py:8: AssertionError
_____________________ TestX.test_y [custom message] (i=1) ______________________
tests/test_sub.py:10: AssertionError
____________________________ test_fixture [m] (i=2) ____________________________
tests/test_sub.py:21: AssertionError
_________________________________ test_fixture _________________________________
contains 1 failed subtest
=========================== short test summary info ============================
FAILED tests/test_print.py::test_print_nl - assert 0
SUBFAILED[custom message] (i=1) tests/test_sub.py::TestX::test_y - AssertionE...
SUBFAILED[m] (i=2) tests/test_sub.py::test_fixture - assert 2 != 2
FAILED tests/test_sub.py::test_fixture - contains 1 failed subtest
========== 4 failed, 4 passed, 1 skipped, 7 subtests passed in 0.05s ===========
"""

# `pytest -v -rA -o disable_test_id_escaping_and_forfeit_all_rights_to_community_support=true
# tests/test_odd.py`: the lines of the two ids pytest escapes by default
PYTEST_9_UNESCAPED_IDS = (
    "tests/test_odd.py::test_expr[éè] PASSED                                 "
    " [ 16%]\n"
    "tests/test_odd.py::test_expr[tab\there] PASSED                           "
    "                                               [ 38%]\n"
    "PASSED tests/test_odd.py::test_expr[éè]\n"
    "PASSED tests/test_odd.py::test_expr[tab\there]\n"
)

# `pytest -v -rA tests/test_sub.py` with pytest 8.4.2 and the pytest-subtests 0.15.0 plugin
PLUGIN_SUBTESTS = """\
collecting ... collected 4 items
tests/test_sub.py::TestX::test_all_pass
tests/test_sub.py::TestX::test_all_pass PASSED                           [ 25%]
tests/test_sub.py::TestX::test_y
tests/test_sub.py::TestX::test_y PASSED                                  [ 50%]
tests/test_sub.py::test_fixture [m] (i=0) SUBPASS                        [ 75%]
tests/test_sub.py::test_fixture [m] (i=1) SUBPASS                        [ 75%]
tests/test_sub.py::test_fixture [m] (i=2) SUBFAIL                        [ 75%]
tests/test_sub.py::test_fixture (<subtest>) SUBSKIP (sub skip)           [ 75%]
tests/test_sub.py::test_fixture PASSED                                   [ 75%]
tests/test_sub.py::test_fixture_ok [only] SUBPASS                        [100%]
tests/test_sub.py::test_fixture_ok PASSED                                [100%]
=================================== FAILURES ===================================
_____________________ TestX.test_y [custom message] (i=1) ______________________
tests/test_sub.py:10: AssertionError
____________________________ test_fixture [m] (i=2) ____________________________
tests/test_sub.py:21: AssertionError
==================================== PASSES ====================================
_____________________________ TestX.test_all_pass ______________________________
(i=0) SUBPASS                    [ 25%]
tests/test_sub.py::TestX::test_all_pass (i=1) SUBPASS                    [ 25%]
_________________________________ TestX.test_y _________________________________
[custom message] (i=0) SUBPASS          [ 50%]
tests/test_sub.py::TestX::test_y [custom message] (i=1) SUBFAIL          [ 50%]
tests/test_sub.py::TestX::test_y [custom message] (i=2) SUBPASS          [ 50%]
=========================== short test summary info ============================
PASSED tests/test_sub.py::TestX::test_all_pass
PASSED tests/test_sub.py::TestX::test_y
PASSED tests/test_sub.py::test_fixture
PASSED tests/test_sub.py::test_fixture_ok
(<subtest>) SUBSKIP [1] tests/test_sub.py:23: sub skip
[custom message] (i=1) SUBFAIL tests/test_sub.py::TestX::test_y - AssertionEr...
[m] (i=2) SUBFAIL tests/test_sub.py::test_fixture - assert 2 != 2
========== 2 failed, 4 passed, 1 skipped, 7 subtests passed in 0.04s ===========
"""

# the same with pytest-xdist 3.8 (`-n 2`): the result lines
PLUGIN_SUBTESTS_XDIST = """\
created: 2/2 workers
2 workers [4 items]
tests/test_sub.py::test_fixture
[gw1] [ 25%] [m] (i=0) SUBPASS tests/test_sub.py::test_fixture
[gw1] [ 25%] [m] (i=1) SUBPASS tests/test_sub.py::test_fixture
tests/test_sub.py::TestX::test_all_pass
[gw0] [ 50%] (i=0) SUBPASS tests/test_sub.py::TestX::test_all_pass
[gw0] [ 50%] (i=1) SUBPASS tests/test_sub.py::TestX::test_all_pass
[gw0] [ 50%] PASSED tests/test_sub.py::TestX::test_all_pass
tests/test_sub.py::TestX::test_y
[gw0] [ 75%] [custom message] (i=0) SUBPASS tests/test_sub.py::TestX::test_y
[gw1] [ 75%] [m] (i=2) SUBFAIL tests/test_sub.py::test_fixture
[gw1] [ 75%] (<subtest>) SUBSKIP tests/test_sub.py::test_fixture
[gw1] [ 75%] PASSED tests/test_sub.py::test_fixture
tests/test_sub.py::test_fixture_ok
[gw1] [100%] [only] SUBPASS tests/test_sub.py::test_fixture_ok
[gw1] [100%] PASSED tests/test_sub.py::test_fixture_ok
[gw0] [100%] [custom message] (i=1) SUBFAIL tests/test_sub.py::TestX::test_y
[gw0] [100%] [custom message] (i=2) SUBPASS tests/test_sub.py::TestX::test_y
[gw0] [100%] PASSED tests/test_sub.py::TestX::test_y
tests/test_sub.py::TestX::test_all_pass (i=1) SUBPASS                    [ 25%]
tests/test_sub.py::TestX::test_y [custom message] (i=1) SUBFAIL          [ 50%]
tests/test_sub.py::TestX::test_y [custom message] (i=2) SUBPASS          [ 50%]
PASSED tests/test_sub.py::TestX::test_all_pass
PASSED tests/test_sub.py::test_fixture
PASSED tests/test_sub.py::test_fixture_ok
PASSED tests/test_sub.py::TestX::test_y
[m] (i=2) SUBFAIL tests/test_sub.py::test_fixture - assert 2 != 2
[custom message] (i=1) SUBFAIL tests/test_sub.py::TestX::test_y - AssertionEr...
"""

# `timeout -s KILL 2 pytest -v -rA tests; echo Killed` on HANGING_TEST (bash appends its notice)
KILLED = (
    "collecting ... collected 3 items\n"
    "tests/test_hang.py::test_a PASSED                                       "
    " [ 33%]\n"
    "tests/test_hang.py::test_hangs[slow case - x] bash: line 1: 30374 "
    "Killed                  timeout -s KILL 2 python -m pytest -v -rA -p "
    "no:cacheprovider tests\n"
    "Killed\n"
)

# `timeout -s KILL 3 pytest -v -rA -n 2 tests` on HANGING_TEST (as printed: the announced lines
# end with a space): test_hangs announced first, and never finished
KILLED_XDIST = (
    "created: 2/2 workers\n"
    "2 workers [3 items]\n"
    "tests/test_hang.py::test_hangs[slow case - x] \n"
    "tests/test_hang.py::test_a \n"
    "[gw0] [ 33%] PASSED tests/test_hang.py::test_a \n"
    "tests/test_hang.py::test_z \n"
    "[gw0] [ 66%] PASSED tests/test_hang.py::test_z \n"
)

# `pytest -q -rA tests/test_odd.py`: no verbose lines, the ids only in the summary
PYTEST_9_QUIET = """\
F.......ssxXF.F..EFE                                                     [100%]
=========================== short test summary info ============================
PASSED tests/test_odd.py::test_expr[c]
PASSED tests/test_odd.py::test_expr[\\xe9\\xe8]
PASSED tests/test_odd.py::test_expr[x::y]
PASSED tests/test_odd.py::test_expr[[nested]]
PASSED tests/test_odd.py::test_expr[a] - [b]
PASSED tests/test_odd.py::test_expr[tab\\there]
PASSED tests/test_odd.py::test_expr[  sp  ]
PASSED tests/test_odd.py::TestC::test_m[1]
PASSED tests/test_odd.py::TestC::TestInner::test_i
PASSED tests/test_odd.py::test_leaks
SKIPPED [1] tests/test_odd.py:11: not today
SKIPPED [1] tests/test_odd.py:17: inside (paren)
XFAIL tests/test_odd.py::test_xfail - known bug
XPASS tests/test_odd.py::test_xpass - fixed already
ERROR tests/test_odd.py::test_leaks - RuntimeError: teardown boom
ERROR tests/test_odd.py::test_fails_and_leaks - RuntimeError: teardown boom
FAILED tests/test_odd.py::test_expr[a - b] - AssertionError: assert 'a - b' !...
FAILED tests/test_odd.py::test_xpass_strict - [XPASS(strict)] strict one
FAILED tests/test_odd.py::TestC::test_m[2] - assert 2 == 1
FAILED tests/test_odd.py::test_fails_and_leaks - assert 0
4 failed, 10 passed, 2 skipped, 1 xfailed, 1 xpassed, 2 errors in 0.04s
"""


@pytest.mark.unit
def test_pytest_9_every_kind_of_line() -> None:
    """Odd parameter ids, skip/xfail reasons, teardown errors, subtests, a test's output."""
    assert log_parser("pytest").parse(PYTEST_9) == SAMPLE_EXPECTED


@pytest.mark.unit
def test_pytest_in_a_terminal_colours_crlf_and_progress_sequences_are_ignored() -> None:
    assert pytest_parser.parse_pytest_output(PYTEST_9_TERMINAL) == {
        **ODD_EXPECTED,
        **SUB_EXPECTED,
    }
    assert pytest_parser.running_when_killed(PYTEST_9_TERMINAL) is None


@pytest.mark.unit
def test_strip_ansi() -> None:
    strip = pytest_parser.strip_ansi
    assert strip("\x1b[32mPASSED\x1b[0m \x1b[1mx\x1b[0m") == "PASSED x"
    assert strip("a \x1b]9;4;1;50\x1b\\b\x1b]9;4;0;\x07c") == "a bc"  # OSC 9;4 progress
    assert strip("\x1b[?25l\x1b[2Kdone\x1b(B") == "done"
    assert strip("no escapes [ 50%]") == "no escapes [ 50%]"


@pytest.mark.unit
def test_pytest_xdist() -> None:
    """``[gw0] [ 50%] PASSED id`` lines, each test announced (with no status) before."""
    assert pytest_parser.parse_pytest_output(PYTEST_9_XDIST) == SAMPLE_EXPECTED
    assert pytest_parser.running_when_killed(PYTEST_9_XDIST) is None


@pytest.mark.unit
def test_pytest_with_capture_off_the_status_follows_the_tests_output() -> None:
    assert pytest_parser.parse_pytest_output(PYTEST_9_CAPTURE_OFF) == {
        **PRINT_EXPECTED,
        **SUB_EXPECTED,
    }
    assert pytest_parser.running_when_killed(PYTEST_9_CAPTURE_OFF) is None


@pytest.mark.unit
def test_pytest_unescaped_ids_keep_unicode_and_tabs() -> None:
    assert pytest_parser.parse_pytest_output(PYTEST_9_UNESCAPED_IDS) == {
        "tests/test_odd.py::test_expr[\u00e9\u00e8]": "passed",
        "tests/test_odd.py::test_expr[tab\there]": "passed",
    }


@pytest.mark.unit
def test_pytest_the_summary_alone() -> None:
    """Without verbose lines an id ends at the ``]`` matching its first ``[``; skips are not
    seen (their summary line names no test)."""
    expected = {
        test: status
        for test, status in ODD_EXPECTED.items()
        if status != "skipped" or test.endswith("test_xfail")
    }
    # the one id this cannot read: its parameter "a] - [b" closes the bracket early
    del expected["tests/test_odd.py::test_expr[a] - [b]"]
    expected["tests/test_odd.py::test_expr[a]"] = "passed"
    assert pytest_parser.parse_pytest_output(PYTEST_9_QUIET) == expected


@pytest.mark.unit
@pytest.mark.parametrize("output", [PLUGIN_SUBTESTS, PLUGIN_SUBTESTS_XDIST])
def test_pytest_subtests_plugin(output: str) -> None:
    """pytest-subtests: ``id [msg] (i=2) SUBFAIL``, the test itself PASSED all the same."""
    assert pytest_parser.parse_pytest_output(output) == SUB_EXPECTED
    assert pytest_parser.running_when_killed(output) is None


@pytest.mark.unit
def test_pytest_subtest_lines_alone() -> None:
    """Each form of a failed subtest fails its test, a passed or skipped one does nothing;
    the id is not cut at a space in its parameters."""
    forms = [
        "tests/a.py::test_x[p q] SUBFAILED[msg] (i=1)                [ 50%]",  # pytest 9
        "[gw0] [ 50%] SUBFAILED[msg] (i='1') tests/a.py::test_x[p q]",  # pytest 9, xdist
        "SUBFAILED[msg] (i=1) tests/a.py::test_x[p q] - assert 1 == 2",  # pytest 9, summary
        "tests/a.py::test_x[p q] [msg] (i=1) SUBFAIL                 [ 50%]",  # plugin
        "[gw0] [ 50%] [msg] (i=1) SUBFAIL tests/a.py::test_x[p q]",  # plugin, xdist
        "[msg] (i=1) SUBFAIL tests/a.py::test_x[p q] - assert 1 == 2",  # plugin, summary
        "tests/a.py::test_x[p q] [custom message] SUBFAILED",
    ]
    passed = "tests/a.py::test_x[p q] PASSED                             [ 50%]\n"
    for form in forms:
        assert pytest_parser.parse_pytest_output(passed + form + "\n") == {
            "tests/a.py::test_x[p q]": "failed"
        }, form
    for form in [
        "tests/a.py::test_x[p q] SUBPASSED[msg] (i=1)                [ 50%]",
        "tests/a.py::test_x[p q] SUBSKIPPED(<subtest>) (why)         [ 50%]",
        "tests/a.py::test_x[p q] [msg] (i=1) SUBPASS                 [ 50%]",
        "tests/a.py::test_x[p q] [msg] SUBSKIP (why)                 [ 50%]",
    ]:
        assert pytest_parser.parse_pytest_output(passed + form + "\n") == {
            "tests/a.py::test_x[p q]": "passed"
        }, form


@pytest.mark.unit
def test_pytest_a_run_killed_in_a_test_whose_id_has_spaces() -> None:
    assert pytest_parser.parse_pytest_output(KILLED) == {"tests/test_hang.py::test_a": "passed"}
    assert (
        pytest_parser.running_when_killed(KILLED) == "tests/test_hang.py::test_hangs[slow case - x]"
    )


@pytest.mark.unit
def test_pytest_a_run_killed_under_xdist() -> None:
    """Every test is announced before its result: the hung one is announced and never done."""
    assert pytest_parser.parse_pytest_output(KILLED_XDIST) == {
        "tests/test_hang.py::test_a": "passed",
        "tests/test_hang.py::test_z": "passed",
    }
    assert (
        pytest_parser.running_when_killed(KILLED_XDIST)
        == "tests/test_hang.py::test_hangs[slow case - x]"
    )


@pytest.mark.unit
def test_pytest_a_path_printed_by_a_test_is_not_a_test() -> None:
    output = "tests/a.py::test_x PASSED [100%]\nstd::vector<int> v PASSED\nfoo::bar\n"
    assert pytest_parser.parse_pytest_output(output) == {"tests/a.py::test_x": "passed"}
    assert pytest_parser.running_when_killed(output) is None


# `pytest -vv -o console_output_style=STYLE tests` for count, times and classic, on a class
# inheriting its test from tests/base.py (-vv names that file after the id)
PROGRESS_STYLES = """\
tests/test_b.py::TestB::test_inherited <- tests/base.py PASSED            [1/3]
tests/test_b.py::test_two FAILED                                          [2/3]
tests/test_b.py::test_three SKIPPED (later)                               [3/3]
FAILED tests/test_b.py::test_two - assert 0
tests/test_b.py::TestB::test_inherited <- tests/base.py PASSED          265.6us
tests/test_b.py::test_two FAILED                                        145.1us
tests/test_b.py::test_three SKIPPED (later)                             64.72us
FAILED tests/test_b.py::test_two - assert 0
tests/test_b.py::TestB::test_inherited <- tests/base.py PASSED
tests/test_b.py::test_two FAILED
tests/test_b.py::test_three SKIPPED (later)
FAILED tests/test_b.py::test_two - assert 0
"""


@pytest.mark.unit
@pytest.mark.parametrize("style", range(3))
def test_pytest_other_progress_styles(style: int) -> None:
    output = "".join(PROGRESS_STYLES.splitlines(keepends=True)[4 * style : 4 * style + 4])
    assert pytest_parser.parse_pytest_output(output) == {
        "tests/test_b.py::TestB::test_inherited": "passed",
        "tests/test_b.py::test_two": "failed",
        "tests/test_b.py::test_three": "skipped",
    }


# --- unittest --------------------------------------------------------------------------------

UNITTEST_A_PY = '''\
import unittest


class TestX(unittest.TestCase):
    def test_ok(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not today")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_doc(self):
        """First line of docstring ... with dots.

        More lines.
        """

    def test_doc_fail(self):
        """Docstring of a failing test."""
        self.fail("nope")

    def test_prints(self):
        print("hello from test")

    def test_subtests(self):
        for i in range(4):
            with self.subTest(i=i):
                self.assertNotEqual(i % 2, 1)

    def test_subtest_error(self):
        with self.subTest("a ... FAIL (x) ok", k="v"):
            raise ValueError("x")

    def test_subtest_doc(self):
        """Subtests ... and a docstring."""
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)

    def test_subtest_skip(self):
        with self.subTest(i=0):
            self.skipTest("sub skip")


class TestSetupFails(unittest.TestCase):
    def setUp(self):
        raise RuntimeError("setup broken")

    def test_one(self):
        pass


class TestClassSetupFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup broken")

    def test_two(self):
        pass
'''

UNITTEST_B_PY = """\
import unittest


class TestY(unittest.TestCase):
    def test_b(self):
        pass


@unittest.skip("whole class")
class TestSkipped(unittest.TestCase):
    def test_c(self):
        pass
"""

UNITTEST_SAMPLE = {
    "tests/__init__.py": "",
    "tests/sub/__init__.py": "",
    "tests/test_a.py": UNITTEST_A_PY,
    "tests/sub/test_b.py": UNITTEST_B_PY,
}

UNITTEST_EXPECTED: dict[str, str] = {
    "tests/sub/test_b.py::TestSkipped::test_c": "skipped",
    "tests/sub/test_b.py::TestY::test_b": "passed",
    "tests/test_a.py::TestSetupFails::test_one": "error",
    # TestClassSetupFails::test_two: its setUpClass failed, unittest never names it
    "tests/test_a.py::TestX::test_doc": "passed",
    "tests/test_a.py::TestX::test_doc_fail": "failed",
    "tests/test_a.py::TestX::test_error": "error",
    "tests/test_a.py::TestX::test_fail": "failed",
    "tests/test_a.py::TestX::test_ok": "passed",
    "tests/test_a.py::TestX::test_prints": "passed",
    "tests/test_a.py::TestX::test_skip": "skipped",
    "tests/test_a.py::TestX::test_subtest_doc": "failed",
    "tests/test_a.py::TestX::test_subtest_error": "failed",  # an error in a subtest
    "tests/test_a.py::TestX::test_subtest_skip": "skipped",
    "tests/test_a.py::TestX::test_subtests": "failed",
    "tests/test_a.py::TestX::test_xfail": "skipped",
    "tests/test_a.py::TestX::test_xpass": "failed",  # unexpected success fails the run
}

UNITTEST_HANGING = {
    "tests/__init__.py": "",
    "tests/test_h.py": '''\
import time
import unittest


class TestH(unittest.TestCase):
    def test_a(self):
        pass

    def test_b_hangs(self):
        """Hangs forever."""
        for i in range(3):
            with self.subTest(i=i):
                if i == 0:
                    self.fail("first")
                time.sleep(60)

    def test_c(self):
        pass
''',
}

# `python3.8 -m unittest -v` on UNITTEST_SAMPLE (tracebacks trimmed): `(module.Class)`, the
# failed subtests silent, so the next test's announcement follows on the same line
UNITTEST_PY38 = (
    "test_c (tests.sub.test_b.TestSkipped) ... skipped 'whole class'\n"
    "test_b (tests.sub.test_b.TestY) ... ok\n"
    "ERROR\n"
    "test_one (tests.test_a.TestSetupFails) ... ERROR\n"
    "test_doc (tests.test_a.TestX)\n"
    "First line of docstring ... with dots. ... ok\n"
    "test_doc_fail (tests.test_a.TestX)\n"
    "Docstring of a failing test. ... FAIL\n"
    "test_error (tests.test_a.TestX) ... ERROR\n"
    "test_fail (tests.test_a.TestX) ... FAIL\n"
    "test_ok (tests.test_a.TestX) ... ok\n"
    "test_prints (tests.test_a.TestX) ... hello from test\n"
    "ok\n"
    "test_skip (tests.test_a.TestX) ... skipped 'not today'\n"
    "test_subtest_doc (tests.test_a.TestX)\n"
    "Subtests ... and a docstring. ... test_subtest_error "
    "(tests.test_a.TestX) ... test_subtest_skip (tests.test_a.TestX) ... "
    "skipped 'sub skip'\n"
    "test_subtests (tests.test_a.TestX) ... test_xfail (tests.test_a.TestX) "
    "... expected failure\n"
    "test_xpass (tests.test_a.TestX) ... unexpected success\n"
    "\n"
    "======================================================================\n"
    "ERROR: setUpClass (tests.test_a.TestClassSetupFails)\n"
    "----------------------------------------------------------------------\n"
    "RuntimeError: class setup broken\n"
    "\n"
    "======================================================================\n"
    "ERROR: test_one (tests.test_a.TestSetupFails)\n"
    "----------------------------------------------------------------------\n"
    "RuntimeError: setup broken\n"
    "\n"
    "======================================================================\n"
    "ERROR: test_error (tests.test_a.TestX)\n"
    "----------------------------------------------------------------------\n"
    "RuntimeError: boom\n"
    "\n"
    "======================================================================\n"
    "ERROR: test_subtest_error (tests.test_a.TestX) [a ... FAIL (x) ok] "
    "(k='v')\n"
    "----------------------------------------------------------------------\n"
    "ValueError: x\n"
    "\n"
    "======================================================================\n"
    "FAIL: test_doc_fail (tests.test_a.TestX)\n"
    "Docstring of a failing test.\n"
    "----------------------------------------------------------------------\n"
    "AssertionError: nope\n"
    "\n"
    "======================================================================\n"
    "FAIL: test_fail (tests.test_a.TestX)\n"
    "----------------------------------------------------------------------\n"
    "AssertionError: 1 != 2\n"
    "\n"
    "======================================================================\n"
    "FAIL: test_subtest_doc (tests.test_a.TestX) (i=1)\n"
    "Subtests ... and a docstring.\n"
    "----------------------------------------------------------------------\n"
    "AssertionError: 1 != 0\n"
    "\n"
    "======================================================================\n"
    "FAIL: test_subtests (tests.test_a.TestX) (i=1)\n"
    "----------------------------------------------------------------------\n"
    "AssertionError: 1 == 1\n"
    "\n"
    "======================================================================\n"
    "FAIL: test_subtests (tests.test_a.TestX) (i=3)\n"
    "----------------------------------------------------------------------\n"
    "AssertionError: 1 == 1\n"
    "\n"
    "----------------------------------------------------------------------\n"
    "Ran 16 tests in 0.002s\n"
    "\n"
    "FAILED (failures=5, errors=4, skipped=3, expected failures=1, "
    "unexpected successes=1)\n"
)

# `python3.11 -m unittest -v` on UNITTEST_SAMPLE (tracebacks trimmed): `(module.Class.method)`,
# each failed subtest on an indented line
UNITTEST_PY311 = """\
test_c (tests.sub.test_b.TestSkipped.test_c) ... skipped 'whole class'
test_b (tests.sub.test_b.TestY.test_b) ... ok
setUpClass (tests.test_a.TestClassSetupFails) ... ERROR
test_one (tests.test_a.TestSetupFails.test_one) ... ERROR
test_doc (tests.test_a.TestX.test_doc)
First line of docstring ... with dots. ... ok
test_doc_fail (tests.test_a.TestX.test_doc_fail)
Docstring of a failing test. ... FAIL
test_error (tests.test_a.TestX.test_error) ... ERROR
test_fail (tests.test_a.TestX.test_fail) ... FAIL
test_ok (tests.test_a.TestX.test_ok) ... ok
test_prints (tests.test_a.TestX.test_prints) ... hello from test
ok
test_skip (tests.test_a.TestX.test_skip) ... skipped 'not today'
test_subtest_doc (tests.test_a.TestX.test_subtest_doc)
Subtests ... and a docstring. ...
  test_subtest_doc (tests.test_a.TestX.test_subtest_doc) (i=1)
Subtests ... and a docstring. ... FAIL
test_subtest_error (tests.test_a.TestX.test_subtest_error) ...
  test_subtest_error (tests.test_a.TestX.test_subtest_error) [a ... FAIL (x) ok] (k='v') ... ERROR
test_subtest_skip (tests.test_a.TestX.test_subtest_skip) ...
  test_subtest_skip (tests.test_a.TestX.test_subtest_skip) (i=0) ... skipped 'sub skip'
test_subtests (tests.test_a.TestX.test_subtests) ...
  test_subtests (tests.test_a.TestX.test_subtests) (i=1) ... FAIL
  test_subtests (tests.test_a.TestX.test_subtests) (i=3) ... FAIL
test_xfail (tests.test_a.TestX.test_xfail) ... expected failure
test_xpass (tests.test_a.TestX.test_xpass) ... unexpected success

======================================================================
ERROR: setUpClass (tests.test_a.TestClassSetupFails)
----------------------------------------------------------------------
RuntimeError: class setup broken

======================================================================
ERROR: test_one (tests.test_a.TestSetupFails.test_one)
----------------------------------------------------------------------
RuntimeError: setup broken

======================================================================
ERROR: test_error (tests.test_a.TestX.test_error)
----------------------------------------------------------------------
RuntimeError: boom

======================================================================
ERROR: test_subtest_error (tests.test_a.TestX.test_subtest_error) [a ... FAIL (x) ok] (k='v')
----------------------------------------------------------------------
ValueError: x

======================================================================
FAIL: test_doc_fail (tests.test_a.TestX.test_doc_fail)
Docstring of a failing test.
----------------------------------------------------------------------
AssertionError: nope

======================================================================
FAIL: test_fail (tests.test_a.TestX.test_fail)
----------------------------------------------------------------------
AssertionError: 1 != 2

======================================================================
FAIL: test_subtest_doc (tests.test_a.TestX.test_subtest_doc) (i=1)
Subtests ... and a docstring.
----------------------------------------------------------------------
AssertionError: 1 != 0

======================================================================
FAIL: test_subtests (tests.test_a.TestX.test_subtests) (i=1)
----------------------------------------------------------------------
AssertionError: 1 == 1

======================================================================
FAIL: test_subtests (tests.test_a.TestX.test_subtests) (i=3)
----------------------------------------------------------------------
AssertionError: 1 == 1

======================================================================
UNEXPECTED SUCCESS: test_xpass (tests.test_a.TestX.test_xpass)
----------------------------------------------------------------------
Ran 16 tests in 0.003s

FAILED (failures=5, errors=4, skipped=3, expected failures=1, unexpected successes=1)
"""

# `timeout -s KILL 2 python3.8 -m unittest -v` on UNITTEST_HANGING (test_b_hangs sleeps)
UNITTEST_KILLED_PY38 = (
    "test_a (tests.test_h.TestH) ... ok\ntest_b_hangs (tests.test_h.TestH)\nHangs forever. ... \n"
)

# the same with python3.11
UNITTEST_KILLED_PY311 = (
    "test_a (tests.test_h.TestH.test_a) ... ok\n"
    "test_b_hangs (tests.test_h.TestH.test_b_hangs)\n"
    "Hangs forever. ... \n"
    "  test_b_hangs (tests.test_h.TestH.test_b_hangs) (i=0)\n"
    "Hangs forever. ... FAIL\n"
)

# `python3.11 -m unittest -v` with tests/test_broken.py failing to import, tests/test_ok.py fine
UNITTEST_IMPORT_ERROR = """\
tests.test_broken (unittest.loader._FailedTest.tests.test_broken) ... ERROR
test_ok (tests.test_ok.TestOk.test_ok) ... ok

======================================================================
ERROR: tests.test_broken (unittest.loader._FailedTest.tests.test_broken)
----------------------------------------------------------------------
ImportError: Failed to import test module: tests.test_broken
ModuleNotFoundError: No module named 'nonexistent_module_xyz'


----------------------------------------------------------------------
Ran 2 tests in 0.000s

FAILED (errors=1)
"""


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run(root: Path, *args: str) -> str:
    """A Python run in ``root`` (no third-party pytest plugins): its stdout and stderr."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "80"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout + done.stderr


@pytest.mark.unit
def test_the_registry_knows_unittest() -> None:
    parser = log_parser("unittest")
    assert parser.parse is unittest_parser.parse_unittest_output
    assert parser.running_when_killed is unittest_parser.running_when_killed
    assert parser.report is None
    assert log_parser("pytest").report == "junit"


@pytest.mark.unit
@pytest.mark.parametrize("output", [UNITTEST_PY38, UNITTEST_PY311], ids=["py38", "py311"])
def test_unittest_every_outcome(output: str) -> None:
    assert log_parser("unittest").parse(output) == UNITTEST_EXPECTED
    assert log_parser("unittest").running_when_killed(output) is None


@pytest.mark.unit
def test_unittest_this_python_and_pytest_agree_on_the_ids(tmp_path: Path) -> None:
    """A live ``python -m unittest -v`` of the sample; pytest run on the same files names
    every test unittest names the same way."""
    write_tree(tmp_path, UNITTEST_SAMPLE)
    output = run(tmp_path, "-m", "unittest", "-v")
    assert unittest_parser.parse_unittest_output(output) == UNITTEST_EXPECTED
    assert unittest_parser.running_when_killed(output) is None
    by_pytest = pytest_parser.parse_pytest_output(
        run(tmp_path, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider", "tests")
    )
    assert set(UNITTEST_EXPECTED) <= set(by_pytest)
    assert set(by_pytest) - set(UNITTEST_EXPECTED) == {
        "tests/test_a.py::TestClassSetupFails::test_two"
    }


@pytest.mark.unit
def test_unittest_a_killed_run() -> None:
    hung = "tests/test_h.py::TestH::test_b_hangs"
    assert unittest_parser.running_when_killed(UNITTEST_KILLED_PY38) == hung
    assert unittest_parser.running_when_killed(UNITTEST_KILLED_PY311) == hung
    assert unittest_parser.parse_unittest_output(UNITTEST_KILLED_PY38) == {
        "tests/test_h.py::TestH::test_a": "passed"
    }
    # Python >= 3.11 printed its first subtest's failure before the kill
    assert unittest_parser.parse_unittest_output(UNITTEST_KILLED_PY311) == {
        "tests/test_h.py::TestH::test_a": "passed",
        hung: "failed",
    }


@pytest.mark.unit
def test_unittest_a_module_that_failed_to_import_names_no_test() -> None:
    assert unittest_parser.parse_unittest_output(UNITTEST_IMPORT_ERROR) == {
        "tests/test_ok.py::TestOk::test_ok": "passed"
    }


@pytest.mark.unit
def test_unittest_node_ids() -> None:
    node_id = unittest_parser.node_id
    assert node_id("test_y", "tests.test_a.TestX.test_y") == "tests/test_a.py::TestX::test_y"
    assert node_id("test_y", "tests.test_a.TestX") == "tests/test_a.py::TestX::test_y"
    assert node_id("test_y", "test_a.TestX") == "test_a.py::TestX::test_y"
    assert node_id("test_i", "pkg.test_m.TestOuter.TestInner") == (
        "pkg/test_m.py::TestOuter::TestInner::test_i"
    )
    assert node_id("test_y", "tests.test_a.lower_case") == "tests/test_a.py::lower_case::test_y"
    assert node_id("setUpClass", "tests.test_a.TestX") is None
    assert node_id("tearDownModule", "tests.test_a") is None
    assert node_id("test_broken", "unittest.loader._FailedTest.test_broken") is None
