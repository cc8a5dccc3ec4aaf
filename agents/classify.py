"""Stage ``classify``: ``pr.enriched`` -> ``pr.classified``.

A cheap pre-classification (title, body, file stats: about a hundred tokens) into easy /
medium / hard with a score in swe-forge's bands, so that ``classify.difficulties`` (and the
``classify.min_score`` / ``max_score`` thresholds) drop the unwanted PRs before any expensive
stage (counted, written to the ledger as ``rejected``).

Two backends, chosen explicitly by ``classify.backend``:

- ``llm``: one function call (``classify_difficulty``) validated against ``DifficultyVerdict``;
  a reply outside the band of its own label is re-asked like any invalid reply;
- ``heuristic``: no LLM; a deterministic score from lines, files, directories and modules
  touched and the test-to-code ratio.

``auto`` uses the LLM when ``llm.api_key`` is set and the heuristic otherwise, and says so in
the log. Every record names its backend in ``classified_by``. An LLM failure is a failure (DLQ
and ledger), never a silent switch to the heuristic.
"""

from __future__ import annotations

import math
import posixpath
from typing import Protocol

from pydantic import BaseModel, Field, model_validator

from agents.backends import HEURISTIC, choose_backend
from agents.paths import file_kind, inline_test_lines
from agents.prompts import CLASSIFY_SYSTEM, CLASSIFY_USER, clip, render
from schemas import ChangedFile, ClassifiedPullRequest, EnrichedPullRequest
from schemas.pull_requests import Difficulty
from streams.clients.llm import LLMClient, Tool
from streams.core.settings import ClassifySettings
from streams.kafka.topics import CLASSIFIED, ENRICHED
from streams.pipeline.stage import Outcome, Stage

STAGE = "classify"

# swe-forge's score bands per difficulty
BANDS: dict[str, tuple[float, float]] = {
    "easy": (0.1, 0.35),
    "medium": (0.4, 0.65),
    "hard": (0.7, 1.0),
}


class DifficultyVerdict(BaseModel):
    """The arguments of the ``classify_difficulty`` tool."""

    classification: Difficulty
    score: float = Field(ge=0.0, le=1.0, description="within the band of the classification")
    reasoning: str = Field(min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _score_in_band(self) -> DifficultyVerdict:
        low, high = BANDS[self.classification]
        if not low <= self.score <= high:
            raise ValueError(
                f"score {self.score} is outside the {self.classification} band {low}-{high}"
            )
        return self


CLASSIFY_TOOL = Tool(
    "classify_difficulty",
    "Record the difficulty of reproducing the pull request as a benchmark task.",
    DifficultyVerdict,
)


class Classifier(Protocol):
    name: str  # recorded as classified_by

    async def classify(self, pr: EnrichedPullRequest) -> DifficultyVerdict: ...


# the heuristic ----------------------------------------------------------------------------


def band_score(complexity: float) -> tuple[Difficulty, float]:
    """Map a complexity in [0, 1] to a label and a score inside that label's band."""
    complexity = min(1.0, max(0.0, complexity))
    thirds: list[tuple[Difficulty, float, float]] = [
        ("easy", 0.0, 1 / 3),
        ("medium", 1 / 3, 2 / 3),
        ("hard", 2 / 3, 1.0),
    ]
    for label, start, end in thirds:
        if complexity < end or label == "hard":
            low, high = BANDS[label]
            position = (complexity - start) / (end - start)
            return label, round(low + (high - low) * min(1.0, position), 3)
    raise AssertionError("unreachable")


def heuristic_difficulty(pr: EnrichedPullRequest) -> DifficultyVerdict:
    """Deterministic: the same PR always gets the same label, score and reasoning."""
    source = [f for f in pr.files if file_kind(f.filename) == "source"]
    tests = [f for f in pr.files if file_kind(f.filename) == "test"]
    # the lines of hunks touching tests inside source files (Rust's #[cfg(test)] modules)
    # are test lines: such a PR is as well tested as one with a test file
    inline = sum(min(f.additions + f.deletions, _inline(f)) for f in source)
    source_lines = sum(f.additions + f.deletions for f in source) - inline
    test_lines = sum(f.additions + f.deletions for f in tests) + inline
    lines = source_lines or pr.additions + pr.deletions
    directories = {posixpath.dirname(f.filename) for f in source} or {""}
    modules = {f.filename.split("/", 1)[0] if "/" in f.filename else "" for f in source} or {""}
    ratio = test_lines / source_lines if source_lines else 0.0
    complexity = (
        0.40 * min(1.0, math.log1p(lines) / math.log1p(1000))
        + 0.25 * min(1.0, max(0, len(source) - 1) / 9)
        + 0.15 * min(1.0, (len(directories) - 1) / 5)
        + 0.10 * min(1.0, (len(modules) - 1) / 3)
        + 0.10 * (1.0 - min(1.0, ratio))  # well-tested changes are easier to reproduce
    )
    label, score = band_score(complexity)
    reasoning = (
        f"{lines} changed lines in {len(source)} source files across {len(directories)} "
        f"directories and {len(modules)} top-level modules; test/code line ratio {ratio:.2f}"
    )
    return DifficultyVerdict(classification=label, score=score, reasoning=reasoning)


def _inline(file: ChangedFile) -> int:
    """The changed lines of a file's patch touching tests inside it (``inline_test_lines``)."""
    return inline_test_lines(file.filename, file.patch)


def count_test_files(pr: EnrichedPullRequest) -> int:
    """The PR's test files, counting a source file whose patch touches tests inside it."""
    return sum(1 for f in pr.files if file_kind(f.filename) == "test" or _inline(f))


class HeuristicClassifier:
    name = HEURISTIC

    async def classify(self, pr: EnrichedPullRequest) -> DifficultyVerdict:
        return heuristic_difficulty(pr)


# the LLM ----------------------------------------------------------------------------------


def classify_messages(pr: EnrichedPullRequest) -> list[dict[str, str]]:
    kinds = [file_kind(f.filename) for f in pr.files]
    system = render(
        CLASSIFY_SYSTEM,
        tool=CLASSIFY_TOOL.name,
        easy="0.1-0.35",
        medium="0.4-0.65",
        hard="0.7-1.0",
    )
    user = render(
        CLASSIFY_USER,
        repo=pr.repo,
        language=pr.repo_info.language or "unknown language",
        title=clip(pr.title, 200),
        changed_files=pr.changed_files,
        additions=pr.additions,
        deletions=pr.deletions,
        source_files=kinds.count("source"),
        test_files=count_test_files(pr),
        body=clip(pr.problem_statement or pr.body, 400),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class LLMClassifier:
    def __init__(self, llm: LLMClient):
        self.llm = llm
        self.name = f"llm:{llm.settings.model}"

    async def classify(self, pr: EnrichedPullRequest) -> DifficultyVerdict:
        result = await self.llm.call_tool(
            CLASSIFY_TOOL, classify_messages(pr), purpose=STAGE, max_tokens=300
        )
        return result.arguments


def make_classifier(backend: str, llm: LLMClient) -> Classifier:
    if choose_backend(backend, llm, STAGE) == "llm":
        return LLMClassifier(llm)
    return HeuristicClassifier()


# the stage --------------------------------------------------------------------------------


class Classify:
    def __init__(
        self,
        classifier: Classifier,
        difficulties: list[str],
        pipeline_version: int,
        score_range: tuple[float, float] = (0.0, 1.0),
    ):
        self.classifier = classifier
        self.difficulties = frozenset(difficulties)
        self.pipeline_version = pipeline_version
        self.min_score, self.max_score = score_range

    async def __call__(self, pr: EnrichedPullRequest) -> Outcome:
        verdict = await self.classifier.classify(pr)
        if self.difficulties and verdict.classification not in self.difficulties:
            return Outcome.reject(f"difficulty_{verdict.classification}")
        if verdict.score < self.min_score:
            return Outcome.reject("score_below_min")
        if verdict.score > self.max_score:
            return Outcome.reject("score_above_max")
        return Outcome.accept(
            ClassifiedPullRequest(
                pipeline_version=self.pipeline_version,
                repo=pr.repo,
                number=pr.number,
                pull_request=pr,
                classification=verdict.classification,
                score=verdict.score,
                reasoning=verdict.reasoning,
                classified_by=self.classifier.name,
            )
        )


def classify_stage(
    settings: ClassifySettings, llm: LLMClient, pipeline_version: int
) -> Stage[EnrichedPullRequest]:
    classifier = make_classifier(settings.backend, llm)
    llm_backed = isinstance(classifier, LLMClassifier)
    concurrency = llm.settings.concurrency.get(STAGE, 1) if llm_backed else 1
    handler = Classify(
        classifier,
        settings.difficulties,
        pipeline_version,
        score_range=(settings.min_score, settings.max_score),
    )
    # screening: its rejections, before any test ran, are DEBUG lines like enrich's
    return Stage(STAGE, ENRICHED, CLASSIFIED, handler, concurrency=concurrency, screening=True)
