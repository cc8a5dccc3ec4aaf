"""A repository whose tests need a build step its CI runs and inference cannot see: gettext
translations compiled by a shell script (``msgfmt``, from Debian's gettext), without which
every test skips. Made with real git by the test; its PRs go through extract like any other."""

from __future__ import annotations

from pathlib import Path

from schemas import PatchSet
from streams.clients.git import RepoCache
from streams.core.settings import ExtractSettings
from tests.agents.repo_tasks import classified_for
from tests.git_repos import PullRequestRepo, make_pull_request_repo

REPO = "swe-stream-test/polyglot"
BUILD_STEP = "bash scripts/build_translations.sh"

MESSAGES = '''"""Messages in the user's language."""

import gettext
from pathlib import Path

LOCALES = Path(__file__).parent / "locale"


def _translation(lang):
    return gettext.translation("polyglot", localedir=LOCALES, languages=[lang])


def greeting(lang):
    return _translation(lang).gettext("Hello")


def farewell(lang):
    return _translation(lang).gettext("Goodbye ")
'''

TESTS = """import pytest

from polyglot.messages import LOCALES, greeting

pytestmark = pytest.mark.skipif(
    not (LOCALES / "fr" / "LC_MESSAGES" / "polyglot.mo").exists(),
    reason="translations not compiled: run scripts/build_translations.sh",
)


def test_greeting_fr():
    assert greeting("fr") == "Bonjour"
"""

BASE_FILES = {
    "README.md": (
        "# polyglot\n\nMessages in several languages.\n\n## Development\n\n"
        "The tests need the compiled translations: run `bash scripts/build_translations.sh` "
        "first (it needs GNU gettext's `msgfmt`).\n"
    ),
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "polyglot"\nversion = "1.0"\nrequires-python = ">=3.9"\n\n'
        '[tool.setuptools]\npackages = ["polyglot"]\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "polyglot/__init__.py": "",
    "polyglot/messages.py": MESSAGES,
    "polyglot/locale/fr/LC_MESSAGES/polyglot.po": (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "Hello"\nmsgstr "Bonjour"\n\nmsgid "Goodbye"\nmsgstr "Au revoir"\n'
    ),
    "scripts/build_translations.sh": (
        "#!/bin/sh\nset -e\nfor po in $(find polyglot/locale -name '*.po'); do\n"
        '  msgfmt -o "${po%.po}.mo" "$po"\ndone\n'
    ),
    ".github/workflows/tests.yml": (
        "name: tests\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
        "        with:\n          python-version: '3.11'\n"
        "      - run: pip install -e . pytest\n      - run: ./scripts/build_translations.sh\n"
        "      - run: pytest\n"
    ),
    "tests/__init__.py": "",
    "tests/test_messages.py": TESTS,
}

FIXED = MESSAGES.replace('gettext("Goodbye ")', 'gettext("Goodbye")')
TEST_FAREWELL = (
    "\n\ndef test_farewell_fr():\n"
    "    from polyglot.messages import farewell\n\n"
    '    assert farewell("fr") == "Au revoir"\n'
)


def make_polyglot_repo(root: Path) -> PullRequestRepo:
    return make_pull_request_repo(
        root,
        repo=REPO,
        base_files=BASE_FILES,
        pr_files={
            "polyglot/messages.py": FIXED,
            "tests/test_messages.py": TESTS + TEST_FAREWELL,
        },
    )


async def polyglot_patches(root: Path) -> tuple[PatchSet, RepoCache, PullRequestRepo]:
    """The polyglot PR through extract, and the clone cache it used."""
    from agents.extract import Extract

    pr = make_polyglot_repo(root / "git")
    repos = RepoCache(root / "cache", pr.url_template)
    (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
    assert isinstance(patches, PatchSet)
    return patches, repos, pr


def second_pr(patches: PatchSet, number: int = 2) -> PatchSet:
    """Another PR of the repository at the same base (its dependency files unchanged)."""
    instance_id = patches.instance_id.rsplit("-", 1)[0] + f"-{number}"
    return patches.model_copy(update={"number": number, "instance_id": instance_id})
