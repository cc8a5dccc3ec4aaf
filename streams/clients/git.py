"""Host-side git for the extract stage: partial clones, fetch by sha, per-file diffs, archives.

Cloning and diffing happen on the host, where repository code must never run. So nothing here
checks out a work tree (clones are bare), hooks are off (``core.hooksPath=/dev/null`` and an
empty template), no external diff or textconv driver runs, and no filter, ``ident``, eol or
``export-*`` attribute of the repository applies: ``$GIT_DIR/info/attributes`` overrides them,
so ``archive`` gives exactly the blobs ``diff`` compared. Prompts are off
(``GIT_TERMINAL_PROMPT=0``), the system config is ignored (``GIT_CONFIG_NOSYSTEM=1``), the
user's config (``HOME`` unchanged) is neutralised where it could change an output we parse.
Every git call has list arguments, a timeout, and on timeout its whole process group is killed
(lazy fetches run as children of the git we started).

Clones are bare partial clones (``--filter=blob:none``) made once per repository and reused:
commits and trees come at clone/fetch time, blobs lazily when ``diff``/``archive``/``file_at``
need them (git batches those fetches from the promisor remote). A commit missing locally is
fetched by sha (GitHub allows it, pull request heads included), falling back to fetching every
``refs/pull/*/head`` and branch for servers that refuse unadvertised objects.

Two facts about partial clones shape the code: any git command that merely *looks* for a
missing object (``cat-file -e``, ``rev-parse``, ``fetch``'s own check) silently fetches it from
the promisor remote, so presence is tested with ``rev-list --missing=print``, which never does;
and a clone is made in a temporary directory and renamed into place, so a crash never leaves a
half clone that looks complete.

Callers are async and use ``asyncio.to_thread``: ``ensure`` holds a per-repository lock, the
read methods need none (git's object store is safe for concurrent readers and appenders).
"""

from __future__ import annotations

import configparser
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from schemas.base import validate_repo_name
from streams.core.errors import DependencyError

__all__ = [
    "CloneError",
    "CommitNotFound",
    "DiffStatus",
    "FileDiff",
    "GitError",
    "RepoCache",
]

DiffStatus = Literal["added", "modified", "deleted", "renamed", "copied", "type_changed"]

_STATUS: dict[str, DiffStatus] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
}
_SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DIFF_START_RE = re.compile(rb"^diff --git ", re.MULTILINE)
_GITLINK = 0o160000
_FORMAT = 0o170000

# Options for every git call: no hooks, no background gc/maintenance (a detached gc would
# outlive the call and race the next one), no fsmonitor daemon.
_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.recurseSubmodules=false",
    "diff.suppressBlankEmpty=false",
)
# Highest-precedence attributes: the repository's .gitattributes may not drop files from the
# archive (export-ignore), rewrite them (export-subst, ident, eol, text, filter, encoding) or
# hide a diff as binary (-diff); git's own binary detection still applies.
_ATTRIBUTES = (
    "* !export-ignore !export-subst !diff !text !eol !ident !filter !working-tree-encoding\n"
)
# Variables that would point git at another repository or change its diff output.
_UNSAFE_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
)
# fetch objects but not blobs (a partial clone); never tags, submodules or FETCH_HEAD
_FETCH = [
    "fetch",
    "--no-tags",
    "--no-write-fetch-head",
    "--recurse-submodules=no",
    "--filter=blob:none",
    "origin",
]
_FALLBACK_REFSPECS = (
    "+refs/pull/*/head:refs/remotes/origin/pull/*",
    "+refs/heads/*:refs/remotes/origin/heads/*",
)


class GitError(DependencyError):
    """A git command that failed or timed out; ``stderr`` is git's own explanation."""

    def __init__(self, message: str, *, command: list[str], stderr: str = ""):
        detail = stderr.strip()
        super().__init__(f"{message}: {detail}" if detail else message)
        self.command = command
        self.stderr = stderr


class CloneError(GitError):
    """The repository could not be cloned (wrong URL, gone, private, network, timeout)."""


class CommitNotFound(GitError):
    """A commit that is neither in the local clone nor fetchable from the remote."""


@dataclass(frozen=True)
class FileDiff:
    """One file's change between two commits.

    ``path`` is the file's path after the change (before it, for a deletion); ``old_path`` is
    the source of a rename or copy, else None. ``text`` is this file's part of the unified diff
    exactly as ``git diff`` prints it, from its ``diff --git`` line to a final newline, so that
    joining the texts of any subset of files gives a patch ``git apply`` accepts. A binary file's
    text only says ``Binary files ... differ`` (no ``--binary`` patch), and its counts are 0.
    A type change (file <-> symlink <-> submodule) is printed by git as a deletion followed by
    a creation: both are in ``text``. Non-UTF-8 bytes of the diff are replaced by U+FFFD, so such
    a file's ``text`` will not apply.
    """

    path: str
    old_path: str | None
    status: DiffStatus
    binary: bool
    submodule: bool
    additions: int
    deletions: int
    text: str


@dataclass(frozen=True)
class _RawEntry:
    old_mode: int
    new_mode: int
    status: DiffStatus
    path: str
    old_path: str | None


def _check_sha(commit: str) -> str:
    """A full object id (40 or 64 hex digits, lower-cased): no refs, no options."""
    sha = commit.lower() if isinstance(commit, str) else ""
    if not _SHA_RE.fullmatch(sha):
        raise ValueError(f"not a full commit sha: {commit!r}")
    return sha


def _check_path(path: str) -> str:
    """A repository-relative ``/``-separated file path that cannot name anything outside it."""
    pure = PurePosixPath(path)
    if (
        not path
        or "\0" in path
        or pure.is_absolute()
        or any(part in {".", ".."} for part in path.split("/"))
    ):
        raise ValueError(f"not a repository-relative file path: {path!r}")
    return path


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _parse_raw(output: bytes) -> list[_RawEntry]:
    """``git diff --raw -z`` output: ``:mode mode sha sha STATUS\\0path\\0[path\\0]`` entries."""
    fields = output.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    entries: list[_RawEntry] = []
    i = 0
    while i < len(fields):
        meta = fields[i].decode("ascii")
        if not meta.startswith(":"):
            raise ValueError(f"unexpected git diff --raw field {meta!r}")
        old_mode, new_mode, _old_sha, _new_sha, letters = meta[1:].split(" ")
        status = _STATUS.get(letters[0])
        if status is None:
            raise ValueError(f"unexpected git diff status {letters!r}")
        if status in ("renamed", "copied"):
            old_path, path = _decode(fields[i + 1]), _decode(fields[i + 2])
            i += 3
        else:
            old_path, path = None, _decode(fields[i + 1])
            i += 2
        entries.append(_RawEntry(int(old_mode, 8), int(new_mode, 8), status, path, old_path))
    return entries


def _split_patch(patch: bytes) -> list[bytes]:
    """The per-file parts of a patch: a content line never starts with ``diff --git``."""
    starts = [m.start() for m in _DIFF_START_RE.finditer(patch)]
    if patch[: starts[0] if starts else len(patch)].strip():
        raise ValueError("git diff output does not start with a 'diff --git' line")
    return [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)], strict=True)]


def _count(part: bytes) -> tuple[bool, int, int]:
    """(binary, additions, deletions) of one ``diff --git`` part."""
    binary = False
    additions = deletions = 0
    in_hunks = False
    for line in part.splitlines():
        if in_hunks:
            if line.startswith(b"+"):
                additions += 1
            elif line.startswith(b"-"):
                deletions += 1
        elif line.startswith(b"@@"):
            in_hunks = True
        elif line.startswith(b"Binary files ") and line.endswith(b" differ"):
            binary = True
    return binary, additions, deletions


def _file_diffs(raw: list[_RawEntry], patch: bytes) -> list[FileDiff]:
    parts = _split_patch(patch)
    files: list[FileDiff] = []
    index = 0
    for entry in raw:
        # git prints a change of file type as a deletion followed by a creation.
        type_split = (
            entry.old_mode
            and entry.new_mode
            and (entry.old_mode & _FORMAT) != (entry.new_mode & _FORMAT)
        )
        own = parts[index : index + (2 if type_split else 1)]
        index += len(own)
        if not own:
            raise ValueError(f"git diff --patch has no part for {entry.path!r}")
        counts = [_count(part) for part in own]
        text = b"".join(own)
        if not text.endswith(b"\n"):
            text += b"\n"
        files.append(
            FileDiff(
                path=entry.path,
                old_path=entry.old_path,
                status=entry.status,
                binary=any(binary for binary, _, _ in counts),
                submodule=_GITLINK in (entry.old_mode, entry.new_mode),
                additions=sum(additions for _, additions, _ in counts),
                deletions=sum(deletions for _, _, deletions in counts),
                text=_decode(text),
            )
        )
    if index != len(parts):
        raise ValueError(f"git diff printed {len(parts)} file parts for {len(raw)} changes")
    return files


class RepoCache:
    """Bare partial clones under ``root/<owner>/<repo>.git``, one per repository, reused.

    ``url_template`` has ``{owner}`` and ``{repo}`` placeholders:
    ``https://github.com/{owner}/{repo}.git``, or ``file:///srv/git/{owner}/{repo}.git`` for a
    local remote (``file://``, not a bare path: a path clone would ignore ``--filter``; the
    remote needs ``uploadpack.allowFilter``, else git silently makes a full clone).
    """

    def __init__(self, root: Path, url_template: str, *, timeout_seconds: float = 600.0):
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
        try:
            url_template.format(owner="owner", repo="repo")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"url_template {url_template!r} may only use {{owner}} and {{repo}}: {exc!r}"
            ) from exc
        self.root = Path(root).absolute()
        self.url_template = url_template
        self.timeout_seconds = timeout_seconds
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._remotes: dict[str, str] = {}

    # -- paths and processes ---------------------------------------------------------------

    def path(self, repo: str) -> Path:
        """``root/owner/repo.git`` for a valid ``owner/repo`` name; ValueError for anything else."""
        owner, name = validate_repo_name(repo).split("/")
        path = self.root / owner / f"{name}.git"
        if path.parent.parent != self.root or not path.is_relative_to(self.root):
            raise ValueError(f"repository {repo!r} would leave the cache root")
        return path

    def url(self, repo: str) -> str:
        """The remote URL of ``repo``: the one set with ``use_remote``, else ``url_template``
        filled in."""
        owner, name = validate_repo_name(repo).split("/")
        return self._remotes.get(repo.lower()) or self.url_template.format(owner=owner, repo=name)

    def use_remote(self, repo: str, url: str) -> None:
        """Clone ``repo`` from ``url`` (an exported task's recorded remote), not the template."""
        validate_repo_name(repo)
        self._remotes[repo.lower()] = url

    def public_url(self, repo: str) -> str:
        """``url(repo)`` without credentials (a token in an https URL's user part): what a
        task records as its remote."""
        parts = urlsplit(self.url(repo))
        if not (parts.username or parts.password):
            return parts.geturl()
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _UNSAFE_ENV}
        env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C", LANGUAGE="C")
        return env

    def _run(
        self,
        args: list[str],
        *,
        git_dir: Path | None = None,
        input: bytes | None = None,
        check: bool = True,
        error: type[GitError] = GitError,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` (with the safety options) under the timeout; raise ``error``."""
        command = ["git"]
        for option in _CONFIG:
            command += ["-c", option]
        if git_dir is not None:
            command.append(f"--git-dir={git_dir}")
        command += args
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._env(),
            cwd=self.root if self.root.is_dir() else None,
            start_new_session=True,  # its own process group: a timeout kills lazy fetches too
        )
        try:
            stdout, stderr = process.communicate(input, timeout=self.timeout_seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise error(
                f"git {args[0]} timed out after {self.timeout_seconds:g}s",
                command=command,
                stderr=_decode(stderr),
            ) from None
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        if check and result.returncode != 0:
            raise error(
                f"git {args[0]} failed with exit code {result.returncode}",
                command=command,
                stderr=_decode(stderr),
            )
        return result

    def _lock(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def _cloned(self, repo: str) -> Path:
        path = self.path(repo)
        if not path.is_dir():
            raise GitError(f"{repo} is not cloned: call ensure() first", command=[], stderr="")
        return path

    def _has_commit(self, git_dir: Path, sha: str) -> bool:
        """Whether the commit is in the clone, without the lazy fetch a lookup would trigger."""
        result = self._run(
            ["rev-list", "--missing=print", "--no-walk", f"{sha}^{{commit}}", "--"],
            git_dir=git_dir,
            check=False,
        )
        return result.returncode == 0

    def _require(self, repo: str, *commits: str) -> Path:
        git_dir = self._cloned(repo)
        for commit in commits:
            if not self._has_commit(git_dir, commit):
                raise CommitNotFound(
                    f"commit {commit} is not in the clone of {repo}: call ensure() first",
                    command=[],
                )
        return git_dir

    # -- clone and fetch -------------------------------------------------------------------

    def ensure(self, repo: str, *commits: str) -> Path:
        """Clone ``repo`` once (bare, blob-less) and fetch any of ``commits`` it lacks.

        Returns the clone's path. Raises CloneError if it cannot be cloned and CommitNotFound
        for a commit the remote does not have (or does not serve).
        """
        shas = [_check_sha(commit) for commit in commits]
        git_dir = self.path(repo)
        with self._lock(str(git_dir)):
            if not git_dir.is_dir():
                self._clone(repo, git_dir)
            fallback_done = False
            for sha in shas:
                if self._has_commit(git_dir, sha):
                    continue
                fetch = self._run(
                    [*_FETCH, sha],
                    git_dir=git_dir,
                    check=False,
                )
                stderr = _decode(fetch.stderr)
                if fetch.returncode != 0 and not fallback_done:
                    fallback_done = True
                    refs = self._run(
                        [*_FETCH, *_FALLBACK_REFSPECS],
                        git_dir=git_dir,
                        check=False,
                    )
                    stderr += _decode(refs.stderr)
                if not self._has_commit(git_dir, sha):
                    raise CommitNotFound(
                        f"commit {sha} not found in {repo}", command=fetch.args, stderr=stderr
                    )
        return git_dir

    def release_tag(self, repo: str, commit: str) -> str | None:
        """The latest tag reachable from ``commit`` (what setuptools-scm would call the
        version), without a leading ``v``; None when there is none. The clone's tags are
        fetched once (clones are made without them)."""
        git_dir = self._require(repo, _check_sha(commit))
        marker = git_dir / "swe-stream-tags-fetched"
        with self._lock(str(git_dir)):
            if not marker.exists():
                self._run(
                    ["fetch", "--quiet", "--no-write-fetch-head", "--filter=blob:none",
                     "origin", "+refs/tags/*:refs/tags/*"],
                    git_dir=git_dir,
                    check=False,
                )  # fmt: skip
                marker.touch()
        described = self._run(
            ["describe", "--tags", "--abbrev=0", commit], git_dir=git_dir, check=False
        )
        tag = _decode(described.stdout).strip() if described.returncode == 0 else ""
        return tag.removeprefix("v") or None

    def _clone(self, repo: str, git_dir: Path) -> None:
        """Clone into a temporary sibling directory, configure it, rename it into place."""
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        prefix = f".{git_dir.name}."
        for stale in git_dir.parent.glob(f"{prefix}*.tmp"):
            # Left by a crash: no clone legitimately runs longer than the timeout.
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > self.timeout_seconds:
                    shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=git_dir.parent))
        try:
            self._run(
                [
                    "clone",
                    "--bare",
                    "--filter=blob:none",
                    "--no-tags",
                    "--template=",
                    "--quiet",
                    "--",
                    self.url(repo),
                    str(tmp),
                ],
                error=CloneError,
            )
            for key, value in (("gc.auto", "0"), ("maintenance.auto", "false")):
                self._run(["config", key, value], git_dir=tmp, error=CloneError)
            (tmp / "info").mkdir(exist_ok=True)
            (tmp / "info" / "attributes").write_text(_ATTRIBUTES)
            try:
                tmp.rename(git_dir)
            except OSError:
                if not git_dir.is_dir():  # else another process won the race: use its clone
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # -- reading ---------------------------------------------------------------------------

    def parents(self, repo: str, commit: str) -> list[str]:
        """The full shas of ``commit``'s parents, first parent first ([] for a root commit)."""
        sha = _check_sha(commit)
        git_dir = self._require(repo, sha)
        result = self._run(["rev-list", "--parents", "--no-walk", sha, "--"], git_dir=git_dir)
        return _decode(result.stdout).split()[1:]

    def diff(self, repo: str, base: str, head: str) -> list[FileDiff]:
        """``git diff -M base head`` split per file, in git's order (by path)."""
        base_sha, head_sha = _check_sha(base), _check_sha(head)
        git_dir = self._require(repo, base_sha, head_sha)
        common = [
            "diff",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=none",
            "--no-relative",
            "-O/dev/null",  # no diff.orderFile: the two calls must list files alike
        ]
        raw = self._run(
            [*common, "--raw", "-z", "--no-abbrev", base_sha, head_sha, "--"], git_dir=git_dir
        )
        patch = self._run(
            [
                *common,
                "--patch",
                "--full-index",
                "--submodule=short",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "--unified=3",
                "--inter-hunk-context=0",
                "--diff-algorithm=myers",
                "--indent-heuristic",
                base_sha,
                head_sha,
                "--",
            ],
            git_dir=git_dir,
        )
        try:
            return _file_diffs(_parse_raw(raw.stdout), patch.stdout)
        except (ValueError, IndexError) as exc:
            raise GitError(
                f"cannot split the diff {base_sha}..{head_sha} of {repo}: {exc}",
                command=patch.args,
            ) from exc

    def archive(self, repo: str, commit: str) -> bytes:
        """A tar of the tree at ``commit`` (every file, exactly its blob; submodules empty)."""
        sha = _check_sha(commit)
        git_dir = self._require(repo, sha)
        return self._run(["archive", "--format=tar", sha], git_dir=git_dir).stdout

    def submodules(self, repo: str, commit: str) -> list[tuple[str, str, str]]:
        """``(path, url, commit)`` of each submodule of the tree at ``commit`` (the gitlinks of
        its tree, their URLs from its ``.gitmodules``)."""
        sha = _check_sha(commit)
        git_dir = self._require(repo, sha)
        gitmodules = self.file_at(repo, sha, ".gitmodules")
        if gitmodules is None:  # most trees: no need to list every path of the tree
            return []
        listing = self._run(["ls-tree", "-r", "-z", "--full-tree", sha], git_dir=git_dir).stdout
        links = {}
        for entry in listing.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[0] == b"160000":
                links[_decode(name)] = _decode(parts[2])
        if not links:
            return []
        config = configparser.RawConfigParser(strict=False)
        try:
            config.read_string(_decode(gitmodules))
        except configparser.Error:
            return []
        urls = {
            config.get(section, "path", fallback=""): config.get(section, "url", fallback="")
            for section in config.sections()
        }
        return [(path, urls.get(path, ""), link) for path, link in sorted(links.items())]

    def archive_with_submodules(self, repo: str, commit: str) -> tuple[bytes, dict[str, str]]:
        """``archive`` with each submodule's tree at its pinned commit under its path (fetched
        through the URL template like any repository); and, by path, why a submodule is not
        there."""
        archive = self.archive(repo, commit)
        problems: dict[str, str] = {}
        for path, url, sha in self.submodules(repo, commit):
            name = submodule_repository(url, repo)
            if name is None:
                problems[path] = f"submodule {path}: {url!r} is not a repository we can clone"
                continue
            try:
                self.ensure(name, sha)
                archive = _tar_with(archive, self.archive(name, sha), path)
            except (GitError, ValueError) as exc:
                problems[path] = f"submodule {path} ({url}) at {sha[:12]}: {exc}"
        return archive, problems

    def file_at(self, repo: str, commit: str, path: str) -> bytes | None:
        """The content of file ``path`` at ``commit``, or None if no file is there."""
        found = self._blob(repo, commit, path)
        if found is None:
            return None
        git_dir, blob = found
        return self._run(["cat-file", "blob", blob], git_dir=git_dir).stdout

    def text_at(self, repo: str, commit: str, path: str, max_bytes: int) -> str | None:
        """The text of file ``path`` at ``commit`` (bytes that are not UTF-8 replaced, as in
        ``diff``), or None if no file is there or it is over ``max_bytes``."""
        found = self._blob(repo, commit, path)
        if found is None:
            return None
        git_dir, blob = found
        size = self._run(["cat-file", "-s", blob], git_dir=git_dir).stdout
        if int(size.strip() or 0) > max_bytes:
            return None
        return _decode(self._run(["cat-file", "blob", blob], git_dir=git_dir).stdout)

    def _blob(self, repo: str, commit: str, path: str) -> tuple[Path, str] | None:
        """(the clone, the blob's sha) of file ``path`` at ``commit``; None: no file there."""
        sha = _check_sha(commit)
        _check_path(path)
        git_dir = self._require(repo, sha)
        listing = self._run(
            ["--literal-pathspecs", "ls-tree", "-z", "--full-tree", sha, "--", path],
            git_dir=git_dir,
        ).stdout
        for entry in listing.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if name.decode("utf-8", errors="surrogateescape") != path:
                continue
            _mode, kind, blob = meta.decode("ascii").split(" ")
            return (git_dir, blob) if kind == "blob" else None
        return None


_GITHUB_URL = re.compile(
    r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$"
)


def submodule_repository(url: str, parent: str) -> str | None:
    """The ``owner/name`` a submodule URL names: a GitHub URL, or one relative to the parent
    repository (``../other.git``); None for anything else."""
    match = _GITHUB_URL.match(url.strip())
    if match:
        return f"{match['owner']}/{match['name']}"
    if url.startswith("../"):
        name = url[3:].removesuffix(".git").strip("/")
        if name and "/" not in name:
            return f"{parent.split('/')[0]}/{name}"
    return None


def _tar_with(archive: bytes, addition: bytes, prefix: str) -> bytes:
    """``archive`` with the members of ``addition`` appended under ``prefix/``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as target:
        for data, under in ((archive, ""), (addition, prefix.strip("/") + "/")):
            with tarfile.open(fileobj=io.BytesIO(data)) as source:
                for member in source.getmembers():
                    if member.name == "pax_global_header" or member.type == tarfile.XGLTYPE:
                        continue
                    handle = source.extractfile(member) if member.isfile() else None
                    member.name = under + member.name.removeprefix("./")
                    target.addfile(member, handle)
    return out.getvalue()
