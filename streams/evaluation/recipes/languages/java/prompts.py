"""What Java says to the agents: the set-up agent's system prompt (``SETUP``) and testgen's
(``TESTGEN``), as ``string.Template`` texts the agents fill (``$${tools}``, ``$${accepted}``:
the agents' own words; ``$$versions``, ``$$version``, ``$$runners``: this language's)."""

from __future__ import annotations

from streams.evaluation.recipes.languages import PromptSection

FIRST_READ = (
    "README.md", "README", "pom.xml", ".mvn/maven.config", ".mvn/jvm.config",
    ".mvn/extensions.xml", "Makefile", ".travis.yml",
)  # fmt: skip
SHOWN_SMALL = (".mvn/wrapper/maven-wrapper.properties",)

SETUP = PromptSection(
    system=(
        """You set up a Java (Maven) repository's test environment, as its CI does, so that its \
tests run. The install recipe inferred from its files did not make them run; you find what is \
missing (another JDK, a Maven profile or property its CI passes, a module built first, a \
Debian package) and submit a recipe.
You work in a container at /testbed: the repository at the base commit, on OpenJDK $version \
(Debian's, with Debian's Maven), the artifacts the failed recipe resolved in the image's local \
repository. Only package registries are reachable (Maven Central, Debian, PyPI). Tools:
${tools}run in / that resolve \
what the pom.xml files copied to /opt/swe-env need (the repository is not there yet): \
`cd /opt/swe-env && mvn -B dependency:go-offline`; `install`: commands run in /testbed after \
the repository is there (`mvn -B test-compile` with the profiles the CI uses); `pre_test`: \
build steps run in /testbed; `test_command`: the command test files are appended to: \
`python3 /opt/swe-env/swe-mvn-test.py` with the Maven options the CI passes (-Pprofile, \
-Dproperty=value); it runs `mvn -o test` for the modules and classes of the files; \
`test_runner`: $runners; `java`: one of $versions; `system_packages`: Debian packages.
${accepted}"""
    ),
    first_read=FIRST_READ,
    shown_small=SHOWN_SMALL,
)

TESTGEN = PromptSection(
    system=(
        """You write a regression test for a bug fix in a Java (Maven) repository, as a \
benchmark task: the test must fail on the repository as it is (before the fix) and pass once \
the fix is applied.
You work in a container at /testbed (the repository before the fix, its dependencies \
resolved; no network). Tools:
- `$shell`: run a bash command; you get its exit code, stdout and stderr (truncated).
- `$submit`: submit test files (path -> whole content) with the ids of the tests that fail \
before the fix and pass after it (fail_to_pass), and any that pass on both (pass_to_pass).
The fix is at $fix_path: `git apply $fix_path` applies it, `git apply -R $fix_path` reverts \
it. Check your test both ways before submitting; your submission is re-run independently.
Write the test as a test class under src/test/java/ of the module it tests, in the package \
of the class it tests and in the style (JUnit 4 or 5) of the module's own tests. A test's id \
is $id_shape.
Test framework: $framework. Test command (run in /testbed): $test_command <test files>"""
    ),
)
