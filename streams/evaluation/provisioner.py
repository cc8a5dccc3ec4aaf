"""The image provisioner: a recipe's images, built (or reused), and the sandboxes they start.

``build`` makes a recipe's env and instance images (``streams.evaluation.environments``) into
an ``Environment``; ``built`` and ``environments`` go down the recipes the chooser
(``streams.evaluation.recipe_chooser``) gives, best first, to those that install;
``exploration`` is where a setup agent starts when none does. Runs no test: the prover
(``streams.evaluation.prover``) does, in the sandboxes of an ``Environment``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.core.settings import DockerSettings
from streams.evaluation.environments import BuiltImage, EnvironmentBuilder, ImageBuildError
from streams.evaluation.reasons import (
    INSTALL_FAILED,
    SUBMODULE_MISSING,
    TAIL_CHARS,
    ValidationFailed,
    tail,
)
from streams.evaluation.recipe_chooser import RecipeChooser
from streams.evaluation.recipes.languages import interpreter_of
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.sandbox import Limits, Sandbox

log = logging.getLogger("swe_stream.validator")


@dataclass
class Environment:
    """A task's images, ready: what the tests and the test generator run in."""

    tree: TreeFiles
    recipe: InstallRecipe
    env: BuiltImage
    instance: BuiltImage
    builder: EnvironmentBuilder

    def sandbox(
        self, limits: Limits, variables: dict[str, str] | None = None, **options: Any
    ) -> Sandbox:
        """A fresh container of the instance image: the repository at the base commit
        (``options``: Sandbox's ``mounts``, ``name``, ``keep``)."""
        return Sandbox(
            self.builder.client, self.instance.tag, limits, environment=variables, **options
        )

    def release(self) -> None:
        self.builder.release(self.env, self.instance)


class ImageProvisioner:
    """Environments for recipes; blocking (image builds). ``client``: the Docker client, made
    on first use; ``chooser``: the recipes ``environments`` tries."""

    def __init__(self, client: Callable[[], Any], docker: DockerSettings, chooser: RecipeChooser):
        self._client = client
        self.docker = docker
        self.chooser = chooser

    def builder(self, fresh: bool = False) -> EnvironmentBuilder:
        return EnvironmentBuilder(
            self._client(),
            self.docker.base_image,
            self.docker.cache_level,
            self.docker.package_cache,
            self.docker.build_step_timeout_seconds,
            fresh=fresh,
        )

    def build(
        self,
        repo: str,
        instance_id: str,
        tree: TreeFiles,
        recipe: InstallRecipe,
        fresh: bool = False,
    ) -> Environment:
        """Blocking: the env and instance images of ``recipe`` (built, or reused; ``fresh``:
        built again even where they exist)."""
        builder = self.builder(fresh)
        env = builder.env_image(repo, recipe)
        try:
            instance = builder.instance_image(instance_id, env, tree, recipe)
        except BaseException:
            builder.release(env, None)
            raise
        return Environment(tree, recipe, env, instance, builder)

    def exploration(
        self, repo: str, instance_id: str, tree: TreeFiles, recipe: InstallRecipe
    ) -> Environment:
        """Blocking: where a setup agent starts: the images of ``recipe`` when they build,
        else the repository at the base commit on the tools layer (a venv, pip, uv, git)
        with nothing installed."""
        try:
            return self.build(repo, instance_id, tree, recipe)
        except ImageBuildError as exc:
            if not exc.step:
                raise
        builder = self.builder()
        tools = builder.tools_image(recipe.base_image or self.docker.base_image)
        bare = dataclasses.replace(recipe, install_commands=(), pre_test_commands=())
        instance = builder.instance_image(f"{instance_id}-explore", tools, tree, bare)
        return Environment(tree, bare, tools, instance, builder)

    def environments(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> Generator[Environment, None, None]:
        """Blocking: an environment per recipe that installs, best first (``built``)."""
        tree, recipes = self.chooser.recipes(repo, base_commit, created_at, changed_files, diffs)
        if prefer_python is not None:
            recipes.sort(key=lambda recipe: recipe.python != prefer_python)
        yield from self.built(repo, instance_id, tree, recipes)

    def built(
        self, repo: str, instance_id: str, tree: TreeFiles, recipes: list[InstallRecipe]
    ) -> Generator[Environment, None, None]:
        """Blocking: the environment of each of ``recipes`` that installs, in order; the
        consumer releases each. Raises ValidationFailed(install_failed) once none has
        installed (with every attempt's failed step and log tail)."""
        failures: list[str] = []
        built = 0
        for recipe in recipes:
            try:
                environment = self.build(repo, instance_id, tree, recipe)
            except ImageBuildError as exc:
                if not exc.step:  # the engine's trouble (a missing base image), not the recipe's
                    raise
                failures.append(
                    f"{interpreter_of(recipe)} ({', '.join(recipe.sources)}): {exc.layer} step "
                    f"`{exc.step}` failed:\n"
                    + tail(exc.log_tail, TAIL_CHARS // max(1, len(recipes)))
                )
                log.info("%s: %s does not install: %s", repo, interpreter_of(recipe), exc.step)
                continue
            built += 1
            yield environment
        if not built:
            missing = needed_submodules(tree, failures)
            if missing:  # a build that fails where a submodule it reads is not there
                raise ValidationFailed(
                    SUBMODULE_MISSING, "; ".join(missing) + "\n" + "\n".join(failures)
                )
            raise ValidationFailed(INSTALL_FAILED, "\n".join(failures))

    def environment(
        self,
        repo: str,
        base_commit: str,
        instance_id: str,
        created_at: datetime | None = None,
        prefer_python: str | None = None,
        changed_files: Sequence[str] = (),
        diffs: tuple[str, ...] = (),
    ) -> Environment:
        """Blocking: clone (or reuse) ``repo``, and build (or reuse) the images of the first
        recipe that installs."""
        candidates = self.environments(
            repo, base_commit, instance_id, created_at, prefer_python, changed_files, diffs
        )
        environment = next(candidates)
        candidates.close()
        return environment


def needed_submodules(tree: TreeFiles, failures: list[str]) -> list[str]:
    """Why each submodule the tree lacks is not there, for those the failed builds' logs name:
    its path, or a file under it as a build tool writes one relative to its own directory
    (``munit/munit.c`` for ``tests/munit``). A build that cannot work here."""
    text = "\n".join(failures)
    needed = []
    for path, why in tree.missing_submodules.items():
        under = re.escape(path.rstrip("/").rsplit("/", 1)[-1]) + "/"
        pattern = rf"(?:^|[^\w.-])(?:{re.escape(path)}(?![\w.-])|{under})"
        if re.search(pattern, text, re.MULTILINE):
            needed.append(why)
    return needed
