"""A JavaScript repository whose tests inference cannot run: its test script is ``make test``,
a Makefile that builds ``dist/`` from ``src/`` (``scripts/build.js``) and then runs Node's own
test runner on ``test/``, whose files import the build. Inference reads no runner in ``make
test`` (and the Node images have no make): ``no_test_runner``. No dependency at all: nothing
is downloaded. Made with real git by the test; its PRs go through extract like any other."""

from __future__ import annotations

import json
from pathlib import Path

from schemas import PatchSet
from streams.clients.git import RepoCache
from streams.core.settings import ExtractSettings
from tests.agents.repo_tasks import classified_for
from tests.git_repos import PullRequestRepo, make_pull_request_repo

REPO = "swe-stream-test/units-make"
BUILD_STEP = "node scripts/build.js"

UNITS_JS = """function toCelsius(fahrenheit) {
  return ((fahrenheit - 32) * 5) / 9;
}

function toKm(miles) {
  return miles * 1.6;
}

module.exports = { toCelsius, toKm };
"""
FIXED_UNITS_JS = UNITS_JS.replace("miles * 1.6", "miles * 1.609344")

TESTS = """const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const units = require('../dist/units.js');

describe('toCelsius', () => {
  it('converts freezing', () => {
    assert.equal(units.toCelsius(32), 0);
  });
});
"""
TEST_TO_KM = """
describe('toKm', () => {
  it('converts a marathon', () => {
    assert.equal(Math.round(units.toKm(26.2) * 1000) / 1000, 42.165);
  });
});
"""
# the ids of the JS log parsers: file > describe > title
FAIL_TO_PASS = "test/units.test.js > toKm > converts a marathon"
PASS_TO_PASS = "test/units.test.js > toCelsius > converts freezing"

PACKAGE = {"name": "units", "version": "1.0.0", "main": "dist/units.js"}
PACKAGE_JSON = json.dumps(PACKAGE | {"scripts": {"test": "make test"}}, indent=2) + "\n"
BASE_FILES = {
    "README.md": (
        "# units\n\nUnit conversions.\n\n## Development\n\nDeveloped on Node 20. `make test` "
        "builds `dist/` from `src/` (`node scripts/build.js`) and runs the tests with Node's "
        "own test runner.\n"
    ),
    "package.json": PACKAGE_JSON,
    "Makefile": (
        ".PHONY: build test\n\nbuild:\n\tnode scripts/build.js\n\ntest: build\n\tnode --test\n"
    ),
    "scripts/build.js": (
        "const fs = require('fs');\nconst path = require('path');\n\n"
        "fs.mkdirSync('dist', { recursive: true });\n"
        "for (const name of fs.readdirSync('src')) {\n"
        "  fs.copyFileSync(path.join('src', name), path.join('dist', name));\n}\n"
    ),
    "src/units.js": UNITS_JS,
    ".gitignore": "dist/\nnode_modules/\n",
    ".github/workflows/test.yml": (
        "name: test\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - uses: actions/setup-node@v4\n"
        "      - run: make test\n"
    ),
    "test/units.test.js": TESTS,
}


def make_units_repo(root: Path) -> PullRequestRepo:
    return make_pull_request_repo(
        root,
        repo=REPO,
        base_files=BASE_FILES,
        pr_files={"src/units.js": FIXED_UNITS_JS, "test/units.test.js": TESTS + TEST_TO_KM},
    )


async def units_patches(root: Path) -> tuple[PatchSet, RepoCache, PullRequestRepo]:
    """The units PR through extract, and the clone cache it used."""
    from agents.extract import Extract

    pr = make_units_repo(root / "git")
    repos = RepoCache(root / "cache", pr.url_template)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet)
    return patches, repos, pr
