"""Which license a repository is under, as its LICENSE file names it, for the dataset card.

``license_name`` names a license from its text by the phrases that license's text (or its
standard notice) always carries; ``clone_license_reader`` reads the LICENSE file of a task's
repository at the task's base commit from the clone cache; ``repository_licenses`` names each
repository's license once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from schemas.workspace import TaskWorkspace
from streams.clients.git import GitError, RepoCache
from streams.evaluation.months import created_time

__all__ = [
    "LICENSE_FILES",
    "UNKNOWN",
    "LicenseReader",
    "clone_license_reader",
    "license_name",
    "repository_licenses",
]

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
LICENSE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENSE.rst", "LICENCE", "COPYING")
"""Where a repository keeps its license, looked for in this order at the top of its tree."""
MAX_LICENSE_BYTES = 1 << 20  # the GPL is 35 kB; a bigger "LICENSE" is something else

LicenseReader = Callable[[TaskWorkspace], str | None]
"""The text of a task's repository's license at the task's base commit; None: not found."""

_BSD = (
    "redistribution and use in source and binary forms, with or without modification, are "
    "permitted provided that the following conditions are met"
)

# the notice of a project under "version N of the GPL, or (at your option) any later version"
_GPL_NOTICE = "terms of the gnu general public license as published by the free software foundation"

# SPDX id -> phrases that all occur in the license's text (lowercase, whitespace collapsed);
# several alternatives per id: the full text, or the notice projects put in its place. The
# first id that matches names the text, so a text quoting another license (the GPL names the
# LGPL, the LGPL the GPL) is matched by the headers, which carry the name and the version.
_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("AGPL-3.0", ("gnu affero general public license version 3",)),
    ("LGPL-3.0", ("gnu lesser general public license version 3, 29 june 2007",)),
    ("LGPL-2.1", ("gnu lesser general public license version 2.1, february 1999",)),
    ("LGPL-2.0", ("gnu library general public license version 2, june 1991",)),
    ("GPL-3.0", ("gnu general public license version 3, 29 june 2007",)),
    ("GPL-2.0", ("gnu general public license version 2, june 1991",)),
    ("GPL-3.0", (f"{_GPL_NOTICE}, either version 3",)),
    ("GPL-2.0", (f"{_GPL_NOTICE}; either version 2",)),
    ("MPL-2.0", ("mozilla public license version 2.0",)),
    ("MPL-2.0", ("mozilla public license, v. 2.0",)),
    ("Apache-2.0", ("apache license version 2.0, january 2004",)),
    ("Apache-2.0", ("licensed under the apache license, version 2.0",)),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    (
        "ISC",
        (
            "permission to use, copy, modify, and",
            "distribute this software for any purpose with or without fee is hereby granted",
            "above copyright notice and this permission notice appear in all copies",
        ),
    ),
    (
        "MIT",
        (
            "permission is hereby granted, free of charge, to any person obtaining a copy",
            "the above copyright notice and this permission notice shall be included",
        ),
    ),
    ("BSD-4-Clause", (_BSD, "all advertising materials mentioning features or use")),
    ("BSD-3-Clause", (_BSD, "endorse or promote products derived from this software")),
    ("BSD-2-Clause", (_BSD, "redistributions of source code must retain")),
)


def license_name(text: str) -> str:
    """The SPDX id of the license ``text`` is (MIT, Apache-2.0, BSD-3-Clause, BSD-2-Clause,
    GPL-3.0, GPL-2.0, LGPL-3.0, LGPL-2.1, LGPL-2.0, AGPL-3.0, MPL-2.0, ISC, Unlicense, ...);
    ``"unknown"`` when it is none of them.

    Plain substring checks: a license is prose, and its wording is fixed, but line breaks and
    capitals vary between copies (a header is centred, the MIT text's warranty shouts).
    """
    normal = " ".join(text.split()).casefold()
    for name, phrases in _PHRASES:
        if all(phrase in normal for phrase in phrases):
            return name
    return UNKNOWN


def clone_license_reader(repos: RepoCache, *, fetch: bool = False) -> LicenseReader:
    """Read a task's repository's LICENSE (``LICENSE_FILES``) at its base commit from the
    clone cache ``repos``: the clone of the repository when it is there, or the task's recorded
    remote when that is a local ``file://`` repository; with ``fetch``, any remote (a clone from
    GitHub). None when there is no such file or the commit cannot be had: the card then says
    the license is unknown, which is better than an export that fails on a missing clone."""

    def read(ws: TaskWorkspace) -> str | None:
        remote = ws.install_config.get("remote")
        try:
            if isinstance(remote, str) and remote:
                repos.use_remote(ws.repo, remote)
            local = repos.path(ws.repo).is_dir() or repos.url(ws.repo).startswith("file://")
            if not (fetch or local):
                return None
            repos.ensure(ws.repo, ws.base_commit)
            for name in LICENSE_FILES:
                text = repos.text_at(ws.repo, ws.base_commit, name, MAX_LICENSE_BYTES)
                if text is not None:
                    return text
        except (GitError, ValueError) as exc:
            log.info("%s: no license read at %s: %s", ws.repo, ws.base_commit[:12], exc)
        return None

    return read


def repository_licenses(workspaces: Iterable[TaskWorkspace], read: LicenseReader) -> dict[str, str]:
    """Repository -> the SPDX id of its license (``"unknown"`` when not read or not named),
    read once per repository, at the base commit of its latest task: a repository that changed
    its license is published under the newer one."""
    latest: dict[str, TaskWorkspace] = {}
    for ws in workspaces:
        known = latest.get(ws.repo)
        if known is None or (created_time(ws.created_at), ws.instance_id) > (
            created_time(known.created_at),
            known.instance_id,
        ):
            latest[ws.repo] = ws
    names: dict[str, str] = {}
    for repo, ws in sorted(latest.items()):
        text = read(ws)
        names[repo] = license_name(text) if text is not None else UNKNOWN
    return names
