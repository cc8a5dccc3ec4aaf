"""Env image builds of corpus repositories: the pip path and swe-stream's, side by side.

    python -m benchmarks.envbuild [--corpus DIR] [--repos a,b,c,d,e]

For each repository (default: five of the corpus), the install recipe swe-stream infers at the
base commit of its first corpus PR is built into an env image three ways, one after another:

* ``pip``: the way env images were built before: a Dockerfile (classic builder, no build
  cache) that makes a venv, upgrades pip, and runs the recipe's install steps with
  ``pip install`` instead of ``uv pip install``, no download cache (``PIP_NO_CACHE_DIR``);
* ``swe-stream``: ``EnvironmentBuilder.env_image``: uv, steps run in a container that mounts
  the host's package cache, committed; the cache is a volume of this run that starts empty,
  so a repository finds in it only what the repositories before it downloaded;
* ``swe-stream, warm cache``: the same image removed and built again (a later PR of the
  repository whose dependency files changed, or another worker of the host).

The tools layers (a venv with uv, once per base image, shared by every repository) are built
first and not timed. Printed: a row per repository, the median speed-ups, and last

    env build speed-up: X (target >= 3.0): MET|NOT MET

where X is the median over the repositories of pip seconds / swe-stream seconds (the cold-cache
build). Needs Docker, the base images (``swe-stream images base --all``) and PyPI.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.corpus_engine import DEFAULT_CORPUS, corpus_validator, show_progress
from streams.core.settings import DockerSettings
from streams.evaluation.environments import ENV_DIR, VENV, EnvironmentBuilder, process_tag
from streams.evaluation.recipes.model import InstallRecipe
from streams.evaluation.validator import Validator, docker_from_env
from streams.offline.corpus import CorpusError, load_corpus
from streams.runtime.live import LiveView

DEFAULT_REPOS = "itsdangerous,tenacity,pyjwt,marshmallow,arrow"
TARGET = 3.0


def pip_dockerfile(base_image: str, recipe: InstallRecipe) -> str:
    """The env image as the pip path builds it."""
    variables = " ".join(f"{k}={json.dumps(v)}" for k, v in recipe.environment)
    steps = [
        command.replace("env -u UV_EXCLUDE_NEWER ", "").replace("uv pip install", "pip install")
        for command in recipe.env_commands
    ]
    apt = ""
    if recipe.system_packages:
        apt = (
            "RUN apt-get -o Acquire::Check-Valid-Until=false update && apt-get install -y "
            f"--no-install-recommends {' '.join(recipe.system_packages)}\n"
        )
    return (
        f"FROM {base_image}\n{apt}"
        f"RUN python3 -m venv {VENV}\n"
        f"ENV PATH={VENV}/bin:$PATH VIRTUAL_ENV={VENV} PIP_DISABLE_PIP_VERSION_CHECK=1 "
        "PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PIP_CERT=/etc/ssl/certs/ca-certificates.crt\n"
        + (f"ENV {variables}\n" if variables else "")
        + f"COPY env/ {ENV_DIR}/\n"
        f"RUN {VENV}/bin/python -m pip install --quiet --upgrade pip\n"
        + "".join(f"RUN {step}\n" for step in steps)
    )


def build_with_pip(client: Any, base_image: str, recipe: InstallRecipe, tag: str) -> float:
    """Seconds of the pip path's build (raises when it fails)."""
    buffer = io.BytesIO()
    files = {"Dockerfile": pip_dockerfile(base_image, recipe).encode()}
    files |= {f"env/{path}": data for path, data in recipe.dependency_files.items()}
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    started = time.monotonic()
    client.images.build(
        fileobj=buffer, custom_context=True, tag=tag, rm=True, forcerm=True, nocache=True
    )
    return time.monotonic() - started


def recipes_of(corpus: Any, validator: Validator) -> list[tuple[str, InstallRecipe]]:
    """The recipe of each repository at its first corpus PR's base commit."""
    found = []
    for repository in corpus.repositories:
        pr = next(p for p in corpus.pull_requests if p["repo"] == repository.repo)
        created = datetime.fromisoformat(pr["merged_at"].replace("Z", "+00:00"))
        _, recipes = validator.recipes(repository.repo, pr["base_sha"], created)
        found.append((repository.repo, recipes[0]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repos", default=DEFAULT_REPOS, help=f"comma-separated ({DEFAULT_REPOS})")
    args = parser.parse_args(argv)
    show_progress()
    try:
        corpus = load_corpus(args.corpus, args.repos.split(","))
    except CorpusError as exc:
        print(f"benchmarks.envbuild: {exc}", file=sys.stderr)
        return 2
    client = docker_from_env()
    volume = f"swe-stream-bench-packages-{process_tag()}"
    docker = DockerSettings(package_cache=volume)
    work = Path(tempfile.mkdtemp(prefix="swe-stream-envbuild-"))
    validator = corpus_validator(corpus, work, client, docker)
    recipes = recipes_of(corpus, validator)
    builder = EnvironmentBuilder(client, docker.base_image, "base", package_cache=volume)
    # the images being built (step, elapsed): drawn on a terminal, else progress lines
    view = LiveView(sys.stderr.isatty(), "benchmarks.envbuild").start()
    started = time.monotonic()
    for base in sorted({r.base_image or docker.base_image for _, r in recipes}):
        builder.tools_image(base)
    print(f"tools layers ready in {time.monotonic() - started:.0f} s (not timed below)")
    columns = f"{'pip s':>7} {'new s':>7} {'warm s':>7} {'x':>5} {'x warm':>6}"
    print(f"\n{'repository':34} {'python':6} {columns}")
    cold, warm = [], []
    try:
        for repo, recipe in recipes:
            base = recipe.base_image or docker.base_image
            tag = f"swe-stream-bench/pip:{process_tag()}"
            try:
                pip_seconds = build_with_pip(client, base, recipe, tag)
            except Exception as exc:  # the pip path failing is a result, not the run's end
                print(f"{repo:34} pip path failed: {str(exc).splitlines()[0][:100]}")
                continue
            finally:
                with contextlib.suppress(Exception):  # a failed build left no image
                    client.images.remove(tag, force=True)
            seconds = []
            for _ in range(2):
                env = builder.env_image(repo, recipe)
                seconds.append(env.seconds)
                builder.release(env, None)
            cold.append(pip_seconds / seconds[0])
            warm.append(pip_seconds / seconds[1])
            print(
                f"{repo:34} {recipe.python or '-':6} {pip_seconds:7.1f} {seconds[0]:7.1f} "
                f"{seconds[1]:7.1f} {cold[-1]:5.1f} {warm[-1]:6.1f}",
                flush=True,
            )
    finally:
        view.stop()
        client.volumes.get(volume).remove(force=True)
    if not cold:
        print(f"env build speed-up: not measured (target >= {TARGET}): NOT MET")
        return 0
    speedup, warm_speedup = statistics.median(cold), statistics.median(warm)
    print(f"\nmedian speed-up, warm cache: {warm_speedup:.1f}x")
    verdict = "MET" if speedup >= TARGET else "NOT MET"
    print(f"env build speed-up: {speedup:.1f} (target >= {TARGET}): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
