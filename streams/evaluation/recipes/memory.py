"""Recipe memory: the install recipes that worked, per repository and dependency files.

A recipe that made a repository's tests run (heuristic, override, the setup agent's, or one a
person edited) is remembered as a ``RememberedRecipe``, keyed by the repository and a
fingerprint of its dependency files (``dependency_fingerprint``: the files its language says
decide how it installs), with its toolchain version (under the toolchain's name: the Python of
a Python recipe, the Node major of a JavaScript / TypeScript one). The repository's later PRs
try it first: the entry of their own fingerprint, else the repository's most recent one. A
remembered recipe is the change it makes to inference, as an override is (``as_override``):
inference reruns at every commit, so the requirement files it writes are always the commit's.

``RecipeTable`` is the local table (SQLite, one file per worker data dir): it survives
restarts; the compacted ``recipes.memory`` topic (``streams.pipeline.recipe_memory``) makes it
survive machines and reach every worker. An entry written by another pipeline version is not
trusted: the validator verifies it before use (``trusted``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from schemas import RememberedRecipe
from streams.evaluation.recipes.languages import language_named, language_of
from streams.evaluation.recipes.model import InstallRecipe, TreeFiles
from streams.evaluation.recipes.overrides import RepositoryOverride

# the fields of the change a recipe makes over inference (beside its toolchain version, a key
# named after its toolchain: ``ToolchainVersions``)
CHANGE_FIELDS = (
    "system_packages", "env", "install", "pre_test", "test_command", "test_runner",
    "environment",
)  # fmt: skip


def dependency_files(tree: TreeFiles) -> list[str]:
    """The files of a tree that say how it installs, as its language names them
    (``Language.fingerprint_files``); none for a tree no language recognises."""
    language = language_of(tree)
    return language.fingerprint_files(tree.names) if language is not None else []


def dependency_fingerprint(tree: TreeFiles) -> str:
    """16 hex digits of SHA-256 over the dependency files' paths and contents."""
    digest = hashlib.sha256()
    language = language_of(tree)
    limit = language.fingerprint_limit if language is not None else 1 << 20
    for name in dependency_files(tree):
        digest.update(name.encode() + b"\0" + (tree.read(name, limit) or b"") + b"\0")
    return digest.hexdigest()[:16]


def override_fields(entry: RememberedRecipe | RepositoryOverride) -> dict[str, object]:
    """What an entry (or override) sets: its toolchain versions and its change's fields."""
    return {
        **entry.toolchain_versions,
        **{field: getattr(entry, field) for field in CHANGE_FIELDS},
    }


def as_override(entry: RememberedRecipe) -> RepositoryOverride:
    """The remembered recipe as an override of inference (its toolchain version the only one
    tried)."""
    return RepositoryOverride(**override_fields(entry))


def layered(
    base: RepositoryOverride | None, top: RepositoryOverride | None
) -> RepositoryOverride | None:
    """``top``'s fields over ``base``'s (a user's override file over a remembered recipe)."""
    if base is None or top is None:
        return top or base
    merged = base.model_dump()
    merged.update({k: v for k, v in top.model_dump().items() if v is not None})
    return RepositoryOverride(**merged)


def is_change(override: RepositoryOverride) -> bool:
    """Whether the override sets anything besides the toolchain version."""
    return any(getattr(override, field) is not None for field in CHANGE_FIELDS)


class RecipeTable:
    """The local recipe memory: a SQLite table of the latest entry per key (tombstones
    delete). Thread-safe: validations look recipes up from worker threads."""

    def __init__(self, path: Path | str = ":memory:"):
        self.path = path
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        """The database, opened (and made) on first use: building a worker creates nothing."""
        with self._lock:
            if self._connection is None:
                if str(self.path) != ":memory:":
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.path), check_same_thread=False)
                with db:
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS recipes (key TEXT PRIMARY KEY, repo TEXT NOT "
                        "NULL, verified_at TEXT NOT NULL, value TEXT NOT NULL)"
                    )
                    db.execute("CREATE INDEX IF NOT EXISTS by_repo ON recipes (repo)")
                self._connection = db
            return self._connection

    def put(self, entry: RememberedRecipe) -> None:
        with self._lock, self._db:
            if entry.deleted:
                self._db.execute("DELETE FROM recipes WHERE key = ?", (entry.key,))
                return
            self._db.execute(
                "INSERT OR REPLACE INTO recipes VALUES (?, ?, ?, ?)",
                (entry.key, entry.repo.lower(), entry.verified_at.isoformat(), entry.to_json()),
            )

    def load(self, entries: Iterable[RememberedRecipe]) -> int:
        """Put every entry the table has no newer one of (verified later: learned or edited
        here since the topic was written); how many entries there were."""
        count = 0
        for entry in entries:
            count += 1
            known = self.get(entry.repo, entry.fingerprint)
            if known is not None and known.verified_at > entry.verified_at:
                continue
            self.put(entry)
        return count

    def _select(self, where: str, *args: str) -> list[RememberedRecipe]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT value FROM recipes {where} ORDER BY verified_at DESC, key", args
            ).fetchall()
        return [RememberedRecipe.from_json(row[0]) for row in rows]

    def get(self, repo: str, fingerprint: str) -> RememberedRecipe | None:
        found = self._select("WHERE repo = ? AND key = ?", repo.lower(), f"{repo}@{fingerprint}")
        if found:
            return found[0]
        # keys keep the repository's spelling; look case-insensitively
        return next((e for e in self.for_repo(repo) if e.fingerprint == fingerprint), None)

    def for_repo(self, repo: str) -> list[RememberedRecipe]:
        """The repository's entries, most recently verified first."""
        return self._select("WHERE repo = ?", repo.lower())

    def all(self) -> list[RememberedRecipe]:
        return self._select("")

    def candidates(self, repo: str, fingerprint: str) -> list[RememberedRecipe]:
        """What to try first for a commit of ``repo``: the entry of its own dependency files,
        then the repository's most recent other one."""
        own = self.get(repo, fingerprint)
        others = [e for e in self.for_repo(repo) if e.fingerprint != fingerprint]
        return [e for e in (own, others[0] if others else None) if e is not None]

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def remembered_entry(
    recipe: InstallRecipe,
    tree: TreeFiles,
    *,
    repo: str,
    instance_id: str,
    base_commit: str,
    tests: int,
    pipeline_version: int,
    notes: Iterable[str] = (),
) -> RememberedRecipe:
    """The memory entry of ``recipe``, which ran ``tests`` tests of ``repo`` at
    ``base_commit``: its toolchain version (but where inference picks it per PR) and the
    change its origin made over inference."""
    origin = recipe.origin
    interpreter: dict[str, str | None] = {**interpreter_fields(recipe)}
    language = language_named(recipe.language)
    if language is not None and not language.remembers_version and language.toolchain:
        interpreter[language.toolchain] = None  # inference picks it per PR: named, not kept
    return RememberedRecipe(
        pipeline_version=pipeline_version,
        repo=repo,
        fingerprint=dependency_fingerprint(tree),
        source=origin.source,
        **interpreter,
        **{k: v for k, v in origin.change.items() if k in CHANGE_FIELDS},
        instance_id=instance_id,
        base_commit=base_commit,
        tests=tests,
        verified_at=datetime.now(UTC),
        notes=list(notes),
    )


def interpreter_fields(recipe: InstallRecipe) -> dict[str, str]:
    """``recipe``'s toolchain version, as its language reads it off the recipe, under the
    toolchain's name (``{"python": "3.11"}``, ``{"node": "20"}``); none when it has none."""
    language = language_named(recipe.language)
    if language is None or language.toolchain is None:
        return {}
    version = language.version_of(recipe)
    return {language.toolchain: version} if version else {}


def trusted(entry: RememberedRecipe, pipeline_version: int) -> bool:
    """Whether an entry may be used without verifying it first: written by this pipeline
    version (another version may infer, build or judge differently)."""
    return entry.pipeline_version == pipeline_version
