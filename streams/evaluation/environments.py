"""Docker environments in three layers, as the SWE-bench harness builds them:

1. **base** (``docker.base_image``): an OS with Python and git; built offline by
   ``swe-stream images base`` (debootstrap), or any image with python3 where a registry is
   reachable; then **tools**, once per base image: a venv with today's pip and uv;
2. **env**, per repository and install recipe: the test runner and the repository's
   dependencies installed in the venv; its tag carries a hash of the recipe, so a second
   task of the same repository (same recipe) reuses it;
3. **instance**, per task: the env image plus the repository at the base commit (from
   ``git archive`` on the host; no git history, nothing of the fix) and the project installed.

How to install and test a repository is an ``InstallRecipe``, inferred by
``streams.evaluation.recipes`` (or set by a per-repository override).
``docker.cache_level`` says which layers stay after a task (``instance`` keeps all, ``env``
drops instance images, ``base`` drops env images too, ``none`` also the base when it was not
built offline); tools images are always kept, and so are instance images built ahead of the
tasks (``swe-stream images instances``): ``env`` reuses them too, and drops none of them.
Images are built by ``image_builds`` (steps run in a container that shares the host's package
cache, then committed).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import logging
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.core import metrics
from streams.evaluation.image_builds import BuildPlan, ImageBuild, ImageBuildError
from streams.evaluation.recipes.model import ENV_DIR, TESTBED, VENV, InstallRecipe, TreeFiles
from streams.evaluation.sandbox import OWNER_LABEL, listed_image_tags, owner_label

log = logging.getLogger("swe_stream.environments")

TOOLS_REPOSITORY = "swe-stream/tools"
ENV_REPOSITORY = "swe-stream/env"
INSTANCE_REPOSITORY = "swe-stream/instance"
LABEL = "org.swe-stream.layer"
# The mirrors these images use may serve a suite's Release file after its Valid-Until (a
# snapshot, testing's short validity): signatures are still checked, the date is not.
APT_OPTIONS = "-o Acquire::Check-Valid-Until=false"
DEFAULT_PACKAGE_CACHE = "swe-stream-packages"  # the Docker volume every build shares
# the tools layer: a venv, today's pip and uv, and git (registry images such as
# python:3.12-slim lack it; patches are applied with it)
TOOLS_STEPS = (
    "command -v git >/dev/null && command -v patch >/dev/null || (apt-get "
    f"{APT_OPTIONS} update && apt-get install -y "
    "--no-install-recommends git patch && rm -rf /var/lib/apt/lists/*)",
    f"python3 -m venv {VENV}",
    f"{VENV}/bin/python -m pip install --quiet --upgrade pip uv",
)
_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

# /testbed is a git repository whose one commit is the tree at the base commit (committed
# before the install steps, as SWE-bench's testbed): agents see their changes with git status
# and git diff, and the harness takes the agent's patch from it.
GIT_BASE = (
    "git init -q && git add -A && git -c user.name=swe-stream -c user.email=swe-stream@localhost "
    "commit -q --no-verify --allow-empty -m base"
)

# What the install steps left in the tree (egg-info, build output) is no change of anyone's:
# ignored, so that an agent's `git diff` holds only its own work. A directory of them is
# ignored whole (what a later build writes there too), and each name is written as a literal
# pattern: a gitignore line's `[1]`, `*`, `?` are globs, a leading `!` or `#` is syntax
# (CMake's `test[1]_include.cmake` would otherwise stay in every agent's patch).
GIT_IGNORE_BUILT = (
    "git ls-files -z --others --exclude-standard --directory "
    "| sed -z 's/[][*?!#\\\\ ]/\\\\&/g' | tr '\\0' '\\n' >> .git/info/exclude"
)


def _tag(text: str, limit: int = 120) -> str:
    return _TAG_UNSAFE.sub("-", text)[:limit].strip("-.") or "x"


_process_tags: dict[int, str] = {}
_build_numbers = itertools.count(1)


def process_tag() -> str:
    """A tag suffix of this process's own (pid and a random part, new after a fork)."""
    pid = os.getpid()
    if pid not in _process_tags:
        _process_tags[pid] = f"p{pid}-{secrets.token_hex(3)}"
    return _process_tags[pid]


@contextlib.contextmanager
def _build_lock(tag: str) -> Iterator[None]:
    """Held while one process (or thread) of this host builds ``tag``: a file lock, so it
    ends with its holder, killed or not. Where no lock file can be made, builds go on
    unlocked (at worst one image is built twice)."""
    directory = Path(tempfile.gettempdir()) / f"swe-stream-builds-{os.getuid()}"
    name = hashlib.sha256(tag.encode()).hexdigest()[:32]
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        lock = open(directory / f"{name}.lock", "a+b")  # noqa: SIM115 (closed by the with below)
    except OSError as error:
        log.warning("building %s without a lock: %s", tag, error)
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass
class BuiltImage:
    tag: str
    id: str
    built: bool  # False when an existing image was reused
    seconds: float


# the layers each cache level drops after a task
DROPPED_LAYERS = {"instance": (), "env": ("instance",), "base": ("instance", "env")}
DROPPED_LAYERS["none"] = DROPPED_LAYERS["base"]


class EnvironmentBuilder:
    """Builds (or reuses) tools, env and instance images on the Docker engine behind ``client``
    (each by running its steps in a container and committing it: ``image_builds``).

    An image the cache level drops after its task belongs to the one build that made it (its
    tag names the process and the build; its owner label, the process): another worker on the
    same engine, or a second validation of the same PR in this one (a record delivered again
    after a restart), builds its own, so dropping one never pulls an image from under the
    other. Kept layers share one tag, so everyone reuses them; one process of a host builds a
    missing one while the others wait for it.

    The layers are ordered so that what changes least is built least often: the **tools**
    layer (a venv with today's pip and uv) once per base image, for every repository; the
    **env** layer per repository and dependency set, reused by the repository's later PRs
    while their dependency files stay the same; the **instance** layer per task. Every build
    shares the host's package cache (``package_cache``, a Docker volume): what one build
    downloaded, the next does not.
    """

    def __init__(
        self,
        client: Any,
        base_image: str,
        cache_level: str = "env",
        package_cache: str = DEFAULT_PACKAGE_CACHE,
        step_timeout: float = 3600,
        fresh: bool = False,
    ):
        self.client = client
        # build env and instance images even where one of the same tag exists (a recipe
        # verified from scratch); the tools layer is still reused
        self.fresh = fresh
        self.base_image = base_image
        self.cache_level = cache_level
        self.package_cache = package_cache
        self.step_timeout = step_timeout
        self.last_build: ImageBuild | None = None  # its steps' times and output tails

    def _owner(self, layer: str) -> str | None:
        """The build a dropped layer's image belongs to (None: a kept layer, everyone's)."""
        if layer in DROPPED_LAYERS.get(self.cache_level, ()):
            return f"b{next(_build_numbers)}-{process_tag()}"
        return None

    @staticmethod
    def _layer_tag(repository: str, name: str, key: str, owner: str | None) -> str:
        suffix = f"-{key}" + (f"-{owner}" if owner else "")
        # a tag is at most 128 characters
        return f"{repository}:{_tag(name, 128 - len(suffix))}{suffix}"

    def _existing(self, tag: str) -> Any | None:
        import docker.errors

        try:
            return self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            return None

    def _prebuilt(self, instance_id: str, key: str) -> BuiltImage | None:
        """The kept instance image of a task, when one was built ahead of it (``swe-stream
        images instances``) on this env image: reused by a build whose cache level drops the
        instance layer, and left in place after its task, as SWE-bench keeps the images that
        were there before its run (None: there is none, or the build is ``fresh``). The env
        layer has no such lookup: where it is dropped (``base``, ``none``) each task builds
        its own, and an instance image on it is its own too."""
        if self.fresh:
            return None
        tag = self._layer_tag(INSTANCE_REPOSITORY, instance_id, key, None)
        existing = self._existing(tag)
        if existing is None:
            return None
        metrics.IMAGES.labels(layer="instance", result="reused").inc()
        return BuiltImage(tag, existing.id, False, 0.0)

    def _build(
        self, plan: BuildPlan, owner: str | None, archives: list[tuple[str, bytes]] | None = None
    ) -> BuiltImage:
        plan.labels[LABEL] = plan.layer
        if owner:  # dropped after its task, or by the next process if this one dies first
            plan.labels[OWNER_LABEL] = owner_label()
        started = time.monotonic()
        # a kept layer is built once per host: a process wanting it while another builds it
        # waits and reuses that image (a dropped layer is this build's alone)
        with contextlib.nullcontext() if owner else _build_lock(plan.tag):
            reuse = plan.layer == "tools" or not self.fresh
            existing = self._existing(plan.tag) if reuse else None
            if existing is not None:
                metrics.IMAGES.labels(layer=plan.layer, result="reused").inc()
                return BuiltImage(plan.tag, existing.id, False, time.monotonic() - started)
            build = self.last_build = ImageBuild(
                self.client, plan, self.package_cache, self.step_timeout
            )
            image = build.run(archives or [])
        seconds = time.monotonic() - started
        metrics.IMAGES.labels(layer=plan.layer, result="built").inc()
        metrics.IMAGE_BUILD_SECONDS.labels(layer=plan.layer).observe(seconds)
        # the progress registry logged the build (``image built: ...``); this adds the wait
        log.debug("built %s image %s in %.1f s", plan.layer, plan.tag, seconds)
        return BuiltImage(plan.tag, image.id, True, seconds)

    def tools_image(self, base_image: str) -> BuiltImage:
        """The venv with today's pip and uv (and git), on ``base_image``: built once per base
        image and kept at every cache level (every repository's env layer stands on it)."""
        base = self._existing(base_image)
        if base is None:
            raise ImageBuildError(
                f"base image {base_image} is missing: run `swe-stream images base --all`"
            )
        path = _image_path(base)
        environment = {
            "PATH": f"{VENV}/bin:{path}",
            "VIRTUAL_ENV": VENV,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # ...but what uv installs is compiled once, in its layer: a test run's start in a
            # fresh container compiled pytest and the dependencies again (pytest's own start:
            # 0.52 s of CPU uncompiled, 0.26 compiled), as pip's installs always were
            "UV_COMPILE_BYTECODE": "1",
            # the system's CA store (networks that intercept TLS add theirs there): uv reads
            # the first name since 0.11, the second before
            "UV_SYSTEM_CERTS": "1",
            "UV_NATIVE_TLS": "1",
        }
        made_of = json.dumps([base.id, TOOLS_STEPS, environment], sort_keys=True)
        key = hashlib.sha256(made_of.encode()).hexdigest()[:16]
        tag = self._layer_tag(TOOLS_REPOSITORY, base_image.rsplit(":", 1)[-1], key, None)
        plan = BuildPlan(
            layer="tools",
            tag=tag,
            parent=base_image,
            steps=list(TOOLS_STEPS),
            environment=environment,
        )
        return self._build(plan, None)

    def env_image(self, repo: str, recipe: InstallRecipe) -> BuiltImage:
        base_image = recipe.base_image or self.base_image
        tools = self.tools_image(base_image)
        owner = self._owner("env")
        tag = self._layer_tag(ENV_REPOSITORY, repo.replace("/", "__"), recipe.key(tools.id), owner)
        files = {f"{ENV_DIR}/{path}": data for path, data in recipe.dependency_files.items()}
        files[f"{ENV_DIR}/recipe.json"] = json.dumps(
            {
                "language": recipe.language,
                "python": recipe.python,
                "system_packages": list(recipe.system_packages),
                "env_commands": list(recipe.env_commands),
            }
        ).encode()
        steps = list(recipe.env_commands)
        if recipe.system_packages:
            # from the image's own Debian suite
            packages = " ".join(sorted(recipe.system_packages))
            steps.insert(
                0,
                f"apt-get {APT_OPTIONS} update && DEBIAN_FRONTEND=noninteractive "
                f"apt-get install -y --no-install-recommends {packages} "
                "&& rm -rf /var/lib/apt/lists/*",
            )
        plan = BuildPlan(
            layer="env",
            tag=tag,
            parent=tools.tag,
            steps=steps,
            files=files,
            environment=recipe.variables,
        )
        return self._build(plan, owner)

    def instance_image(
        self, instance_id: str, env: BuiltImage, tree: TreeFiles, recipe: InstallRecipe
    ) -> BuiltImage:
        digest = hashlib.sha256(env.id.encode() + tree.container_tar())
        steps = [GIT_BASE, *recipe.install_commands, *recipe.pre_test_commands, GIT_IGNORE_BUILT]
        digest.update(json.dumps(steps).encode())
        owner = self._owner("instance")
        key = digest.hexdigest()[:12]
        prebuilt = self._prebuilt(instance_id, key) if owner else None
        if prebuilt is not None:
            return prebuilt
        tag = self._layer_tag(INSTANCE_REPOSITORY, instance_id, key, owner)
        plan = BuildPlan(layer="instance", tag=tag, parent=env.tag, steps=steps, workdir=TESTBED)
        return self._build(plan, owner, [(TESTBED, tree.container_tar())])

    def release(self, env: BuiltImage, instance: BuiltImage | None) -> None:
        """Drop the layers the cache level does not keep."""
        import docker.errors

        layers = {"instance": instance, "env": env}
        for layer in DROPPED_LAYERS.get(self.cache_level, ()):
            image = layers[layer]
            # an exploration environment stands on the tools layer itself: always kept; an
            # image this build did not make (a pre-built one it reused) is not its to drop
            if image is None or not image.built or image.tag.startswith(TOOLS_REPOSITORY):
                continue
            try:
                self.client.images.remove(image.tag, force=True)
            except docker.errors.APIError as exc:
                log.warning("could not remove %s: %s", image.tag, exc)


def kept_tags(client: Any, instance_id: str) -> list[str]:
    """The kept (shared) tags on the engine of ``instance_id``'s instance images, whatever tree
    or recipe they were built of, then those of the env images they stand on; never a
    build's own (dropped) tag."""
    import docker.errors

    # a kept tag ends in its key: 12 hex digits (instance), 16 (env); a build's own tag
    # ends in its owner
    prefix = EnvironmentBuilder._layer_tag(INSTANCE_REPOSITORY, instance_id, "0" * 12, None)
    instance = re.compile(re.escape(prefix[:-12]) + "[0-9a-f]{12}")
    env = re.compile(re.escape(ENV_REPOSITORY) + ":.*-[0-9a-f]{16}")
    instances: list[str] = []
    envs: list[str] = []
    for image_id, image_tags in listed_image_tags(client, INSTANCE_REPOSITORY):
        tags = [tag for tag in image_tags if instance.fullmatch(tag)]
        if not tags:
            continue
        instances += tags
        try:
            parent = client.images.get(client.images.get(image_id).attrs.get("Parent") or "")
        except (docker.errors.ImageNotFound, docker.errors.NullResource):
            continue
        envs += [tag for tag in parent.tags if env.fullmatch(tag) and tag not in envs]
    return instances + envs


def _image_path(image: Any) -> str:
    """The PATH an image's configuration sets (the usual one when it sets none)."""
    for variable in (image.attrs.get("Config") or {}).get("Env") or []:
        if variable.startswith("PATH="):
            return str(variable[5:])
    return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
