"""What JavaScript / TypeScript says to the agents: the set-up agent's system prompt (``SETUP``) and
testgen's (``TESTGEN``), as ``string.Template`` texts the agents fill: ``$${tools}`` and
``$${accepted}`` are the agents' own words about their tools and how a recipe is judged; the
rest are this language's (``$$versions``: the toolchain versions with an image; ``$$version``:
the failed recipe's; ``$$runners``, ``$$runner_commands``)."""

from __future__ import annotations

from streams.evaluation.recipes.languages import PromptSection

# its package.json and Node version first, then its runners' config files
FIRST_READ = (
    "README.md", "README.rst", "README.txt", "README", "package.json", ".nvmrc",
    ".node-version", "Makefile", "tsconfig.json", ".mocharc.json", ".mocharc.js",
    ".mocharc.cjs", ".mocharc.yml", ".mocharc.yaml", "jest.config.js", "jest.config.ts",
    "jest.config.cjs", "jest.config.mjs", "vitest.config.ts", "vitest.config.js",
    "vitest.config.mts", "vite.config.ts", "vite.config.js", "ava.config.js", ".taprc",
    "pnpm-workspace.yaml", "lerna.json", ".npmrc", ".yarnrc.yml", ".travis.yml",
    "azure-pipelines.yml", ".gitlab-ci.yml",
)  # fmt: skip
# lockfiles: named (and their size); shown only when they are small
LOCKFILES = ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml")

SETUP = PromptSection(
    system=(
        """You set up a JavaScript / TypeScript repository's test environment, as its CI does, so \
that its tests run. The install recipe inferred from its files did not make them run; you find \
what is missing (the test runner behind a test script inference could not read, such as \
`make test` or a script of its own; a build step its CI runs before the tests, such as \
compiling TypeScript into dist/; another test command or runner; another Node major; a Debian \
package a native module needs) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, with its dependencies \
in /testbed/node_modules as the failed recipe's install left them (by npm, yarn or pnpm: the \
package manager its lockfile names), on Node $version. Only package registries are reachable \
(npm, Debian, PyPI). Tools:
${tools}run in / that fetch the \
dependencies into the package manager's cache from the dependency files copied to \
/opt/swe-env (the repository is not there yet); `install`: commands run in /testbed that \
install the dependencies into node_modules (npm ci, yarn install --frozen-lockfile, pnpm \
install --frozen-lockfile); `pre_test`: build steps run in /testbed after the install \
(compiling TypeScript, bundling, generating files the tests import); `test_command`: the \
command the test files are appended to, run in /testbed: the test runner itself, not a script \
or a Makefile that wraps it (node_modules/.bin is not on the PATH: \
`PATH="/testbed/node_modules/.bin:$$PATH" mocha ...`, or `npx mocha ...`), with the options \
its log parser reads, as swe-stream runs each runner:
$runner_commands
  swe-stream appends the arguments that write the runner's report after the test files: set \
no reporter of your own; `test_runner`: the runner whose output is read, one of $runners; \
`node`: the Node major, one of $versions (leave `python` out).
${accepted}"""
    ),
    first_read=FIRST_READ,
    shown_small=LOCKFILES,
)

TESTGEN = PromptSection(
    system=(
        """You write a regression test for a bug fix in a JavaScript / TypeScript repository, as a \
benchmark task: the test must fail on the repository as it is (before the fix) and pass once \
the fix is applied.
You work in a container at /testbed (the repository before the fix, its dependencies in \
node_modules; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the ids of the tests that fail \
before the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Write the tests for the repository's test runner, $runner, in the style of its own tests: the \
same imports, assertion library, module format (require or import) and file names (such as \
test/<name>.test.js beside them), so that its test command runs them. A test's id is \
$id_shape.
Test framework: $framework. Test command (run in /testbed): $test_command <test files>"""
    ),
)

EXAMPLE_FILE = "test/math.test.js"
# a test's id, by runner (as this language's log parsers make them), for testgen's prompt
ID_SHAPES = {
    "mocha": (
        "its file's path from the repository root, then mocha's full title (the describe "
        "blocks' titles and the test's, joined by single spaces), the two joined by ` > `: "
        f"`{EXAMPLE_FILE} > add adds two numbers` for it('adds two numbers') in "
        "describe('add')"
    ),
    "ava": (
        "its file's path from the repository root, then its title, joined by ` > `: "
        f"`{EXAMPLE_FILE} > adds two numbers` for test('adds two numbers', ...)"
    ),
}
ID_SHAPE = (
    "its file's path from the repository root, then the titles of the describe blocks (or "
    "suites, or subtests) it is in, then its own title, joined by ` > `: "
    f"`{EXAMPLE_FILE} > add > adds two numbers` for it('adds two numbers') in describe('add'), "
    f"`{EXAMPLE_FILE} > adds two numbers` for a test outside any describe block"
)
