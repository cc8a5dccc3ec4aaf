"""The C test cases registered by function (CUnit, µnit, tinytest, Unity): a test patch that
changes a test function changes the case its registration names, whose binary CTest runs whole
(``<binary>::<case>`` in the runs)."""

from __future__ import annotations

import pytest

from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.languages.cpp.changed import changed_cases
from streams.evaluation.recipes.languages.cpp.registered import defined_functions, registered_names
from tests.streams.evaluation.test_js_recipes import tree

pytestmark = pytest.mark.unit

SESSION_TEST = """\
#include "session_test.h"
#define CHECK(x) do { if (!(x)) { fail(); } } while (0)
#define BRACED { "not a function" }

static const char *names[] = {"a {", "b }"};  /* a brace { in a comment */

static int helper(int x) {
  return x + 1;
}

void test_session_recv(void) {
  CHECK(helper(1) == 2);
}

void test_session_send(void)
{
  const char *s = "}";
  CHECK(s[0] == '}');
}
"""

MAIN = """\
#include <CUnit/Basic.h>
#include "session_test.h"

int main(void) {
  CU_pSuite suite = CU_add_suite("session", NULL, NULL);
  if (!CU_add_test(suite, "session_recv", test_session_recv) ||
      /* "a comment", test_session_send */
      !CU_add_test(suite, "session_send", test_session_send)) {
    return 1;
  }
  helper_called(test_session_recv("not a registration"));
  return CU_basic_run_tests();
}
"""

PATCH = """\
diff --git a/tests/session_test.c b/tests/session_test.c
--- a/tests/session_test.c
+++ b/tests/session_test.c
@@ -16,4 +16,5 @@ void test_session_send(void)
 {
   const char *s = "}";
   CHECK(s[0] == '}');
+  CHECK(session_send() == 0);
 }
"""


def test_the_functions_a_source_defines_with_their_lines() -> None:
    functions = defined_functions(SESSION_TEST)
    assert [(f.name, f.start, f.end) for f in functions] == [
        ("helper", 7, 9),
        ("test_session_recv", 11, 13),
        ("test_session_send", 15, 19),
    ]
    assert defined_functions("TEST(Calc, Adds) {\n  EXPECT_EQ(1, 1);\n}\n") == []


def test_a_function_is_named_by_the_strings_registered_beside_it() -> None:
    assert registered_names(["test_session_send"], [MAIN]) == {"session_send"}
    # called, not registered; the comment's string is no registration
    assert registered_names(["test_session_recv"], [MAIN]) == {"session_recv"}
    table = 'static MunitTest tests[] = {\n  {"/recv", test_recv, NULL, NULL, 0, NULL},\n};\n'
    assert registered_names(["test_recv"], [table]) == {"/recv"}
    assert registered_names([], [table]) == set()


def test_a_changed_test_function_is_the_case_its_registration_names() -> None:
    given = tree({"tests/session_test.c": SESSION_TEST, "tests/main.c": MAIN})
    changed = changed_cases(given, PATCH)
    assert changed == ["session_send", "test_session_send"]
    language = language_named("C")
    assert language is not None
    ids = ["main::session_send", "main::session_recv", "other::test_session_send", "main"]
    assert language.changed_ids(changed, ids) == [
        "main::session_send",
        "other::test_session_send",
        *changed,  # a CTest test of its own, were one so named
    ]


def test_a_registration_in_another_directory_names_nothing() -> None:
    given = tree({"tests/session_test.c": SESSION_TEST, "other/main.c": MAIN})
    assert changed_cases(given, PATCH) == ["test_session_send"]
