"""The test cases of C/C++ sources, with their line spans, as GoogleTest, Catch2 and doctest
declare them; comments and literals count for nothing."""

from __future__ import annotations

import pytest

from schemas.tasks import fails_without_fix
from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.languages.cpp.tests_in_source import FoundCase, find_cases

pytestmark = pytest.mark.unit

GTEST = """\
#include <gtest/gtest.h>
// TEST(Commented, Out) { }
TEST(Calc, Adds) {
  EXPECT_EQ(add(2, 3), 5);  // a } in a comment
  const char* s = "} TEST(InString, No) {";
}

TEST_F(Fixture, Holds)
{
  auto raw = R"x(})x";
  SUCCEED();
}
TEST_P(Param, Positive) { EXPECT_GT(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(Small, Param, ::testing::Values(1, 2, -1));
TYPED_TEST(Typed, Works) {}
"""
CATCH = """\
#include <catch2/catch_test_macros.hpp>
TEST_CASE("parses \\"quoted\\" input, with commas", "[parse]") {
  SECTION("empty") {
    REQUIRE(parse("") == 0);
  }
}
TEST_CASE_METHOD(Fixture, "uses the fixture") { CHECK(x); }
SCENARIO("vectors grow") {
  GIVEN("a vector") {}
}
static void helper() { TEST_CASE_not_a_macro(); }
"""


def test_googletest_cases_and_their_spans() -> None:
    assert find_cases(GTEST) == [
        FoundCase("Calc.Adds", "gtest", 3, 6),
        FoundCase("Fixture.Holds", "gtest", 8, 12),
        FoundCase("Param.Positive", "gtest", 13, 13),
        FoundCase("Typed.Works", "gtest", 15, 15),
    ]


def test_catch2_and_doctest_cases_by_their_names() -> None:
    assert find_cases(CATCH) == [
        FoundCase('parses "quoted" input, with commas', "catch", 2, 6),
        FoundCase("uses the fixture", "catch", 7, 7),
        FoundCase("Scenario: vectors grow", "catch", 8, 10),
    ]


@pytest.mark.parametrize(
    "source",
    ["TEST(A, B) {", "TEST(A, B", "TEST_CASE(name_not_a_string) {}", "TEST(1, 2) {}", ""],
)
def test_a_malformed_source_gives_what_could_be_read(source: str) -> None:
    assert find_cases(source) == []


def test_a_changed_case_of_a_binary_run_whole_is_named_as_the_runs_name_it() -> None:
    language = language_named("C++")
    assert language is not None
    ids = {
        "options", "options::Basic options", "options::Other", "calc_test::Calc.Adds",
        "unit::Parses/with a flag", "Calc.Adds", "unit::Parses nothing",
    }  # fmt: skip
    changed = language.changed_ids(["Basic options", "Calc.Adds", "Parses"], ids)
    assert changed == [
        "Basic options", "Calc.Adds", "Parses", "calc_test::Calc.Adds", "options::Basic options",
        "unit::Parses/with a flag",
    ]  # fmt: skip
    # the test patch's binary did not compile without the fix: the old case it changed fails
    # without the fix, its other old cases say nothing of it
    base = {"options": "passed", "options::Basic options": "passed", "options::Other": "passed"}
    assert fails_without_fix("options::Basic options", base, {}, changed)
    assert not fails_without_fix("options::Other", base, {}, changed)
