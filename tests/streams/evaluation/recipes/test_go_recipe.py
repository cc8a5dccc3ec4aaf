"""Go's recipes from trees the tests make (git archives of real git repositories): which modules
are installed and tested, which go image, which toolchain is fetched, how the tests and one
test are run; and ``swe-go-test`` running packages of two modules with the host's real go."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streams.evaluation.log_parsers import check_command, file_of
from streams.evaluation.recipes.infer import infer_recipes
from streams.evaluation.recipes.languages import language_named, language_of
from streams.evaluation.recipes.languages.go.recipe import RUNNER_SCRIPT
from streams.evaluation.recipes.languages.go.runners.gotest import parse_go_test_json
from streams.evaluation.recipes.model import TreeFiles

pytestmark = pytest.mark.unit

GO_IMAGES = {
    "1.19": "swe-stream/go:bookworm",
    "1.24": "swe-stream/go:trixie",
    "1.27": "swe-stream/go:forky",
}
LIB = "package lib\n\nfunc Double(x int) int { return 2 * x }\n"
LIB_TEST = (
    'package lib\n\nimport "testing"\n\n'
    "func TestDouble(t *testing.T) {\n"
    '\tt.Run("two", func(t *testing.T) {\n'
    "\t\tif Double(2) != 4 {\n\t\t\tt.Fatal(Double(2))\n\t\t}\n\t})\n}\n"
)


def tree_of(tmp_path: Path, files: dict[str, str]) -> TreeFiles:
    """The tree of a git repository holding ``files``, as ``git archive`` gives it."""
    root = tmp_path / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    return TreeFiles(
        subprocess.run([*git, "archive", "HEAD"], check=True, capture_output=True).stdout
    )


def go_mod(module: str, go: str = "1.18", extra: str = "") -> str:
    return f"module {module}\n\ngo {go}\n{extra}"


def test_a_go_module_is_go_before_python_and_javascript(tmp_path: Path) -> None:
    tree = tree_of(
        tmp_path,
        {
            "go.mod": go_mod("example.com/m"),
            "lib.go": LIB,
            "scripts/gen.py": "print('generated')\n",
            "docs/package.json": '{"name": "docs"}\n',
        },
    )
    language = language_of(tree)
    assert language is not None and language.name == "Go"


def test_the_oldest_go_the_module_accepts_then_newer_ones(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"go.mod": go_mod("example.com/m", "1.21.3"), "lib.go": LIB})
    recipes, _ = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES})
    assert [r.base_image for r in recipes] == ["swe-stream/go:trixie", "swe-stream/go:forky"]
    first = recipes[0]
    assert first.language == "Go" and first.test_runner == "go-test"
    assert first.test_command == "go test -count=1 -json -vet=off"
    assert first.dependency_files == {"go.mod": go_mod("example.com/m", "1.21.3").encode()}
    assert "GOTOOLCHAIN" not in first.variables and first.variables["CGO_ENABLED"] == "0"
    assert "go mod download" in first.env_commands[0]
    # std is compiled in the toolchain image (cgo off): not again in the env layer
    assert not [c for c in first.env_commands if "go build std" in c]


def test_a_toolchain_newer_than_every_image_is_fetched_over_the_newest(tmp_path: Path) -> None:
    mod = go_mod("example.com/m", "1.21", "\ntoolchain go1.27.4\n")
    tree = tree_of(tmp_path, {"go.mod": mod, "lib.go": LIB})
    (recipe,) = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES})[0]
    assert recipe.base_image == "swe-stream/go:forky"
    assert recipe.variables["GOTOOLCHAIN"] == "go1.27.4"
    # the fetched toolchain's std compiled once, in the env layer, after its download
    assert "go build std" in recipe.env_commands[-1]
    language = language_named("Go")
    assert language is not None and language.interpreter(recipe) == "go 1.27.4"
    # only the images of older gos built: the newest of them fetches it
    older = {k: v for k, v in GO_IMAGES.items() if k != "1.27"}
    (recipe,) = infer_recipes(tree, repo="o/m", images={"go": older})[0]
    assert (recipe.base_image, recipe.variables["GOTOOLCHAIN"]) == (
        "swe-stream/go:trixie",
        "go1.27.4",
    )


def test_no_go_image_no_recipe(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"go.mod": go_mod("example.com/m"), "lib.go": LIB})
    assert infer_recipes(tree, repo="o/m", images={})[0] == []


def test_a_nested_module_the_pr_touches_is_installed_and_run_from_its_own_directory(
    tmp_path: Path,
) -> None:
    tree = tree_of(
        tmp_path,
        {
            "go.mod": go_mod("example.com/root"),
            "lib.go": LIB,
            "tools/go.mod": go_mod("example.com/root/tools", "1.22"),
            "tools/go.sum": "",
            "tools/tool.go": "package tools\n",
            "_examples/x/go.mod": go_mod("example.com/x"),
        },
    )
    changed = ["tools/tool.go", "tools/tool_test.go"]
    recipes, _ = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES}, changed_files=changed)
    recipe = recipes[0]
    assert set(recipe.dependency_files) == {"go.mod", "tools/go.mod", "tools/go.sum", RUNNER_SCRIPT}
    assert recipe.base_image == "swe-stream/go:trixie"  # the nested module's go 1.22
    assert recipe.test_command.startswith(f"python3 /opt/swe-env/{RUNNER_SCRIPT} ")
    # without the nested module, one module: go itself
    root_only = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES}, changed_files=["lib.go"])
    assert root_only[0][0].test_command == "go test -count=1 -json -vet=off"


def test_a_workspace_runs_its_modules_with_go_itself(tmp_path: Path) -> None:
    tree = tree_of(
        tmp_path,
        {
            "go.work": "go 1.18\n\nuse (\n\t.\n\t./plugin\n)\n",
            "go.mod": go_mod("example.com/core"),
            "core.go": "package core\n",
            "plugin/go.mod": go_mod("example.com/plugin"),
            "plugin/plugin.go": "package plugin\n",
        },
    )
    changed = ["plugin/plugin.go", "plugin/plugin_test.go"]
    recipes, _ = infer_recipes(tree, repo="o/w", images={"go": GO_IMAGES}, changed_files=changed)
    recipe = recipes[0]
    assert recipe.test_command == "go test -count=1 -json -vet=off"
    assert set(recipe.dependency_files) == {"go.mod", "plugin/go.mod"}
    assert "go.work" in recipe.sources


def test_cgo_only_where_a_source_imports_c(tmp_path: Path) -> None:
    cgo = 'package lib\n\n// #include <stdlib.h>\nimport "C"\n'
    tree = tree_of(tmp_path, {"go.mod": go_mod("example.com/m"), "lib.go": LIB, "c.go": cgo})
    recipe = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES})[0][0]
    assert recipe.variables["CGO_ENABLED"] == "1" and "gcc" in recipe.system_packages
    assert "go build std" in recipe.env_commands[-1]  # the image's std is cgo off


ID = "example.com/m/pkg/TestParse/empty_input"


def test_ids_name_their_package_and_run_alone() -> None:
    assert file_of(ID, "Go") == "example.com/m/pkg"
    # each recipe's ids are read by its own language alone
    assert file_of("tests/test_x.py::TestParse", "Python") == "tests/test_x.py"
    assert file_of("test/a.test.js > Test > it", "JavaScript") == "test/a.test.js"
    assert file_of(ID, "Fortran") is None  # no such language: no file
    command = check_command("go test -count=1 -json -vet=off", "go-test", ID)
    assert command == (
        "go test -count=1 -json -vet=off '-run=^TestParse$/^empty_input$' example.com/m/pkg"
    )


def test_the_fingerprint_reads_go_mod_go_sum_and_go_work() -> None:
    language = language_named("Go")
    assert language is not None
    names = ["go.mod", "go.sum", "go.work", "sub/go.mod", "vendor/x/go.mod", "main.go", "a_test.go"]
    assert language.fingerprint_files(names) == ["go.mod", "go.sum", "go.work", "sub/go.mod"]


@functools.cache
def _host_go_cache(go: str) -> str:
    """The build cache the host's go uses (``go env GOCACHE``)."""
    return subprocess.run(
        [go, "env", "GOCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _run_swe_go_test(tmp_path: Path, *args: str) -> tuple[int, dict[str, str]]:
    """swe-go-test run with the host's go, offline, in the repository ``tree_of`` made."""
    script = Path(__file__).parents[4] / "streams/evaluation/recipes/languages/go/swe_go_test.py"
    go = shutil.which("go")
    assert go is not None, "the host's go (the machines have one) runs the script here"
    env = {
        "PATH": f"{Path(go).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GOPROXY": "off",  # nothing to download: the modules have no requirement
        "GOTOOLCHAIN": "local",
        # the host's build cache (content-addressed, safe to share): a cache of the test's
        # own compiled std again in each test, 30 s of CPU apiece
        "GOCACHE": _host_go_cache(go),
    }
    done = subprocess.run(
        [sys.executable, str(script), "-count=1", "-json", *args],
        cwd=tmp_path / "repo", env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, dict(parse_go_test_json(done.stdout))


def test_swe_go_test_runs_the_packages_of_two_modules_each_from_its_module(tmp_path: Path) -> None:
    """The runner script with the host's go, offline: a root module and a nested one without a
    workspace; targets as directories and as import paths (a check command's)."""
    tree_of(
        tmp_path,
        {
            "go.mod": go_mod("example.com/root"),
            "lib.go": LIB,
            "lib_test.go": LIB_TEST,
            "tools/go.mod": go_mod("example.com/tools"),
            "tools/lib.go": LIB,
            "tools/lib_test.go": LIB_TEST.replace("Double(2) != 4", "Double(2) != 5"),
        },
    )
    code, statuses = _run_swe_go_test(tmp_path, ".", "./tools")
    assert code == 1  # the nested module's test fails
    assert statuses == {
        "example.com/root/TestDouble": "passed",
        "example.com/root/TestDouble/two": "passed",
        "example.com/tools/TestDouble": "failed",
        "example.com/tools/TestDouble/two": "failed",
    }
    code, statuses = _run_swe_go_test(tmp_path, "-run=^TestDouble$/^two$", "example.com/root")
    assert code == 0 and set(statuses) == {
        "example.com/root/TestDouble",
        "example.com/root/TestDouble/two",
    }


def test_swe_go_test_runs_a_module_the_workspace_does_not_use_outside_it(tmp_path: Path) -> None:
    """A go.work that uses the root module and a tests module, and a plugin module it does not
    use (go refuses to run that one in the workspace): each runs, the plugin's with GOWORK=off,
    the others' in the workspace (the tests module reaches the root's code through it)."""
    tree_of(
        tmp_path,
        {
            "go.work": "go 1.18\n\nuse (\n\t.\n\t./tests\n)\n",
            "go.mod": go_mod("example.com/root"),
            "lib.go": LIB,
            "tests/go.mod": go_mod(
                "example.com/tests", extra="\nrequire example.com/root v0.0.0\n"
            ),
            "tests/lib_test.go": 'package tests\n\nimport (\n\t"testing"\n\n\t'
            'lib "example.com/root"\n)\n\n'
            "func TestRoot(t *testing.T) {\n\tif lib.Double(3) != 6 {\n\t\tt.Fatal()\n\t}\n}\n",
            "plugins/kdl/go.mod": go_mod("example.com/root/plugins/kdl"),
            "plugins/kdl/lib.go": LIB,
            "plugins/kdl/lib_test.go": LIB_TEST,
        },
    )
    code, statuses = _run_swe_go_test(tmp_path, "./tests", "./plugins/kdl")
    assert code == 0, statuses
    assert statuses == {
        "example.com/tests/TestRoot": "passed",
        "example.com/root/plugins/kdl/TestDouble": "passed",
        "example.com/root/plugins/kdl/TestDouble/two": "passed",
    }


def _git_diff(root: Path, files: dict[str, str]) -> str:
    """The ``git diff`` of writing ``files`` into the repository at ``root`` (new ones too)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return subprocess.run(
        ["git", "-C", str(root), "diff", "--cached"], check=True, capture_output=True, text=True
    ).stdout


def test_a_module_the_pr_adds_outside_the_workspace_is_installed_and_run_as_its_own(
    tmp_path: Path,
) -> None:
    """A PR that adds a plugin module (its go.mod, go.sum and code) to a repository whose
    go.work does not use it: the module's files go to the env layer to be downloaded, its
    packages run through swe-go-test (from its own directory), and the base's build step
    does not enter the directory the base lacks."""
    tree = tree_of(
        tmp_path,
        {"go.mod": go_mod("example.com/m"), "go.work": "go 1.18\n\nuse .\n", "lib.go": LIB},
    )
    plugin_mod = go_mod("example.com/m/plugins/kdl", "1.21", "\nrequire example.com/dep v1.0.0\n")
    plugin_sum = "example.com/dep v1.0.0 h1:abc=\nexample.com/dep v1.0.0/go.mod h1:def=\n"
    test_patch = _git_diff(tmp_path / "repo", {"plugins/kdl/kdl_test.go": LIB_TEST})
    fix = _git_diff(
        tmp_path / "repo",
        {
            "plugins/kdl/go.mod": plugin_mod,
            "plugins/kdl/go.sum": plugin_sum,
            "plugins/kdl/lib.go": LIB,
        },
    )
    changed = [
        "plugins/kdl/go.mod",
        "plugins/kdl/go.sum",
        "plugins/kdl/lib.go",
        "plugins/kdl/kdl_test.go",
    ]
    recipes, _ = infer_recipes(
        tree, repo="o/m", images={"go": GO_IMAGES}, changed_files=changed, diffs=(test_patch, fix)
    )
    recipe = recipes[0]
    assert recipe.dependency_files["plugins/kdl/go.mod"] == plugin_mod.encode()
    assert recipe.dependency_files["plugins/kdl/go.sum"] == plugin_sum.encode()
    assert RUNNER_SCRIPT in recipe.dependency_files and RUNNER_SCRIPT in recipe.test_command
    assert recipe.sources[:2] == ("go.mod", "plugins/kdl/go.mod")
    assert "go:1.24" in recipe.sources  # the added module asks for go 1.21: 1.19 is too old
    assert not any("plugins/kdl" in step for step in recipe.install_commands)
    assert "plugins/kdl" in recipe.env_commands[0]
    # the same PR's recipe without its diffs: the base's module alone, run by go test
    base, _ = infer_recipes(tree, repo="o/m", images={"go": GO_IMAGES}, changed_files=changed)
    assert "plugins/kdl/go.mod" not in base[0].dependency_files
    assert base[0].test_command.startswith("go test")


def test_the_tests_a_patch_changes_are_read_off_its_hunks(tmp_path: Path) -> None:
    """A real ``git diff``: one test's body changed (its hunk header names it), one added
    after an unchanged one, a helper changed (no test), a file of a nested module."""
    before = (
        'package lib\n\nimport "testing"\n\n'
        "func helper() int { return 1 }\n\n"
        "func TestKept(t *testing.T) {\n\tif helper() != 1 {\n\t\tt.Fatal()\n\t}\n}\n\n"
        + "\n".join(f"// line {n}" for n in range(12))
        + "\n\nfunc TestChanged(t *testing.T) {\n\tx := 1\n\t_ = x\n\tt.Log(x)\n\tt.Log(x)\n}\n"
    )
    after = (
        before.replace("\tt.Log(x)\n}\n", "\tt.Log(x + 1)\n}\n")
        + '\nfunc TestAdded(t *testing.T) {\n\tt.Run("sub", func(t *testing.T) {})\n}\n'
    )
    files = {"go.mod": go_mod("example.com/m"), "lib_test.go": before, "tools/go.mod":
             go_mod("example.com/tools"), "tools/x_test.go": before}  # fmt: skip
    tree = tree_of(tmp_path, files)
    root = tmp_path / "repo"
    (root / "lib_test.go").write_text(after)
    (root / "tools/x_test.go").write_text(before.replace("return 1", "return 2"))
    patch = subprocess.run(
        ["git", "-C", str(root), "diff"], check=True, capture_output=True, text=True
    ).stdout
    language = language_named("Go")
    assert language is not None
    assert language.tests_changed(tree, patch) == [
        "example.com/m/TestChanged",
        "example.com/m/TestAdded",
    ]  # the helper of tools/ is no test


WORKFLOW = """on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: go test -race ./...
      - run: |
          go vet ./...
          go test -tags binary_log -race ./...
"""


def test_build_tags_as_the_repositorys_ci_tests_with_them(tmp_path: Path) -> None:
    """CI tests twice, the second run with ``-tags binary_log``: a PR changing a file only that
    run builds (``//go:build binary_log``) is tested with the tag; another PR without it; a CI
    whose every run passes ``-tags=integration`` always with it."""
    files = {
        "go.mod": go_mod("example.com/log"),
        "json.go": "//go:build !binary_log\n\npackage log\n",
        "cbor.go": "// Package log.\n\n//go:build binary_log\n\npackage log\n",
        ".github/workflows/test.yml": WORKFLOW,
    }
    tree = tree_of(tmp_path / "a", files)

    def tested_with(changed: list[str], tree: TreeFiles = tree) -> str:
        recipe = infer_recipes(tree, repo="o/l", images={"go": GO_IMAGES}, changed_files=changed)
        return recipe[0][0].test_command

    assert tested_with(["cbor.go"]).endswith(" -tags=binary_log")
    assert tested_with(["json.go"]) == "go test -count=1 -json -vet=off"
    always = {**files, ".github/workflows/test.yml": WORKFLOW.replace(
        "go test -race ./...", "go test -tags=integration ./...").replace(
        "-tags binary_log", "-tags 'integration binary_log'")}  # fmt: skip
    assert tested_with(["json.go"], tree_of(tmp_path / "b", always)).endswith(" -tags=integration")
