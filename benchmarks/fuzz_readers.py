"""Fuzz every recipe reader with generated and mutated project files for a fixed budget.

    python -m benchmarks.fuzz_readers [--minutes 10] [--seed N] [--out DIR]

Each input is a repository tree (a tar, as ``git archive`` gives one) of project files picked
among the kinds the readers know: the seeds below (real shapes of pyproject.toml, setup.cfg,
setup.py, tox.ini, noxfile.py, requirements, CI workflows, package.json, lockfiles, rc files,
pom.xml, go.mod, go.work), each as it is, mutated (bytes flipped, cut, repeated, structural
characters put in), or replaced by a generated document (JSON, YAML, TOML-like text), plus now
and then a symbolic link out of the tree. Every registered language then detects, reads and
infers from it, Go's go.mod and go.work readers read theirs, and
the XML loader reads its pom.xml. The readers' promise is that no exception escapes: a bad file
is a ``problem`` in the facts. Escapes are counted, and each one's input is written to ``--out``
to replay; the run exits 1 if there was any.

Hypothesis draws the inputs: rounds of 50 examples, each round a fresh seed, until the budget
is spent (no shrinking: an escape is recorded, not raised).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tarfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from streams.evaluation.recipes.languages import Inputs, languages
from streams.evaluation.recipes.languages.go.gomod import read_go_mod, read_go_work
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.loaders import load_xml
from streams.evaluation.recipes.sources.tree import SourceTree

SEEDS: dict[str, str] = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61", "wheel"]\n'
    'build-backend = "setuptools.build_meta"\n[project]\nname = "pkg"\n'
    'requires-python = ">=3.8"\ndependencies = ["requests>=2", "click; python_version>\'3.7\'"]\n'
    '[project.optional-dependencies]\ntest = ["pytest", "pytest-cov"]\n'
    '[tool.pytest.ini_options]\naddopts = "-ra -q"\ntestpaths = ["tests"]\n'
    '[tool.poetry.dependencies]\npython = "^3.8"\nattrs = "^1.2 || ^2.0"\n'
    '[dependency-groups]\ndev = ["ruff", {include-group = "test"}]\ntest = ["pytest"]\n',
    "setup.cfg": "[metadata]\nname = pkg\n[options]\npython_requires = >=3.7\ninstall_requires =\n"
    "    six\n    attrs>=19\n[options.extras_require]\ntesting =\n    pytest\n"
    "[tool:pytest]\naddopts = --strict-markers\n",
    "setup.py": "from setuptools import setup, find_packages\nREQ = ['a', 'b>=1']\n"
    "setup(name='pkg', version='1.0', packages=find_packages(), install_requires=REQ + ['c'],\n"
    "      extras_require={'test': ['pytest']}, python_requires='>=3.6')\n",
    "tox.ini": "[tox]\nenvlist = py38, py39, lint\n[testenv]\ndeps =\n    pytest\n"
    "    -r requirements.txt\ncommands =\n    py38: pytest {posargs} tests\n"
    "    pytest -x\n[testenv:lint]\ncommands = ruff check .\n",
    "noxfile.py": "import nox\n@nox.session(python=['3.9', '3.10'])\ndef tests(session):\n"
    "    session.install('-e', '.[test]')\n    session.run('pytest', *session.posargs)\n",
    "requirements.txt": "-r requirements/base.txt\nrequests==2.31.0  # pinned\n"
    "-e git+https://example.org/x.git#egg=x\n--index-url https://pypi.org/simple\n"
    "numpy>=1.20; python_version >= '3.8' \\\n    --hash=sha256:abc\n${EXTRA}/more.txt\n",
    "requirements/base.txt": "attrs\n",
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
    ".github/workflows/ci.yml": "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
    "    strategy:\n      matrix:\n        python: ['3.9', '3.11']\n    steps:\n"
    "      - uses: actions/checkout@v4\n      - uses: ./.github/actions/setup\n"
    "      - run: sudo apt-get install -y gettext\n      - run: pip install -e .[test]\n"
    "      - run: pytest -q\n  call:\n    uses: ./.github/workflows/reuse.yml\n",
    ".github/actions/setup/action.yml": "runs:\n  using: composite\n  steps:\n"
    "    - run: npm ci\n      shell: bash\n",
    ".travis.yml": "language: python\npython: ['3.8']\ninstall: pip install -r requirements.txt\n"
    "script: pytest\n",
    ".gitlab-ci.yml": "image: python:3.11\nbefore_script: [pip install .]\ntest:\n"
    "  script: [pytest]\n",
    "package.json": json.dumps(
        {
            "name": "pkg",
            "version": "1.0.0",
            "type": "module",
            "packageManager": "pnpm@9.1.0",
            "engines": {"node": ">=18"},
            "workspaces": ["packages/*", "apps/**/pkg"],
            "scripts": {"test": "vitest run", "build": "tsc -b", "pretest": "npm run build"},
            "devDependencies": {"vitest": "^1.6.0", "typescript": "~5.4.0"},
            "jest": {"testMatch": ["**/*.test.js"]},
        }
    ),
    "packages/a/package.json": '{"name": "a", "scripts": {"test": "jest"}}',
    "package-lock.json": '{"lockfileVersion": 3, "packages": {"": {"name": "pkg"},'
    ' "node_modules/vitest": {"version": "1.6.0"}}}',
    "pnpm-lock.yaml": "lockfileVersion: '9.0'\nimporters:\n  .:\n    devDependencies:\n"
    "      vitest:\n        specifier: ^1.6.0\n        version: 1.6.0\n",
    "yarn.lock": '# yarn lockfile v1\n\nvitest@^1.6.0:\n  version "1.6.0"\n',
    ".nvmrc": "lts/iron\n",
    ".npmrc": "engine-strict=true\nlegacy-peer-deps=true\n",
    ".yarnrc.yml": "nodeLinker: node-modules\nyarnPath: .yarn/releases/yarn-4.1.1.cjs\n",
    "pom.xml": '<?xml version="1.0"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">'
    "<modelVersion>4.0.0</modelVersion><artifactId>a</artifactId>"
    "<properties><maven.compiler.release>17</maven.compiler.release></properties></project>\n",
    "go.mod": "module github.com/o/r/v2\n\ngo 1.22\n\ntoolchain go1.22.3\n\nrequire (\n"
    "\tgithub.com/google/uuid v1.6.0\n\tgolang.org/x/sync v0.7.0 // indirect\n)\n\n"
    "replace github.com/o/lib => ../lib\n",
    "go.work": "go 1.22\n\nuse (\n\t./api\n\t.\n)\n",
    "tests/test_a.py": "def test_a():\n    assert 1\n",
    "test/a.test.js": "import { test } from 'vitest'\ntest('a', () => {})\n",
}
STRUCTURAL = [*"[]{}()<>\"'=:,-\\\n\t#&*!|%$@;`", "\x00", "\ufeff", "${", "<<", "---"]

_yaml_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
documents = st.recursive(
    _yaml_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=12), children, max_size=5),
    ),
    max_leaves=30,
)


def mutate(text: str, rng: random.Random) -> str:
    """``text`` with a few random edits: structural characters put in, bytes flipped, a piece
    cut or repeated."""
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        if not chars:
            chars = list(rng.choice(STRUCTURAL))
        at = rng.randrange(len(chars))
        edit = rng.randrange(5)
        if edit == 0:
            chars.insert(at, rng.choice(STRUCTURAL))
        elif edit == 1:
            chars[at] = chr(rng.randrange(0x20, 0x2FF))
        elif edit == 2:
            del chars[at : at + rng.randint(1, 40)]
        elif edit == 3:
            piece = chars[at : at + rng.randint(1, 80)]
            chars[at:at] = piece * rng.randint(2, 50)
        else:
            chars.insert(at, rng.choice(STRUCTURAL) * rng.randint(50, 2000))
    return "".join(chars)


def generated(document: Any, path: str, rng: random.Random) -> str:
    """A generated document in the file's own format (JSON, YAML, TOML-like key = value)."""
    if path.endswith(".json"):
        return json.dumps(document)
    if path.endswith((".toml", ".cfg", ".ini")):
        flat = document if isinstance(document, dict) else {"key": document}
        section = rng.choice(["[project]", "[tool.poetry]", "[options]", "[testenv]", ""])
        lines = [f"{json.dumps(str(k))[1:-1] or 'k'} = {json.dumps(v)}" for k, v in flat.items()]
        return "\n".join([section, *lines]) + "\n"
    return yaml.safe_dump(document, allow_unicode=True)


def tree_tar(files: dict[str, str], links: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, text in files.items():
            data = text.encode("utf-8", errors="surrogatepass")
            member = tarfile.TarInfo(path)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        for path, target in links.items():
            if path in files:
                continue
            link = tarfile.TarInfo(path)
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    return buffer.getvalue()


def read_everything(tree: TreeFiles) -> None:
    """What validation asks of a tree: each language's detection, facts and recipes."""
    inputs = Inputs(
        "o/r",
        images={"python": {"3.8": "p38", "3.11": "p311"}, "node": {"18": "n18", "20": "n20"}},
        changed_files=("src/a.py", "packages/a/index.js"),
        release_tag=lambda: "v1.2.3",
    )
    for language in languages():
        language.detect(tree)
        facts = language.facts(tree)
        if facts is not None:
            language.versions(facts, inputs)
        language.infer(tree, inputs)
    load_xml(SourceTree(tree.names, tree.read), "pom.xml")
    for name, reader in (("go.mod", read_go_mod), ("go.work", read_go_work)):
        data = tree.read(name)
        if data is not None:  # Go's readers, before the language is registered
            reader(data.decode("utf-8", errors="replace"), name)


class Tally:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.inputs = 0
        self.escapes: Counter[str] = Counter()
        self.slowest = (0.0, "")
        self.kinds: Counter[str] = Counter()

    def record_escape(
        self, error: BaseException, files: dict[str, str], links: dict[str, str]
    ) -> None:
        where = traceback.extract_tb(error.__traceback__)[-1]
        key = f"{type(error).__name__} at {Path(where.filename).name}:{where.lineno}"
        self.escapes[key] += 1
        if self.escapes[key] == 1:
            self.out.mkdir(parents=True, exist_ok=True)
            name = f"escape-{len(self.escapes)}.json"
            detail = "".join(traceback.format_exception(error))
            (self.out / name).write_text(
                json.dumps({"error": detail, "files": files, "links": links}, indent=1)
            )
            print(f"escape: {key} (input in {self.out / name})", file=sys.stderr)


def one_round(tally: Tally, seed: int, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(st.data())
    def fuzz(data: st.DataObject) -> None:
        rng = random.Random(data.draw(st.integers(0, 2**32)))
        paths = data.draw(st.lists(st.sampled_from(sorted(SEEDS)), min_size=1, max_size=8))
        files: dict[str, str] = {}
        for path in paths:
            how = data.draw(st.sampled_from(["seed", "mutated", "mutated", "generated"]))
            tally.kinds[how] += 1
            if how == "seed":
                files[path] = SEEDS[path]
            elif how == "mutated":
                files[path] = mutate(SEEDS[path], rng)
            else:
                files[path] = generated(data.draw(documents), path, rng)
        links: dict[str, str] = {}
        if data.draw(st.booleans()):
            name = data.draw(st.sampled_from(sorted(SEEDS)))
            links[name] = data.draw(st.sampled_from(["/etc/passwd", "../../x", "tests", name]))
        tally.inputs += 1
        started = time.monotonic()
        try:
            read_everything(TreeFiles(tree_tar(files, links)))
        except Exception as error:
            tally.record_escape(error, files, links)
        took = time.monotonic() - started
        if took > tally.slowest[0]:
            tally.slowest = (took, ", ".join(sorted(files)))

    fuzz._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    fuzz()


def run(
    minutes: float, seed: int, out: Path, on_round: Callable[[Tally], None] | None = None
) -> Tally:
    """Fuzz until ``minutes`` have passed; the tally of inputs, escapes and the slowest."""
    tally = Tally(out)
    deadline = time.monotonic() + minutes * 60
    round_number = 0
    while time.monotonic() < deadline:
        one_round(tally, seed + round_number, 50)
        round_number += 1
        if on_round is not None:
            on_round(tally)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--out", type=Path, default=Path("fuzz-readers-escapes"))
    args = parser.parse_args(argv)
    started = time.monotonic()

    said = [0.0]

    def progress(tally: Tally) -> None:
        spent = time.monotonic() - started
        if spent - said[0] >= 30:  # a line every 30 s
            said[0] = spent
            print(f"  {spent:4.0f} s: {tally.inputs} inputs, {sum(tally.escapes.values())} escapes")

    tally = run(args.minutes, args.seed, args.out, progress)
    print(f"readers fuzzed for {args.minutes:g} min (seed {args.seed})")
    print(f"files: {dict(tally.kinds)}")
    print(f"slowest input: {tally.slowest[0]:.2f} s ({tally.slowest[1]})")
    for key, count in tally.escapes.most_common():
        print(f"  {count:5d}  {key}")
    print(f"inputs tried: {tally.inputs}")
    print(f"escapes: {sum(tally.escapes.values())}")
    return 1 if tally.escapes else 0


if __name__ == "__main__":
    sys.exit(main())
