"""Validation overhead: a whole validation against the test commands it runs, warm cache.

    python -m benchmarks.validate [--rounds N] [--runs R]

The input is the test suite's repository (``tests/agents/repo_tasks.py``: a package with a
bug and the merged PR that fixes it and adds a failing test), made with git in a temporary
directory and served over ``file://``. Extract runs once; then one validation warms the cache
(env and instance images built, ``docker.cache_level=instance`` keeps them), and ``--rounds``
more validations are timed, each: reuse the images, start the sandbox, copy and apply the two
patches, run the test command once before and ``--runs`` times after the fix, judge, remove
the container.

Printed per round: the whole validation (wall), the test commands' own time (measured inside
the container), and the overhead per run of the test command:
``(wall - test time) / runs``. Target: overhead below 1.5 s per run.
Needs the Docker engine and the base image (``swe-stream images base``). Always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import docker

from agents.extract import Extract
from agents.validate import ValidateStage
from schemas import PatchSet, ValidatedTask
from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ExtractSettings, ValidateSettings
from streams.evaluation.validator import Validator
from tests.agents.repo_tasks import classified_for, make_calc_repo

TARGET_SECONDS = 1.5


async def main_async(rounds: int, runs: int, base_image: str) -> None:
    client = docker.from_env(timeout=600)
    with tempfile.TemporaryDirectory(prefix="swe-stream-bench-") as tmp:
        root = Path(tmp)
        pr = make_calc_repo(root / "git")
        repos = RepoCache(root / "cache", pr.url_template)
        (patches,) = (await Extract(repos, ExtractSettings(), 1)(classified_for(pr))).outputs
        assert isinstance(patches, PatchSet)
        validator = ValidateStage(
            Validator(
                repos,
                lambda: client,
                DockerSettings(
                    base_image=base_image,
                    toolchain_images={"python": {"3.11": base_image}},
                    cache_level="instance",
                ),
                ValidateSettings(runs=runs),
                1,
            )
        )
        started = time.monotonic()
        warm = (await validator(patches)).outputs[0]
        assert isinstance(warm, ValidatedTask)
        print(f"warm-up (images built if missing): {time.monotonic() - started:.2f} s")
        print(f"FAIL_TO_PASS {warm.FAIL_TO_PASS}  PASS_TO_PASS {len(warm.PASS_TO_PASS)} tests\n")
        overheads = []
        for round_no in range(1, rounds + 1):
            started = time.monotonic()
            outcome = await validator(patches)
            wall = time.monotonic() - started
            (task,) = outcome.outputs
            assert isinstance(task, ValidatedTask)
            report = task.validation
            overhead = (wall - report.test_seconds) / report.runs
            overheads.append(overhead)
            print(
                f"round {round_no}: validation {wall:6.2f} s   "
                f"test commands {report.test_seconds:6.2f} s over {report.runs} runs   "
                f"overhead {overhead:5.2f} s per run"
            )
        median = statistics.median(overheads)
        verdict = "MET" if median < TARGET_SECONDS else "MISSED"
        print(
            f"\nmedian overhead per run of the test command: {median:.2f} s "
            f"(target < {TARGET_SECONDS} s): {verdict}"
        )
    client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="after-fix runs per validation")
    parser.add_argument("--base-image", default=DockerSettings().base_image)
    args = parser.parse_args()
    asyncio.run(main_async(args.rounds, args.runs, args.base_image))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
