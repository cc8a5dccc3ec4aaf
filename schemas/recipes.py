"""The recipe-memory record: an install recipe that worked for a repository."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import AwareDatetime, ConfigDict, Field

from schemas.base import GitSha, NonEmptyStr, Record, RepoName, ToolchainVersions

__all__ = ["RecipeSource", "RememberedRecipe", "recipe_key"]

RecipeSource = Literal["heuristic", "override", "agent", "edited"]
"""Who made it: inference alone, inference plus the user's override file, the setup agent,
or a person who edited an exported entry (``swe-stream recipes import``)."""


def recipe_key(repo: str, fingerprint: str) -> str:
    """The ``recipes.memory`` key: ``owner/repo@<fingerprint of its dependency files>``."""
    return f"{repo}@{fingerprint}"


class RememberedRecipe(ToolchainVersions, Record):
    """recipes.memory (compacted, key owner/repo@fingerprint): a recipe that ran the tests."""

    # Tried first for the repository's later PRs: those whose dependency files hash the same,
    # then its others. The recipe is a change to what inference makes for the toolchain
    # version it ran on (a key of its own, named after the toolchain: ``ToolchainVersions``),
    # field by field, as an override is (None: inference's own value): a heuristic recipe that
    # worked is only its toolchain version; an agent's or a person's adds what inference could
    # not know.

    model_config = ConfigDict(**{**Record.model_config, **ToolchainVersions.model_config})

    SCHEMA_VERSION: ClassVar[int] = 1

    repo: RepoName
    fingerprint: str = Field(pattern=r"^[0-9a-f]{16}$", description="of the dependency files")
    source: RecipeSource
    system_packages: list[NonEmptyStr] | None = None
    env: list[NonEmptyStr] | None = None
    install: list[NonEmptyStr] | None = None
    pre_test: list[NonEmptyStr] | None = None
    test_command: NonEmptyStr | None = None
    test_runner: NonEmptyStr | None = None
    environment: dict[str, str] | None = None
    # where it was shown to work: the tests it ran with per-test statuses at that commit
    instance_id: NonEmptyStr
    base_commit: GitSha
    tests: int = Field(ge=0, description="tests with a status in the run that proved it")
    verified_at: AwareDatetime
    notes: list[str] = Field(default_factory=list, description="for people: why, by whom")
    deleted: bool = Field(False, description="a tombstone: forget this entry")

    @property
    def key(self) -> str:
        return recipe_key(self.repo, self.fingerprint)
