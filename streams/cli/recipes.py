"""``swe-stream recipes list|show|export|import``: the recipe memory, for people.

Entries are read from the worker's local table (``<worker.data_dir>/recipes.sqlite``), or with
``--bootstrap`` from ``recipes.memory``. ``export`` writes them as YAML to edit; ``import``
reads such a file back: an entry whose recipe changed becomes an ``edited`` one of this
pipeline version (trusted, as an override is), ``deleted: true`` forgets one. Imported
entries go to the local table and, with ``--bootstrap`` (or ``kafka.bootstrap``), to the topic
every worker reads.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from schemas import RememberedRecipe
from streams.cli.options import Commands, Parents
from streams.core.settings import Settings, safe_load_yaml
from streams.evaluation.recipes.memory import CHANGE_FIELDS, RecipeTable, override_fields
from streams.pipeline.recipe_memory import publish_recipes, read_recipes
from streams.runtime.topology import recipe_table


def register(commands: Commands, parents: Parents) -> None:
    common = parents.common
    recipes = commands.add_parser(
        "recipes", parents=[common], help="the recipe memory: list, show, export, import"
    )
    actions = recipes.add_subparsers(dest="action", required=True, metavar="ACTION")
    source = argparse.ArgumentParser(add_help=False)
    source.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="read recipes.memory from this Kafka cluster"
    )
    source.add_argument("--repo", help="only this repository's entries (owner/name)")
    actions.add_parser("list", parents=[common, source], help="one line per remembered recipe")
    show = actions.add_parser("show", parents=[common, source], help="a repository's entries")
    show.add_argument("repository", help="owner/name")
    export = actions.add_parser("export", parents=[common, source], help="write entries as YAML")
    export.add_argument("--file", type=Path, required=True, help="YAML file to write (- = stdout)")
    load = actions.add_parser("import", parents=[common], help="read a YAML file of entries")
    load.add_argument("--file", type=Path, required=True, help="YAML file written by export")
    load.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="also publish them to recipes.memory here"
    )
    recipes.set_defaults(handler=cmd_recipes)


def cmd_recipes(args: argparse.Namespace, settings: Settings) -> int:
    try:
        if args.action == "import":
            return _import(args, settings)
        entries = _entries(args, settings)
    except (ValueError, OSError) as exc:
        print(f"swe-stream recipes: {exc}", file=sys.stderr)
        return 2
    if args.action == "list":
        for entry in entries:
            print(summary(entry))
        print(f"{len(entries)} remembered recipe(s)", file=sys.stderr)
        return 0
    if args.action == "show":
        chosen = [e for e in entries if e.repo.lower() == args.repository.lower()]
        if not chosen:
            print(f"{args.repository}: no remembered recipe", file=sys.stderr)
            return 1
        print(to_yaml(chosen), end="")
        return 0
    text = to_yaml(entries)
    if str(args.file) == "-":
        print(text, end="")
    else:
        args.file.write_text(text, encoding="utf-8")
        print(f"wrote {len(entries)} recipe(s) to {args.file}", file=sys.stderr)
    return 0


def _entries(args: argparse.Namespace, settings: Settings) -> list[RememberedRecipe]:
    bootstrap = args.bootstrap
    if bootstrap:
        table = RecipeTable()
        table.load(asyncio.run(read_recipes(bootstrap)))
    else:
        table = recipe_table(settings)
    entries = table.all()
    if args.repo:
        entries = [e for e in entries if e.repo.lower() == args.repo.lower()]
    return sorted(entries, key=lambda e: (e.repo.lower(), -e.verified_at.timestamp()))


def summary(entry: RememberedRecipe) -> str:
    """One line: repository, fingerprint, source, toolchain version (``rust 1.85``; ``-``
    where inference picks it per PR), what it changes, where it worked."""
    changed = [f for f in CHANGE_FIELDS if getattr(entry, f) is not None]
    interpreter = toolchain_summary(entry)
    return (
        f"{entry.repo:40} {entry.fingerprint} {entry.source:9} {interpreter:12} "
        f"v{entry.pipeline_version} {entry.tests:5} tests  {entry.verified_at:%Y-%m-%d %H:%M}  "
        f"{entry.instance_id}" + (f"  changes: {', '.join(changed)}" if changed else "")
    )


def toolchain_summary(entry: RememberedRecipe) -> str:
    """``rust 1.85``; a toolchain named alone (``rust -``) where inference picks the version per
    PR; ``-`` for none (an entry of an older version names every toolchain, each empty)."""
    versions = entry.toolchain_versions
    if versions:
        return " ".join(f"{name} {version}" for name, version in versions.items())
    named = list(entry.model_extra or {})
    return f"{named[0]} -" if len(named) == 1 else "-"


def to_yaml(entries: list[RememberedRecipe]) -> str:
    documents = [e.model_dump(mode="json", exclude_defaults=False) for e in entries]
    return yaml.safe_dump({"recipes": documents}, sort_keys=False, allow_unicode=True)


def read_entries(path: Path, pipeline_version: int, table: RecipeTable) -> list[RememberedRecipe]:
    """The entries of an exported (and edited) file to import: one whose recipe differs from
    the table's entry of its key (or that the table lacks) becomes an ``edited`` entry of
    ``pipeline_version``, verified now; tombstones (``deleted: true``) as they are; entries
    the table already holds are left out. ValueError naming a malformed entry."""
    data: Any = safe_load_yaml(path.read_text(encoding="utf-8")) or {}
    items = data.get("recipes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a mapping with a `recipes:` list")
    entries = []
    for number, item in enumerate(items, 1):
        try:
            entry = RememberedRecipe.model_validate(item)
        except ValidationError as exc:
            raise ValueError(f"{path}: recipe {number}: {exc}") from None
        known = table.get(entry.repo, entry.fingerprint)
        if known is not None and not entry.deleted and _same_recipe(known, entry):
            continue  # as the table has it: nothing to import
        if entry.deleted:
            entries.append(entry)
            continue
        entries.append(
            entry.model_copy(
                update={
                    "source": "edited",
                    "pipeline_version": pipeline_version,
                    "verified_at": datetime.now(UTC),
                }
            )
        )
    return entries


def _same_recipe(a: RememberedRecipe, b: RememberedRecipe) -> bool:
    return override_fields(a) == override_fields(b)


def _import(args: argparse.Namespace, settings: Settings) -> int:
    table = recipe_table(settings)
    try:
        entries = read_entries(args.file, settings.pipeline_version, table)
    except (ValueError, OSError) as exc:
        print(f"swe-stream recipes import: {exc}", file=sys.stderr)
        return 2
    for entry in entries:
        table.put(entry)
    edited = sum(not e.deleted for e in entries)
    forgotten = len(entries) - edited
    where = str(table.path)
    bootstrap = args.bootstrap or settings.kafka.bootstrap
    if bootstrap:
        asyncio.run(publish_recipes(bootstrap, entries))
        where += f" and recipes.memory on {bootstrap}"
    print(f"imported {edited} edited recipe(s), {forgotten} forgotten, into {where}")
    return 0
