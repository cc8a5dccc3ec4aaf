"""The Rust tests a test patch adds or changes (``Rust.tests_changed``): real ``git diff``s
between two commits of repositories the tests make, read against the base's tree; ids as
swe-cargo-test names them (``<package>::<target>::<module path>::<fn>``)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from streams.evaluation.recipes.languages import language_named
from streams.evaluation.recipes.languages.rust.changed import changed_tests
from streams.evaluation.recipes.languages.rust.inline import test_functions as functions_of
from tests.streams.evaluation.recipes.test_go_recipe import tree_of

pytestmark = pytest.mark.unit


def manifest(name: str) -> str:
    return f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'


LIB = "pub fn double(x: i32) -> i32 {\n    2 * x\n}\n"
SUITE = """\
use demo::double;

#[test]
fn untouched() {
    assert_eq!(double(1), 2);
}

/// Changed by the patch.
#[test]
fn changed() {
    let x = 2;
    assert_eq!(double(x), 4);
}

fn helper() -> i32 {
    3
}
"""


def diff_after(tmp_path: Path, files: dict[str, str], after: Mapping[str, str | None]) -> str:
    """What ``git diff`` says once the repository ``tree_of`` made holds ``after`` (None:
    the file deleted), new files included."""
    root = tmp_path / "repo"
    for name, text in after.items():
        if text is None:
            (root / name).unlink()
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "add", "-A"], check=True)
    return subprocess.run(
        [*git, "diff", "--cached"], check=True, capture_output=True, text=True
    ).stdout


def changed(tmp_path: Path, files: dict[str, str], after: Mapping[str, str | None]) -> list[str]:
    tree = tree_of(tmp_path, files)
    patch = diff_after(tmp_path, files, after)
    language = language_named("Rust")
    assert language is not None
    return language.tests_changed(tree, patch)


def test_an_integration_test_gaining_a_test_and_changing_another(tmp_path: Path) -> None:
    """The changed test and the added one are named; the untouched one and a helper whose
    body changed are not (the helper is no test: the tests calling it are old ones)."""
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/suite.rs": SUITE}
    after = SUITE.replace("let x = 2;", "let x = 2; // two").replace("    3\n", "    4\n") + (
        '\n#[tokio::test(flavor = "multi_thread")]\nasync fn added() {\n    let _ = 1;\n}\n'
    )
    assert changed(tmp_path, files, {"tests/suite.rs": after}) == [
        "demo::suite::added",
        "demo::suite::changed",
    ]


def test_an_attribute_added_above_a_test_changes_it(tmp_path: Path) -> None:
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/suite.rs": SUITE}
    after = SUITE.replace("#[test]\nfn untouched", "#[test]\n#[should_panic]\nfn untouched")
    assert changed(tmp_path, files, {"tests/suite.rs": after}) == ["demo::suite::untouched"]


def test_lines_only_removed_or_blank_name_no_test(tmp_path: Path) -> None:
    """A removed test, a body that only lost a line, a blank line added: nothing."""
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/suite.rs": SUITE}
    after = (
        SUITE.replace("#[test]\nfn untouched() {\n    assert_eq!(double(1), 2);\n}\n", "")
        .replace("    let x = 2;\n", "    let x = 2;\n\n")
        .replace("    3\n", "")
    )
    assert changed(tmp_path, files, {"tests/suite.rs": after}) == []


PARSER = """\
pub fn parse(s: &str) -> Option<i32> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_number() {
        assert_eq!(parse("1"), Some(1));
    }

    #[test]
    fn rejects_a_word() {
        assert_eq!(parse("x"), None);
    }

    mod nested {
        mod deeper {
            #[test]
            fn deep() {
                let s = "}"; // a brace in a string closes nothing
                assert_eq!(s.len(), 1);
            }
        }

        #[rstest::rstest]
        fn shallow() {
            assert!(true);
        }
    }
}
"""


def test_a_unit_test_in_a_source_module_and_nested_modules(tmp_path: Path) -> None:
    """``src/parser.rs``'s ``#[cfg(test)] mod tests``: the library's tests, below the file's
    module; modules nested in it; a change to the code under test (not a test) names none."""
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "src/parser.rs": PARSER}
    after = (
        PARSER.replace('parse("x"), None', 'parse("y"), None')
        .replace("s.len(), 1", 's.len(), 1, "one"')
        .replace("s.parse().ok()", "s.trim().parse().ok()")
    )
    assert changed(tmp_path, files, {"src/parser.rs": after}) == [
        "demo::lib::parser::tests::nested::deeper::deep",
        "demo::lib::parser::tests::rejects_a_word",
    ]


def test_mod_rs_and_deeper_source_files_are_their_modules(tmp_path: Path) -> None:
    files = {
        "Cargo.toml": manifest("demo"),
        "src/lib.rs": LIB + "\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn root() {}\n}\n",
        "src/a/mod.rs": PARSER,
        "src/a/b.rs": PARSER,
    }
    after = {
        "src/lib.rs": files["src/lib.rs"].replace(
            "fn root() {}", "fn root() {\n        f();\n    }"
        ),
        "src/a/mod.rs": PARSER.replace('parse("1")', 'parse("2")'),
        "src/a/b.rs": PARSER.replace("assert!(true)", "assert!(!false)"),
    }
    assert changed(tmp_path, files, after) == [
        "demo::lib::a::b::tests::nested::shallow",
        "demo::lib::a::tests::parses_a_number",
        "demo::lib::tests::root",
    ]


def test_an_integration_test_of_several_files(tmp_path: Path) -> None:
    """``tests/suite/main.rs`` and its module ``tests/suite/more.rs`` are the target ``suite``;
    ``tests/common/mod.rs`` (no main.rs beside it) is a helper, no target."""
    test = "#[test]\nfn t() {\n    assert!(true);\n}\n"
    files = {
        "Cargo.toml": manifest("demo"),
        "src/lib.rs": LIB,
        "tests/suite/main.rs": "mod more;\n\n" + test,
        "tests/suite/more.rs": test,
        "tests/common/mod.rs": test,
    }
    after = {name: text.replace("true", "1 == 1") for name, text in files.items()}
    assert changed(tmp_path, files, after) == ["demo::suite::more::t", "demo::suite::t"]


def test_a_workspace_members_package_and_binaries(tmp_path: Path) -> None:
    """A member's tests carry its own package's name (the nearest manifest); ``src/main.rs``
    is the binary named after the package, ``src/bin/tool.rs`` the binary ``tool``, a source
    file of a package without a library a module of its main.rs; benches and build scripts
    hold no test target."""
    test = (
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() {\n        let a = 1;\n    }\n}\n"
    )
    files = {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
        "crates/core-lib/Cargo.toml": manifest("core-lib"),
        "crates/core-lib/src/lib.rs": LIB,
        "crates/core-lib/tests/api.rs": SUITE,
        "crates/cli/Cargo.toml": manifest("my-cli"),
        "crates/cli/src/main.rs": "mod args;\n\nfn main() {}\n\n" + test,
        "crates/cli/src/args.rs": test,
        "crates/cli/src/bin/tool.rs": "fn main() {}\n\n" + test,
        "crates/cli/benches/speed.rs": test,
        "crates/cli/build.rs": test,
    }
    after = {
        name: text.replace("let a = 1;", "let a = 2;").replace("let x = 2;", "let x = 1 + 1;")
        for name, text in files.items()
        if name.endswith(".rs")
    }
    assert changed(tmp_path, files, after) == [
        "core-lib::api::changed",
        "my-cli::bin/my-cli::args::tests::works",
        "my-cli::bin/my-cli::tests::works",
        "my-cli::bin/tool::tests::works",
    ]


def test_an_added_file_names_its_tests(tmp_path: Path) -> None:
    """Every test of a new integration test file; a deleted file names nothing."""
    old = "#[test]\nfn gone() {\n    assert!(true);\n}\n"
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/old.rs": old}
    after = {"tests/new_api.rs": SUITE, "tests/old.rs": None}
    assert changed(tmp_path, files, after) == [
        "demo::new_api::changed",
        "demo::new_api::untouched",
    ]


def test_hunks_far_down_a_file_are_placed_on_the_base(tmp_path: Path) -> None:
    """Hunks far down a file, with body lines ``--- x`` and ``+++ y`` (a raw string's lines
    removed and added: no file's header, the hunk's counts say so), a file without a final
    newline: the tests are placed by the base's lines between the hunks."""
    filler = "".join(f"// line {n}\n" for n in range(40))
    base = SUITE + filler + '#[test]\nfn last() {\n    let s = r"\n-- x\n";\n}'
    after = (
        SUITE.replace("double(1), 2", 'double(1), 2, "x"')
        + filler
        + '#[test]\nfn last() {\n    let s = r"\n++ y\n";\n}'
    )
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/suite.rs": base}
    tree = tree_of(tmp_path, files)
    patch = diff_after(tmp_path, files, {"tests/suite.rs": after})
    assert "\n--- x\n+++ y\n" in patch and "\\ No newline at end of file" in patch
    assert changed_tests(tree, patch) == ["demo::suite::last", "demo::suite::untouched"]


def test_a_renamed_file_is_read_from_its_old_path(tmp_path: Path) -> None:
    """git's ``rename from``/``rename to``: the hunks apply to the base's old file, the tests
    are named by the new one."""
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB, "tests/old.rs": SUITE}
    after = {"tests/old.rs": None, "tests/renamed.rs": SUITE.replace("let x = 2;", "let x = 3;")}
    tree = tree_of(tmp_path, files)
    patch = diff_after(tmp_path, files, after)
    assert "rename from tests/old.rs" in patch
    assert changed_tests(tree, patch) == ["demo::renamed::changed"]


def test_malformed_or_foreign_patches_name_nothing_and_raise_nothing(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB})
    for patch in (
        "",
        "not a diff\n",
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -9,3 +9",
        "diff --git a/src/lib.rs b/src/lib.rs\nBinary files a/src/lib.rs and b/src/lib.rs differ\n",
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n"
        "@@ -1,2 +1,2 @@\n-pub fn double(x: i32) -> i32 {\n+pub fn double(x: i64) -> i64 {\n",
    ):
        assert changed_tests(tree, patch) == [], patch
    # hunks past the base's end or cut short: what they add is still read
    for patch in (
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n"
        "@@ -90,2 +90,3 @@\n #[test]\n+fn t() {\n",
        "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -0,0 +1,3 @@\n+#[test]\n+fn t() { {\n",
    ):
        assert changed_tests(tree, patch) == ["demo::lib::t"], patch
    # a plain unified diff (no git header) and no Cargo tree at all
    plain = "--- a/tests/t.rs\n+++ b/tests/t.rs\n@@ -0,0 +1,2 @@\n+#[test]\n+fn x() {}\n"
    assert changed_tests(tree, plain) == ["demo::t::x"]
    assert changed_tests(tree_of(tmp_path / "plain", {"a.rs": "fn a() {}\n"}), plain) == []


def test_a_path_git_quotes_is_read(tmp_path: Path) -> None:
    """A file whose name git C-quotes (``"tests/caf\\303\\251.rs"``) and one with a space."""
    files = {"Cargo.toml": manifest("demo"), "src/lib.rs": LIB}
    after = {"tests/café.rs": SUITE, "tests/two words.rs": SUITE.replace("changed", "other")}
    assert changed(tmp_path, files, after) == [
        "demo::café::changed",
        "demo::café::untouched",
        "demo::two words::other",
        "demo::two words::untouched",
    ]


def test_the_test_functions_of_a_source_and_their_lines() -> None:
    """Functions in a function, an impl or a macro are no tests libtest runs; attributes
    stacked above the test open its lines; ``pub(crate) async`` and ``extern "C"`` stand
    before ``fn``; a helper compiled for tests only (``#[cfg(test)] fn``) is no test."""
    source = (
        "#![allow(dead_code)]\n"  # 1
        "fn outer() {\n"  # 2
        "    #[test]\n"  # 3
        "    fn inner() {}\n"  # 4
        "}\n"  # 5
        "impl S {\n"  # 6
        "    #[test]\n"  # 7
        "    fn method() {}\n"  # 8
        "}\n"  # 9
        "macro_rules! m { () => { #[test] fn made() {} } }\n"  # 10
        "#[cfg(test)]\n"  # 11
        "fn helper() {}\n"  # 12
        "#[ignore]\n"  # 13
        "#[::core::prelude::v1::test]\n"  # 14
        "pub(crate) async fn first() {\n"  # 15
        "    let c = '}';\n"  # 16
        "}\n"  # 17
        "pub mod m {\n"  # 18
        "    #[test_case(1)]\n"  # 19
        '    unsafe extern "C" fn second(x: u8) {}\n'  # 20
        "}\n"  # 21
        "#[test]\n"  # 22
        "fn open() {\n"  # 23
    )
    assert [(f.modules, f.name, f.start, f.end) for f in functions_of(source)] == [
        ((), "first", 13, 17),
        (("m",), "second", 19, 20),
        ((), "open", 22, 23),
    ]
