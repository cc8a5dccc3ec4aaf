"""The task formats, both ways: task directories and the SWE-bench dataset file.

* a task directory ``<output>/<owner>-<repo>-<number>/`` holding ``workspace.yaml`` (every
  field of the task, see ``schemas.workspace``), ``prompt.md`` (what a coding agent is given:
  the problem statement, never the fix or the tests) and ``checks.txt`` (the shell commands of
  the FAIL_TO_PASS then PASS_TO_PASS tests, one a line);
* one line of ``<output>/dataset.jsonl`` per task, its SWE-bench row.

Writes are idempotent, because Kafka delivers at least once: a file whose bytes would not
change is not touched, and the dataset holds one line per instance id (a changed task replaces
its line). Files are replaced atomically (temp file + rename), and the dataset's
read-modify-write runs under an exclusive ``flock`` so that writers on one machine cannot
interleave. The conversions of ``swe-stream export`` (dataset file, or one file per month, <->
task directories) and the readers of the harness and ``swe-stream validate`` live here too; the
Hugging Face dataset folder is ``hf_dataset``'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from schemas import SWEBENCH_FIELDS
from schemas.swebench import IMAGE_FIELDS
from schemas.workspace import TaskWorkspace
from streams.core.settings import safe_load_yaml
from streams.evaluation.months import task_month

WORKSPACE = "workspace.yaml"
PROMPT = "prompt.md"
CHECKS = "checks.txt"
DATASET = "dataset.jsonl"
TASK_FILES = (WORKSPACE, PROMPT, CHECKS)


# line breaks that YAML readers turn into "\n" (or keep apart) inside plain, single-quoted and
# block scalars; only double quotes escape them, so only double quotes round-trip them
_YAML_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


# paths ------------------------------------------------------------------------------------


def task_dir_path(output_dir: Path, name: str) -> Path:
    """``output_dir / name``, resolved; ValueError unless it is a direct child of output_dir."""
    root = Path(output_dir).resolve()
    target = (root / name).resolve()
    # names come from task_dir_name already; this guards against a bug there or a symlink
    if target.parent != root:
        raise ValueError(f"task directory {name!r} would not be inside {root}")
    return target


def replace_bytes(path: Path, data: bytes) -> None:
    """Write ``path`` atomically: readers see the old bytes or the new ones, never a mix."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o644)  # mkstemp's 0600 would hide the file from others
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def write_if_changed(path: Path, data: bytes) -> None:
    """``replace_bytes`` unless ``path`` holds ``data`` already: an export written again (a
    record delivered twice, a re-export) touches no file."""
    if not (path.is_file() and path.read_bytes() == data):
        replace_bytes(path, data)


# task directories -------------------------------------------------------------------------


class _WorkspaceDumper(yaml.SafeDumper):
    """A safe dumper writing multi-line strings as literal blocks, so patches read as patches."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style: str | None = None
    if any(brk in value for brk in _YAML_BREAKS):
        style = '"'
    elif "\n" in value:
        style = "|"  # the emitter falls back to quotes where a block cannot hold the value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_WorkspaceDumper.add_representer(str, _represent_str)


def render_workspace(ws: TaskWorkspace) -> bytes:
    """``workspace.yaml``'s bytes: keys in the model's order, the same bytes for the same task."""
    text = yaml.dump(
        ws.model_dump(mode="json"),
        Dumper=_WorkspaceDumper,
        sort_keys=False,
        allow_unicode=True,
        width=2**31 - 1,  # never fold a line: patches must keep their exact lines
        default_flow_style=False,
    )
    return text.encode("utf-8")


def render_task_files(ws: TaskWorkspace) -> dict[str, bytes]:
    """File name -> bytes of the task directory (no ``checks.txt`` when there are no checks)."""
    files = {
        WORKSPACE: render_workspace(ws),
        # only what an agent may see: the problem, not the fix, the tests or their names
        PROMPT: f"# {ws.id}\n\n{ws.prompt}\n".encode(),
    }
    checks = ws.fail_to_pass + ws.pass_to_pass
    if checks:
        files[CHECKS] = "".join(f"{command}\n" for command in checks).encode()
    return files


def load_workspace(path: Path) -> TaskWorkspace:
    """Read a ``workspace.yaml``; ValueError naming the file when it is not a valid one."""
    try:
        data = safe_load_yaml(Path(path).read_text(encoding="utf-8"))
    except (yaml.YAMLError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping, got {type(data).__name__}")
    try:
        return TaskWorkspace.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: not a valid workspace: {exc}") from None


def _write_files(output_dir: Path, ws: TaskWorkspace, files: dict[str, bytes]) -> Path:
    task_dir = task_dir_path(output_dir, ws.id)
    task_dir.mkdir(parents=True, exist_ok=True)
    workspace = task_dir / WORKSPACE
    if workspace.is_file() and workspace.read_bytes() != files[WORKSPACE]:
        # different ids can share a directory name (owner 'a-b' + repo 'c' vs 'a' + 'b-c'):
        # refuse rather than let one task silently overwrite another
        previous = load_workspace(workspace)
        if previous.instance_id != ws.instance_id:
            raise ValueError(
                f"{task_dir} already holds {previous.instance_id}, not {ws.instance_id}: "
                "two instance ids map to the same task directory"
            )
    # workspace.yaml last: a directory with it is complete, whatever else a crash left behind
    for name in sorted(files, key=lambda n: n == WORKSPACE):
        write_if_changed(task_dir / name, files[name])
    for name in TASK_FILES:
        if name not in files:
            with contextlib.suppress(FileNotFoundError):
                (task_dir / name).unlink()
    return task_dir


def write_task_dir(output_dir: Path, ws: TaskWorkspace) -> Path:
    """Write (or bring up to date) the task directory of ``ws``; returns its absolute path."""
    return _write_files(output_dir, ws, render_task_files(ws))


# the dataset ------------------------------------------------------------------------------


def dataset_line(row: dict[str, Any]) -> str:
    """The ``dataset.jsonl`` line of a SWE-bench row: its fields in the dataset's order, then
    the image columns when the row has them (a pushed task)."""
    missing = [name for name in SWEBENCH_FIELDS if name not in row]
    if missing:
        raise ValueError(f"dataset row lacks the SWE-bench fields {missing}")
    names = [*SWEBENCH_FIELDS, *(name for name in IMAGE_FIELDS if row.get(name))]
    return json.dumps({name: row[name] for name in names}, ensure_ascii=False) + "\n"


@contextlib.contextmanager
def _dataset_lock(dataset_path: Path) -> Iterator[None]:
    # the directory, not the file: the dataset is replaced by rename, and a lock on the old
    # inode would not exclude a writer that opened the new one (and no lock file litters the
    # output)
    directory = os.open(dataset_path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        yield
    finally:
        os.close(directory)  # releases the lock


def _jsonl_lines(text: str) -> list[str]:
    # split on "\n" only: str.splitlines would also cut at U+2028 and friends, which
    # json.dumps(ensure_ascii=False) leaves raw inside strings
    return text.split("\n")


def append_to_dataset(dataset_path: Path, row: dict[str, Any]) -> bool:
    """Add or replace the row's line in ``dataset.jsonl``; False when it was already there."""
    line = dataset_line(row)
    instance_id = row["instance_id"]
    dataset_path = Path(dataset_path)
    dataset_path.parent.mkdir(parents=True, exist_ok=True)
    with _dataset_lock(dataset_path):
        text = dataset_path.read_text(encoding="utf-8") if dataset_path.exists() else ""
        kept: list[str] = []
        found = False
        for number, existing in enumerate(_jsonl_lines(text), 1):
            if not existing.strip():
                continue
            current = _parse_json_line(dataset_path, number, existing)
            if current.get("instance_id") != instance_id:
                kept.append(existing + "\n")
            elif not found:  # later lines of the same id are duplicates: dropped
                found = True
                kept.append(line)
        if found:
            updated = "".join(kept)
            if updated == text:
                return False
            replace_bytes(dataset_path, updated.encode("utf-8"))
        else:
            # O_NOFOLLOW: a dataset.jsonl that is a symlink must not make us append elsewhere
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
            with open(os.open(dataset_path, flags, 0o644), "a", encoding="utf-8") as out:
                # a hand-edited last line may lack its newline: do not glue ours onto it
                out.write(line if not text or text.endswith("\n") else "\n" + line)
                out.flush()
                os.fsync(out.fileno())
        return True


def _parse_json_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {number}: invalid JSON: {exc}") from None
    except RecursionError:  # json's decoder recurses once per nesting level
        raise ValueError(f"{path}: line {number}: JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: line {number}: expected a JSON object")
    return value


def read_dataset(path: Path) -> list[dict[str, Any]]:
    """The rows of a SWE-bench dataset file: JSONL, or one JSON array of objects."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc}") from None
    if not text.lstrip().startswith("["):
        return [
            _parse_json_line(path, number, line)
            for number, line in enumerate(_jsonl_lines(text), 1)
            if line.strip()
        ]
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON array of objects")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: element {index} of the array is not a JSON object")
    return rows


def rows_to_workspaces(rows: Iterable[dict[str, Any]]) -> list[TaskWorkspace]:
    """The workspace of each SWE-bench row, in order; ValueError naming the row that is not
    a valid one."""
    workspaces: list[TaskWorkspace] = []
    for index, row in enumerate(rows):
        try:
            workspaces.append(TaskWorkspace.from_swebench(row))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError too
            raise ValueError(f"row {index} ({row.get('instance_id')!r}): {exc}") from None
    return workspaces


def write_task_dirs(workspaces: Iterable[TaskWorkspace], output_dir: Path) -> list[Path]:
    """Write a task directory per workspace; returns them in order, each once.

    A task repeated verbatim is written once; two different tasks for one directory are an
    error.
    """
    written: dict[str, tuple[Path, TaskWorkspace]] = {}
    for index, ws in enumerate(workspaces):
        if ws.id in written:
            if written[ws.id][1] != ws:
                raise ValueError(
                    f"row {index} ({ws.instance_id}): another row already maps to task "
                    f"directory {ws.id!r} with different content"
                )
            continue
        written[ws.id] = (write_task_dir(output_dir, ws), ws)
    return [path for path, _ in written.values()]


def dataset_to_task_dirs(rows: Iterable[dict[str, Any]], output_dir: Path) -> list[Path]:
    """Write a task directory per SWE-bench row (``write_task_dirs``)."""
    return write_task_dirs(rows_to_workspaces(rows), output_dir)


def find_task_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is a task directory, else its task subdirectories by name."""
    path = Path(path)
    if (path / WORKSPACE).is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such directory")
    return sorted(p for p in path.iterdir() if p.is_dir() and (p / WORKSPACE).is_file())


def read_task_dirs(input_dir: Path) -> list[TaskWorkspace]:
    """The workspaces of the task directories directly under ``input_dir`` (or of
    ``input_dir`` itself), sorted by directory name; ValueError when two hold one instance."""
    input_dir = Path(input_dir)
    if not input_dir.is_dir():
        raise ValueError(f"{input_dir} is not a directory")
    workspaces: list[TaskWorkspace] = []
    seen: dict[str, Path] = {}
    for task_dir in find_task_dirs(input_dir):
        ws = load_workspace(task_dir / WORKSPACE)
        if ws.instance_id in seen:
            other = seen[ws.instance_id]
            raise ValueError(
                f"{task_dir / WORKSPACE}: instance id {ws.instance_id} is also in {other}"
            )
        seen[ws.instance_id] = task_dir
        workspaces.append(ws)
    return workspaces


def unique_instances(workspaces: Iterable[TaskWorkspace]) -> list[TaskWorkspace]:
    """The tasks, in order; ValueError when an instance id comes twice (a dataset holds one
    row per instance)."""
    tasks = list(workspaces)
    seen: set[str] = set()
    for ws in tasks:
        if ws.instance_id in seen:
            raise ValueError(f"instance id {ws.instance_id} comes twice")
        seen.add(ws.instance_id)
    return tasks


def write_dataset(workspaces: Iterable[TaskWorkspace], dataset_path: Path) -> int:
    """Write ``dataset_path`` afresh: one line per task, in order; returns the number of rows.
    ValueError when an instance id comes twice (the file holds one line per instance)."""
    lines = [dataset_line(ws.dataset_row()) for ws in unique_instances(workspaces)]
    dataset_path = Path(dataset_path)
    dataset_path.parent.mkdir(parents=True, exist_ok=True)
    with _dataset_lock(dataset_path):
        replace_bytes(dataset_path, "".join(lines).encode("utf-8"))
    return len(lines)


def task_dirs_to_dataset(input_dir: Path, dataset_path: Path) -> int:
    """Write ``dataset_path`` afresh from the task directories directly under ``input_dir``
    (sorted by name); returns the number of rows."""
    return write_dataset(read_task_dirs(input_dir), dataset_path)


def write_monthly_datasets(workspaces: Iterable[TaskWorkspace], output_dir: Path) -> dict[str, int]:
    """Write ``output_dir/<YYYY_MM>.jsonl`` afresh for each month of ``created_at`` (UTC) the
    tasks fall in, each in the tasks' order; returns month -> rows. The files of other months
    are left alone: a ``--since``/``--until`` window may export a month at a time."""
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(
            f"{output_dir} is not a directory: a monthly export writes one file a month"
        )
    months: dict[str, list[TaskWorkspace]] = {}
    for ws in workspaces:
        months.setdefault(task_month(ws.created_at), []).append(ws)
    return {
        month: write_dataset(tasks, output_dir / f"{month}.jsonl")
        for month, tasks in sorted(months.items())
    }


def content_sha256(files: dict[str, bytes], line: str) -> str:
    """Digest of an export: the task files (sorted by name) and the dataset line."""
    digest = hashlib.sha256()
    parts = [part for name in sorted(files) for part in (name.encode(), files[name])]
    for part in [*parts, line.encode("utf-8")]:
        # length-prefixed, so no two different exports can concatenate to the same bytes
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def export_task(output_dir: Path, ws: TaskWorkspace) -> tuple[Path, str]:
    """Write (or bring up to date) the task directory and dataset line of ``ws`` under
    ``output_dir``; returns the directory and the digest of what was exported."""
    files = render_task_files(ws)
    row = ws.dataset_row()
    task_dir = _write_files(output_dir, ws, files)
    append_to_dataset(Path(output_dir) / DATASET, row)
    return task_dir, content_sha256(files, dataset_line(row))
