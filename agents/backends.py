"""The choice of backend that classify and score share: the LLM when one is configured (or
asked for), else the heuristic; ``auto`` says (at DEBUG) when it falls back to the heuristic."""

from __future__ import annotations

import logging

from streams.clients.llm import LLMClient

log = logging.getLogger("swe_stream.backends")

HEURISTIC = "heuristic"


def choose_backend(backend: str, llm: LLMClient, stage: str) -> str:
    """``llm`` or ``heuristic`` for a stage's ``backend`` setting; ``auto`` announces which
    (classify and score choose the same way)."""
    if backend == "llm" or (backend == "auto" and llm.configured):
        return "llm"
    if backend == "auto":  # the worker says once at start that there is no key
        log.debug(
            "%s: no LLM API key configured (llm.api_key / OPENROUTER_API_KEY): using the "
            "heuristic backend; records say it was %s",
            stage,
            HEURISTIC,
        )
    return HEURISTIC
