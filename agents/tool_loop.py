"""The multi-turn function-calling loop the in-sandbox agents share (test generation, setup).

The model is asked with the conversation and the tools; each tool call is answered by the
agent's ``answer`` (the text the model reads back, and a result once one is accepted); a reply
without a call is asked again to use a tool. Turns, tokens and wall time are budgets: running
out raises ``BudgetExhausted`` with which one and how much was spent. Old tool results are
elided to keep the conversation under its size (``fit_context``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from streams.clients.llm import LLMClient, Tool, echo_call
from streams.evaluation.sandbox import ExecResult

Result = TypeVar("Result")
Answer = Callable[[dict[str, Any], float], Awaitable[tuple[str, "Result | None"]]]
ELIDED = "[output elided to keep the conversation short; run the command again if needed]"


class ShellArgs(BaseModel):
    command: str = Field(min_length=1, description="a bash command, run in /testbed")
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="at most the configured per-command timeout"
    )


def shell_result(result: ExecResult, timeout: float) -> str:
    """What the model reads back from ``shell`` (JSON)."""
    return json.dumps(
        {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "note": f"killed after {timeout:.0f} s (timeout)" if result.timed_out else "",
            "stdout": result.stdout,
            "stderr": result.stderr,
        }
    )


def fit_context(messages: list[dict[str, Any]], max_chars: int) -> None:
    """Keep the conversation under ``max_chars`` by eliding the oldest tool results (the
    system and task messages and the calls themselves stay, so the pairing stays valid)."""
    total = sum(len(str(m.get("content") or "")) for m in messages)
    for message in messages:
        if total <= max_chars:
            return
        if message["role"] == "tool" and message["content"] != ELIDED:
            total -= len(message["content"]) - len(ELIDED)
            message["content"] = ELIDED


@dataclass(frozen=True)
class Budget:
    """What one conversation may spend."""

    max_turns: int
    max_tokens: int
    max_seconds: float
    reply_max_tokens: int
    max_context_chars: int


class BudgetExhausted(Exception):
    """A budget ran out: ``limit`` is turn_limit, token_limit or time_limit."""

    def __init__(self, limit: str, detail: str, turns: int, tokens: int):
        super().__init__(f"{limit}: {detail}")
        self.limit = limit
        self.detail = detail
        self.turns = turns
        self.tokens = tokens


@dataclass
class Accepted(Generic[Result]):
    result: Result
    turns: int
    tokens: int


async def tool_loop(
    llm: LLMClient,
    messages: list[dict[str, Any]],
    tools: list[Tool[Any]],
    answer: Callable[[dict[str, Any], float], Awaitable[tuple[str, Result | None]]],
    budget: Budget,
    purpose: str,
) -> Accepted[Result]:
    """Converse until ``answer`` accepts a call (``answer(call, deadline)`` -> the tool
    result text, and the result once accepted); BudgetExhausted when a budget runs out."""
    deadline = time.monotonic() + budget.max_seconds
    tokens = 0
    names = " or ".join(f"`{tool.name}`" for tool in tools)
    for turn_no in range(1, budget.max_turns + 1):
        if time.monotonic() >= deadline:
            raise BudgetExhausted("time_limit", f"{budget.max_seconds:.0f} s", turn_no - 1, tokens)
        if tokens >= budget.max_tokens:
            raise BudgetExhausted("token_limit", f"{tokens} tokens", turn_no - 1, tokens)
        fit_context(messages, budget.max_context_chars)
        turn = await llm.chat(messages, tools, purpose=purpose, max_tokens=budget.reply_max_tokens)
        tokens += turn.prompt_tokens + turn.completion_tokens
        if not turn.calls:
            messages += [
                {"role": "assistant", "content": (turn.message or {}).get("content") or "…"},
                {"role": "user", "content": f"Use {names}."},
            ]
            continue
        ids = [str(c.get("id") or f"call_{turn_no}_{i}") for i, c in enumerate(turn.calls)]
        messages.append(
            {
                "role": "assistant",
                "content": (turn.message or {}).get("content"),
                "tool_calls": [echo_call(c, i) for c, i in zip(turn.calls, ids, strict=True)],
            }
        )
        for call, call_id in zip(turn.calls, ids, strict=True):
            text, result = await answer(call, deadline)
            if result is not None:
                return Accepted(result, turn_no, tokens)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
    raise BudgetExhausted(
        "turn_limit", f"nothing accepted in {budget.max_turns} turns", budget.max_turns, tokens
    )
