"""The recipe chooser: which install recipes a task's repository is tried with, best first.

At a commit: the repository's files (``tree``), the toolchain images the engine has
(``images``: per registered language's toolchain, its versions with an image), and from them
the recipes, the remembered ones first (``remembered_recipes``, from ``recipes.memory``), then
inference's with the user's overrides (``inferred``), or inference's with a given change over
it (``recipe_with``: a setup agent's submission, an exported task's own recipe). Builds no
image: the provisioner
(``streams.evaluation.provisioner``) does, for the recipes chosen here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from streams.clients.debian_contents import DebianContents
from streams.clients.git import RepoCache
from streams.core import metrics
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.images import base_image_exists
from streams.evaluation.reasons import UNSUPPORTED, ValidationFailed
from streams.evaluation.recipes.infer import NO_RUNNER, Inputs, infer_recipes, runnable
from streams.evaluation.recipes.languages import (
    Language,
    configured_images,
    language_of,
    toolchains,
    version_key,
)
from streams.evaluation.recipes.memory import (
    RecipeTable,
    as_override,
    dependency_fingerprint,
    layered,
    trusted,
)
from streams.evaluation.recipes.model import InstallRecipe, RecipeOrigin, TreeFiles
from streams.evaluation.recipes.overrides import (
    WRONG_INTERPRETER,
    Overrides,
    RepositoryOverride,
    interpreter_problem,
)

log = logging.getLogger("swe_stream.validator")


def own_sources(recipe: InstallRecipe, user: RepositoryOverride | None) -> tuple[str, ...]:
    """``recipe``'s sources, "override" only when the user's override file took part (a
    remembered or submitted change is applied the way an override is, and says so itself)."""
    return tuple(s for s in recipe.sources if s != "override" or user is not None)


class RecipeChooser:
    """The recipes to try for a repository at a commit; blocking (a clone, the engine's image
    list). ``client``: the Docker client, made on first use (only its images are looked at)."""

    def __init__(
        self,
        repos: RepoCache,
        client: Callable[[], Any],
        docker: DockerSettings,
        settings: ValidateSettings,
        pipeline_version: int,
        overrides: Overrides | None = None,
        memory: RecipeTable | None = None,
    ):
        self.repos = repos
        self._client = client
        self.docker = docker
        self.settings = settings
        self.pipeline_version = pipeline_version  # a memory entry of an older one is verified
        self.overrides = overrides if overrides is not None else Overrides()
        self.memory = memory  # the recipes that worked (None: nothing remembered)
        # which Debian package holds a file a build looks for (read once a day per suite)
        self.system_files = DebianContents(
            docker.debian_mirror, Path(docker.debian_contents) if docker.debian_contents else None
        )

    def tree(self, repo: str, base_commit: str) -> TreeFiles:
        """Blocking: ``repo``'s files at ``base_commit`` (cloned, or reused)."""
        self.repos.ensure(repo, base_commit)
        archive, problems = self.repos.archive_with_submodules(repo, base_commit)
        for problem in problems.values():
            log.info("%s: %s", repo, problem)
        tree = TreeFiles(archive)
        tree.missing_submodules = problems
        return tree

    def recipes(
        self,
        repo: str,
        base_commit: str,
        created_at: datetime | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> tuple[TreeFiles, list[InstallRecipe]]:
        """Blocking: clone (or reuse) ``repo`` and the recipes to try at ``base_commit``, best
        first: the remembered ones (``remembered_recipes``), then inference's (at most
        ``validation.max_toolchain_attempts``), by the language of the tree (the language
        registry; ``changed_files``: the PR's, which pick a workspace's package; ``diffs``:
        its test patch and patch, whose dependency files a language may fetch too)."""
        tree = self.tree(repo, base_commit)
        override = self.overrides.lookup(repo)
        # one look at the engine for every recipe made here
        images = self.images()
        language = language_of(tree)
        recipes, facts = self.inferred(
            repo, base_commit, tree, created_at, override, images, changed_files, diffs
        )
        if facts is None or language is None:
            raise ValidationFailed(
                UNSUPPORTED,
                "no install recipe recognises the repository (no language swe-stream knows "
                "detects its files)",
            )
        remembered = self.remembered_recipes(
            repo, base_commit, tree, created_at, override, images, changed_files, diffs
        )
        if not recipes and not remembered:
            inputs = Inputs(repo=repo, images=images)
            reason, detail = language.no_recipe(facts, inputs)
            raise ValidationFailed(reason, detail)
        if not remembered and not any(runnable(r) for r in recipes):
            notes = "; ".join(dict.fromkeys(n for r in recipes for n in r.notes))
            raise ValidationFailed(
                NO_RUNNER,
                f"{language.name}: no test runner swe-stream reads "
                f"({recipes[0].test_command!r}){'; ' + notes if notes else ''}",
            )
        inferred = [
            r for r in recipes[: self.settings.max_toolchain_attempts] if r not in remembered
        ]
        return tree, [with_missing_submodules(r, tree) for r in [*remembered, *inferred]]

    def inferred(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        override: RepositoryOverride | None,
        images: dict[str, dict[str, str]] | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> tuple[list[InstallRecipe], Any]:
        """Inference's recipes for ``tree`` with ``override`` applied (``infer_recipes``), on
        the toolchain versions of ``images`` (toolchain -> version -> tag; default: those on
        the engine), as the tree's language wants."""
        return infer_recipes(
            tree,
            repo=repo,
            images=self.images() if images is None else images,
            created_at=created_at,
            release_tag=lambda: self.repos.release_tag(repo, base_commit),
            override=override,
            changed_files=changed_files,
            diffs=diffs,
            system_files=self.system_files,
        )

    def remembered_recipes(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        override: RepositoryOverride | None,
        images: dict[str, dict[str, str]],
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> list[InstallRecipe]:
        """The recipes the memory holds for this commit of ``repo`` (its own dependency
        files' entry, then the repository's latest other one), made again by inference at
        this commit with their changes over it; the user's override file still wins."""
        if self.memory is None:
            return []
        fingerprint = dependency_fingerprint(tree)
        entries = self.memory.candidates(repo, fingerprint)
        own = bool(entries) and entries[0].fingerprint == fingerprint
        result = "hit" if own else "repository" if entries else "miss"
        metrics.RECIPE_MEMORY_LOOKUPS.labels(result=result).inc()
        recipes: list[InstallRecipe] = []
        for entry in entries:
            missing = [
                f"{toolchain} {version}"
                for toolchain, version in entry.toolchain_versions.items()
                if images.get(toolchain) and version not in images[toolchain]
            ]
            if missing:
                log.info("%s: remembered recipe needs %s, not built", repo, ", ".join(missing))
                continue
            change = as_override(entry)
            layers = layered(change, override)
            made, _ = self.inferred(
                repo, base_commit, tree, created_at, layers, images, changed_files, diffs
            )
            if not made:
                continue
            origin = RecipeOrigin(
                entry.source,
                change.model_dump(exclude_none=True, exclude=set(change.model_extra or {})),
                remembered=True,
                trusted=trusted(entry, self.pipeline_version),
            )
            sources = (*own_sources(made[0], override), f"memory:{entry.source}")
            recipe = dataclasses.replace(made[0], sources=sources, origin=origin)
            if recipe not in recipes:
                recipes.append(recipe)
        return recipes

    def recipe_with(
        self,
        repo: str,
        base_commit: str,
        tree: TreeFiles,
        created_at: datetime | None,
        change: RepositoryOverride,
        source: str,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> InstallRecipe:
        """Inference's recipe with ``change`` over it (a setup agent's submission), the
        user's override file still winning (``changed_files``: the PR's, which pick a
        workspace's package); ValidationFailed when it names another language's toolchain
        (``interpreter_problem``) or a version of its own with no image (the language's own
        no-recipe reason)."""
        language = language_of(tree)
        problem = interpreter_problem(language.name, change) if language else None
        if problem:
            raise ValidationFailed(WRONG_INTERPRETER, problem)
        images = self.images()
        if language is not None:
            self._check_version(language, change, images)
        user = self.overrides.lookup(repo)
        layers = layered(change, user)
        made, _ = self.inferred(
            repo, base_commit, tree, created_at, layers, images, changed_files, diffs
        )
        if not made:
            raise ValidationFailed(UNSUPPORTED, "no install recipe recognises the repository")
        interpreter = set(change.model_extra or {})  # the recipe's own, not part of its change
        origin = RecipeOrigin(source, change.model_dump(exclude_none=True, exclude=interpreter))
        sources = (*own_sources(made[0], user), source)
        return dataclasses.replace(made[0], sources=sources, origin=origin)

    @staticmethod
    def _check_version(
        language: Language, change: RepositoryOverride, images: dict[str, dict[str, str]]
    ) -> None:
        """ValidationFailed when ``change`` names a version of the language's toolchain with
        no image (a toolchain the base images carry: only where some of them are built, else
        the base image's is used)."""
        toolchain = language.toolchain
        if toolchain is None:
            return
        wanted = change.version(toolchain)
        built = images.get(toolchain, {})
        on_base = language.toolchain_images is None
        if wanted is None or wanted in built or (not built and on_base):
            return
        names = ", ".join(sorted(built, key=version_key)) or "none"
        reason = language.no_recipe_reasons[0] if language.no_recipe_reasons else UNSUPPORTED
        raise ValidationFailed(reason, f"no image for {toolchain} {wanted}; built: {names}")

    def images(self) -> dict[str, dict[str, str]]:
        """Every registered toolchain's versions whose image is on the engine (its language's
        own images, or the settings' ``docker.toolchain_images``), by toolchain."""
        return {toolchain: self.toolchain_images(toolchain) for toolchain in toolchains()}

    def toolchain_images(self, toolchain: str) -> dict[str, str]:
        """The versions of ``toolchain`` whose image is on the engine; none: the default
        base image, whatever version it has."""
        configured = configured_images(self.docker.toolchain_images).get(toolchain, {})
        present = {
            version: tag
            for version, tag in configured.items()
            if base_image_exists(self._client(), tag)
        }
        language = toolchains().get(toolchain)
        if configured and not present and language and language.toolchain_images is None:
            log.warning(
                "none of the base images %s is built (swe-stream images base --all): "
                "validating on %s",
                sorted(configured.values()),
                self.docker.base_image,
            )
        return present


def with_missing_submodules(recipe: InstallRecipe, tree: TreeFiles) -> InstallRecipe:
    """``recipe`` with a note for each submodule the tree lacks that its notes do not name
    yet (a language may say its own): a run without any test result is then said to lack a
    submodule (``prover.why_no_fail_to_pass``), whatever the language, as a failed build
    that names one is (``provisioner.needed_submodules``)."""
    said = [
        why
        for path, why in tree.missing_submodules.items()
        if not any(path in note for note in recipe.notes)
    ]
    return dataclasses.replace(recipe, notes=(*recipe.notes, *said)) if said else recipe
