"""Licenses named from their texts, and read from a real repository's LICENSE at the task's
base commit (not at its branch's tip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.workspace import TaskWorkspace
from streams.clients.git import RepoCache
from streams.evaluation.licenses import (
    clone_license_reader,
    license_name,
    repository_licenses,
)
from streams.offline.local_repo import commit_files, publish, run_git

pytestmark = pytest.mark.unit

MIT = """MIT License

Copyright (c) 2024 Example Author

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
"""

APACHE = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION
"""

BSD_HEAD = """Copyright (c) 2005-2024, The Example Developers
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.
"""

BSD_3 = (
    BSD_HEAD
    + """
3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.
"""
)

GPL_2 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 2, June 1991

 Copyright (C) 1989, 1991 Free Software Foundation, Inc.,
 51 Franklin Street, Fifth Floor, Boston, MA 02110-1301 USA
  When we speak of free software, we are referring to freedom, not
price. (Some other Free Software Foundation software is covered by
the GNU Library General Public License instead.)
"""

GPL_3 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
"""

LGPL_3 = """                   GNU LESSER GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

  This version of the GNU Lesser General Public License incorporates
the terms and conditions of version 3 of the GNU General Public
License, supplemented by the additional permissions listed below.
"""

LGPL_21 = """                  GNU LESSER GENERAL PUBLIC LICENSE
                       Version 2.1, February 1999
"""

MPL_2 = """Mozilla Public License Version 2.0
==================================

1. Definitions
"""

ISC = """ISC License

Copyright (c) 2024 Example Author

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.
"""

UNLICENSE = """This is free and unencumbered software released into the public domain.

Anyone is free to copy, modify, publish, use, compile, sell, or
distribute this software.
"""

GPL_3_NOTICE = """This program is free software: you can redistribute it and/or modify
it under the terms of the GNU General Public License as published by
the Free Software Foundation, either version 3 of the License, or
(at your option) any later version.
"""


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (MIT, "MIT"),
        (APACHE, "Apache-2.0"),
        (BSD_3, "BSD-3-Clause"),
        (BSD_HEAD, "BSD-2-Clause"),
        (GPL_2, "GPL-2.0"),  # though it names the Library GPL
        (GPL_3, "GPL-3.0"),
        (GPL_3_NOTICE, "GPL-3.0"),
        (LGPL_3, "LGPL-3.0"),  # though it names the GPL version 3
        (LGPL_21, "LGPL-2.1"),
        (MPL_2, "MPL-2.0"),
        (ISC, "ISC"),
        (UNLICENSE, "Unlicense"),
        (MIT.replace("\n", "\r\n").upper(), "MIT"),  # line ends and case do not matter
        ("Copyright (c) 2024 Example. All rights reserved.\n", "unknown"),
        ("", "unknown"),
        (MIT.replace("shall be included", "need not be included"), "unknown"),
    ],
)
def test_license_name_names_real_license_texts(text: str, name: str) -> None:
    assert license_name(text) == name


def _task(
    repo: str, base_commit: str, created_at: str, number: int, remote: str = ""
) -> TaskWorkspace:
    owner, name = repo.split("/")
    return TaskWorkspace(
        id=f"{owner}-{name}-{number}",
        repo=repo,
        prompt="p",
        instance_id=f"{owner}__{name}-{number}",
        base_commit=base_commit,
        patch="",
        test_patch="",
        problem_statement="p",
        created_at=created_at,
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
        number=number,
        install_config={"remote": remote} if remote else {},
    )


def test_the_license_is_read_at_the_base_commit_from_a_real_clone(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_git(work, "init", "-q", "-b", "main")
    mit = commit_files(work, {"LICENSE": MIT, "a.py": "x = 1\n"}, "MIT", tick=1)
    apache = commit_files(work, {"LICENSE": None, "COPYING": APACHE}, "relicensed", tick=2)
    bare = commit_files(work, {"COPYING": None}, "no license", tick=3)
    remote, template = publish(work, tmp_path, "acme/calc")
    read = clone_license_reader(RepoCache(tmp_path / "cache", template))
    earlier = _task("acme/calc", mit, "2026-01-01T00:00:00Z", 1)
    later = _task("acme/calc", apache, "2026-02-01T00:00:00Z", 2)
    text = read(earlier)
    assert text is not None and license_name(text) == "MIT"
    text = read(later)
    assert text is not None and license_name(text) == "Apache-2.0"  # COPYING, when no LICENSE
    assert read(_task("acme/calc", bare, "2026-03-01T00:00:00Z", 3)) is None
    # once per repository, at its latest task's commit
    assert repository_licenses([later, earlier], read) == {"acme/calc": "Apache-2.0"}

    # a task's recorded remote is used, though the template points nowhere
    elsewhere = RepoCache(tmp_path / "cache2", "file:///nonexistent/{owner}/{repo}.git")
    via_remote = _task("acme/calc", mit, "2026-01-01T00:00:00Z", 1, remote=f"file://{remote}")
    text = clone_license_reader(elsewhere)(via_remote)
    assert text is not None and license_name(text) == "MIT"


def test_no_clone_and_a_remote_remote_reads_nothing_unless_fetching(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path / "cache", "https://github.invalid/{owner}/{repo}.git")
    task = _task("acme/calc", "a" * 40, "2026-01-01T00:00:00Z", 1)
    assert clone_license_reader(cache)(task) is None
    assert not (tmp_path / "cache").exists()  # no clone was even tried
    assert repository_licenses([task], clone_license_reader(cache)) == {"acme/calc": "unknown"}
    # a local remote without the commit: unknown, not an error
    missing = RepoCache(tmp_path / "cache", "file:///nonexistent/{owner}/{repo}.git")
    assert clone_license_reader(missing, fetch=True)(task) is None
