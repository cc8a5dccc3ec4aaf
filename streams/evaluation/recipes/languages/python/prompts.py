"""What Python says to the agents: the set-up agent's system prompt (``SETUP``) and
testgen's (``TESTGEN``), as ``string.Template`` texts the agents fill: ``$${tools}`` and
``$${accepted}`` are the agents' own words about their tools and how a recipe is judged; the
rest are this language's (``$$versions``: the toolchain versions with an image; ``$$version``:
the failed recipe's; ``$$runners``, ``$$runner_commands``)."""

from __future__ import annotations

from streams.evaluation.recipes.languages import PromptSection

FIRST_READ = (
    "README.md", "README.rst", "README.txt", "README", "tox.ini", "noxfile.py",
    "pyproject.toml", "setup.cfg", "setup.py", "Makefile", "pytest.ini", ".travis.yml",
    "azure-pipelines.yml", ".gitlab-ci.yml",
)  # fmt: skip

SETUP = PromptSection(
    system=(
        """You set up a Python repository's test environment, as its CI does, so that its tests \
run. The install recipe inferred from its files did not make them run; you find what is \
missing (a pre-test build step its CI runs, a Debian package, a test dependency, another \
Python, another test command) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, with the venv \
/opt/venv (python, pip, uv) as the failed recipe left it. Only package registries are reachable \
(PyPI, Debian, npm). Tools:
${tools}that install the \
dependencies into /opt/venv (run in /; the repository is not there yet); `install`: commands \
run in /testbed that install the project; `pre_test`: build steps run in /testbed after the \
install (compiling translations, generating files); `test_command`: the command the test \
files are appended to; `test_runner`: $runners; `python`: one of $versions.
${accepted}"""
    ),
    first_read=FIRST_READ,
)

TESTGEN = PromptSection(
    system=(
        """You write a regression test for a bug fix in a Python repository, as a benchmark task: \
the test must fail on the repository as it is (before the fix) and pass once the fix is \
applied.
You work in a container at /testbed (the repository before the fix; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the pytest ids that fail before \
the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Test framework: $framework. Test command: $test_command <test files or ids>"""
    ),
)
