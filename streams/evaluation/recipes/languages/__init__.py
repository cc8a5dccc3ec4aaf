"""The language registry: each language the engine validates is one plugin (``Language``).

A language is a folder of its own here (``python/``, ``javascript/``) whose package exposes
``LANGUAGE``, or any installed distribution that declares an entry point in the group
``swe_stream.languages`` (as pytest finds its plugins through ``pytest11``)::

    [project.entry-points."swe_stream.languages"]
    make = "my_package.make_language:LANGUAGE"

The rest of the engine (inference, the validator, export, the harness's check commands, the
recipe memory, the set-up agent and testgen) asks the registry (``languages()``,
``language_of``, ``language_named``, ``runner_owner``), never ``if language == ...``: adding a
language is adding a folder (or a distribution) and its tests.

A ``Language`` is a class whose defaults do nothing language-specific; a plugin overrides what
it has. Its decisions are pure functions of files and text (no Docker here: ``recipes/``
never imports the engine).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from typing import Any, Protocol

from packaging.version import InvalidVersion, Version

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.base import (
    LogParser,
    ReportFile,
    ReportParser,
    RunnerCommand,
)
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles

log = logging.getLogger("swe_stream.languages")

ENTRY_POINT_GROUP = "swe_stream.languages"


class SystemFiles(Protocol):
    """Which packages of a Debian suite hold files a build looks for, as ``apt-file`` says
    (``streams.clients.debian_contents``): for each path end asked (``zlib.h``,
    ``openssl/ssl.h``, ``fmt-config.cmake``), every (path, packages) of the suite ending so.
    Blocking; raises ``OSError`` (or a subclass of ``RuntimeError``) when it cannot tell."""

    def holders(
        self, suite: str, ends: Sequence[str]
    ) -> Mapping[str, Sequence[tuple[str, tuple[str, ...]]]]: ...


@dataclass(frozen=True)
class Inputs:
    """What inference may use beyond the tree: the images per toolchain version (``images``:
    toolchain, such as ``python``, -> version -> image tag), the PR's date, changed files and
    diffs (its test patch and patch, in the order they apply), the release tag (asked only
    when needed), a per-repository override, the Debian packages' file lists."""

    repo: str
    images: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    created_at: datetime | None = None
    changed_files: Sequence[str] = ()
    diffs: tuple[str, ...] = ()
    release_tag: Callable[[], str | None] = lambda: None
    override: Any = None  # a ``RepositoryOverride``
    system_files: SystemFiles | None = None  # None: no package is looked up by its files

    def images_of(self, toolchain: str | None) -> dict[str, str]:
        """The images of one toolchain's versions (none: the default base image only)."""
        return dict(self.images.get(toolchain or "", {}))


@dataclass(frozen=True)
class Cause:
    """A line of a failing log that says why, and the cause a reason's detail opens with."""

    reason: str  # the rejection it explains (``install_failed``, ``tests_did_not_run``)
    pattern: str  # a regular expression searched in the log (multi-line, case-insensitive)
    cause: str  # what a person is told; ``{0}`` is the pattern's first group, if any


@dataclass(frozen=True)
class PromptSection:
    """What a language says to an agent: the system prompt template (``string.Template``
    text; the agent fills the placeholders it knows: ``$tools``, ``$accepted``, ``$runners``,
    ``$versions``, ...) and the files a person reads first."""

    system: str
    first_read: tuple[str, ...] = ()
    shown_small: tuple[str, ...] = ()  # named with their size, shown only when small


@dataclass(frozen=True)
class ToolchainImages:
    """Images of a toolchain built on the base images (one per Debian suite, whose own
    package gives the version): ``<prefix>:<suite>``, made by ``steps`` (RUN, joined by
    ``&&``) with ``environment`` set, labelled ``label=<version>`` (``images`` builds them)."""

    prefix: str
    label: str
    by_suite: Mapping[str, str]  # Debian suite -> the toolchain version its package has
    steps: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()
    note: str = ""  # why the environment is set, for the Dockerfile's reader

    def tag(self, suite: str) -> str:
        return f"{self.prefix}:{suite}"


def debian_install_steps(
    packages: str, *then: str, also_remove: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The steps of a toolchain image made of Debian's packages: the suite's lists fetched
    (past a mirror's Valid-Until), ``packages`` installed without recommends, ``then`` run,
    the lists (and ``also_remove``) removed from the layer."""
    return (
        "apt-get -o Acquire::Check-Valid-Until=false update",
        f"DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {packages}",
        *then,
        " ".join(["rm -rf /var/lib/apt/lists/*", *also_remove]),
    )


class Language:
    """One language's plugin. Subclass it and override what the language has."""

    # the name recipes carry (``InstallRecipe.language``), and the other names of the same
    # language (TypeScript is run as JavaScript)
    name: str = ""
    title: str = ""  # for people, where it differs from ``name``: "JavaScript / TypeScript"
    spellings: frozenset[str] = frozenset()
    # the toolchain whose versions have images (``Inputs.images``, ``docker.toolchain_images``)
    # and which an override, a remembered recipe and a task's install config name as a key of
    # their own (``python: "3.11"``, ``rust: "1.85"``); None: the default base image only
    toolchain: str | None = None
    # how a version of the toolchain is written there (an override's is checked with it)
    version_pattern: str = r"^\d+(\.\d+)?$"
    # the hosts its package managers fetch from (name or ``*.suffix``): what the set-up
    # agent's sandbox, and its prompt, may reach for this language
    registries: tuple[str, ...] = ()
    order: int = 100  # detection order: the first language whose ``detect`` accepts a tree
    # its test runners: a log parser each, the reports they write, how the recipe side runs
    # them (the options their parsers read)
    runners: Mapping[str, LogParser] = {}
    reports: Mapping[str, ReportParser] = {}
    runner_commands: Mapping[str, RunnerCommand] = {}
    default_runner: str = ""
    # file names only this language's folder names (its project and lockfiles): the
    # architecture test checks nothing else does (and its runners' names)
    project_files: frozenset[str] = frozenset()
    vocabulary_words: frozenset[str] = frozenset()  # other words of its own (its package managers)
    # the rejection reasons only its inference gives (``no_recipe``)
    no_recipe_reasons: tuple[str, ...] = ()
    # the causes its install and test logs show (``failures``)
    causes: tuple[Cause, ...] = ()
    # images of its toolchain on the base images (None: the base images have it, or it
    # needs none of its own)
    toolchain_images: ToolchainImages | None = None
    setup_prompt: PromptSection | None = None
    testgen_prompt: PromptSection | None = None
    # how a test file submitted by testgen must be named, for its rejection
    test_file_hint: str = "name it as the repository's own test files are named"
    # whether an override's ``pre_test`` steps are builds the tests load, run again after a
    # patch to the sources (``rebuild_commands``), as inference's are
    pre_test_rebuilds: bool = False
    # a compiled language: a test patch may not compile without the fix, which takes a whole
    # package's tests out of the run; validated with three runs (the base as it is, with the
    # test patch, with both patches: ``grading.judge_three``) instead of two
    compiled: bool = False
    # whether its test command runs every test whatever files it is given (a C/C++ suite):
    # then the base runs even when none of the PR's test files is there yet
    runs_whole_suite: bool = False
    # the suffixes of its source files (lower case), for telling a project of this language
    # from another's side project at the same root (``language_of``)
    source_suffixes: tuple[str, ...] = ()
    # whether the recipe memory keeps the toolchain version a recipe ran on for the
    # repository's next PRs (Python's that worked is the best first guess); False where
    # inference picks it per PR (Rust's rustc follows the PR's date and lockfile)
    remembers_version: bool = True

    # -------------------------------------------------------------- detection and inference
    def detect(self, tree: TreeFiles) -> bool:
        """Whether ``tree`` is a project of this language."""
        return False

    def facts(self, tree: TreeFiles) -> Any:
        """What the tree's files say (its own type; None: nothing to read)."""
        return None

    def versions(self, facts: Any, inputs: Inputs) -> list[str | None]:
        """The toolchain versions to try, best first, against the images there are
        (``inputs.images_of(toolchain)``); None: the default base image's."""
        return [None]

    def recipe(
        self, tree: TreeFiles, facts: Any, version: str | None, inputs: Inputs
    ) -> InstallRecipe:
        """The recipe of one toolchain version (what ``infer`` makes by default)."""
        raise NotImplementedError(f"{self.name}: a language gives recipe() or infer()")

    def infer(self, tree: TreeFiles, inputs: Inputs) -> tuple[list[InstallRecipe], Any]:
        """The recipes to try, best first, and the facts they were made of: by default one
        ``recipe`` per version of ``versions``, none when there are no ``facts``."""
        facts = self.facts(tree)
        if facts is None:
            return [], None
        return [self.recipe(tree, facts, v, inputs) for v in self.versions(facts, inputs)], facts

    def no_recipe(self, facts: Any, inputs: Inputs) -> tuple[str, str]:
        """Why a tree of this language has no recipe (a rejection's reason and detail)."""
        return "no_recipe", f"{self.name}: no recipe for this tree"

    def speaks(self, language: str) -> bool:
        """Whether recipes of ``language`` (a recipe's or a repository's) are this one's."""
        return language == self.name or language in self.spellings

    def default_images(self) -> dict[str, str]:
        """The image of each version of its toolchain, unless the settings name others
        (``docker.toolchain_images``): those of ``toolchain_images``, one per suite."""
        images = self.toolchain_images
        if images is None:
            return {}
        return {version: images.tag(suite) for suite, version in images.by_suite.items()}

    def pinned_versions(self, inputs: Inputs) -> list[str | None] | None:
        """The one version of its toolchain an override names (None: it names none): tried
        alone when it has an image (or the base images carry the toolchain: the default base
        image runs it), else nothing is tried (``no_recipe`` says why)."""
        wanted = override_version(inputs.override, self.toolchain)
        if wanted is None:
            return None
        images = inputs.images_of(self.toolchain)
        return [wanted] if wanted in images or self.toolchain_images is None else []

    # ------------------------------------------------------------------ recipes and runs
    def version_of(self, recipe: InstallRecipe) -> str | None:
        """The toolchain version ``recipe`` runs on (None: the base image's): the one its
        sources name (``<toolchain>:<version>``)."""
        return source_version(recipe.sources, self.toolchain)

    def interpreter(self, recipe: InstallRecipe) -> str:
        """What runs the tests, for people reading a reason: ``python 3.11``, ``node 20``."""
        return f"{self.toolchain or self.name.lower()} {self.version_of(recipe) or 'default'}"

    def tests_for(self, tree: TreeFiles, files: list[str]) -> list[str]:
        """The files to run for the PR's touched test ``files`` (a helper that holds no test
        may be run through the tests that import it)."""
        return files

    def touches_compiled_sources(self, patch: str) -> bool:
        """Whether ``patch`` changes what the recipe's ``rebuild_commands`` build."""
        return False

    def report_file(self, runner: str, directory: str) -> ReportFile | None:
        """Where ``runner`` writes its report under ``directory`` and the arguments appended
        after the test files that ask for it; None when it writes none that way."""
        return None

    def ids_with_files(
        self, runner: str, statuses: dict[str, TestStatus], files: list[str]
    ) -> dict[str, TestStatus]:
        """A run's statuses with the ids its runner printed without their file completed
        from the run's ``files``."""
        return statuses

    def tests_changed(self, tree: TreeFiles, test_patch: str) -> list[str]:
        """The ids of the test functions ``test_patch`` adds or changes, for a compiled
        language's three runs (none by default)."""
        return []

    def changed_ids(self, changed: Sequence[str], ids: Iterable[str]) -> list[str]:
        """The ids, of those the runs gave (``ids``), that name the tests ``tests_changed``
        found (``changed``): the same names unless a language's runs qualify them."""
        return list(changed)

    def test_line_ranges(self, path: str, text: str) -> list[tuple[int, int]] | None:
        """The line ranges of tests inside a source file of this language (None: its tests
        live in test files only): 1-based, inclusive; ``text`` is the file at ``path``."""
        return None

    def may_fail_to_pass(self, test_id: str) -> bool:
        """Whether ``test_id`` may be FAIL_TO_PASS (not one whose id a patch changes, such as
        a doc test named by its line)."""
        return True

    def compile_failures(self, runner: str, output: str) -> dict[str, str]:
        """The packages (or modules) of a run of ``runner`` that did not compile, each with
        what the compiler said (a compiled language's; none by default)."""
        return {}

    # ------------------------------------------------------------------------ test ids
    def test_id_shape(self, runner: str) -> str:
        """How a test id of ``runner`` is spelled, for testgen's prompt."""
        return "the id its runner prints"

    def file_of(self, test_id: str) -> str | None:
        """The file a test id of this language's runners names, or None."""
        return None

    def check_command(self, test_command: str, runner: str, test_id: str) -> str | None:
        """A command running the one test ``test_id`` (None: the id appended whole)."""
        return None

    # -------------------------------------------------------------------- recipe memory
    fingerprint_limit: int = 1 << 20  # bytes of one dependency file read for the fingerprint

    def fingerprint_files(self, names: Sequence[str]) -> list[str]:
        """The files of a tree whose contents decide how it installs."""
        return []

    @property
    def label(self) -> str:
        return self.title or self.name

    @property
    def vocabulary(self) -> frozenset[str]:
        """The names only this language's folder may name: its runners' (but the one that is
        its toolchain's own name, as ``node --test``), its project files' and its own words."""
        runners = frozenset(set(self.runners) - {self.toolchain or ""})
        return runners | self.project_files | self.vocabulary_words


def source_version(sources: Sequence[str], toolchain: str | None) -> str | None:
    """The version of ``toolchain`` a recipe's sources name (``rust:1.85``), or None."""
    if not toolchain:
        return None
    prefix = f"{toolchain}:"
    found = next((s[len(prefix) :] for s in map(str, sources) if s.startswith(prefix)), None)
    return found if found and found != "default" else None


def override_version(override: Any, toolchain: str | None) -> str | None:
    """The version of ``toolchain`` an override (a ``RepositoryOverride``) names, or None."""
    if override is None or not toolchain:
        return None
    version = override.version(toolchain)
    return str(version) if version else None


_lock = threading.RLock()
_registry: tuple[Language, ...] | None = None
_loading = False
_extra: list[Language] = []


def _builtin() -> list[Language]:
    """The ``LANGUAGE`` of every folder of this package."""
    found = []
    for module in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
        if not module.ispkg:
            continue
        language = getattr(importlib.import_module(module.name), "LANGUAGE", None)
        if isinstance(language, Language):
            found.append(language)
    return found


def _plugins() -> list[Language]:
    """The languages installed distributions declare (``swe_stream.languages``); one that
    fails to load is logged and left out, so one broken plugin stops no pipeline."""
    found = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            language = point.load()
        except Exception as error:
            log.error("language plugin %s (%s) does not load: %s", point.name, point.value, error)
            continue
        if isinstance(language, type) and issubclass(language, Language):
            language = language()
        if not isinstance(language, Language):
            log.error("language plugin %s is no Language: %r", point.name, language)
            continue
        found.append(language)
    return found


def languages() -> tuple[Language, ...]:
    """Every registered language, in detection order (built-ins and plugins, then the ones
    ``register`` added); loaded once (``reload`` looks again)."""
    global _registry, _loading
    with _lock:
        if _registry is None:
            if _loading:  # a language module asked while it is imported: it would see none
                raise RuntimeError(
                    "a language module asks the language registry as it is imported: use its "
                    "own tables (its runners, commands) there instead"
                )
            _loading = True
            try:
                loaded: dict[str, Language] = {}
                for language in [*_builtin(), *_plugins(), *_extra]:
                    if language.name in loaded:
                        log.warning("language %s registered twice: the later wins", language.name)
                    loaded[language.name] = language
                _registry = tuple(sorted(loaded.values(), key=lambda x: (x.order, x.name)))
            finally:
                _loading = False
        return _registry


def reload() -> tuple[Language, ...]:
    """Look for languages again (after a plugin was installed, or in tests)."""
    global _registry
    with _lock:
        _registry = None
    return languages()


def register(language: Language) -> None:
    """Add a language in this process (an application embedding the engine)."""
    _extra.append(language)
    reload()


# how many times more source files a later compiled language must have than the first one
# detected to be the tree's: a Go module of integration tests beside a C library (6 Go files,
# 276 C ones) is the library's; a C part of a Go project stays Go's
SIDE_PROJECT_RATIO = 10


def language_of(tree: TreeFiles) -> Language | None:
    """The first language (in detection order) whose ``detect`` accepts ``tree``, unless it
    is a compiled language's side project: another compiled language that also accepts the
    tree has ``SIDE_PROJECT_RATIO`` times as many source files."""
    detected = [language for language in languages() if language.detect(tree)]
    if not detected:
        return None
    first = detected[0]
    if not first.compiled or not first.source_suffixes:
        return first
    floor = SIDE_PROJECT_RATIO * max(1, _sources(first, tree))
    return next(
        (
            other
            for other in detected[1:]
            if other.compiled and other.source_suffixes and _sources(other, tree) >= floor
        ),
        first,
    )


def _sources(language: Language, tree: TreeFiles) -> int:
    return sum(name.lower().endswith(language.source_suffixes) for name in tree.names)


def language_named(name: str | None) -> Language | None:
    """The language whose recipes carry ``name`` (``Python``, ``TypeScript``), or None."""
    if not name:
        return None
    return next((language for language in languages() if language.speaks(name)), None)


def runner_owner(runner: str) -> Language | None:
    """The language one of whose runners is ``runner``, or None."""
    return next((language for language in languages() if runner in language.runners), None)


def toolchains() -> dict[str, Language]:
    """The languages with a toolchain, by its name (``python``, ``node``)."""
    return {lang.toolchain: lang for lang in languages() if lang.toolchain is not None}


def configured_images(
    configured: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, dict[str, str]]:
    """Every toolchain's image per version: the settings' (``docker.toolchain_images``) for
    the toolchains they name, each language's own (``default_images``) for the others; a
    toolchain the settings name that no language has is kept (its plugin may come later)."""
    given = {name: dict(versions) for name, versions in (configured or {}).items()}
    own = {name: lang.default_images() for name, lang in toolchains().items()}
    return {**own, **given}


def registries() -> tuple[str, ...]:
    """The hosts every language's package managers fetch from, each once."""
    return tuple(dict.fromkeys(host for lang in languages() for host in lang.registries))


def interpreter_of(recipe: InstallRecipe) -> str:
    """What runs ``recipe``'s tests, for people: its language's ``interpreter``."""
    language = language_named(recipe.language)
    if language is None:
        return f"{recipe.language} {recipe.python or 'default'}"
    return language.interpreter(recipe)


def version_key(version: str) -> tuple[int, Version | str]:
    """Sorts toolchain versions as versions (3.9 before 3.10), anything unparsable last."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def no_recipe_reasons() -> tuple[str, ...]:
    """Every language's own rejection reasons (``no_python_for_requires_python``, ...)."""
    return tuple(reason for lang in languages() for reason in lang.no_recipe_reasons)
