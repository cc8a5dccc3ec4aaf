"""No answer in the agent's container: for each kind of task the suite exports (the demo
repositories' PRs in Python and in JavaScript, through extract and validate), the container the
harness gives the agent is searched (files, git objects, environment, image history and labels)
for the fix's commit ids and the gold and test patches' added lines the base tree does not hold,
and holds none of them; the same search finds them once the fix is in the container."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation.answer_search import added_lines, search_for_answer
from streams.evaluation.harness import PROMPT_FILE
from streams.evaluation.validator import task_environment
from tests.harness_tasks import TASK, engine_for, export_demo_task

TASKS = {"python": TASK, "javascript": "swe-stream-demo-units-js-1"}


@pytest.mark.unit
def test_the_added_lines_are_the_long_ones_a_diff_adds() -> None:
    patch = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n"
        "-    return (fahrenheit - 32) / 9\n"
        "+    return (fahrenheit - 32) * 5 / 9\n"
        "+    x = 1\n"
        "     return\n"
        "+    return (fahrenheit - 32) * 5 / 9\n"
    )
    assert added_lines(patch) == ["return (fahrenheit - 32) * 5 / 9"]


@pytest.mark.docker
@pytest.mark.parametrize("language", sorted(TASKS))
def test_the_agents_container_holds_no_answer(
    language: str,
    tmp_path: Path,
    base_image: str,
    docker_client: Any,
    node_images: dict[str, str],
) -> None:
    made = export_demo_task(tmp_path / "made", base_image, docker_client, language, TASKS[language])
    _, pr, workspace = made
    engine = engine_for(made, docker_client, base_image, tmp_path)
    commits = [pr.head_sha, pr.merge_sha]
    patches = [workspace.patch, workspace.test_patch]
    environment = task_environment(engine.validator, workspace)
    try:
        name = f"swe-answer-{language}-{os.getpid()}"
        with engine.agent_sandbox(environment, workspace, name) as box:
            box.put_file(PROMPT_FILE, workspace.prompt)  # as the harness gives it the task
            search = search_for_answer(docker_client, box, commits, patches)
            # the search can find: the fix applied in the tree, a commit id in a file
            box.put_file("/tmp/fix.patch", workspace.patch)
            applied = box.run("cd /testbed && git apply /tmp/fix.patch", timeout=60)
            assert applied.exit_code == 0, applied.output
            box.put_file("/tmp/notes/ref", pr.merge_sha + "\n")
            control = search_for_answer(docker_client, box, commits, patches)
    finally:
        environment.release()
    print(search.report())  # what was searched, in the test's output
    assert search.clean, search.report()
    assert len(search.commits) == 2 and search.lines, search.report()
    kinds = [where.split(":")[0] for where in search.searched]
    assert kinds == ["files", "git objects", "environment", "image history", "labels"]
    counts = [int(where.split(": ")[1].split(" ")[0]) for where in search.searched]
    assert all(n > 0 for n in counts), search.searched
    assert not control.clean
    assert any(": file /testbed/" in found for found in control.found), control.report()
    assert any(f"{pr.merge_sha!r}: file /tmp/notes/ref" in found for found in control.found)
