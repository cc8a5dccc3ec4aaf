"""Record commands: ``ledger`` (show, stats, export, import the processed-PR ledger), ``dlq``
(show, replay dead letters), ``export`` (task directories <-> SWE-bench JSONL) and ``schemas``
(the JSON Schema files of the records)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

from schemas import LedgerEntry, ledger_key, parse_pr_key
from schemas.generate import DEFAULT_DIR, stale_json_schemas, write_json_schemas
from streams.cli.options import Commands, Parents, one_line
from streams.core.errors import UsageError
from streams.core.settings import Settings
from streams.evaluation.taskdir import dataset_to_task_dirs, read_dataset, task_dirs_to_dataset
from streams.kafka.client import detect_profile
from streams.pipeline.dlq import (
    DeadLetterQueue,
    StoredLetter,
    current_letters,
    read_dead_letter_queue,
    replay_dead_letters,
    select_letters,
)
from streams.pipeline.ledger import (
    Funnel,
    PrFileError,
    decided,
    latest,
    of_version,
    pr_file_line,
    read_ledger,
    read_pr_file,
    restore_ledger,
    write_pr_file,
)
from streams.runtime.topology import STAGE_ORDER


def register(commands: Commands, parents: Parents) -> None:
    common = parents.common
    _register_ledger(commands, common)
    dlq = commands.add_parser(
        "dlq", parents=[common], help="dead letters on a Kafka cluster (--bootstrap): show, replay"
    )
    dlq_actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("show", "list the dead letters of a DLQ topic, and whether each was replayed"),
        (
            "replay",
            "send each dead record back to its source topic (its latest attempt) and mark its "
            "letter replayed; letters replayed before are skipped unless --again",
        ),
    ):
        action = dlq_actions.add_parser(name, parents=[common, parents.named_kafka], help=text)
        action.add_argument("--topic", required=True, help="the DLQ topic, e.g. pr.enriched.dlq")
        action.add_argument(
            "--stage", action="append", default=[], help="only letters of this stage (repeatable)"
        )
        action.add_argument(
            "--key",
            action="append",
            default=[],
            help="only this record key, owner/repo#N (repeatable)",
        )
        action.add_argument(
            "--since", type=_aware_time, help="only letters that failed at or after this ISO time"
        )
        if name == "replay":
            action.add_argument(
                "--again",
                action="store_true",
                help="also send letters an earlier replay sent back (default: skip them)",
            )
    dlq.set_defaults(handler=cmd_dlq)

    export = commands.add_parser(
        "export", parents=[common], help="task directories <-> SWE-bench JSONL"
    )
    export.add_argument(
        "-i", "--input", type=Path, required=True, help="task dirs, or a .jsonl / .json dataset"
    )
    export.add_argument(
        "-o", "--output", type=Path, required=True, help="dataset file, or task directory"
    )
    export.set_defaults(handler=cmd_export)

    schemas = commands.add_parser("schemas", parents=[common], help="JSON Schema files of records")
    schemas_actions = schemas.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = schemas_actions.add_parser(
        "generate", parents=[common], help="write schemas/json/*.json from the models"
    )
    generate.add_argument("--check", action="store_true", help="only report stale files")
    schemas.set_defaults(handler=cmd_schemas)


def _register_ledger(commands: Commands, common: argparse.ArgumentParser) -> None:
    ledger = commands.add_parser("ledger", parents=[common], help="the processed-PR ledger")
    ledger_actions = ledger.add_subparsers(dest="action", required=True, metavar="ACTION")
    ledger_source = argparse.ArgumentParser(add_help=False)
    ledger_source.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="read swe.ledger from this Kafka cluster"
    )
    ledger_source.add_argument(
        "--file",
        type=Path,
        help="read a ledger file instead (a run's OUTPUT/.swe-stream/ledger.jsonl, a pr-file)",
    )
    show = ledger_actions.add_parser(
        "show", parents=[common, ledger_source], help="the latest state of one PR (owner/repo#N)"
    )
    show.add_argument("pr", help="owner/repo#number")
    ledger_actions.add_parser(
        "stats", parents=[common, ledger_source], help="the funnel: counts by stage, status, reason"
    )
    ledger_export = ledger_actions.add_parser(
        "export", parents=[common, ledger_source], help="write a --pr-file (swe-forge JSONL)"
    )
    ledger_export.add_argument("--pr-file", type=Path, required=True, help="file to write")
    ledger_export.add_argument(
        "--all", action="store_true", help="every PR's latest entry, not only final ones"
    )
    ledger_import = ledger_actions.add_parser(
        "import", parents=[common], help="load a --pr-file (swe-forge's or ours) into the ledger"
    )
    ledger_import.add_argument("--pr-file", type=Path, required=True, help="file to read")
    ledger_import.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="Kafka cluster to write swe.ledger to"
    )
    ledger_import.add_argument(
        "--file", type=Path, help="or append the entries to this ledger file"
    )
    ledger.set_defaults(handler=cmd_ledger)


def _ledger_entries(args: argparse.Namespace, settings: Settings) -> list[LedgerEntry]:
    if args.file is not None:
        return read_pr_file(args.file, settings.pipeline_version)
    bootstrap = args.bootstrap or settings.kafka.bootstrap
    if not bootstrap:
        raise LedgerSourceMissing(
            "say where the ledger is: --bootstrap HOST:PORT (a Kafka cluster) or --file PATH "
            "(a run's OUTPUT/.swe-stream/ledger.jsonl, or a pr-file); the embedded broker keeps "
            "nothing once its command exits"
        )
    return asyncio.run(read_ledger(bootstrap))


class LedgerSourceMissing(ValueError):
    pass


def cmd_ledger(args: argparse.Namespace, settings: Settings) -> int:
    try:
        if args.action == "import":
            return _ledger_import(args, settings)
        entries = _ledger_entries(args, settings)
    except (LedgerSourceMissing, PrFileError, FileNotFoundError) as exc:
        print(f"swe-stream ledger: {exc}", file=sys.stderr)
        return 2
    entries = of_version(entries, getattr(args, "pipeline_version", None))
    current = latest(entries)
    if args.action == "show":
        try:
            repo, number = parse_pr_key(args.pr)
        except ValueError as exc:
            print(f"swe-stream ledger: {exc}", file=sys.stderr)
            return 2
        history = [e for e in entries if (e.repo, e.number) == (repo, number)]
        if not history:
            print(f"{args.pr}: not in the ledger", file=sys.stderr)
            return 1
        for version in sorted({e.pipeline_version for e in history}):
            print(pr_file_line(current[ledger_key(repo, number, version)]))
            for entry in history:
                if entry.pipeline_version == version:
                    print(
                        f"  {entry.updated_at.isoformat()} v{version} {entry.stage}: "
                        f"{entry.status}" + (f" ({entry.reason})" if entry.reason else "")
                    )
                    for line in (entry.detail or "").splitlines():
                        print(f"      {line}")
        return 0
    if args.action == "stats":
        print("\n".join(Funnel.of(entries).lines(STAGE_ORDER)))
        return 0
    # a failure (a service away, a bug) is no verdict: swe-forge would skip that PR forever
    chosen = [e for e in current.values() if args.all or decided(e)]
    written = write_pr_file(args.pr_file, chosen)
    print(f"wrote {written} PRs to {args.pr_file}")
    return 0


def _ledger_import(args: argparse.Namespace, settings: Settings) -> int:
    entries = read_pr_file(args.pr_file, settings.pipeline_version)
    if args.file is not None:
        existing = read_pr_file(args.file, settings.pipeline_version) if args.file.exists() else []
        write_pr_file(args.file, existing + entries)
        print(f"imported {len(entries)} PRs into {args.file}")
        return 0
    bootstrap = args.bootstrap or settings.kafka.bootstrap
    if not bootstrap:
        print(
            "swe-stream ledger import: say where: --bootstrap HOST:PORT or --file PATH",
            file=sys.stderr,
        )
        return 2

    profile = asyncio.run(detect_profile(settings.kafka, bootstrap, False))
    written = asyncio.run(restore_ledger(bootstrap, profile, entries))
    print(f"imported {written} PRs into swe.ledger on {bootstrap}")
    return 0


def cmd_dlq(args: argparse.Namespace, settings: Settings) -> int:
    bootstrap = settings.kafka.bootstrap
    if not bootstrap:
        raise UsageError(
            "no Kafka cluster named",
            "name the one holding the DLQ with --bootstrap HOST:PORT (or "
            "SWE_STREAM_KAFKA_BOOTSTRAP): an embedded broker started for this command would hold "
            "no dead letters",
        )
    queue = asyncio.run(read_dead_letter_queue(bootstrap, args.topic))
    chosen = select_letters(queue.letters, stages=args.stage, keys=args.key, since=args.since)
    if args.action == "show":
        _show_letters(queue, chosen)
        return 0
    current = current_letters(chosen)
    pending = [x for x in current if args.again or not x.replays]
    profile = asyncio.run(detect_profile(settings.kafka, bootstrap, False))
    sent = asyncio.run(replay_dead_letters(profile.producer_config(), pending))
    notes = []
    if len(chosen) != len(queue.letters):
        notes.append(f"{len(queue.letters) - len(chosen)} letters left out by the filters")
    skipped = len(current) - len(pending)
    if skipped:
        notes.append(f"skipped {skipped} already replayed: --again sends them again")
    said = f" ({'; '.join(notes)})" if notes else ""
    print(f"replayed {sent} records from {args.topic} to their source topics{said}")
    return 0


def _show_letters(queue: DeadLetterQueue, chosen: list[StoredLetter]) -> None:
    """One line per letter ``chosen``, with when it was last replayed; the summary on stderr."""
    for partition, offset, error in queue.unreadable:
        print(f"{partition}:{offset} unreadable dead letter: {one_line(str(error), 300)}")
    for stored in chosen:
        letter, mark = stored.letter, stored.last_replay
        first_line = (letter.error.splitlines() or [""])[0][:160]
        if mark is None:
            replayed = "not replayed"
        else:
            times = f", {len(stored.replays)} times" if len(stored.replays) > 1 else ""
            replayed = (
                f"replayed at {mark.replayed_at.isoformat()} as attempt {mark.attempt} to "
                f"{mark.source_topic}@{mark.sent_partition}:{mark.sent_offset}{times}"
            )
        print(
            f"{stored.partition}:{stored.offset} {letter.key} from {letter.source_topic}"
            f"@{letter.source_partition}:{letter.source_offset} stage {letter.stage} "
            f"attempt {letter.attempts} at {letter.failed_at.isoformat()} ({replayed}): "
            f"{letter.error_type}: {first_line}"
        )
    replayed_count = sum(1 for stored in queue.letters if stored.replays)
    print(
        f"{len(queue.letters)} dead letters, {len(current_letters(queue.letters))} records, "
        f"{replayed_count} letters replayed ({queue.marks} replay marks)",
        file=sys.stderr,
    )


def _aware_time(text: str) -> datetime:
    """An ISO time for --since (UTC when it names no zone)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO time: {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    try:
        if args.input.is_dir():
            count = task_dirs_to_dataset(args.input, args.output)
            print(f"wrote {count} tasks to {args.output}")
        else:
            written = dataset_to_task_dirs(read_dataset(args.input), args.output)
            print(f"wrote {len(written)} task directories to {args.output}")
    except (ValueError, FileNotFoundError) as exc:
        print(f"swe-stream export: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_schemas(args: argparse.Namespace, settings: Settings) -> int:
    if args.check:
        stale = stale_json_schemas(DEFAULT_DIR)
        for name in stale:
            print(f"stale: {name}")
        if stale:
            print("run `swe-stream schemas generate` to refresh them", file=sys.stderr)
        return 1 if stale else 0
    for path in write_json_schemas(DEFAULT_DIR):
        print(path)
    return 0
