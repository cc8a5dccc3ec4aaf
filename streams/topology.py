"""The stream graph in one place: which stage reads which topic and writes which.

    GH Archive hours -ingest-> gharchive.pull-request-events -prefilter-> pr.candidates
      -enrich-> pr.enriched -classify-> pr.classified -extract-> pr.patches
      -validate (+ agentic testgen)-> tasks.validated -score-> tasks.scored
      -export-> tasks.exported (+ task dirs, dataset.jsonl) -harness-> harness.results
    every stage -> swe.ledger (compacted; the processed-PR ledger)
    every stage -> <its input topic>.dlq (records it could not handle, with the error)

Each stage lives in its own module in ``agents/`` and is listed in ``pipeline_stages``; the
topics come from ``streams.topics``. Ingest is a producer, not a Faust agent (it reads GH
Archive, not Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from streams.ledger import Ledger
from streams.settings import Settings
from streams.stage import Stage

Table = MutableMapping[bytes, bytes]


@dataclass
class StageResources:
    """What stages share in one worker: the ledger and named key/value tables (Faust tables,
    recovered from their changelogs; plain dicts in tests)."""

    ledger: Ledger
    table: Callable[[str], Table]


def pipeline_stages(settings: Settings, resources: StageResources) -> list[Stage[Any]]:
    """The stages a worker runs, in graph order. Stages register here as they are built."""
    # imported here: agents depend on streams, never the other way round at import time
    from agents.classify import classify_stage
    from agents.enrich import RepositoryCache, enrich_stage
    from agents.export import export_stage
    from agents.extract import extract_stage
    from agents.harness import harness_stages
    from agents.prefilter import prefilter_stage
    from agents.score import score_stage
    from agents.testgen import make_test_generator
    from agents.validate import Validator, docker_from_env, validate_stage
    from streams.git import RepoCache
    from streams.github import GitHubClient
    from streams.llm import LLMClient
    from streams.sandbox import Limits

    github = GitHubClient(settings.github)
    llm = LLMClient(settings.llm)
    repos = RepoCache(
        settings.extract.repos_dir or settings.worker.data_dir / "repos",
        settings.github.git_url_template,
    )
    repositories = RepositoryCache(
        resources.table("github-repositories"), github, settings.github.repo_cache_ttl_seconds
    )
    limits = Limits.from_settings(settings.docker)
    validator = Validator(
        repos,
        docker_from_env,
        settings.docker,
        settings.validation,
        settings.pipeline_version,
        testgen=make_test_generator(settings.testgen, llm, limits),
    )
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
        validate_stage(validator),
        score_stage(settings.score, llm, settings.pipeline_version),
        export_stage(settings.export_dir, settings.pipeline_version),
        *harness_stages(
            settings.harness,
            settings.harness.tasks_dir or settings.export_dir,
            validator,
            limits,
            settings.pipeline_version,
        ),
    ]
    return select_stages(stages, settings.worker.stages)


def select_stages(stages: list[Stage[Any]], names: list[str]) -> list[Stage[Any]]:
    """The stages named (all when ``names`` is empty); an unknown name is an error."""
    if not names:
        return stages
    known = {stage.name for stage in stages}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; the pipeline has {sorted(known)}")
    return [stage for stage in stages if stage.name in names]
