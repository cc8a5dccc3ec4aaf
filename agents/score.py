"""Stage ``score`` (the quality gate): ``tasks.validated`` -> ``tasks.scored``.

Judges a validated task as a whole (problem statement, gold patch, validated tests) and
gives ``{classification, score, reasoning}``; a task below ``score.min_quality`` is still
written to ``tasks.scored`` with ``accepted: false`` (so the decision is on the record) and
is ``rejected`` in the ledger, which stops every later stage from working on it.

Backends as in classify: ``llm`` (the ``score_task`` tool, validated by ``QualityVerdict``)
or ``heuristic`` (problem statement length and specificity, FAIL_TO_PASS count, patch size);
``auto`` picks the LLM when a key is configured and says so otherwise.
"""

from __future__ import annotations

import math
import re
from typing import Protocol

from pydantic import BaseModel, Field

from agents.backends import HEURISTIC, choose_backend
from agents.prompts import SCORE_SYSTEM, SCORE_USER, clip, render
from schemas import ScoredTask, ValidatedTask
from schemas.pull_requests import Difficulty
from streams.clients.llm import LLMClient, Tool
from streams.core.settings import ScoreSettings
from streams.kafka.topics import SCORED, VALIDATED
from streams.pipeline.stage import Outcome, Stage

STAGE = "score"
BELOW_THRESHOLD = "quality_below_threshold"


class QualityVerdict(BaseModel):
    """The arguments of the ``score_task`` tool."""

    classification: Difficulty
    score: float = Field(ge=0.0, le=1.0, description="task quality, 0 unusable .. 1 excellent")
    reasoning: str = Field(min_length=1, max_length=3000)


SCORE_TOOL = Tool(
    "score_task",
    "Record the quality of the benchmark task and its difficulty.",
    QualityVerdict,
)


class Scorer(Protocol):
    name: str

    async def score(self, task: ValidatedTask) -> QualityVerdict: ...


# the heuristic ----------------------------------------------------------------------------

# what makes a problem statement specific: code, paths, calls, errors, versions
_SPECIFIC = [
    re.compile(r"`[^`\n]+`|^```", re.MULTILINE),
    re.compile(r"\b[\w./-]+\.(py|js|ts|go|rs|java|rb|c|cpp|h|php|cs)\b"),
    re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\("),
    re.compile(r"Traceback|Error\b|Exception\b|panic|assert", re.IGNORECASE),
    re.compile(r"\b(expected|actual|instead|should)\b", re.IGNORECASE),
    re.compile(r"\b\d+\.\d+(\.\d+)?\b"),
]


def changed_lines(diff: str) -> int:
    """Added plus removed lines of a unified diff (file headers excluded)."""
    return sum(
        1
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    )


def heuristic_quality(task: ValidatedTask) -> QualityVerdict:
    """Deterministic quality from the statement, the tests and the patch."""
    statement = task.problem_statement
    words = len(statement.split())
    length = min(1.0, math.log1p(words) / math.log1p(150))
    specific = sum(1 for pattern in _SPECIFIC if pattern.search(statement)) / len(_SPECIFIC)
    f2p = len(task.FAIL_TO_PASS)
    tests = 0.6 if f2p == 1 else 1.0 if f2p <= 20 else 0.5  # one test is thin, hundreds vague
    lines = changed_lines(task.patch)
    size = 1.0 if lines <= 200 else max(0.3, 1.0 - (lines - 200) / 1600)
    score = round(0.3 * length + 0.3 * specific + 0.2 * tests + 0.2 * size, 3)
    reasoning = (
        f"statement {words} words, specificity {specific:.2f}; {f2p} FAIL_TO_PASS and "
        f"{len(task.PASS_TO_PASS)} PASS_TO_PASS tests; gold patch {lines} changed lines"
    )
    return QualityVerdict(classification=task.classification, score=score, reasoning=reasoning)


class HeuristicScorer:
    name = HEURISTIC

    async def score(self, task: ValidatedTask) -> QualityVerdict:
        return heuristic_quality(task)


# the LLM ----------------------------------------------------------------------------------


def score_messages(task: ValidatedTask) -> list[dict[str, str]]:
    system = render(SCORE_SYSTEM, tool=SCORE_TOOL.name)
    user = render(
        SCORE_USER,
        repo=task.repo,
        problem_statement=clip(task.problem_statement, 6000),
        patch=clip(task.patch, 12000),
        test_patch=clip(task.test_patch, 8000),
        f2p_count=len(task.FAIL_TO_PASS),
        fail_to_pass=", ".join(task.FAIL_TO_PASS[:20]),
        p2p_count=len(task.PASS_TO_PASS),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class LLMScorer:
    def __init__(self, llm: LLMClient):
        self.llm = llm
        self.name = f"llm:{llm.settings.model}"

    async def score(self, task: ValidatedTask) -> QualityVerdict:
        result = await self.llm.call_tool(
            SCORE_TOOL, score_messages(task), purpose=STAGE, max_tokens=600
        )
        return result.arguments


def make_scorer(backend: str, llm: LLMClient) -> Scorer:
    if choose_backend(backend, llm, STAGE) == "llm":
        return LLMScorer(llm)
    return HeuristicScorer()


# the stage --------------------------------------------------------------------------------


class Score:
    def __init__(self, scorer: Scorer, min_quality: float, pipeline_version: int):
        self.scorer = scorer
        self.min_quality = min_quality
        self.pipeline_version = pipeline_version

    async def __call__(self, task: ValidatedTask) -> Outcome:
        verdict = await self.scorer.score(task)
        accepted = verdict.score >= self.min_quality
        scored = ScoredTask.model_validate(
            {
                **task.model_dump(),
                "pipeline_version": self.pipeline_version,
                "classification": verdict.classification,
                "quality_score": verdict.score,
                "quality_reasoning": f"[{self.scorer.name}] {verdict.reasoning}",
                "accepted": accepted,
            }
        )
        if not accepted:
            return Outcome((scored,), "rejected", BELOW_THRESHOLD)
        return Outcome.accept(scored)


def score_stage(
    settings: ScoreSettings, llm: LLMClient, pipeline_version: int
) -> Stage[ValidatedTask]:
    scorer = make_scorer(settings.backend, llm)
    concurrency = llm.settings.concurrency.get(STAGE, 1) if isinstance(scorer, LLMScorer) else 1
    handler = Score(scorer, settings.min_quality, pipeline_version)
    return Stage(STAGE, VALIDATED, SCORED, handler, concurrency=concurrency)
