"""The LLM client: any OpenAI-compatible chat-completions endpoint (OpenRouter by default).

Every structured output is a function call: the request carries one tool whose parameters are
the JSON Schema of a pydantic model, and ``tool_choice: "required"``. The reply's arguments
are validated with that model. A reply without a tool call, with malformed JSON or with
arguments that fail validation is answered with the error and asked again (at most
``llm.max_output_attempts`` replies), then reported as ``LLMOutputError``.

HTTP: 429, 5xx, timeouts, dropped connections and 200s that are not JSON are retried with
jittered backoff (``streams.clients.retry``; ``Retry-After``, seconds or an HTTP date, obeyed
up to ``llm.max_retry_after_seconds``), each retry counted by reason
(``swe_stream_llm_retries_total``); other 4xx are final (``LLMRequestError``). Tokens and cost
(``usage``) are counted per model and purpose; each purpose (classify, score, testgen, ...) has
its own concurrency bound.

The API key is sent only in the ``Authorization`` header and never logged.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
import orjson
from pydantic import BaseModel, ValidationError

from streams.clients.retry import backoff_delay, retry_after
from streams.core import metrics
from streams.core.errors import LLM, DependencyError, ServiceUnavailable
from streams.core.settings import LLMSettings

log = logging.getLogger("swe_stream.llm")

Args = TypeVar("Args", bound=BaseModel)


class LLMError(DependencyError):
    """The LLM could not give a usable answer."""


class LLMRequestError(LLMError):
    """The endpoint refused the request (4xx other than 429), or kept failing (5xx, timeouts)."""


class LLMUnreachable(LLMRequestError, ServiceUnavailable):
    """Every attempt ended without an answer: the endpoint refuses connections or cannot be
    reached. Not a verdict on the request: the stage waits for the endpoint."""

    def __init__(self, message: str):
        LLMRequestError.__init__(self, message)
        self.service = LLM


class LLMOutputError(LLMError):
    """Every reply lacked a valid tool call; ``errors`` says what was wrong with each."""

    def __init__(self, message: str, errors: list[str]):
        super().__init__(message)
        self.errors = errors


@dataclass(frozen=True)
class Tool(Generic[Args]):
    """A function the model must call; its arguments are an ``Args`` model."""

    name: str
    description: str
    arguments: type[Args]

    def schema(self) -> dict[str, Any]:
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


@dataclass
class ToolCallResult(Generic[Args]):
    """Validated arguments, plus what it took to get them."""

    arguments: Args
    model: str
    attempts: int
    prompt_tokens: int
    completion_tokens: int


@dataclass
class ChatTurn:
    """One reply: the assistant message (None when missing, see ``problem``) and its usage."""

    message: dict[str, Any] | None
    problem: str
    prompt_tokens: int
    completion_tokens: int

    @property
    def calls(self) -> list[dict[str, Any]]:
        calls = (self.message or {}).get("tool_calls") or []
        return [c for c in calls if isinstance(c, dict)]


def call_name(call: dict[str, Any]) -> str:
    return str(_function(call).get("name") or "")


def call_arguments(call: dict[str, Any], model: type[Args]) -> Args:
    """A tool call's arguments validated by ``model`` (ValidationError if they do not fit)."""
    raw = _function(call).get("arguments")
    if isinstance(raw, dict):
        return model.model_validate(raw)
    return model.model_validate_json(raw or "")


def echo_call(call: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A well-formed copy of a call for the conversation: an id and string arguments."""
    raw = _function(call).get("arguments")
    return {
        "id": call_id,
        "type": "function",
        "function": {
            "name": call_name(call),
            "arguments": raw if isinstance(raw, str) else orjson.dumps(raw).decode(),
        },
    }


def describe_error(exc: ValidationError) -> str:
    """A short, model-readable account of what failed validation."""
    return _describe(exc)


class LLMClient:
    """One per worker; ``await aclose()`` at the end."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ):
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._http: httpx.AsyncClient | None = None

    @property
    def configured(self) -> bool:
        """True when an API key is set (the endpoint may still refuse it)."""
        return self.settings.api_key is not None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            headers = {"Content-Type": "application/json", "User-Agent": "swe-stream"}
            if self.settings.api_key is not None:
                headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.settings.timeout_seconds), headers=headers
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _semaphore(self, purpose: str) -> asyncio.Semaphore:
        if purpose not in self._semaphores:
            limit = self.settings.concurrency.get(purpose, self.settings.default_concurrency)
            self._semaphores[purpose] = asyncio.Semaphore(limit)
        return self._semaphores[purpose]

    async def call_tool(
        self,
        tool: Tool[Args],
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        max_tokens: int | None = None,
    ) -> ToolCallResult[Args]:
        """Ask until the model calls ``tool`` with valid arguments (bounded attempts)."""
        model = self.settings.model
        conversation = list(messages)
        errors: list[str] = []
        prompt_tokens = completion_tokens = 0
        for attempt in range(1, self.settings.max_output_attempts + 1):
            turn = await self.chat(conversation, [tool], purpose=purpose, max_tokens=max_tokens)
            prompt_tokens += turn.prompt_tokens
            completion_tokens += turn.completion_tokens
            message, problem = turn.message, turn.problem
            if message is None:
                errors.append(problem)
                metrics.LLM_INVALID_OUTPUTS.labels(purpose=purpose, reason="no_message").inc()
                continue
            calls = message.get("tool_calls") or []
            call = next((c for c in calls if _function(c).get("name") == tool.name), None)
            if call is None:
                error = f"no call of the tool {tool.name!r}"
                metrics.LLM_INVALID_OUTPUTS.labels(purpose=purpose, reason="no_tool_call").inc()
                errors.append(error)
                conversation += [
                    {"role": "assistant", "content": message.get("content") or "(no answer)"},
                    {
                        "role": "user",
                        "content": f"You must answer by calling the tool `{tool.name}`.",
                    },
                ]
                continue
            try:
                arguments = call_arguments(call, tool.arguments)
            except ValidationError as exc:
                reason = "malformed_json" if _is_json_error(exc) else "invalid_arguments"
                metrics.LLM_INVALID_OUTPUTS.labels(purpose=purpose, reason=reason).inc()
                error = _describe(exc)
                errors.append(error)
                call_id = str(call.get("id") or f"call_{attempt}")
                echoed = echo_call(call, call_id)
                conversation += [
                    {"role": "assistant", "content": None, "tool_calls": [echoed]},
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": f"Invalid arguments: {error}. Call `{tool.name}` again "
                        "with arguments that match its schema.",
                    },
                ]
                continue
            return ToolCallResult(arguments, model, attempt, prompt_tokens, completion_tokens)
        raise LLMOutputError(
            f"{purpose}: no valid `{tool.name}` call in {len(errors)} replies: {errors[-1]}",
            errors,
        )

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[Tool[Any]],
        *,
        purpose: str,
        max_tokens: int | None = None,
    ) -> ChatTurn:
        """One request: the model must call one of ``tools``; the caller reads the calls."""
        model = self.settings.model
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "tools": [tool.schema() for tool in tools],
            "tool_choice": "required",
            "temperature": self.settings.temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        async with self._semaphore(purpose):
            reply = await self._post(body, purpose)
        prompt, completion = self._count_usage(reply, model, purpose)
        message, problem = _first_message(reply)
        return ChatTurn(message, problem, prompt, completion)

    async def _post(self, body: dict[str, Any], purpose: str) -> dict[str, Any]:
        model = str(body["model"])
        failures = 0

        async def retry(reason: str, error: str, hint: float | None = None) -> int:
            return await self._backoff(failures, hint, error, model, purpose, reason)

        while True:
            try:
                response = await self.http.post(self.url, content=orjson.dumps(body))
            # DecodingError: a body whose gzip is cut or corrupt, as a dropped connection leaves it
            except (httpx.TransportError, httpx.DecodingError) as exc:
                timeout = isinstance(exc, httpx.TimeoutException)
                metrics.LLM_REQUESTS.labels(
                    model=model, purpose=purpose, status="timeout" if timeout else "error"
                ).inc()
                try:
                    if timeout:
                        failures = await retry("timeout", f"timeout: {exc}")
                    else:
                        failures = await retry("connection", f"{type(exc).__name__}: {exc}")
                except LLMRequestError as exhausted:
                    # no attempt reached the endpoint at all: an outage, not an answer
                    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                        raise LLMUnreachable(str(exhausted)) from exc
                    raise
                continue
            status = response.status_code
            metrics.LLM_REQUESTS.labels(model=model, purpose=purpose, status=str(status)).inc()
            if status == 200:
                try:
                    data = orjson.loads(response.content)
                except orjson.JSONDecodeError:
                    failures = await retry("malformed_json", "reply is not JSON")
                    continue
                if isinstance(data, dict) and "error" in data and "choices" not in data:
                    # OpenRouter reports upstream failures as 200 + {"error": ...}
                    failures = await retry("error_in_reply", f"error: {data['error']}")
                    continue
                return data if isinstance(data, dict) else {}
            if status == 429 or status >= 500:
                failures = await retry(
                    f"http_{status}",
                    f"HTTP {status}: {response.text[:200]}",
                    retry_after(response.headers.get("retry-after")),
                )
                continue
            raise LLMRequestError(f"{self.url}: HTTP {status}: {response.text[:300]}")

    async def _backoff(
        self,
        failures: int,
        hint: float | None,
        error: str,
        model: str,
        purpose: str,
        reason: str,
    ) -> int:
        failures += 1
        if failures >= self.settings.max_attempts:
            raise LLMRequestError(f"{self.url}: {error} (after {failures} attempts)")
        metrics.LLM_RETRIES.labels(model=model, purpose=purpose, reason=reason).inc()
        # Retry-After is obeyed (it may exceed the backoff cap), but a huge one must not hold a
        # concurrency slot for hours: max_retry_after_seconds bounds it
        delay = backoff_delay(
            failures,
            self.settings.backoff_seconds,
            self.settings.max_backoff_seconds,
            self._rng,
            hint=hint,
            hint_cap=self.settings.max_retry_after_seconds,
        )
        log.info("LLM request failed (%s); retry %d in %.2f s", error, failures, delay)
        await self._sleep(delay)
        return failures

    def _count_usage(self, reply: dict[str, Any], model: str, purpose: str) -> tuple[int, int]:
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        metrics.LLM_TOKENS.labels(model=model, purpose=purpose, kind="prompt").inc(prompt)
        metrics.LLM_TOKENS.labels(model=model, purpose=purpose, kind="completion").inc(completion)
        cost = usage.get("cost")
        if isinstance(cost, int | float) and cost > 0:
            metrics.LLM_COST.labels(model=model, purpose=purpose).inc(float(cost))
        return prompt, completion


def _first_message(reply: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, "the reply has no choices"
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None, "the reply's first choice has no message"
    return message, ""


def _function(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    return function if isinstance(function, dict) else {}


def _is_json_error(exc: ValidationError) -> bool:
    return any(error.get("type") == "json_invalid" for error in exc.errors())


def _describe(exc: ValidationError) -> str:
    """A short, model-readable account of what failed validation."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)
