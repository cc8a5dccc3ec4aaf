"""agents.paths: test / docs / source / other for changed files, and their languages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agents.paths import (
    DOCS_DIRS,
    DOCS_EXTENSIONS,
    LANGUAGES,
    SOURCE_EXTENSIONS,
    TEST_DIRS,
    file_kind,
    inline_test_language,
    inline_test_lines,
    is_docs_path,
    is_source_path,
    is_test_path,
    language_of,
)

pytestmark = pytest.mark.unit


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def diff_paths(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", patch, re.MULTILINE)


# --- real changed files -------------------------------------------------------------------------


def test_recorded_pull_request_files(fixtures_dir: Path) -> None:
    """sigmavirus24/github3.py#235 as the GitHub API listed its files: one source, one test."""
    files = load_json(fixtures_dir / "github_api" / "decoded" / "pulls_235_files.json")
    kinds = {f["filename"]: file_kind(f["filename"]) for f in files}
    assert kinds == {
        "github3/repos/release.py": "source",
        "tests/unit/test_repos_release.py": "test",
    }
    assert {language_of(name) for name in kinds} == {"Python"}


@pytest.mark.parametrize("split", ["swe-bench-lite-5.json", "swe-bench-dev-5.json"])
def test_swebench_patches_split_like_swebench(fixtures_dir: Path, split: str) -> None:
    """Real SWE-bench rows: every gold-patch file is source, every test-patch file a test."""
    rows = load_json(fixtures_dir / "swebench" / split)
    assert rows
    for row in rows:
        gold, tests = diff_paths(row["patch"]), diff_paths(row["test_patch"])
        assert gold
        assert tests
        assert [file_kind(p) for p in gold] == ["source"] * len(gold), row["instance_id"]
        assert [file_kind(p) for p in tests] == ["test"] * len(tests), row["instance_id"]


def test_corpus_js_pull_requests_split_into_tests_and_sources(fixtures_dir: Path) -> None:
    """The real JavaScript / TypeScript PRs of corpus-js: every one changes a test file and a
    source file; only tests sit under test directories or carry test names."""
    lines = (fixtures_dir / "corpus-js" / "prs.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        pr = json.loads(line)
        kinds = {f["filename"]: file_kind(f["filename"]) for f in pr["files"]}
        name = f"{pr['repo']}#{pr['number']}"
        assert "test" in kinds.values(), name
        assert "source" in kinds.values(), name
        for path, kind in kinds.items():
            under_tests = re.search(r"(?:^|/)(?:tests?|__tests__)/|\.(?:test|spec)\.", path)
            assert (kind == "test") == bool(under_tests), (name, path)


# --- the table ----------------------------------------------------------------------------------

# (path, kind, language)
CASES = [
    # real files: the recorded PR and the SWE-bench fixture rows
    ("github3/repos/release.py", "source", "Python"),
    ("tests/unit/test_repos_release.py", "test", "Python"),
    ("django/contrib/sitemaps/__init__.py", "source", "Python"),
    ("tests/sitemaps_tests/test_http.py", "test", "Python"),
    ("tests/sitemaps_tests/urls/http.py", "test", "Python"),
    ("sympy/matrices/tests/test_sparse.py", "test", "Python"),
    ("src/_pytest/assertion/rewrite.py", "source", "Python"),
    ("testing/test_assertrewrite.py", "test", "Python"),
    ("tests/user_commands/tests.py", "test", "Python"),
    ("tests/unittest_nodes.py", "test", "Python"),
    # a module whose name starts with "unittest" is code in Python (pyupgrade's plugin for the
    # unittest aliases); other languages' unittest_* files are tests
    ("pyupgrade/_plugins/unittest_aliases.py", "source", "Python"),
    ("src/unittest_alloc.cc", "test", "C++"),
    ("test/rules/std_L054_test.py", "test", "Python"),
    ("pydicom/pixel_data_handlers/numpy_handler.py", "source", "Python"),
    # test directories, any depth, any case
    ("test/foo.c", "test", "C"),
    ("Tests/Foo.swift", "test", "Swift"),
    ("pkg/testing/helpers.go", "test", "Go"),
    ("spec/models/user.rb", "test", "Ruby"),
    ("specs/parser.js", "test", "JavaScript"),
    ("src/__tests__/button.jsx", "test", "JavaScript"),
    ("src/__test__/button.tsx", "test", "TypeScript"),
    ("e2e/login.ts", "test", "TypeScript"),
    ("internal/parse/testdata/input.txt", "test", None),
    ("src/components/__snapshots__/App.test.js.snap", "test", None),
    ("src/__mocks__/fs.js", "test", "JavaScript"),
    ("src/__fixtures__/input.js", "test", "JavaScript"),
    ("packages/core/__fixtures__/config.json", "test", None),
    ("cypress/e2e/login.cy.ts", "test", "TypeScript"),
    ("cypress/support/commands.js", "test", "JavaScript"),
    ("cypress/fixtures/user.json", "test", None),
    ("src/test/java/org/example/Foo.java", "test", "Java"),
    ("t/00-load.t", "test", "Perl"),
    ("t/helper/test-tool.c", "test", "C"),
    ("integration-tests/run.sh", "test", "Shell"),
    ("unit_tests/math.cc", "test", "C++"),
    ("test_utils/factories.py", "test", "Python"),
    ("MyAppTests/LoginTests.swift", "test", "Swift"),
    ("MyAppUITest/Screens.m", "test", "Objective-C"),
    # data, docs and config inside test directories belong to the tests
    ("tests/fixtures/response.json", "test", None),
    ("tests/README.md", "test", None),
    ("docs/tests/example.py", "test", "Python"),
    # test file names, by ecosystem
    ("pkg/test_parser.py", "test", "Python"),
    ("pkg/parser_test.py", "test", "Python"),
    ("pkg/parser_tests.py", "test", "Python"),
    ("pkg/conftest.py", "test", "Python"),
    ("app/tests.py", "test", "Python"),
    ("test.py", "test", "Python"),
    ("Test_Upper.py", "test", "Python"),
    ("server/handler_test.go", "test", "Go"),
    ("src/button.test.js", "test", "JavaScript"),
    ("src/button.test.jsx", "test", "JavaScript"),
    ("src/button.test.ts", "test", "TypeScript"),
    ("src/button.test.tsx", "test", "TypeScript"),
    ("src/button.test.mjs", "test", "JavaScript"),
    ("src/button.test.cjs", "test", "JavaScript"),
    ("src/button.spec.js", "test", "JavaScript"),
    ("src/app/app.component.spec.ts", "test", "TypeScript"),
    ("src/app.e2e-spec.ts", "test", "TypeScript"),
    ("src/login.e2e.ts", "test", "TypeScript"),
    ("lib/parser-test.js", "test", "JavaScript"),
    # JavaScript / TypeScript conventions (the corpus-js repositories' and others')
    ("index.test-d.ts", "test", "TypeScript"),
    ("src/login.cy.js", "test", "JavaScript"),
    ("src/parser.spec.mjs", "test", "JavaScript"),
    ("src/parser.spec.cts", "test", "TypeScript"),
    ("src/parser.test.mts", "test", "TypeScript"),
    ("lib/move/__tests__/move.test.js", "test", "JavaScript"),
    ("test/fixtures/increments.js", "test", "JavaScript"),
    ("test/specs/new/html_following_list.md", "test", None),
    ("test/specs/new/html_following_list.html", "test", None),
    ("tests/doc/stringify.ts", "test", "TypeScript"),
    ("test/yargs-parser.cjs", "test", "JavaScript"),
    ("tap-snapshots/test/index.js.test.cjs", "test", "JavaScript"),
    ("packages/core/test/setup.ts", "test", "TypeScript"),
    ("packages/core/src/index.ts", "source", "TypeScript"),
    ("test.mjs", "test", "JavaScript"),
    ("src/setupTests.js", "test", "JavaScript"),
    ("src/test-utils.tsx", "test", "TypeScript"),
    ("src/contest.js", "source", "JavaScript"),
    ("src/latest.ts", "source", "TypeScript"),
    ("src/spec.js", "source", "JavaScript"),
    ("src/index.d.ts", "source", "TypeScript"),
    ("jest.config.js", "source", "JavaScript"),
    ("vitest.config.ts", "source", "TypeScript"),
    ("src/component.stories.tsx", "source", "TypeScript"),
    ("pnpm-lock.yaml", "other", None),
    ("pnpm-workspace.yaml", "other", None),
    (".nvmrc", "other", None),
    ("tsconfig.json", "other", None),
    (".mocharc.yml", "other", None),
    ("src/main/FooTest.java", "test", "Java"),
    ("src/main/FooTests.java", "test", "Java"),
    ("src/main/FooIT.java", "test", "Java"),
    ("src/main/TestFoo.java", "test", "Java"),
    ("src/main/FooTestCase.java", "test", "Java"),
    ("Sources/HTTPTest.swift", "test", "Swift"),
    ("src/main/HttpClientTest.kt", "test", "Kotlin"),
    ("src/main/ParserSpec.scala", "test", "Scala"),
    ("src/main/ParserSpec.groovy", "test", "Groovy"),
    ("lib/user_spec.rb", "test", "Ruby"),
    ("lib/user_test.rb", "test", "Ruby"),
    ("src/Foo/BarTest.php", "test", "PHP"),
    ("Src/Foo/BarTests.cs", "test", "C#"),
    ("src/foo/bar_test.exs", "test", "Elixir"),
    ("src/parser_spec.lua", "test", "Lua"),
    ("src/ParserSpec.hs", "test", "Haskell"),
    ("src/test_alloc.c", "test", "C"),
    ("src/alloc_unittest.cc", "test", "C++"),
    ("lib/widget_test.dart", "test", "Dart"),
    ("src/parser_tests.rs", "test", "Rust"),
    # not tests: "test" inside a word, or naming rules on non-code files
    ("attestation.py", "source", "Python"),
    ("src/latest.py", "source", "Python"),
    ("src/Latest.java", "source", "Java"),
    ("src/Contest.kt", "source", "Kotlin"),
    ("src/Testing.java", "source", "Java"),
    ("src/Tester.java", "source", "Java"),
    ("contest/judge.py", "source", "Python"),
    ("latest-release/notes.py", "source", "Python"),
    ("src/testament.py", "source", "Python"),
    ("src/pytest_plugin.py", "source", "Python"),
    ("src/testing.py", "source", "Python"),
    ("src/attest/run.go", "source", "Go"),
    ("lib/inspect.rb", "source", "Ruby"),
    ("src/SPLIT.java", "source", "Java"),
    ("src/SUBMIT.java", "source", "Java"),
    ("src/LATEST.java", "source", "Java"),
    ("src/Protest.java", "source", "Java"),
    (".github/workflows/test.yml", "other", None),
    ("api/api_spec.yaml", "other", None),
    ("test-requirements.txt", "other", None),
    ("tox.ini", "other", None),
    ("pytest.ini", "other", None),
    # docs
    ("README", "docs", None),
    ("README.md", "docs", None),
    ("readme.rst", "docs", None),
    ("README.zh-CN.md", "docs", None),
    ("CHANGELOG", "docs", None),
    ("CHANGES.rst", "docs", None),
    ("HISTORY.md", "docs", None),
    ("LICENSE", "docs", None),
    ("LICENSE-MIT", "docs", None),
    ("License.txt", "docs", None),
    ("COPYING.LESSER", "docs", None),
    ("NEWS", "docs", None),
    ("AUTHORS", "docs", None),
    ("CONTRIBUTING.md", "docs", None),
    ("CODE_OF_CONDUCT.md", "docs", None),
    ("docs/conf.py", "docs", "Python"),
    ("doc/api/index.rst", "docs", None),
    ("Documentation/filesystems/ext4.txt", "docs", None),
    ("site/guide.adoc", "docs", None),
    ("site/guide.asciidoc", "docs", None),
    ("notes.txt", "docs", None),
    ("docs/requirements.txt", "docs", None),
    ("docs/_static/logo.png", "docs", None),
    # well-known names with a code or data extension are not docs
    ("IPython/core/history.py", "source", "Python"),
    ("src/news.go", "source", "Go"),
    ("src/license_check.js", "source", "JavaScript"),
    ("authors.json", "other", None),
    ("readme.png", "other", None),
    # source, by language
    ("setup.py", "source", "Python"),
    ("src/stubs/mod.pyi", "source", "Python"),
    ("src/fast.pyx", "source", "Cython"),
    ("index.js", "source", "JavaScript"),
    ("types/index.d.ts", "source", "TypeScript"),
    ("src/App.vue", "source", "Vue"),
    ("src/App.svelte", "source", "Svelte"),
    ("main.go", "source", "Go"),
    ("src/lib.rs", "source", "Rust"),
    ("src/Main.java", "source", "Java"),
    ("build.gradle.kts", "source", "Kotlin"),
    ("src/Main.scala", "source", "Scala"),
    ("lib/foo.rb", "source", "Ruby"),
    ("lib/tasks/db.rake", "source", "Ruby"),
    ("src/Foo.php", "source", "PHP"),
    ("src/foo.c", "source", "C"),
    ("include/foo.h", "source", "C"),
    ("src/foo.cc", "source", "C++"),
    ("src/foo.cpp", "source", "C++"),
    ("src/foo.cxx", "source", "C++"),
    ("include/foo.hpp", "source", "C++"),
    ("include/foo.hh", "source", "C++"),
    ("src/Foo.cs", "source", "C#"),
    ("Sources/Foo.swift", "source", "Swift"),
    ("Classes/Foo.m", "source", "Objective-C"),
    ("Classes/Foo.mm", "source", "Objective-C++"),
    ("lib/foo.ex", "source", "Elixir"),
    ("src/foo.erl", "source", "Erlang"),
    ("src/Foo.hs", "source", "Haskell"),
    ("src/foo.clj", "source", "Clojure"),
    ("src/foo.lua", "source", "Lua"),
    ("lib/Foo.pm", "source", "Perl"),
    ("script/foo.pl", "source", "Perl"),
    ("R/foo.R", "source", "R"),
    ("src/Foo.jl", "source", "Julia"),
    ("lib/foo.dart", "source", "Dart"),
    ("scripts/install.sh", "source", "Shell"),
    ("src/Foo.fs", "source", "F#"),
    ("src/foo.ml", "source", "OCaml"),
    ("src/main.zig", "source", "Zig"),
    ("src/main.nim", "source", "Nim"),
    ("SRC/MAIN.PY", "source", "Python"),
    # other: config, data, lock files, images, extensionless build files
    ("package.json", "other", None),
    ("package-lock.json", "other", None),
    ("yarn.lock", "other", None),
    ("Cargo.lock", "other", None),
    ("pyproject.toml", "other", None),
    ("setup.cfg", "other", None),
    (".travis.yml", "other", None),
    (".gitignore", "other", None),
    ("Makefile", "other", None),
    ("Dockerfile", "other", None),
    ("CMakeLists.txt", "other", None),
    ("src/CMakeLists.txt", "other", None),
    ("requirements.txt", "other", None),
    ("requirements/dev-requirements.txt", "other", None),
    ("constraints.txt", "other", None),
    ("static/robots.txt", "other", None),
    ("assets/logo.png", "other", None),
    ("data/cities.csv", "other", None),
    ("src/style.css", "other", None),
    ("templates/index.html", "other", None),
    ("proto/api.proto", "other", None),
    # path spelling
    ("./tests/x.py", "test", "Python"),
    ("/abs/src/x.py", "source", "Python"),
    ("src//x.py", "source", "Python"),
]


@pytest.mark.parametrize(("path", "kind", "language"), CASES, ids=[c[0] for c in CASES])
def test_file_kind_and_language(path: str, kind: str, language: str | None) -> None:
    assert file_kind(path) == kind
    assert language_of(path) == language
    assert is_test_path(path) == (kind == "test")
    assert is_docs_path(path) == (kind == "docs")
    assert is_source_path(path) == (kind == "source")


def test_case_table_has_no_duplicates() -> None:
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("directory", sorted(TEST_DIRS))
def test_every_test_directory(directory: str) -> None:
    assert file_kind(f"{directory}/data.bin") == "test"
    assert file_kind(f"pkg/{directory.upper()}/README.md") == "test"
    assert file_kind(f"{directory}.py") != "test" or directory in {"test", "tests"}


@pytest.mark.parametrize("directory", sorted(DOCS_DIRS))
def test_every_docs_directory(directory: str) -> None:
    assert file_kind(f"{directory}/conf.py") == "docs"
    assert file_kind(f"{directory}/images/arch.svg") == "docs"
    assert file_kind(f"{directory}/tests/test_build.py") == "test"


@pytest.mark.parametrize("ext", sorted(DOCS_EXTENSIONS))
def test_every_docs_extension(ext: str) -> None:
    assert file_kind(f"guide/intro.{ext}") == "docs"
    assert language_of(f"guide/intro.{ext}") is None


@pytest.mark.parametrize("ext", sorted(SOURCE_EXTENSIONS))
def test_every_source_extension(ext: str) -> None:
    if ext == "t":  # Perl's *.t files are tests by convention
        assert file_kind("lib/basic.t") == "test"
        return
    assert file_kind(f"src/module.{ext}") == "source"
    assert file_kind(f"src/MODULE.{ext.upper()}") == "source"
    assert file_kind(f"tests/module.{ext}") == "test"
    assert language_of(f"src/module.{ext}") == LANGUAGES[ext]


def test_tables_are_immutable_and_consistent() -> None:
    for table in (SOURCE_EXTENSIONS, TEST_DIRS, DOCS_DIRS, DOCS_EXTENSIONS):
        assert isinstance(table, frozenset)
        assert all(item == item.lower() and not item.startswith(".") for item in table)
    assert set(LANGUAGES) == SOURCE_EXTENSIONS
    assert not SOURCE_EXTENSIONS & DOCS_EXTENSIONS
    assert {
        "Python",
        "JavaScript",
        "TypeScript",
        "Go",
        "Rust",
        "Java",
        "Kotlin",
        "Ruby",
        "PHP",
        "C",
        "C++",
        "C#",
        "Swift",
        "Scala",
    } <= set(LANGUAGES.values())


@pytest.mark.parametrize("path", ["", "/", ".", ".."])
def test_not_a_file_path(path: str) -> None:
    with pytest.raises(ValueError, match="not a file path"):
        file_kind(path)
    with pytest.raises(ValueError, match="not a file path"):
        language_of(path)


# GitHub file patches (hunks only) of src/lib.rs
FIX_HUNK = (
    "@@ -3,7 +3,7 @@ pub fn add(a: i32, b: i32) -> i32 {\n"
    "     let x = 1;\n-    a - b\n+    a + b\n }\n"
)
IN_TEST_MODULE = (
    "@@ -40,6 +40,7 @@ mod tests {\n"
    "     fn adds() {\n-        assert!(f());\n+        assert!(g());\n     }\n"
)
NEW_TEST = (
    "@@ -60,3 +60,8 @@ fn last() {\n"
    " }\n+\n+#[cfg(test)]\n+mod more {\n+    #[test]\n+    fn t() {}\n+}\n"
)
TEST_IN_A_STRING = '@@ -1,2 +1,3 @@\n fn a() {\n+    let s = "#[test] fn x() {}";\n }\n'


def test_inline_test_lines_of_a_github_patch() -> None:
    assert inline_test_language("src/lib.rs") is not None
    # a test file's tests are its path's; Python keeps its tests in test files
    assert inline_test_language("tests/it.rs") is None and inline_test_language("a.py") is None
    assert inline_test_lines("src/lib.rs", FIX_HUNK) == 0
    assert inline_test_lines("src/lib.rs", IN_TEST_MODULE) == 2  # git's context names it
    assert inline_test_lines("src/lib.rs", NEW_TEST) == 6
    assert inline_test_lines("src/lib.rs", FIX_HUNK + IN_TEST_MODULE + NEW_TEST) == 8
    assert inline_test_lines("src/lib.rs", TEST_IN_A_STRING) == 0
    assert inline_test_lines("src/lib.rs", None) == 0
    assert inline_test_lines("src/lib.py", NEW_TEST) == 0
