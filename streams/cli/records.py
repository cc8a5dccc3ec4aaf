"""Record commands: ``ledger`` (show, stats, export, import the processed-PR ledger), ``dlq``
(show, replay dead letters), ``export`` (task directories <-> SWE-bench JSONL or a Hugging Face
dataset folder, whole or by month) and ``schemas`` (the JSON Schema files of the records)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from pathlib import Path

from schemas import LedgerEntry, ledger_key, parse_pr_key
from schemas.generate import DEFAULT_DIR, stale_json_schemas, write_json_schemas
from schemas.workspace import TaskWorkspace
from streams.cli.options import Commands, Parents, one_line
from streams.core.errors import UsageError
from streams.core.settings import Settings
from streams.evaluation.licenses import clone_license_reader, repository_licenses
from streams.evaluation.months import in_window, parse_time
from streams.evaluation.taskdir import (
    read_dataset,
    read_task_dirs,
    rows_to_workspaces,
    write_dataset,
    write_monthly_datasets,
    write_task_dirs,
)
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
from streams.runtime.topology import STAGE_ORDER, repo_cache


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

    _register_export(commands, common)

    schemas = commands.add_parser("schemas", parents=[common], help="JSON Schema files of records")
    schemas_actions = schemas.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = schemas_actions.add_parser(
        "generate", parents=[common], help="write schemas/json/*.json from the models"
    )
    generate.add_argument("--check", action="store_true", help="only report stale files")
    schemas.set_defaults(handler=cmd_schemas)


def _register_export(commands: Commands, common: argparse.ArgumentParser) -> None:
    export = commands.add_parser(
        "export",
        parents=[common],
        help="task directories <-> SWE-bench JSONL or a Hugging Face dataset folder",
    )
    export.add_argument(
        "-i",
        "--input",
        type=Path,
        required=True,
        help="task directories, a .jsonl / .json dataset, or a Hugging Face dataset folder "
        "(README.md + data/*.parquet)",
    )
    export.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="the dataset file; a directory for --format hf or --split-by month; task "
        "directories when the input is a dataset and --format is not given",
    )
    export.add_argument(
        "--format",
        choices=("jsonl", "hf"),
        help="write SWE-bench JSONL, or a Hugging Face dataset folder (Parquet shards and a "
        "dataset card that datasets.load_dataset reads); default: jsonl from task "
        "directories, task directories from a dataset",
    )
    export.add_argument(
        "--split-by",
        choices=("month",),
        help="one split per month of created_at (UTC): OUTPUT/2026_01.jsonl ... (other "
        "months' files are left alone), or hf splits 2026_01 ...; default: one file, or hf's "
        "one split test",
    )
    export.add_argument(
        "--since",
        type=_aware_time,
        metavar="DATE",
        help="only tasks created at or after DATE (inclusive), an ISO date or time, UTC "
        "unless it names a zone",
    )
    export.add_argument(
        "--until",
        type=_aware_time,
        metavar="DATE",
        help="only tasks created before DATE (exclusive): --since 2026-01-01 --until "
        "2026-02-01 is January",
    )
    export.add_argument(
        "--licenses",
        choices=("cache", "fetch", "skip"),
        default="cache",
        help="--format hf: name each repository's license from its LICENSE at a task's base "
        "commit, read from the clone cache (cache: clones already there, local remotes; "
        "fetch: also clone the others); skip: none (the card says unknown)",
    )
    export.set_defaults(handler=cmd_export)


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
    """An ISO date or time for --since / --until (UTC when it names no zone)."""
    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {text!r}") from None


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    try:
        print(_export(args, settings))
    except (ValueError, OSError) as exc:  # FileNotFoundError and the like: a path to fix
        print(f"swe-stream export: {one_line(str(exc), 500)}", file=sys.stderr)
        return 2
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> str:
    """Convert ``args.input`` to ``args.output`` as the options say; the line to print."""
    since, until = args.since, args.until
    if since is not None and until is not None and since >= until:
        raise ValueError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    # here, not at the top: pyarrow and numpy cost every other command a quarter second
    from streams.evaluation.hf_dataset import is_hf_folder, read_hf_dataset, write_hf_dataset

    source: Path = args.input
    from_dataset = not source.is_dir() or is_hf_folder(source)
    if not source.is_dir():
        tasks = rows_to_workspaces(read_dataset(source))
    elif from_dataset:
        tasks = read_hf_dataset(source)
    else:
        tasks = read_task_dirs(source)
    if since is not None or until is not None:
        tasks = [ws for ws in tasks if in_window(ws.created_at, since, until)]
    output: Path = args.output
    form = args.format or (None if from_dataset else "jsonl")
    if form == "hf":
        licenses = _licenses(args.licenses, settings, tasks)
        done = write_hf_dataset(tasks, output, split_by=args.split_by, licenses=licenses)
        splits = ", ".join(f"{name} {count}" for name, count in done.splits.items())
        return f"wrote {len(tasks)} tasks to {output} (splits: {splits})"
    if form == "jsonl" and args.split_by == "month":
        months = write_monthly_datasets(tasks, output)
        files = ", ".join(f"{month}.jsonl {count}" for month, count in months.items())
        return f"wrote {len(tasks)} tasks to {output} ({files or 'no months'})"
    if form == "jsonl":
        if output.is_dir():
            raise ValueError(f"{output} is a directory: name the dataset file to write")
        return f"wrote {write_dataset(tasks, output)} tasks to {output}"
    if args.split_by is not None:
        raise ValueError("--split-by needs --format jsonl or hf: task directories have no splits")
    written = write_task_dirs(tasks, output)
    return f"wrote {len(written)} task directories to {output}"


def _licenses(mode: str, settings: Settings, tasks: list[TaskWorkspace]) -> dict[str, str]:
    """Repository -> its license's SPDX id, read as ``--licenses`` says."""
    if mode == "skip" or not tasks:
        return {}
    reader = clone_license_reader(repo_cache(settings), fetch=mode == "fetch")
    return repository_licenses(tasks, reader)


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
