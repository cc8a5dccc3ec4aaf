"""Go end to end: repositories the tests make with git in the set-up styles of real Go projects,
each with a PR that fixes a bug and adds the tests that show it, through extract and the
validate stage (real Docker, Debian's golang images, modules and toolchains through the real Go
module proxy), validated with three runs; exported as task directories, the harness resolves
each with the gold patch; for the first, not with a patch that fixes nothing either, and
``swe-stream validate``'s check finds the empty patch unresolved (the gradings are the
harness's, the same in every language).

The four styles: a module with a table test's subtests reading ``testdata/``; a ``go.work``
workspace of two modules, the PR in the second; a test patch that does not compile without the
fix (its package's old tests are PASS_TO_PASS, not FAIL_TO_PASS); a module pinning
``toolchain go1.27.4``, newer than every Debian golang (forky's is 1.27.3), fetched through the
module proxy and run offline."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet, ScoredTask, ValidatedTask
from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.harness import HarnessEngine, HarnessOptions
from streams.evaluation.predictions import Prediction
from streams.evaluation.sandbox import Limits
from streams.evaluation.taskdir import write_task_dir
from streams.evaluation.validator import Validator, validate_task_dirs
from streams.offline.local_repo import make_pull_request_repo
from tests.agents.repo_tasks import classified_for
from tests.conftest import SWE_STREAM
from tests.workers import worker_env

pytestmark = pytest.mark.docker

NOT_A_FIX = (
    "diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n"
    "+++ b/NOTES.md\n@@ -0,0 +1 @@\n+not a fix\n"
)


def docker_settings(
    base_image: str, images: dict[str, str], toolchain: str = "go"
) -> DockerSettings:
    """The settings of an end-to-end run with ``images`` as ``docker.<toolchain>_images``."""
    return DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        **{f"{toolchain}_images": images},
        cache_level="env",
        memory_mb=3072,
        cpus=2,
    )


def validate_and_grade(
    tmp_path: Path,
    repo: str,
    base: dict[str, str],
    fix: dict[str, str | None],
    docker_client: Any,
    base_image: str,
    images: dict[str, str],
    toolchain: str = "go",
    graded_wrong: bool = False,
    graded_empty: bool = False,
    revalidate: bool = False,
) -> ValidatedTask:
    """The PR validated (its task), exported; then graded by the harness with the gold patch
    (resolved). ``images``: the toolchain's (``docker.<toolchain>_images``). Each grading builds
    the task's image again, so the others are asked for: ``graded_wrong``, a patch that fixes
    nothing (unresolved: the grading is the harness's, the same in every language, and each
    language's demo grades a do-nothing agent unresolved); ``graded_empty``, an empty patch
    (unresolved); ``revalidate``, ``swe-stream validate``'s check too (the gold patch resolves
    it, the empty patch does not)."""
    pr = make_pull_request_repo(tmp_path / "git", repo=repo, base_files=base, pr_files=fix)
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    docker = docker_settings(base_image, images, toolchain)
    validator = Validator(
        repos, lambda: docker_client, docker, ValidateSettings(runs=1, test_timeout_seconds=300), 1
    )

    async def validated() -> ValidatedTask:
        (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
        assert isinstance(patches, PatchSet)
        outcome = await ValidateStage(validator)(patches)
        assert outcome.status == "accepted", outcome.reason
        (task,) = outcome.outputs
        assert isinstance(task, ValidatedTask)
        return task

    task = asyncio.run(validated())
    assert task.validation is not None and task.validation.base is not None  # three runs
    scored = ScoredTask(
        **task.model_dump(), quality_score=0.9, quality_reasoning="r", accepted=True
    )
    workspace = TaskWorkspace.from_scored(scored, "task")
    write_task_dir(tmp_path / "tasks", workspace)
    engine = HarnessEngine(
        validator,
        HarnessOptions(output_dir=tmp_path / "results", test_timeout_seconds=300.0),
        Limits.from_settings(docker),
    )
    iid = task.instance_id
    gold = engine.evaluate_instance(
        tmp_path / "tasks" / "task", Prediction(iid, "gold", task.patch)
    )
    assert gold.result.status == "resolved", gold.result
    if graded_wrong:
        wrong = engine.evaluate_instance(
            tmp_path / "tasks" / "task", Prediction(iid, "m", NOT_A_FIX)
        )
        assert wrong.result.status == "unresolved", wrong.result
    if graded_empty:
        empty = engine.evaluate_instance(tmp_path / "tasks" / "task", Prediction(iid, "e", ""))
        assert empty.result.status == "unresolved", empty.result
    if not revalidate:
        return task
    (report,) = validate_task_dirs(tmp_path / "tasks", validator)
    assert (report["gold_resolved"], report["empty_resolved"]) == (True, False), report
    return task


PARSE = """package parse

import (
	"strconv"
	"strings"
)

// Number reads a decimal integer; a leading '-' makes it negative.
func Number(text string) (int, error) {
	text = strings.TrimSpace(text)
	return strconv.Atoi(strings.TrimPrefix(text, "-"))
}
"""
PARSE_TEST = """package parse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, name := range []string{%s} {
		name := name
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(string(data), "\\n", 2)
			got, err := Number(lines[0])
			if err != nil || strings.TrimSpace(lines[1]) != strconvItoa(got) {
				t.Errorf("Number(%%q) = %%d, %%v; want %%s", lines[0], got, err, lines[1])
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	if _, err := Number(""); err == nil {
		t.Error("no error for an empty text")
	}
}
"""
HELPER = """package parse

import "strconv"

func strconvItoa(n int) string { return strconv.Itoa(n) }
"""
PARSE_IMPORT = "example.com/calc/parse"


def test_subtests_and_testdata(
    tmp_path: Path, docker_client: Any, base_image: str, go_images: dict[str, str]
) -> None:
    base = {
        "go.mod": "module example.com/calc\n\ngo 1.19\n",
        "parse/parse.go": PARSE,
        "parse/helper_test.go": HELPER,
        "parse/parse_test.go": PARSE_TEST % '"plain"',
        "parse/testdata/plain.txt": "42\n42\n",
        "README.md": "calc\n",
    }
    fix = {
        "parse/parse.go": PARSE.replace(
            'return strconv.Atoi(strings.TrimPrefix(text, "-"))',
            "return strconv.Atoi(text)",
        ),
        "parse/parse_test.go": PARSE_TEST % '"plain", "negative"',
        "parse/testdata/negative.txt": "-7\n-7\n",
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/calc-go", base, fix, docker_client, base_image, go_images,
        graded_wrong=True, revalidate=True,
    )  # fmt: skip
    assert [
        f"{PARSE_IMPORT}/TestNumber",
        f"{PARSE_IMPORT}/TestNumber/negative",
    ] == task.FAIL_TO_PASS
    assert [f"{PARSE_IMPORT}/TestEmpty", f"{PARSE_IMPORT}/TestNumber/plain"] == task.PASS_TO_PASS
    assert task.install_config is not None
    assert task.install_config.base_image == "swe-stream/go:bookworm"
    assert task.checks[0] == (
        "go test -count=1 -json -vet=off '-run=^TestNumber$' example.com/calc/parse"
    )


CORE = 'package core\n\n// Greeting is what the plugins say.\nconst Greeting = "hello"\n'
PLUGIN = """package plugin

import "example.com/core"

// Shout says the greeting louder.
func Shout() string { return core.Greeting + "?" }
"""
PLUGIN_TEST = """package plugin

import "testing"

func TestLength(t *testing.T) {
	if len(Shout()) != 6 {
		t.Error(Shout())
	}
}
"""
SHOUT_TEST = """
func TestShout(t *testing.T) {
	if Shout() != "hello!" {
		t.Error(Shout())
	}
}
"""


def test_a_go_work_workspace_of_two_modules(
    tmp_path: Path, docker_client: Any, base_image: str, go_images: dict[str, str]
) -> None:
    base = {
        "go.work": "go 1.19\n\nuse (\n\t.\n\t./plugin\n)\n",
        "go.mod": "module example.com/core\n\ngo 1.19\n",
        "core.go": CORE,
        "plugin/go.mod": (
            "module example.com/plugin\n\ngo 1.19\n\nrequire example.com/core v0.0.0\n\n"
            "replace example.com/core => ../\n"
        ),
        "plugin/plugin.go": PLUGIN,
        "plugin/plugin_test.go": PLUGIN_TEST,
    }
    fix = {
        "plugin/plugin.go": PLUGIN.replace('"?"', '"!"'),
        "plugin/plugin_test.go": PLUGIN_TEST + SHOUT_TEST,
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/workspace-go", base, fix, docker_client, base_image, go_images
    )
    assert task.FAIL_TO_PASS == ["example.com/plugin/TestShout"]
    assert task.PASS_TO_PASS == ["example.com/plugin/TestLength"]


SHAPES = """package shapes

// Square is a square of side Side.
type Square struct{ Side float64 }

// Area of the square.
func (s Square) Area() float64 { return s.Side * s.Side }
"""
SHAPES_TEST = """package shapes

import "testing"

func TestArea(t *testing.T) {
	if (Square{3}).Area() != 9 {
		t.Error("area")
	}
}
"""
PERIMETER_TEST = """
func TestPerimeter(t *testing.T) {
	if (Square{3}).Perimeter() != 12 {
		t.Error("perimeter")
	}
}
"""


def test_a_test_patch_that_does_not_compile_without_the_fix(
    tmp_path: Path, docker_client: Any, base_image: str, go_images: dict[str, str]
) -> None:
    base = {
        "go.mod": "module example.com/shapes\n\ngo 1.19\n",
        "shapes.go": SHAPES,
        "shapes_test.go": SHAPES_TEST,
    }
    fix = {
        "shapes.go": SHAPES + "\n// Perimeter of the square.\n"
        "func (s Square) Perimeter() float64 { return 4 * s.Side }\n",
        "shapes_test.go": SHAPES_TEST + PERIMETER_TEST,
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/shapes-go", base, fix, docker_client, base_image, go_images
    )
    # TestArea is missing from the test patch's run (the package did not build) and passed at
    # the base: PASS_TO_PASS, not FAIL_TO_PASS
    assert task.FAIL_TO_PASS == ["example.com/shapes/TestPerimeter"]
    assert task.PASS_TO_PASS == ["example.com/shapes/TestArea"]
    assert task.validation is not None
    assert task.validation.base == {"example.com/shapes/TestArea": "passed"}
    assert task.validation.before == {}


VERSION_TEST = """package pinned

import (
	"runtime"
	"testing"
)

func TestToolchain(t *testing.T) {
	if runtime.Version() != "go1.27.4" {
		t.Error(runtime.Version())
	}
}
"""


def test_a_toolchain_newer_than_debians_golang(
    tmp_path: Path, docker_client: Any, base_image: str, go_images: dict[str, str]
) -> None:
    base = {
        "go.mod": "module example.com/pinned\n\ngo 1.21\n\ntoolchain go1.27.4\n",
        "pinned.go": "package pinned\n\n// Half of n.\nfunc Half(n int) int { return n / 3 }\n",
        "version_test.go": VERSION_TEST,
    }
    fix = {
        "pinned.go": base["pinned.go"].replace("n / 3", "n / 2"),
        "half_test.go": 'package pinned\n\nimport "testing"\n\nfunc TestHalf(t *testing.T) {\n'
        "\tif Half(8) != 4 {\n\t\tt.Error(Half(8))\n\t}\n}\n",
    }
    task = validate_and_grade(
        tmp_path, "swe-stream-test/pinned-go", base, fix, docker_client, base_image, go_images,
    )  # fmt: skip
    assert task.FAIL_TO_PASS == ["example.com/pinned/TestHalf"]
    # runtime.Version() is the fetched toolchain's: the tests ran on go1.27.4, offline
    assert task.PASS_TO_PASS == ["example.com/pinned/TestToolchain"]
    config = task.install_config
    assert config is not None and config.environment["GOTOOLCHAIN"] == "go1.27.4"
    assert config.base_image == "swe-stream/go:forky"


def test_images_list_shows_every_toolchains_images_and_what_is_missing(
    go_images: dict[str, str], base_image: str
) -> None:
    """``swe-stream images list``: the go images .ci/prepare built, beside Python's and Node's;
    an image the settings name that the engine lacks is shown missing, and the exit is 1."""
    env = worker_env() | {
        "SWE_STREAM_DOCKER_PYTHON_IMAGES": json.dumps({"3.11": base_image}),
        "SWE_STREAM_DOCKER_GO_IMAGES": json.dumps({**go_images, "1.99": "swe-stream/go:none"}),
    }
    done = subprocess.run(
        [SWE_STREAM, "images", "list", "--json"], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    listed = {(row["toolchain"], row["version"]): row for row in json.loads(done.stdout)}
    for version, tag in go_images.items():
        assert listed[("go", version)]["tag"] == tag and listed[("go", version)]["present"]
    assert not listed[("go", "1.99")]["present"]
    assert listed[("python", "3.11")]["present"] and ("node", "20") in listed
    assert "1 missing" in done.stderr


def test_a_test_build_on_each_go_image_compiles_no_package_of_std(
    docker_client: Any, go_images: dict[str, str]
) -> None:
    """The toolchain images hold std compiled (cgo off, as recipes default): a test build in
    a fresh container compiles the module's own package alone, not the part of std it
    imports (32 s of CPU for "testing" on go 1.27 without the cache)."""
    program = (
        "mkdir /tmp/m && cd /tmp/m && printf 'module m\\n\\ngo 1.19\\n' > go.mod && "
        'printf \'package m\\nimport ("encoding/json"; "testing")\\n'
        "func TestA(t *testing.T) { json.Marshal(1) }\\n' > a_test.go && "
        "CGO_ENABLED=0 go test -x -count=1 -vet=off ./... 2>&1"
    )
    for tag in sorted(set(go_images.values())):
        out = docker_client.containers.run(tag, ["bash", "-c", program], remove=True).decode()
        assert "ok  \tm\t" in out, out[-2000:]
        compiled = [line for line in out.splitlines() if "/compile " in line]
        # one compile of the package under test (and its test main), none with -std
        assert compiled and not [line for line in compiled if " -std " in line], (
            tag,
            compiled[:5],
        )
