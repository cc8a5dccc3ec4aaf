"""Per-repository overrides: what a user who knows a repository says about installing and
testing it (as SWE-bench's per-repository specs). They win over inference, field by field.

A YAML file (``validation.overrides_file``)::

    repositories:
      owner/name:
        python: "3.11"                 # the only version of its toolchain tried: a key named
                                       # after the language's toolchain (node: "20", rust: ...)
        system_packages: [gettext]     # Debian packages of the env image
        env: ["uv pip install -r requirements/tests.txt"]   # env image commands
        install: ["uv pip install -e ."]                   # instance image, in /testbed
        pre_test: ["make -C locale"]   # build steps before the tests
        test_command: "python -m pytest -rA -v"            # the test files are appended
        test_runner: pytest            # whose log parser reads the output
        environment: {TZ: UTC}         # variables of the images and the tests

Unknown keys are errors (a typo must not silently do nothing). The toolchain keys are the
registered languages' (``Language.toolchain``, its versions written as its
``version_pattern`` says): a plugin's toolchain is one more key, with no edit here.

A toolchain key belongs to one language: ``python`` to a Python repository, ``node`` (a Node
major with an image, ``docker.toolchain_images``) to a JavaScript / TypeScript one. In an
overrides file or a remembered recipe another language's key is **ignored** (inference of a
JavaScript tree never reads ``python``); a version with no image leaves the repository
without a recipe (``no_node_for_engines``), as no version is tried but the one it names. A
change someone submits (the setup agent's recipe, an exported task's) is **refused** instead
(``Validator.recipe_with``, ``interpreter_problem``): its author is told to name the
repository's own toolchain.

For a JavaScript / TypeScript recipe, ``pre_test`` is also what is built again after a patch
that changes JS / TS sources (``rebuild_commands``: the tests load the build), but for the
steps of inference's that are no build (uvu's pass lines).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from schemas.base import ToolchainVersions
from streams.core.settings import safe_load_yaml
from streams.evaluation.log_parsers import LOG_PARSERS
from streams.evaluation.recipes.languages import language_named, toolchains
from streams.evaluation.recipes.model import InstallRecipe, RecipeOrigin


class RepositoryOverride(ToolchainVersions):
    """What a user (or the memory, or an agent) says of a repository's recipe, field by field;
    the version of a toolchain under the toolchain's name (``ToolchainVersions``)."""

    system_packages: list[str] | None = None
    env: list[str] | None = None
    install: list[str] | None = None
    pre_test: list[str] | None = None
    test_command: str | None = Field(None, min_length=1)
    test_runner: str | None = Field(None, min_length=1)  # a log parser's name: pytest, ...
    environment: dict[str, str] | None = None

    @field_validator("test_runner")
    @classmethod
    def _known_runner(cls, value: str | None) -> str | None:
        if value is not None and value not in LOG_PARSERS:
            raise ValueError(
                f"no log parser for {value!r}; known: {', '.join(sorted(LOG_PARSERS))}"
            )
        return value

    @model_validator(mode="after")
    def _registered_toolchains(self) -> RepositoryOverride:
        known = toolchains()
        for toolchain, version in self.toolchain_versions.items():
            language = known.get(toolchain)
            if language is None:
                raise ValueError(
                    f"unknown field {toolchain!r}: neither a field nor a registered toolchain "
                    f"({', '.join(sorted(known))})"
                )
            if not re.match(language.version_pattern, version):
                raise ValueError(
                    f"{toolchain}: {version!r} is no {language.label} toolchain version "
                    f"(written as {language.version_pattern})"
                )
        return self


class Overrides(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repositories: dict[str, RepositoryOverride] = Field(default_factory=dict)

    def lookup(self, repo: str) -> RepositoryOverride | None:
        wanted = repo.lower()
        for name, override in self.repositories.items():
            if name.lower() == wanted:
                return override
        return None


def load_overrides(path: Path | None) -> Overrides:
    """The overrides in ``path`` (none when unset); ValueError naming the file otherwise."""
    if path is None:
        return Overrides()
    try:
        data = safe_load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the overrides: {exc}") from None
    try:
        return Overrides.model_validate(data or {})
    except ValidationError as exc:
        raise ValueError(f"{path}: not a valid overrides file: {exc}") from None


WRONG_INTERPRETER = "interpreter_of_another_language"  # python for Node's, node for Python's


def interpreter_problem(language: str, override: RepositoryOverride) -> str | None:
    """Why ``override`` cannot be a recipe of a ``language`` repository (a registered
    language's name: ``Python``, ``JavaScript``): it names another language's toolchain.
    None when it does not."""
    own = language_named(language)
    mine = own.toolchain if own is not None else None
    for field, value in override.toolchain_versions.items():
        if field == mine:
            continue
        owner = toolchains().get(field)
        whose = owner.label if owner is not None else field
        label = own.label if own is not None else language
        advice = f" and name a {mine} version in `{mine}`" if mine else ""
        return (
            f"`{field}` ({value}) is for {whose} repositories; this one is {label}: leave "
            f"`{field}` out{advice}"
        )
    return None


def apply_override(recipe: InstallRecipe, override: RepositoryOverride | None) -> InstallRecipe:
    """``recipe`` with the fields the override sets replaced (its toolchain version is chosen
    by inference: ``Language.pinned_versions``)."""
    if override is None:
        return recipe
    changes: dict[str, object] = {}
    if override.system_packages is not None:
        changes["system_packages"] = tuple(override.system_packages)
    if override.env is not None:
        changes["env_commands"] = tuple(override.env)
    if override.install is not None:
        changes["install_commands"] = tuple(override.install)
    if override.pre_test is not None:
        changes["pre_test_commands"] = tuple(override.pre_test)
        language = language_named(recipe.language)
        if language is not None and language.pre_test_rebuilds:
            # build steps (tsc, a bundle the tests import) run again after a patch to the
            # sources, as inference's do; its own steps that are no build (a runner's pass
            # lines) do not
            kept = set(recipe.pre_test_commands) - set(recipe.rebuild_commands)
            changes["rebuild_commands"] = tuple(c for c in override.pre_test if c not in kept)
    if override.test_command is not None:
        changes["test_command"] = override.test_command
    if override.test_runner is not None:
        changes["test_runner"] = override.test_runner
    if override.environment is not None:
        merged = {**recipe.variables, **override.environment}
        changes["environment"] = tuple(sorted(merged.items()))
    if changes:
        changes["sources"] = (*recipe.sources, "override")
        changes["origin"] = RecipeOrigin("override", override.model_dump(exclude_none=True))
    return dataclasses.replace(recipe, **changes)  # type: ignore[arg-type]
