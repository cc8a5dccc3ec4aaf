"""The LLM client against a real HTTP server on 127.0.0.1 speaking OpenAI chat completions."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any, Literal

import pytest
from prometheus_client import REGISTRY, generate_latest
from pydantic import BaseModel, Field, SecretStr

from streams.clients.llm import LLMClient, LLMOutputError, LLMRequestError, Tool
from streams.core.settings import LLMSettings
from tests.fakes.llm_server import FakeLLM, SeenRequest, status_reply, tool_call_reply

pytestmark = pytest.mark.integration

KEY = "sk-or-test-0123456789abcdef0123456789abcdef-secret"
MODEL = "test-vendor/test-model:nitro"


class Verdict(BaseModel):
    """How hard the task is, and how sure."""

    classification: Literal["easy", "medium", "hard"]
    score: float = Field(ge=0, le=1)
    reasoning: str = Field(min_length=1)


VERDICT = Tool("verdict", "Record the difficulty verdict.", Verdict)
GOOD = {"classification": "medium", "score": 0.75, "reasoning": "Touches two modules."}
OTHER = {"classification": "hard", "score": 0.25, "reasoning": "Needs a new protocol."}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You judge how hard a pull request is to reproduce."},
    {"role": "user", "content": "PR #42: fix the off-by-one in the pager."},
]


def settings_for(server: FakeLLM, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": MODEL,
        "api_key": SecretStr(KEY),
        "timeout_seconds": 1,
        "backoff_seconds": 0.05,
        "max_backoff_seconds": 0.2,
        "max_attempts": 4,
        "max_output_attempts": 3,
    }
    return LLMSettings(**(values | overrides))


@pytest.fixture
async def client(llm_server: FakeLLM) -> AsyncIterator[LLMClient]:
    llm = LLMClient(settings_for(llm_server))
    yield llm
    await llm.aclose()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def invalid_outputs(purpose: str, reason: str) -> float:
    return sample("swe_stream_llm_invalid_outputs_total", purpose=purpose, reason=reason)


def requests_total(purpose: str, status: str) -> float:
    return sample("swe_stream_llm_requests_total", model=MODEL, purpose=purpose, status=status)


def tokens(purpose: str, kind: str) -> float:
    return sample("swe_stream_llm_tokens_total", model=MODEL, purpose=purpose, kind=kind)


def cost(purpose: str) -> float:
    return sample("swe_stream_llm_cost_usd_total", model=MODEL, purpose=purpose)


def assert_well_formed(request: SeenRequest) -> None:
    """What every request must carry: the one tool, tool_choice, model, key, conversation."""
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == MODEL
    assert body["tool_choice"] == "required"
    assert body["temperature"] == 0.0
    assert body["messages"][: len(MESSAGES)] == MESSAGES
    [tool] = body["tools"]
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "verdict"
    assert function["description"] == "Record the difficulty verdict."
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert "title" not in parameters
    assert sorted(parameters["required"]) == ["classification", "reasoning", "score"]
    properties = parameters["properties"]
    assert properties["classification"]["enum"] == ["easy", "medium", "hard"]
    assert properties["score"]["type"] == "number"
    assert (properties["score"]["minimum"], properties["score"]["maximum"]) == (0, 1)
    assert properties["reasoning"] == {"minLength": 1, "title": "Reasoning", "type": "string"}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"


# -- replies the model gets right or wrong ---------------------------------------------------


async def test_a_valid_tool_call_is_validated_in_one_attempt(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-valid"
    before = (tokens(purpose, "prompt"), tokens(purpose, "completion"), cost(purpose))
    llm_server.reply_tool_call("verdict", GOOD, usage=(321, 45))

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**GOOD)
    assert result.attempts == 1
    assert result.model == MODEL
    assert (result.prompt_tokens, result.completion_tokens) == (321, 45)
    [request] = llm_server.requests
    assert_well_formed(request)
    assert request.messages == MESSAGES
    assert "max_tokens" not in request.body
    after = (tokens(purpose, "prompt"), tokens(purpose, "completion"), cost(purpose))
    assert after == (before[0] + 321, before[1] + 45, before[2])  # no usage.cost: no cost
    assert requests_total(purpose, "200") == 1


async def test_max_tokens_is_sent_when_given(client: LLMClient, llm_server: FakeLLM) -> None:
    llm_server.reply_tool_call("verdict", GOOD)
    await client.call_tool(VERDICT, MESSAGES, purpose="t-max-tokens", max_tokens=512)
    assert llm_server.requests[0].body["max_tokens"] == 512


async def test_a_text_reply_is_answered_with_a_request_for_the_tool(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-text"
    caller_messages = [dict(m) for m in MESSAGES]
    llm_server.reply_text("It looks medium to me.")
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, caller_messages, purpose=purpose)

    assert result.arguments.classification == "medium"
    assert result.attempts == 2
    first, second = llm_server.requests
    assert_well_formed(first)
    assert_well_formed(second)
    assert second.messages[: len(MESSAGES)] == MESSAGES
    assert second.messages[len(MESSAGES) :] == [
        {"role": "assistant", "content": "It looks medium to me."},
        {"role": "user", "content": "You must answer by calling the tool `verdict`."},
    ]
    assert caller_messages == MESSAGES  # the caller's list is not extended
    assert invalid_outputs(purpose, "no_tool_call") == 1


async def test_a_call_of_another_tool_counts_as_no_tool_call(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-other-tool"
    llm_server.reply_tool_call("something_else", GOOD, content="Let me look first.")
    llm_server.reply_tool_call("verdict", OTHER)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**OTHER)
    assert result.attempts == 2
    assert llm_server.requests[1].messages[-2:] == [
        {"role": "assistant", "content": "Let me look first."},
        {"role": "user", "content": "You must answer by calling the tool `verdict`."},
    ]
    assert invalid_outputs(purpose, "no_tool_call") == 1


async def test_invalid_arguments_three_times_raise_with_every_error(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-invalid"
    wrong = {"classification": "easy", "score": "very sure", "reasoning": "Small fix."}
    call_ids = [llm_server.reply_tool_call("verdict", wrong) for _ in range(3)]

    with pytest.raises(LLMOutputError) as caught:
        await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    errors = caught.value.errors
    assert len(errors) == 3
    assert all(error.startswith("score: ") and "number" in error for error in errors)
    assert "3 replies" in str(caught.value)
    assert len(llm_server.requests) == 3
    for request in llm_server.requests:
        assert_well_formed(request)
    for n, request in enumerate(llm_server.requests[1:], start=1):
        # the conversation keeps every earlier call and its error, in order
        extra = request.messages[len(MESSAGES) :]
        assert len(extra) == 2 * n
        for k in range(n):
            assistant, tool = extra[2 * k], extra[2 * k + 1]
            assert assistant["role"] == "assistant"
            assert [c["id"] for c in assistant["tool_calls"]] == [call_ids[k]]
            assert tool["role"] == "tool"
            assert tool["tool_call_id"] == call_ids[k]
            assert "score" in tool["content"] and "valid number" in tool["content"]
            assert "Call `verdict` again" in tool["content"]
    assert invalid_outputs(purpose, "invalid_arguments") == 3
    assert invalid_outputs(purpose, "malformed_json") == 0


async def test_out_of_range_and_unknown_values_name_their_fields(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    llm_server.reply_tool_call(
        "verdict", {"classification": "trivial", "score": 1.5, "reasoning": ""}
    )
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose="t-range")

    assert result.attempts == 2
    content = llm_server.requests[1].messages[-1]["content"]
    for name in ("classification", "score", "reasoning"):
        assert f"{name}: " in content


async def test_malformed_json_is_asked_again(client: LLMClient, llm_server: FakeLLM) -> None:
    purpose = "t-malformed"
    call_id = llm_server.reply_tool_call("verdict", '{"classification": "easy", "score": 0.4,')
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**GOOD)
    assert result.attempts == 2
    echoed, answer = llm_server.requests[1].messages[-2:]
    assert echoed["tool_calls"][0]["function"]["arguments"] == (
        '{"classification": "easy", "score": 0.4,'
    )
    assert answer["role"] == "tool" and answer["tool_call_id"] == call_id
    assert "Invalid JSON" in answer["content"]
    assert invalid_outputs(purpose, "malformed_json") == 1
    assert invalid_outputs(purpose, "invalid_arguments") == 0


async def test_arguments_sent_as_an_object_are_accepted(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    reply = tool_call_reply("verdict", GOOD)
    assert reply.completion is not None
    reply.completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = GOOD
    llm_server.push(reply)

    result = await client.call_tool(VERDICT, MESSAGES, purpose="t-object-args")

    assert result.arguments == Verdict(**GOOD)


async def test_a_tool_call_without_an_id_is_still_asked_again(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    reply = tool_call_reply("verdict", {**GOOD, "score": "high"})
    assert reply.completion is not None
    del reply.completion["choices"][0]["message"]["tool_calls"][0]["id"]
    llm_server.push(reply)
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose="t-no-call-id")

    assert result.attempts == 2


async def test_invalid_object_arguments_are_asked_again(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    reply = tool_call_reply("verdict", GOOD)
    assert reply.completion is not None
    function = reply.completion["choices"][0]["message"]["tool_calls"][0]["function"]
    function["arguments"] = {**GOOD, "score": "high"}
    llm_server.push(reply)
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose="t-object-args-invalid")

    assert result.attempts == 2


async def test_a_reply_without_choices_is_asked_again(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-no-choices"
    llm_server.reply_status(200, body={"id": "gen-1", "object": "chat.completion", "choices": []})
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.attempts == 2
    assert llm_server.requests[1].messages == MESSAGES
    assert invalid_outputs(purpose, "no_message") == 1


# -- HTTP failures ---------------------------------------------------------------------------


async def test_an_hour_long_retry_after_is_capped(llm_server: FakeLLM) -> None:
    llm_server.reply_status(429, headers={"Retry-After": "3600"})
    llm_server.reply_tool_call("verdict", GOOD)
    llm = LLMClient(settings_for(llm_server, max_retry_after_seconds=0.3))
    try:
        result = await llm.call_tool(VERDICT, MESSAGES, purpose="t-429-cap")
    finally:
        await llm.aclose()
    assert result.arguments == Verdict(**GOOD)
    first, second = llm_server.requests
    assert 0.25 <= second.at - first.at < 60


async def test_429_waits_for_retry_after_then_succeeds(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-429"
    llm_server.reply_status(429, headers={"Retry-After": "1"})
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**GOOD)
    assert result.attempts == 1  # HTTP retries are not output attempts
    first, second = llm_server.requests
    assert second.at - first.at >= 0.95
    assert second.body == first.body
    assert requests_total(purpose, "429") == 1
    assert requests_total(purpose, "200") == 1


async def test_500_twice_then_success(client: LLMClient, llm_server: FakeLLM) -> None:
    purpose = "t-500"
    llm_server.reply_status(500)
    llm_server.reply_status(
        502, body="<html>Bad Gateway</html>", headers={"Content-Type": "text/html"}
    )
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**GOOD)
    assert len(llm_server.requests) == 3
    assert requests_total(purpose, "500") == 1
    assert requests_total(purpose, "502") == 1
    assert requests_total(purpose, "200") == 1


async def test_an_openrouter_error_inside_a_200_is_retried(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    llm_server.reply_status(
        200, body={"error": {"message": "Upstream provider error", "code": 502}}
    )
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose="t-200-error")

    assert result.attempts == 1
    assert len(llm_server.requests) == 2


async def test_a_reply_slower_than_the_timeout_is_retried(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-timeout"
    llm_server.reply_delay(1.6)
    llm_server.reply_tool_call("verdict", OTHER)  # sent after the client gave up
    llm_server.reply_tool_call("verdict", GOOD)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.arguments == Verdict(**GOOD)
    first, second = llm_server.requests
    assert second.at - first.at >= 0.95  # the 1 s timeout, then a short backoff
    assert requests_total(purpose, "timeout") == 1
    assert requests_total(purpose, "200") == 1


async def test_400_is_final_at_once(client: LLMClient, llm_server: FakeLLM) -> None:
    purpose = "t-400"
    llm_server.reply_status(
        400,
        body={
            "error": {
                "message": "test-vendor/test-model:nitro is not a valid model ID",
                "code": 400,
            }
        },
    )
    llm_server.reply_tool_call("verdict", GOOD)  # never asked for

    with pytest.raises(LLMRequestError, match=r"HTTP 400.*not a valid model ID"):
        await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert len(llm_server.requests) == 1
    assert llm_server.pending == 1
    assert requests_total(purpose, "400") == 1


async def test_5xx_forever_gives_up_after_max_attempts(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-503"
    llm_server.default = lambda body: status_reply(503)

    with pytest.raises(LLMRequestError, match=r"HTTP 503.*after 4 attempts"):
        await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert len(llm_server.requests) == 4
    assert requests_total(purpose, "503") == 4


async def test_an_exhausted_script_answers_500(client: LLMClient, llm_server: FakeLLM) -> None:
    with pytest.raises(LLMRequestError, match="script exhausted"):
        await client.call_tool(VERDICT, MESSAGES, purpose="t-exhausted")
    assert len(llm_server.requests) == 4


# -- accounting, concurrency, secrets ---------------------------------------------------------


async def test_every_request_carries_the_tool_the_model_and_the_key(llm_server: FakeLLM) -> None:
    llm_server.reply_text("Hmm.")
    llm_server.reply_status(503)
    llm_server.reply_tool_call("verdict", "not json at all")
    llm_server.reply_tool_call("verdict", {"classification": "impossible"})
    llm_server.reply_status(429, headers={"Retry-After": "0"})
    llm_server.reply_tool_call("verdict", GOOD)

    llm = LLMClient(settings_for(llm_server, max_output_attempts=4))
    try:
        result = await llm.call_tool(VERDICT, MESSAGES, purpose="t-well-formed", max_tokens=100)
    finally:
        await llm.aclose()

    assert result.attempts == 4
    assert len(llm_server.requests) == 6
    for request in llm_server.requests:
        assert_well_formed(request)
        assert request.body["max_tokens"] == 100


async def test_tokens_and_cost_add_up_over_every_reply(
    client: LLMClient, llm_server: FakeLLM
) -> None:
    purpose = "t-usage"
    before = (tokens(purpose, "prompt"), tokens(purpose, "completion"), cost(purpose))
    llm_server.reply_text("No tool for me.", usage=(1000, 11), cost=0.00125)
    llm_server.reply_status(500)  # no usage on failures
    llm_server.reply_tool_call("verdict", {**GOOD, "score": 7}, usage=(1100, 22), cost=0.0025)
    llm_server.reply_tool_call("verdict", GOOD, usage=(1250, 33), cost=0.005)

    result = await client.call_tool(VERDICT, MESSAGES, purpose=purpose)

    assert result.attempts == 3
    assert (result.prompt_tokens, result.completion_tokens) == (3350, 66)
    assert tokens(purpose, "prompt") - before[0] == 3350
    assert tokens(purpose, "completion") - before[1] == 66
    assert cost(purpose) - before[2] == pytest.approx(0.00875)


async def test_concurrency_is_bounded_per_purpose(llm_server: FakeLLM) -> None:
    llm_server.default = lambda body: dataclasses.replace(
        tool_call_reply("verdict", GOOD), delay=0.15
    )
    llm = LLMClient(settings_for(llm_server, concurrency={"t-bounded": 2}))
    try:
        results = await asyncio.gather(
            *(llm.call_tool(VERDICT, MESSAGES, purpose="t-bounded") for _ in range(6))
        )
    finally:
        await llm.aclose()

    assert [r.arguments for r in results] == [Verdict(**GOOD)] * 6
    assert len(llm_server.requests) == 6
    assert llm_server.max_in_flight == 2


async def test_the_key_never_reaches_metrics_logs_or_errors(
    llm_server: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    purpose = "t-secret"
    llm_server.reply_status(429, headers={"Retry-After": "0"})
    llm_server.reply_status(500)
    llm_server.reply_text("Plain words.")
    llm_server.reply_tool_call("verdict", "{broken")
    llm_server.reply_tool_call("verdict", GOOD, cost=0.001)
    llm_server.reply_status(401, body={"error": {"message": "No auth credentials found"}})
    settings = settings_for(llm_server)
    llm = LLMClient(settings)
    try:
        await llm.call_tool(VERDICT, MESSAGES, purpose=purpose)
        with pytest.raises(LLMRequestError) as caught:
            await llm.call_tool(VERDICT, MESSAGES, purpose=purpose)
    finally:
        await llm.aclose()

    assert llm_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    exposition = generate_latest(REGISTRY).decode()
    assert f'purpose="{purpose}"' in exposition
    assert KEY not in exposition
    assert any(r.name == "swe_stream.llm" for r in caplog.records)  # the retries were logged
    for record in caplog.records:
        assert KEY not in record.getMessage(), record.name
        assert KEY not in repr(record.args), record.name
    assert KEY not in caplog.text
    assert KEY not in str(caught.value)
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())


async def test_an_endpoint_that_refuses_every_connection_is_an_outage_not_an_answer(
    llm_server: FakeLLM,
) -> None:
    """Nobody listens: every attempt is refused. That is LLMUnreachable, a ServiceUnavailable
    (the stage waits for the endpoint); a 500 that stays is still a request error."""
    from streams.clients.llm import LLMUnreachable
    from streams.core.errors import ServiceUnavailable
    from streams.kafka.broker import free_port

    closed = f"http://127.0.0.1:{free_port()}/v1"
    llm = LLMClient(settings_for(llm_server, base_url=closed, max_attempts=2))
    try:
        with pytest.raises(LLMUnreachable, match="after 2 attempts") as refused:
            await llm.call_tool(VERDICT, MESSAGES, purpose="t-refused")
    finally:
        await llm.aclose()
    assert isinstance(refused.value, ServiceUnavailable) and refused.value.service == "llm"
    assert isinstance(refused.value, LLMRequestError)  # what callers knew it as before

    for _ in range(2):
        llm_server.reply_status(500, body={"error": {"message": "upstream down"}})
    answering = LLMClient(settings_for(llm_server, max_attempts=2))
    try:
        with pytest.raises(LLMRequestError, match="HTTP 500") as answered:
            await answering.call_tool(VERDICT, MESSAGES, purpose="t-500-stays")
    finally:
        await answering.aclose()
    assert not isinstance(answered.value, ServiceUnavailable)


class RecordedSleeps:
    """The client's injectable sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.mark.parametrize("status", [429, 503])
async def test_an_http_date_retry_after_makes_the_client_wait(
    llm_server: FakeLLM, status: int
) -> None:
    purpose = f"t-{status}-date"
    retries = sample(
        "swe_stream_llm_retries_total", model=MODEL, purpose=purpose, reason=f"http_{status}"
    )
    llm_server.reply_status(
        status, headers={"Retry-After": formatdate(time.time() + 30, usegmt=True)}
    )
    llm_server.reply_tool_call("verdict", GOOD)
    sleeps = RecordedSleeps()
    llm = LLMClient(settings_for(llm_server), sleep=sleeps)
    try:
        result = await llm.call_tool(VERDICT, MESSAGES, purpose=purpose)
    finally:
        await llm.aclose()
    assert result.arguments == Verdict(**GOOD)
    [wait] = sleeps.waits
    # the date is whole seconds, 30 s ahead of a moment a little before the client read it;
    # far above max_backoff_seconds (0.2) and within max_retry_after_seconds (300)
    assert 28.0 <= wait <= 30.0, wait
    assert sample(
        "swe_stream_llm_retries_total", model=MODEL, purpose=purpose, reason=f"http_{status}"
    ) == (retries + 1)


@pytest.mark.parametrize("garbage", ["soon", "1.5e9x", ""])
async def test_a_garbage_retry_after_falls_back_to_the_backoff(
    llm_server: FakeLLM, garbage: str
) -> None:
    llm_server.reply_status(429, headers={"Retry-After": garbage})
    llm_server.reply_tool_call("verdict", GOOD)
    sleeps = RecordedSleeps()
    llm = LLMClient(settings_for(llm_server), sleep=sleeps)
    try:
        result = await llm.call_tool(VERDICT, MESSAGES, purpose="t-429-garbage")
    finally:
        await llm.aclose()
    assert result.arguments == Verdict(**GOOD)
    [wait] = sleeps.waits
    assert 0.025 <= wait <= 0.05  # backoff_seconds, half fixed and half random
