"""Rust tests inside source files: the line ranges of ``#[test]`` and ``#[cfg(test)]`` items
(``streams.evaluation.recipes.languages.rust.inline``), through braces hidden in comments,
strings, raw strings and char literals, and on broken input; the plugin's hook."""

from __future__ import annotations

import pytest

from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.languages.rust.inline import test_item_ranges as ranges


def lines(text: str) -> list[str]:
    """1-based: ``lines(text)[n]`` is line n."""
    return ["", *text.split("\n")]


LIB = """\
//! The crate.
use std::fmt;

/// Adds.
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// The tests.
#[cfg(test)]
#[allow(clippy::all)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }
}

fn after() {}
"""


@pytest.mark.unit
def test_a_test_module_runs_from_its_doc_comment_to_its_closing_brace() -> None:
    ((start, end),) = ranges(LIB)
    text = lines(LIB)
    assert text[start] == "/// The tests." and text[end] == "}"
    assert text[end + 2] == "fn after() {}"  # the item after it is not a test


@pytest.mark.unit
def test_attributes_stacked_above_and_below_count_and_a_blank_line_detaches_comments() -> None:
    source = (
        "fn a() {}\n"  # 1
        "// a note, then a blank line\n"  # 2
        "\n"  # 3
        "#[rustfmt::skip]\n"  # 4
        "#[cfg(test)]\n"  # 5
        "/// documented below the cfg\n"  # 6
        "#[allow(dead_code)]\n"  # 7
        "fn helper() -> u8 { 1 }\n"  # 8
        "fn b() {} // a trailing comment\n"  # 9
        "#[test]\n"  # 10
        "fn t() {}\n"  # 11
    )
    assert ranges(source) == [(4, 8), (10, 11)]


@pytest.mark.unit
def test_braces_in_comments_strings_raw_strings_and_chars_do_not_count() -> None:
    source = r"""#[cfg(test)]
mod tests {
    // a } in a line comment
    /* a block } /* nested { */ still } comment */
    const S: &str = "a \" } quote";
    const R: &str = r"}";
    const H: &str = r##"a "# } still"##;
    const B: &[u8] = b"\"}";
    const BR: &[u8] = br#"}"#;
    const C: char = '}';
    const Q: char = '\'';
    const E: char = '\u{7d}';
    const BC: u8 = b'{';
    fn lifetimes<'a, 'b: 'a>(x: &'a str, _y: &'b str) -> &'a str {
        'outer: loop { break 'outer x; }
    }
    fn r#match() {}
}
fn after() {}
"""
    assert ranges(source) == [(1, 18)]


@pytest.mark.unit
def test_lifetimes_are_no_char_literals() -> None:
    # were 'a read as the start of a char literal, the brace after it would be hidden
    source = "fn f<'a>(x: &'a str) -> &'a str { x }\n#[test]\nfn t() { let _c = '{'; }\nfn g() {}\n"
    assert ranges(source) == [(2, 3)]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("attribute", "is_test"),
    [
        ("#[test]", True),
        ('#[tokio::test(flavor = "multi_thread")]', True),
        ("#[cfg(test)]", True),
        ('#[cfg(all(test, feature = "x"))]', True),
        ("#[cfg(all(unix, any(test, all(test, windows))))]", True),
        ("#[cfg(not(not(test)))]", True),
        ("#[cfg(not(test))]", False),
        # a build with the feature on compiles it without test: it is code under test
        ('#[cfg(any(test, feature = "x"))]', False),
        ("#[cfg(any())]", False),  # never compiled: no test either
        ('#[cfg(feature = "test")]', False),
        ("#[cfg(doctest)]", False),
        ("#[cfg_attr(test, derive(Debug))]", False),
        ("#[cfg(test = )]", False),  # malformed
        ("#[derive(Debug)]", False),
    ],
)
def test_which_attributes_make_a_test(attribute: str, is_test: bool) -> None:
    source = f"fn a() {{}}\n{attribute}\nfn b() {{\n}}\n"
    assert ranges(source) == ([(2, 4)] if is_test else [])


@pytest.mark.unit
def test_nested_modules_and_tests_inside_a_test_module() -> None:
    source = (
        "mod outer {\n"  # 1
        "    pub fn f() {}\n"  # 2
        "    #[cfg(test)]\n"  # 3
        "    mod tests {\n"  # 4
        "        mod deeper {\n"  # 5
        "            #[test]\n"  # 6
        "            fn t() {}\n"  # 7
        "        }\n"  # 8
        "    }\n"  # 9
        "    pub fn g() {}\n"  # 10
        "}\n"  # 11
        "impl S {\n"  # 12
        "    #[cfg(test)]\n"  # 13
        "    fn only_in_tests(&self) {}\n"  # 14
        "}\n"  # 15
    )
    # the #[test] inside the test module is in its range, not a range of its own
    assert ranges(source) == [(3, 9), (13, 14)]


@pytest.mark.unit
def test_semicolon_items_and_fields() -> None:
    source = (
        "#[cfg(test)]\n"  # 1
        "mod tests;\n"  # 2
        "#[cfg(test)]\n"  # 3
        "use std::{\n"  # 4
        "    fmt,\n"  # 5
        "};\n"  # 6
        "#[cfg(test)]\n"  # 7
        "const X: S = S { a: [1; 2] };\n"  # 8
        "#[cfg(test)]\n"  # 9
        "impl<A, B> From<A> for B {\n"  # 10
        "}\n"  # 11
        "struct S {\n"  # 12
        "    a: u8,\n"  # 13
        "    #[cfg(test)]\n"  # 14
        "    b: Vec<u8>,\n"  # 15
        "    c: u8,\n"  # 16
        "}\n"  # 17
    )
    assert ranges(source) == [(1, 2), (3, 6), (7, 8), (9, 11), (14, 15)]


@pytest.mark.unit
def test_an_inner_cfg_test_makes_the_whole_file_a_test() -> None:
    assert ranges("//! helpers\n#![cfg(test)]\n\nfn a() {}\n") == [(1, 4)]
    assert ranges("#![allow(unused)]\nfn a() {}\n") == []


@pytest.mark.unit
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("#[cfg(test)]\nmod tests {\n    fn a() {\n", [(1, 3)]),  # never closed: to the end
        ("#[cfg(test)]\nmod tests {\n    fn a() {\n\n", [(1, 4)]),  # its last line
        ("mod m {\n    #[test]\n}\nfn f() {}\n", [(2, 2)]),  # nothing to annotate
        ("#[cfg(test", []),  # an attribute never closed
        ("#[test]", [(1, 1)]),
        ('#[cfg(test)] const S: &str = "never closed\n}\n', [(1, 2)]),
        ("#[cfg(test)] mod t { /* never closed\n}\n", [(1, 2)]),
        ("}}}\n#[test]\nfn a() {}\n)))", [(2, 3)]),
        ("", []),
        ("#!/usr/bin/env run-cargo-script\n#[test]\nfn a() {}\n", [(2, 3)]),
        ("fn f() { let c = '\\", []),
        ("#[cfg(" + "all(" * 5000 + "test" + ")" * 5000 + ")]\nfn a() {}\n", []),
    ],
)
def test_broken_input_never_raises(source: str, expected: list[tuple[int, int]]) -> None:
    assert ranges(source) == expected


@pytest.mark.unit
def test_the_rust_plugin_gives_ranges_for_rust_files_only() -> None:
    rust = language_named("Rust")
    assert rust is not None
    assert rust.test_line_ranges("src/lib.rs", LIB) == ranges(LIB)
    assert rust.test_line_ranges("build.py", LIB) is None
    python = language_named("Python")
    assert python is not None and python.test_line_ranges("a.py", "def test_a(): pass\n") is None
