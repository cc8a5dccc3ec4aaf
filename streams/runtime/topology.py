"""The stream graph in one place: which stage reads which topic and writes which.

    GH Archive hours -ingest-> gharchive.pull-request-events -prefilter-> pr.candidates
      -enrich-> pr.enriched -classify-> pr.classified -extract-> pr.patches
      -validate (+ setup agent, testgen)-> tasks.validated -score-> tasks.scored
      -export-> tasks.exported (+ task dirs, dataset.jsonl) -harness-> harness.results
    every stage -> swe.ledger (compacted; the processed-PR ledger)
    validate <-> recipes.memory (compacted; the recipes that ran a repository's tests)
    every stage -> <its input topic>.dlq (records it could not handle, with the error)

Each stage lives in its own module in ``agents/`` and is listed in ``pipeline_stages``, in
graph order (``STAGE_ORDER`` names the PR stages in that order for the funnel); the topics
come from ``streams.kafka.topics``. Ingest is a producer, not a Faust agent (it reads GH
Archive, not Kafka). ``make_validator`` is the one place the evaluation engine is wired from
the settings: the validate and harness stages, ``swe-stream validate``, ``harness`` and
``demo`` all use it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

from agents.classify import classify_stage
from agents.enrich import RepositoryCache, enrich_stage
from agents.export import export_stage, registry_pusher
from agents.extract import extract_stage
from agents.harness import harness_stages
from agents.prefilter import prefilter_stage
from agents.score import score_stage
from agents.setup_agent import make_setup_agent, unavailable
from agents.testgen import make_test_generator
from agents.validate import validate_stage
from streams.clients.git import RepoCache
from streams.clients.github import GitHubClient
from streams.clients.llm import LLMClient
from streams.core.settings import Settings
from streams.evaluation.egress import model_endpoints
from streams.evaluation.prebuild import KEPT_LEVEL
from streams.evaluation.recipes.memory import RecipeTable
from streams.evaluation.recipes.overrides import load_overrides
from streams.evaluation.sandbox import Limits
from streams.evaluation.validator import Validator, docker_from_env
from streams.pipeline.ledger import Ledger
from streams.pipeline.recipe_memory import RecipeBook
from streams.pipeline.stage import Stage

log = logging.getLogger("swe_stream.topology")

# the PR stages in graph order: the funnel's rows (the harness stages evaluate, they mine nothing)
STAGE_ORDER = ("prefilter", "enrich", "classify", "extract", "validate", "score", "export")

Table = MutableMapping[bytes, bytes]


@dataclass
class StageResources:
    """What stages share in one worker: the ledger, named key/value tables (Faust tables,
    recovered from their changelogs; plain dicts in tests) and the recipe memory (restored
    from ``recipes.memory`` by the app; None: a table of its own, not restored)."""

    ledger: Ledger
    table: Callable[[str], Table]
    recipes: RecipeBook | None = None


def pipeline_stages(settings: Settings, resources: StageResources) -> list[Stage[Any]]:
    """The stages a worker runs, in graph order. Stages register here as they are built."""
    github = GitHubClient(settings.github)
    llm = LLMClient(settings.llm)
    repos = repo_cache(settings)
    repositories = RepositoryCache(
        resources.table("github-repositories"), github, settings.github.repo_cache_ttl_seconds
    )
    limits = Limits.from_settings(settings.docker)
    recipes = resources.recipes
    if recipes is None:  # no app to restore it from the topic: the local table alone
        recipes = RecipeBook(recipe_table(settings))
        recipes.mark_restored()
    memory = recipes.table if isinstance(recipes.table, RecipeTable) else None
    validator = make_validator(settings, repos, memory)
    testgen = make_test_generator(settings.testgen, llm, limits)
    setup_agent = make_setup_agent(settings.setup_agent, llm, validator)
    for line in missing_services(settings, llm.configured):
        log.warning("%s", line)
    stages: list[Stage[Any]] = [
        prefilter_stage(settings.prefilter, resources.ledger),
        enrich_stage(
            settings.enrich,
            github,
            repositories,
            settings.pipeline_version,
            bots=settings.prefilter.bots,
            concurrency=settings.github.concurrency,
        ),
        classify_stage(settings.classify, llm, settings.pipeline_version),
        extract_stage(settings.extract, repos, settings.pipeline_version),
        validate_stage(
            validator,
            testgen,
            setup_agent,
            recipes if settings.validation.recipe_memory else None,
            unavailable(settings.setup_agent, llm) or "",
        ),
        score_stage(settings.score, llm, settings.pipeline_version),
        export_stage(
            settings.export_dir,
            settings.pipeline_version,
            registry_pusher(pushing_validator(settings, repos), settings.export.registry)
            if settings.export.registry
            else None,
        ),
        *harness_stages(
            settings.harness,
            settings.harness.tasks_dir or settings.export_dir,
            validator,
            limits,
            settings.pipeline_version,
            model_endpoints(settings.harness.agent_model_hosts, settings.llm.base_url),
            settings.setup_agent.registries,
        ),
    ]
    return select_stages([in_graph_order(stage) for stage in stages], settings.worker.stages)


def in_graph_order(stage: Stage[Any]) -> Stage[Any]:
    """``stage`` knowing the PR stages at or after it (``Stage.done_at``)."""
    if stage.name not in STAGE_ORDER:
        return stage
    return replace(stage, done_at=frozenset(STAGE_ORDER[STAGE_ORDER.index(stage.name) :]))


def missing_services(settings: Settings, llm_configured: bool) -> list[str]:
    """What the settings lack that a run would miss, each with what it means (said once, when
    a worker's stages are built)."""
    missing = []
    if settings.github.token is None and not settings.github.tokens:
        missing.append(
            "no GitHub token (GITHUB_TOKEN or github.token): the API allows 60 requests an "
            "hour without one; PRs past that fail as GitHubUnavailable until the limit resets"
        )
    if not llm_configured:
        missing.append(
            "no LLM API key (OPENROUTER_API_KEY or llm.api_key): classify and score use "
            "heuristics, and test generation and the environment-setup agent are off"
        )
    return missing


def repo_cache(settings: Settings) -> RepoCache:
    """The clones of the repositories, cloned through the settings' git URL template."""
    return RepoCache(
        settings.extract.repos_dir or settings.worker.data_dir / "repos",
        settings.github.git_url_template,
    )


def recipe_table(settings: Settings) -> RecipeTable:
    """The worker's local recipe memory (``<worker.data_dir>/recipes.sqlite``)."""
    return RecipeTable(settings.worker.data_dir / "recipes.sqlite")


def make_validator(
    settings: Settings, repos: RepoCache | None = None, memory: RecipeTable | None = None
) -> Validator:
    """The evaluation engine as the settings configure it (one Docker client, one clone cache,
    one image cache for every stage and command that validates or evaluates); ``memory``:
    the remembered recipes it tries first (when ``validation.recipe_memory`` is on)."""
    return Validator(
        repos or repo_cache(settings),
        docker_from_env,
        settings.docker,
        settings.validation,
        settings.pipeline_version,
        load_overrides(settings.validation.overrides_file),
        memory if settings.validation.recipe_memory else None,
    )


def pushing_validator(settings: Settings, repos: RepoCache) -> Validator:
    """The engine the export stage pushes images with: the pipeline's settings at the kept
    cache level (``publish.push_task_image`` says why), sharing its clones."""
    kept = settings.model_copy(
        update={"docker": settings.docker.model_copy(update={"cache_level": KEPT_LEVEL})}
    )
    return make_validator(kept, repos)


def select_stages(stages: list[Stage[Any]], names: list[str]) -> list[Stage[Any]]:
    """The stages named (all when ``names`` is empty); an unknown name is an error."""
    if not names:
        return stages
    known = {stage.name for stage in stages}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; the pipeline has {sorted(known)}")
    return [stage for stage in stages if stage.name in names]
