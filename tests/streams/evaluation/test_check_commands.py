"""The check command of one test id (checks.txt, ``harness --isolate-tests``) and the file a
test id names, for each runner of the registry: pure functions, no Docker. The JS selections
are checked as JavaScript reads them, in a Node image."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from streams.evaluation.log_parsers import RUNNER_COMMANDS, check_command, file_of
from streams.evaluation.recipes.languages.javascript.runners.commands import js_regex
from streams.evaluation.recipes.languages.javascript.runners.js import with_files


@pytest.mark.unit
@pytest.mark.parametrize(
    ("test_id", "language", "file"),
    [
        ("tests/test_a.py::test_x[1-2]", "Python", "tests/test_a.py"),
        ("tests/test_a.py::TestA::test_x", "Python", "tests/test_a.py"),
        ("test/math.test.js > add > adds two numbers", "JavaScript", "test/math.test.js"),
        ("src/__tests__/a.spec.tsx > renders", "TypeScript", "src/__tests__/a.spec.tsx"),
        ("test/index.mjs > a > b", "JavaScript", "test/index.mjs"),
        ("adds two numbers", "JavaScript", None),  # a runner's id without its file
        ("math > adds", "JavaScript", None),  # names only: no file extension
        ("test/fixtures/a.json > x", "JavaScript", None),
    ],
)
def test_the_file_a_test_id_names(test_id: str, language: str, file: str | None) -> None:
    assert file_of(test_id, language) == file


@pytest.mark.unit
def test_pytest_ids_are_appended_whole() -> None:
    assert check_command("pytest -q", "pytest", "tests/t.py::test_x[a b]") == (
        "pytest -q 'tests/t.py::test_x[a b]'"
    )


@pytest.mark.unit
def test_jest_vitest_and_mocha_select_the_full_name_then_the_file() -> None:
    test_id = "test/a.test.js > parse (strict) > reads a.b"
    for runner, option in (("jest", "--testNamePattern"), ("vitest", "--testNamePattern"),
                           ("mocha", "--grep")):  # fmt: skip
        words = shlex.split(check_command("RUN", runner, test_id))
        assert words == ["RUN", option, r"^parse \(strict\) reads a\.b$", "test/a.test.js"]


@pytest.mark.unit
def test_node_selects_the_title_and_reads_its_own_line_of_the_reporter() -> None:
    command = check_command("node --test", "node", 'test/t.test.js > say "hi" > boiling point')
    runner, grep_pass, grep_path = command.split(" | ")
    assert shlex.split(runner) == [
        "node", "--test", "--test-name-pattern=^boiling point$", "test/t.test.js",
    ]  # fmt: skip
    assert shlex.split(grep_pass) == ["grep", "-F", '"event":"pass"']
    # the line node's reporter writes (JSON.stringify): that title path, passed, not skipped
    line = json.dumps({"event": "pass", "file": "/testbed/test/t.test.js",
                       "path": ['say "hi"', "boiling point"], "skip": False, "todo": False},
                      separators=(",", ":"))  # fmt: skip
    needle = shlex.split(grep_path)[-1]
    assert needle in line
    other = line.replace('say \\"hi\\"', "other")
    assert needle not in other


@pytest.mark.unit
def test_tap_greps_each_level_ava_matches_the_title_uvu_runs_the_file() -> None:
    tap = shlex.split(check_command("npx tap", "tap", "test/a.js > group > case 1"))
    assert tap == ["npx", "tap", "--grep=^group$", "--grep=^case 1$", "test/a.js"]
    ava = shlex.split(check_command("npx ava", "ava", "test/a.js > adds"))
    assert ava == ["npx", "ava", "--match", "adds", "test/a.js"]
    # uvu selects nothing: the file runs whole, the line uvu is made to print is looked for
    uvu = check_command("RUN", "uvu", "test/a.js > toKm > adds")
    assert uvu == 'RUN test/a.js | grep -qxF \'[swe-stream-uvu] pass ["toKm","adds"]\''
    default_suite = check_command("RUN", "uvu", "test/a.js > adds")
    assert default_suite.endswith("""pass [\"\",\"adds\"]'""")
    assert RUNNER_COMMANDS["uvu"].select is None


@pytest.mark.unit
@pytest.mark.parametrize("runner", sorted(RUNNER_COMMANDS))
def test_a_check_is_one_line_whatever_the_title(runner: str) -> None:
    """cookie#253: vitest's title ``should throw for invalid name: foo\\n`` (a line break in
    it); a check command is one line of checks.txt."""
    command = check_command("RUN", runner, "src/a.spec.ts > cookie > invalid name: foo\n")
    assert "\n" not in command and "src/a.spec.ts" in command


@pytest.mark.unit
def test_ids_without_their_file_get_the_file_of_the_run() -> None:
    """ava names no file when one file runs, and its file title (path under the test
    directory, no extension) when several do; mocha's console none."""
    one = with_files({"toKm converts": "failed", "t/a.js > x": "passed"}, ["test/units.test.js"])
    assert one == {"test/units.test.js > toKm converts": "failed", "t/a.js > x": "passed"}
    files = ["test/math.test.js", "test/sub/strings.js"]
    several = with_files({"math.test > adds": "passed", "sub > strings > trims": "failed",
                          "elsewhere > x": "skipped"}, files)  # fmt: skip
    assert several == {
        "test/math.test.js > adds": "passed",
        "test/sub/strings.js > trims": "failed",
        "elsewhere > x": "skipped",
    }
    assert with_files({"a": "passed"}, []) == {"a": "passed"}


@pytest.mark.docker
def test_the_selections_are_regular_expressions_javascript_reads_as_meant(
    node_images: dict[str, str],
) -> None:
    names = ["a.b (c) [d] {e} *f+ ?g ^h $i |j \\k /l", "ünïcode — title:\tfoo\n"]
    full, title = js_regex(" ".join(names)), js_regex(names[-1])
    script = (
        "const [full, title, name, last] = JSON.parse(process.argv[1]);"
        "const out = [new RegExp(full).test(name), new RegExp(full, 'u').test(name),"
        " new RegExp(title).test(last), new RegExp(full).test(name + 'x'),"
        " new RegExp(title).test('x' + last)];"
        "process.stdout.write(JSON.stringify(out));"
    )
    argument = json.dumps([full, title, " ".join(names), names[-1]])
    image = node_images["18"]  # the oldest Node there is an image of
    done = subprocess.run(
        ["docker", "run", "--rm", "--network=none", image, "node", "-e", script, argument],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, True, True, False, False]
