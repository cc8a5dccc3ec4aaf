"""JavaScript / TypeScript end to end through the Python engine: a repository the test makes
with git (a PR fixing a bug and adding the test that shows it), extracted, its recipe inferred
from package.json and the lockfile, installed from the npm registry in a Node image
(``swe-stream images base --node``), its tests run before and after the fix in Docker and
read with the runner's report: FAIL_TO_PASS / PASS_TO_PASS exactly.

The lockfiles under ``tests/data/js_validate`` were made from the package.json beside them:
``jest-npm``, ``mocha-nyc``, ``vitest-ts`` with ``npm install --package-lock-only
--ignore-scripts`` (npm 11, Node 20, ``resolved`` URLs omitted); ``ava``, ``tap``, ``uvu`` the
same in a ``swe-stream/node:trixie`` container (npm 9.2, Node 20.19, ``resolved`` kept:
``docker run --rm -v DIR:/w -w /w swe-stream/node:trixie npm install --package-lock-only
--ignore-scripts``); ``yarn-berry-mocha``'s ``yarn.lock`` (v8) by yarn 4.9.4 in that container
(``npm i -g --force @yarnpkg/cli-dist@4.9.4 && yarn install --mode=update-lockfile``, beside
its ``.yarnrc.yml``: ``nodeLinker: node-modules``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet, ValidatedTask
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.validator import Validator
from streams.offline.local_repo import make_pull_request_repo
from tests.agents.repo_tasks import classified_for

pytestmark = pytest.mark.docker

DATA = Path(__file__).parents[2] / "data" / "js_validate"


def project(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((DATA / name).iterdir())}


async def validate(
    tmp_path: Path,
    repo: str,
    base_files: dict[str, str],
    pr_files: dict[str, str | None],
    docker_client: Any,
    base_image: str,
    node_images: dict[str, str],
) -> ValidatedTask:
    pr = make_pull_request_repo(
        tmp_path / "git", repo=repo, base_files=base_files, pr_files=pr_files
    )
    repos = RepoCache(tmp_path / "cache", pr.url_template)
    outcome = await Extract(repos, ExtractSettings(), 1)(classified_for(pr))
    (patches,) = outcome.outputs
    assert isinstance(patches, PatchSet)
    docker = DockerSettings(
        base_image=base_image,
        toolchain_images={"python": {"3.11": base_image}},
        node_images=node_images,
        cache_level="env",
        memory_mb=2048,
        cpus=2,
    )
    settings = ValidateSettings(runs=1, test_timeout_seconds=300)
    stage = ValidateStage(Validator(repos, lambda: docker_client, docker, settings, 1))
    outcome = await stage(patches)
    assert outcome.status == "accepted", outcome.reason
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask)
    return task


MATH_JS = """function add(a, b) {
  return a - b;
}

function mul(a, b) {
  return a * b;
}

module.exports = { add, mul };
"""
MATH_TEST_JS = """const { add, mul } = require('../src/math');

describe('mul', () => {
  test('multiplies', () => {
    expect(mul(2, 3)).toBe(6);
  });
});
"""
ADD_TEST_JS = """
describe('add', () => {
  test('adds two numbers', () => {
    expect(add(2, 3)).toBe(5);
  });
});
"""


async def test_jest_npm_lockfile(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    base = {
        **project("jest-npm"),
        "src/math.js": MATH_JS,
        "test/math.test.js": MATH_TEST_JS,
        "test/other.test.js": "test('true is true', () => { expect(true).toBe(true); });\n",
        "README.md": "calc\n",
    }
    fix = {
        "src/math.js": MATH_JS.replace("a - b", "a + b"),
        "test/math.test.js": MATH_TEST_JS + ADD_TEST_JS,
    }
    task = await validate(
        tmp_path, "swe-stream-test/calc-js", base, fix, docker_client, base_image, node_images
    )
    assert task.FAIL_TO_PASS == ["test/math.test.js > add > adds two numbers"]
    assert task.PASS_TO_PASS == ["test/math.test.js > mul > multiplies"]
    config = task.install_config
    assert config.language == "JavaScript" and config.test_runner == "jest"
    assert config.version("python") is None and config.base_image in node_images.values()
    assert "--coverage" not in config.test_command.replace("--coverage=false", "")
    assert task.validation.before["test/math.test.js > add > adds two numbers"] == "failed"


SLUG_TS = """export function slugify(text: string): string {
  return text.toLowerCase().replace(/ /, "-");
}

export function words(text: string): string[] {
  return text.split(/\\s+/).filter(Boolean);
}
"""
SLUG_TEST_TS = """import { describe, expect, it } from "vitest";
import { slugify, words } from "../src/slug";

describe("words", () => {
  it("splits on whitespace", () => {
    expect(words(" a  b ")).toEqual(["a", "b"]);
  });
});
"""
SLUG_FIX_TEST_TS = """
describe("slugify", () => {
  it("replaces every space", () => {
    expect(slugify("A b c")).toBe("a-b-c");
  });
});
"""


async def test_vitest_typescript(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    base = {
        **project("vitest-ts"),
        "tsconfig.json": '{"compilerOptions": {"strict": true, "module": "esnext", '
        '"moduleResolution": "bundler", "target": "es2022"}}\n',
        "src/slug.ts": SLUG_TS,
        "test/slug.test.ts": SLUG_TEST_TS,
    }
    fix = {
        "src/slug.ts": SLUG_TS.replace("/ /,", "/ /g,"),
        "test/slug.test.ts": SLUG_TEST_TS + SLUG_FIX_TEST_TS,
    }
    task = await validate(
        tmp_path, "swe-stream-test/slugs-ts", base, fix, docker_client, base_image, node_images
    )
    assert task.FAIL_TO_PASS == ["test/slug.test.ts > slugify > replaces every space"]
    assert task.PASS_TO_PASS == ["test/slug.test.ts > words > splits on whitespace"]
    config = task.install_config
    assert config.language == "TypeScript" and config.test_runner == "vitest"
    assert config.base_image in node_images.values()


UNITS_JS = """exports.toCelsius = (f) => (f - 32) * 5 / 9;
exports.toKm = (miles) => miles * 1.6;
"""
UNITS_TEST_JS = """const assert = require('assert');
const { toCelsius, toKm } = require('../lib/units');

describe('toCelsius', () => {
  it('converts freezing', () => {
    assert.strictEqual(toCelsius(32), 0);
  });
});
"""
UNITS_FIX_TEST_JS = """
describe('toKm', () => {
  it('converts a marathon', () => {
    assert.strictEqual(Math.round(toKm(26.2) * 1000) / 1000, 42.165);
  });
});
"""


def units_repo(name: str) -> tuple[dict[str, str], dict[str, str | None]]:
    base = {
        **project(name),
        "lib/units.js": UNITS_JS,
        "test/units.test.js": UNITS_TEST_JS,
        ".mocharc.json": '{"spec": "test/**/*.test.js"}\n',
    }
    fix: dict[str, str | None] = {
        "lib/units.js": UNITS_JS.replace("miles * 1.6", "miles * 1.609344"),
        "test/units.test.js": UNITS_TEST_JS + UNITS_FIX_TEST_JS,
    }
    return base, fix


@pytest.mark.parametrize(
    ("name", "manager"),
    [("mocha-nyc", "npm"), ("pnpm-mocha", "pnpm"), ("yarn-berry-mocha", "yarn-berry")],
    ids=["npm-nyc", "pnpm", "yarn-berry"],
)
async def test_mocha(
    tmp_path: Path,
    docker_client: Any,
    base_image: str,
    node_images: dict[str, str],
    name: str,
    manager: str,
) -> None:
    """mocha under ``nyc`` (dropped) with an npm lockfile; with pnpm (its version pinned by
    ``packageManager``, fetched by corepack from the npm registry); with yarn berry (yarn 4,
    ``nodeLinker: node-modules`` in ``.yarnrc.yml``: the runner from ``node_modules/.bin``)."""
    base, fix = units_repo(name)
    repo = f"swe-stream-test/{name}"
    task = await validate(tmp_path, repo, base, fix, docker_client, base_image, node_images)
    # mocha's ids: the file, then its fullTitle (suites and title joined by one space)
    assert task.FAIL_TO_PASS == ["test/units.test.js > toKm converts a marathon"]
    assert task.PASS_TO_PASS == ["test/units.test.js > toCelsius converts freezing"]
    config = task.install_config
    assert config.test_runner == "mocha" and "nyc" not in config.test_command
    assert f"package-manager:{manager}" in config.recipe
    if manager == "yarn-berry":  # not Plug'n'Play: no ``yarn`` before the runner
        assert config.install_commands[-1].startswith("yarn install --immutable")
        assert (
            "node_modules/.bin" in config.test_command and "yarn mocha" not in config.test_command
        )


STACK_TS = """export class Stack<T> {
  private items: T[] = [];

  push(item: T): void {
    this.items.push(item);
  }

  pop(): T | undefined {
    return this.items.shift();
  }

  get size(): number {
    return this.items.length;
  }
}
"""
STACK_TEST_TS = """import { test } from "node:test";
import assert from "node:assert/strict";
import { Stack } from "../src/stack.ts";

test("size counts the items", () => {
  const stack = new Stack<number>();
  stack.push(1);
  stack.push(2);
  assert.equal(stack.size, 2);
});
"""
STACK_FIX_TEST_TS = """
test("pop takes the last item", () => {
  const stack = new Stack<number>();
  stack.push(1);
  stack.push(2);
  assert.equal(stack.pop(), 2);
});
"""


async def test_node_test_with_tsx_and_yarn(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    """TypeScript through ``node --import=tsx --test`` (swe-stream's reporter names each
    test's file), installed by yarn classic (pinned by ``packageManager``)."""
    base = {
        **project("yarn-node-tsx"),
        "src/stack.ts": STACK_TS,
        "test/stack.test.ts": STACK_TEST_TS,
    }
    fix = {
        "src/stack.ts": STACK_TS.replace("this.items.shift()", "this.items.pop()"),
        "test/stack.test.ts": STACK_TEST_TS + STACK_FIX_TEST_TS,
    }
    repo = "swe-stream-test/stack-ts"
    task = await validate(tmp_path, repo, base, fix, docker_client, base_image, node_images)
    assert task.FAIL_TO_PASS == ["test/stack.test.ts > pop takes the last item"]
    assert task.PASS_TO_PASS == ["test/stack.test.ts > size counts the items"]
    config = task.install_config
    assert config.language == "TypeScript" and config.test_runner == "node"
    assert "package-manager:yarn" in config.recipe and "--import=tsx" in config.test_command


def units_files(name: str, test: str, added: str) -> tuple[dict[str, str], dict[str, str | None]]:
    """``lib/units.js`` (``toKm`` wrong) and ``test/units.test.js`` of a runner; the fix
    corrects ``toKm`` and adds the test that shows it."""
    base = {**project(name), "lib/units.js": UNITS_JS, "test/units.test.js": test}
    fix: dict[str, str | None] = {
        "lib/units.js": UNITS_JS.replace("miles * 1.6", "miles * 1.609344"),
        "test/units.test.js": test + added,
    }
    return base, fix


AVA_TEST_JS = """const test = require('ava');
const { toCelsius, toKm } = require('../lib/units');

test('toCelsius converts freezing', (t) => {
  t.is(toCelsius(32), 0);
});
"""
AVA_FIX_TEST_JS = """
test('toKm converts a marathon', (t) => {
  t.is(Math.round(toKm(26.2) * 1000) / 1000, 42.165);
});
"""


async def test_ava(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    """ava through its TAP (``ava --tap``); one test file runs, so ava names no file: the
    engine puts the file of the run at the head of the ids, as every JS runner's."""
    base, fix = units_files("ava", AVA_TEST_JS, AVA_FIX_TEST_JS)
    base["test/other.test.js"] = "const test = require('ava');\n\ntest('x', (t) => t.pass());\n"
    repo = "swe-stream-test/units-ava"
    task = await validate(tmp_path, repo, base, fix, docker_client, base_image, node_images)
    assert task.FAIL_TO_PASS == ["test/units.test.js > toKm converts a marathon"]
    assert task.PASS_TO_PASS == ["test/units.test.js > toCelsius converts freezing"]
    config = task.install_config
    assert config.language == "JavaScript" and config.test_runner == "ava"
    assert "--tap" in config.test_command and "package-manager:npm" in config.recipe
    assert task.validation.before["test/units.test.js > toKm converts a marathon"] == "failed"


TAP_TEST_JS = """const t = require('tap');
const { toCelsius, toKm } = require('../lib/units');

t.test('toCelsius', async (t) => {
  t.test('converts freezing', async (t) => {
    t.equal(toCelsius(32), 0);
  });
});
"""
TAP_FIX_TEST_JS = """
t.test('toKm', async (t) => {
  t.test('converts a marathon', async (t) => {
    t.equal(Math.round(toKm(26.2) * 1000) / 1000, 42.165);
  });
});
"""


async def test_tap(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    """node-tap 21 (its TAP reporter): the top level subtest of a file is its path, so the
    ids are ``file > subtests``; an assertion is not a test."""
    base, fix = units_files("tap", TAP_TEST_JS, TAP_FIX_TEST_JS)
    repo = "swe-stream-test/units-tap"
    task = await validate(tmp_path, repo, base, fix, docker_client, base_image, node_images)
    assert task.FAIL_TO_PASS == ["test/units.test.js > toKm > converts a marathon"]
    assert task.PASS_TO_PASS == ["test/units.test.js > toCelsius > converts freezing"]
    config = task.install_config
    assert config.language == "JavaScript" and config.test_runner == "tap"
    assert "--reporter=tap" in config.test_command
    assert task.validation.before["test/units.test.js > toKm > converts a marathon"] == "failed"


UVU_TEST_JS = """const { suite } = require('uvu');
const assert = require('uvu/assert');
const { toCelsius, toKm } = require('../lib/units');

const celsius = suite('toCelsius');

celsius('converts freezing', () => {
  assert.is(toCelsius(32), 0);
});

celsius.run();
"""
UVU_FIX_TEST_JS = """
const km = suite('toKm');

km('converts a marathon', () => {
  assert.is(Math.round(toKm(26.2) * 1000) / 1000, 42.165);
});

km.run();
"""


async def test_uvu(
    tmp_path: Path, docker_client: Any, base_image: str, node_images: dict[str, str]
) -> None:
    """uvu: the ids every JS runner has (``file > suite > title``), passing tests included."""
    base, fix = units_files("uvu", UVU_TEST_JS, UVU_FIX_TEST_JS)
    repo = "swe-stream-test/units-uvu"
    task = await validate(tmp_path, repo, base, fix, docker_client, base_image, node_images)
    assert task.FAIL_TO_PASS == ["test/units.test.js > toKm > converts a marathon"]
    assert task.PASS_TO_PASS == ["test/units.test.js > toCelsius > converts freezing"]
    config = task.install_config
    assert config.language == "JavaScript" and config.test_runner == "uvu"
