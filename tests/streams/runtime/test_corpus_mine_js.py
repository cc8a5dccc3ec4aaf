"""``mine`` end to end on a corpus of two JavaScript / TypeScript repositories in the set-up
styles of the real corpus-js (``../shared/fixtures/corpus-js``), made by the test: one like
jshttp/cookie (npm without a lockfile, ``.npmrc`` ``package-lock=false``, exact
devDependencies, ``mocha --reporter spec --bail --check-leaks test/`` with an eslint
``posttest``, ``engines`` ``>= 0.6``), one like unjs/ufo (pnpm 8 with its real
``pnpm-lock.yaml`` and ``packageManager``, ``type: module``, ``src/*.ts`` tested by
``test/*.test.ts`` with ``pnpm lint && vitest run --coverage``). Served as a GH Archive hour
and a GitHub stand-in (``streams.offline.corpus``), mined by the real pipeline on an embedded
broker (``benchmarks.yield``'s run), installed from the npm registry in the Node images: each
PR a validated, exported task with its exact FAIL_TO_PASS / PASS_TO_PASS.

The package.json files and the lockfile are in ``tests/data/corpus_js`` (its README says how
the lockfile was made). ``python -m benchmarks.yield --corpus DIR/corpus-js`` runs the real
corpus."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation.taskdir import find_task_dirs, load_workspace
from streams.offline.corpus import load_corpus
from tests.git_repos import CorpusPullRequest, make_corpus_dir

pytestmark = pytest.mark.docker
yield_benchmark = importlib.import_module("benchmarks.yield")

DATA = Path(__file__).parents[2] / "data" / "corpus_js"


def project(name: str) -> dict[str, str]:
    """The package files of ``tests/data/corpus_js/<name>`` (dot files too)."""
    return {p.name: p.read_text() for p in sorted((DATA / name).iterdir())}


COOKIE_INDEX = """'use strict';

exports.parse = parse;
exports.serialize = serialize;

var NAME = /^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$/;

function parse(header) {
  var out = {};
  var pairs = header.split(/; */);
  for (var i = 0; i < pairs.length; i++) {
    var eq = pairs[i].indexOf('=');
    if (eq < 0) continue;
    var key = pairs[i].slice(0, eq).trim();
    if (out[key] === undefined) {
      out[key] = decodeURIComponent(pairs[i].slice(eq + 1).trim());
    }
  }
  return out;
}

function serialize(name, value, options) {
  var opt = options || {};
  if (!NAME.test(name)) {
    throw new TypeError('argument name is invalid');
  }
  var text = name + '=' + encodeURIComponent(value);
  if (opt.maxAge != null) {
    var maxAge = opt.maxAge - 0;
    if (!isFinite(maxAge)) {
      throw new TypeError('option maxAge is invalid');
    }
    text += '; Max-Age=' + maxAge;
  }
  if (opt.path) text += '; Path=' + opt.path;
  if (opt.httpOnly) text += '; HttpOnly';
  return text;
}
"""
COOKIE_PARSE_TEST = """var assert = require('assert');
var crumbs = require('..');

describe('crumbs.parse(header)', function () {
  it('should parse cookie header', function () {
    assert.deepEqual(crumbs.parse('foo=bar; a=b'), { foo: 'bar', a: 'b' });
  });

  it('should keep the first duplicate', function () {
    assert.deepEqual(crumbs.parse('foo=1; foo=2'), { foo: '1' });
  });
});
"""
COOKIE_SERIALIZE_TEST = """var assert = require('assert');
var crumbs = require('..');

describe('crumbs.serialize(name, value)', function () {
  it('should serialize name and value', function () {
    assert.equal(crumbs.serialize('foo', 'bar'), 'foo=bar');
  });

  it('should URL-encode value', function () {
    assert.equal(crumbs.serialize('foo', 'bar +baz'), 'foo=bar%20%2Bbaz');
  });
});

describe('crumbs.serialize(name, value, options)', function () {
  describe('with "maxAge" option', function () {
    it('should set Max-Age', function () {
      assert.equal(crumbs.serialize('foo', 'bar', { maxAge: 1000 }), 'foo=bar; Max-Age=1000');
    });
"""
COOKIE_FLOOR_TEST = """
    it('should floor a fractional Max-Age', function () {
      assert.equal(crumbs.serialize('foo', 'bar', { maxAge: 3.14 }), 'foo=bar; Max-Age=3');
    });
"""
COOKIE_END = "  });\n});\n"

UFO_QUERY = """export type QueryValue = string | string[];
export type QueryObject = Record<string, QueryValue>;

export function decodeQueryValue(text: string): string {
  return decodeURIComponent(text.replace(/\\+/g, " "));
}

export function decodeQueryKey(text: string): string {
  return decodeURIComponent(text);
}

export function parseQuery(input = ""): QueryObject {
  const object: QueryObject = {};
  if (input[0] === "?") {
    input = input.slice(1);
  }
  for (const parameter of input.split("&")) {
    const match = parameter.match(/([^=]+)=?(.*)/);
    if (!match) {
      continue;
    }
    const key = decodeQueryKey(match[1]);
    const value = decodeQueryValue(match[2] || "");
    const existing = object[key];
    if (existing === undefined) {
      object[key] = value;
    } else if (Array.isArray(existing)) {
      existing.push(value);
    } else {
      object[key] = [existing, value];
    }
  }
  return object;
}

export function stringifyQuery(query: QueryObject): string {
  return Object.entries(query)
    .flatMap(([key, value]) =>
      (Array.isArray(value) ? value : [value]).map(
        (item) => `${encodeURIComponent(key)}=${encodeURIComponent(item)}`,
      ),
    )
    .join("&");
}
"""
UFO_PARSE = """export interface ParsedURL {
  protocol: string;
  host: string;
  pathname: string;
  search: string;
}

export function parseURL(input = ""): ParsedURL {
  const match = input.match(/^([a-z][\\w+.-]*:)?(?:\\/\\/([^/?#]*))?([^?#]*)(\\?[^#]*)?/i) || [];
  const [, protocol = "", host = "", pathname = "", search = ""] = match;
  return { protocol, host, pathname, search };
}
"""
UFO_INDEX = 'export * from "./parse";\nexport * from "./query";\n'
UFO_QUERY_TEST = """import { describe, expect, it } from "vitest";
import { parseQuery, stringifyQuery } from "../src";

describe("parseQuery", () => {
  it("collects repeated keys", () => {
    expect(parseQuery("?a=1&a=2&b=3")).toEqual({ a: ["1", "2"], b: "3" });
  });

  it("decodes plus in values", () => {
    expect(parseQuery("q=a+b")).toEqual({ q: "a b" });
  });
"""
UFO_PLUS_KEY_TEST = """
  it("decodes plus in keys", () => {
    expect(parseQuery("first+name=ada")).toEqual({ "first name": "ada" });
  });
"""
UFO_QUERY_TEST_END = """});

describe("stringifyQuery", () => {
  it("encodes arrays", () => {
    expect(stringifyQuery({ a: ["1", "2"], b: "x y" })).toBe("a=1&a=2&b=x%20y");
  });
});
"""
UFO_PARSE_TEST = """import { describe, expect, it } from "vitest";
import { parseURL } from "../src";

describe("parseURL", () => {
  it("splits an absolute URL", () => {
    expect(parseURL("https://a.com/b?c=d")).toEqual({
      protocol: "https:",
      host: "a.com",
      pathname: "/b",
      search: "?c=d",
    });
  });
});
"""

# repo -> (language, base files, the PR's files, merged at)
SETUPS: dict[str, tuple[str, dict[str, str], dict[str, str | None], str]] = {
    "corpus-test/cookie-style": (
        "JavaScript",
        {
            **project("cookie-style"),
            ".eslintrc.yml": "root: true\nextends: eslint:recommended\nenv:\n  node: true\n",
            ".eslintignore": "coverage\nnode_modules\n",
            ".gitignore": "coverage/\nnode_modules/\nnpm-debug.log\npackage-lock.json\n",
            "README.md": "# crumbs\n\nCookie header parsing and serialization.\n",
            "index.js": COOKIE_INDEX,
            "test/parse.js": COOKIE_PARSE_TEST,
            "test/serialize.js": COOKIE_SERIALIZE_TEST + COOKIE_END,
        },
        {
            "index.js": COOKIE_INDEX.replace(
                "'; Max-Age=' + maxAge", "'; Max-Age=' + Math.floor(maxAge)"
            ),
            "test/serialize.js": COOKIE_SERIALIZE_TEST + COOKIE_FLOOR_TEST + COOKIE_END,
        },
        "2024-10-01T22:56:55Z",
    ),
    "corpus-test/ufo-style": (
        "TypeScript",
        {
            **project("ufo-style"),
            ".eslintrc": '{\n  "extends": ["eslint:recommended"]\n}\n',
            ".eslintignore": "dist\nnode_modules\n",
            ".prettierrc": "{}\n",
            ".gitignore": "node_modules\ndist\ncoverage\n",
            "tsconfig.json": '{\n  "compilerOptions": {\n    "target": "ESNext",\n'
            '    "module": "ESNext",\n    "moduleResolution": "Node",\n'
            '    "esModuleInterop": true\n  },\n  "include": ["src"]\n}\n',
            "README.md": "# urlkit\n\nURL utils.\n",
            "src/index.ts": UFO_INDEX,
            "src/parse.ts": UFO_PARSE,
            "src/query.ts": UFO_QUERY,
            "test/parse.test.ts": UFO_PARSE_TEST,
            "test/query.test.ts": UFO_QUERY_TEST + UFO_QUERY_TEST_END,
        },
        {
            "src/query.ts": UFO_QUERY.replace(
                "return decodeURIComponent(text);",
                'return decodeURIComponent(text.replace(/\\+/g, " "));',
            ),
            "test/query.test.ts": UFO_QUERY_TEST + UFO_PLUS_KEY_TEST + UFO_QUERY_TEST_END,
        },
        "2023-11-15T15:19:13Z",
    ),
}
EXPECTED: dict[str, tuple[str, list[str], list[str]]] = {
    "corpus-test/cookie-style#21": (
        "mocha",
        [
            "test/serialize.js > crumbs.serialize(name, value, options) "
            'with "maxAge" option should floor a fractional Max-Age'
        ],
        [
            "test/serialize.js > crumbs.serialize(name, value) should URL-encode value",
            "test/serialize.js > crumbs.serialize(name, value) should serialize name and value",
            "test/serialize.js > crumbs.serialize(name, value, options) "
            'with "maxAge" option should set Max-Age',
        ],
    ),
    "corpus-test/ufo-style#22": (
        "vitest",
        ["test/query.test.ts > parseQuery > decodes plus in keys"],
        [
            "test/query.test.ts > parseQuery > collects repeated keys",
            "test/query.test.ts > parseQuery > decodes plus in values",
            "test/query.test.ts > stringifyQuery > encodes arrays",
        ],
    ),
}


def make_corpus(root: Path) -> Path:
    """A corpus folder as ``../shared/fixtures/corpus-js`` is laid out, with its remotes."""
    pulls = [CorpusPullRequest(repo, *setup) for repo, setup in SETUPS.items()]
    return make_corpus_dir(
        root,
        pulls,
        first_number=21,
        title="Fix parsing of an edge case",
        body="The result was wrong for this input; a test shows it.",
    )


def test_mine_validates_a_pr_of_every_js_set_up_style(
    tmp_path: Path, node_images: dict[str, str], docker_client: Any
) -> None:
    corpus = load_corpus(make_corpus(tmp_path))
    rows, _ = yield_benchmark.mine_corpus(corpus, tmp_path / "run", concurrency=2)
    log = (tmp_path / "run" / "mine.log").read_text()
    by_pr = {row.pr: row for row in rows}
    assert set(by_pr) == set(EXPECTED)
    exported = {
        f"{ws.repo}#{ws.instance_id.rsplit('-', 1)[1]}": ws
        for ws in (
            load_workspace(task / "workspace.yaml")
            for task in find_task_dirs(tmp_path / "run" / "tasks")
        )
    }
    for pr, (runner, fail_to_pass, pass_to_pass) in EXPECTED.items():
        row = by_pr[pr]
        assert row.validated, f"{pr}: {row.stage} {row.reason} {row.detail}\n{log[-3000:]}"
        assert row.stage == "export" and row.status == "exported", pr
        language = SETUPS[pr.split("#")[0]][0]
        assert (row.language, row.test_runner) == (language, runner), pr
        assert row.python is None and row.node in {*node_images, "default"}, pr
        ws = exported[pr]
        assert (ws.FAIL_TO_PASS, sorted(ws.PASS_TO_PASS)) == (fail_to_pass, pass_to_pass), pr
        assert ws.language == language, pr
        config = ws.install_config
        assert config["test_runner"] == runner and config["base_image"] in node_images.values()
        # the test script's lint (eslint, a posttest or `pnpm lint &&`) and coverage are off
        assert "lint" not in config["test_command"] and "eslint" not in config["test_command"]
        assert "--coverage" not in config["test_command"], pr
    cookie = exported["corpus-test/cookie-style#21"].install_config
    assert "package-manager:npm" in cookie["recipe"] and "--check-leaks" in cookie["test_command"]
    assert not any(s.startswith("lockfile:") for s in cookie["recipe"])  # package-lock=false
    ufo = exported["corpus-test/ufo-style#22"].install_config
    assert {"package-manager:pnpm", "lockfile:pnpm-lock.yaml"} <= set(ufo["recipe"])
    assert any("pnpm@8.10.2" in c for c in ufo["env_commands"]), ufo["env_commands"]
