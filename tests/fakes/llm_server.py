"""An OpenAI-compatible chat-completions look-alike on 127.0.0.1, answering from a script.

``llm_server`` yields a :class:`FakeLLM`: ``.base_url`` (``http://127.0.0.1:PORT/v1``) is what
``llm.base_url`` should be; it serves ``POST /v1/chat/completions``. Tests push replies, which
are answered first in, first out, and read what was asked (``requests``)::

    call_id = llm_server.reply_tool_call("verdict", {"score": 0.5}, usage=(120, 30), cost=0.001)
    llm_server.reply_tool_call("verdict", '{"score": 0.5')       # malformed JSON, as sent
    llm_server.reply_text("I think it is easy.")                  # no tool call
    llm_server.reply_status(429, headers={"Retry-After": "1"})    # or 500, 400, ...
    llm_server.reply_delay(2.0)                                   # the next reply comes late
    llm_server.default = lambda body: tool_call_reply("verdict", {...})  # once the script is out
    llm_server.answer_tools()           # default: a valid call of the requested tool, computed
    llm_server.chaos(rate=0.2, seed=7)  # 20% of the requests fail, each in one of FAULTS

With the script empty and no ``default``, the answer is ``500 script exhausted``.
``answer_tools`` makes the endpoint serve any number of PRs: each request gets a valid call of
its tool (``classify_difficulty``, ``score_task``) whose arguments are computed from the first
user message, so the same PR always gets the same answer. Chaos (``tests.fakes.chaos``) draws per
request, from the seed, a hash of its messages and how often they were sent: ``http_5xx``
(500 / 502 / 503), ``rate_limit`` (429 with ``Retry-After``), ``timeout`` (no answer for
``delay`` s, longer than the client's timeout), ``drop`` (the connection closed without an
answer), ``malformed_json`` (a 200 whose body is cut short) and ``bad_arguments`` (a tool call
whose arguments are malformed JSON, which the client must ask again); a faulty answer leaves
the script untouched.

Replies have the shape of real OpenAI / OpenRouter ones (``gen-`` ids, ``call_`` ids, ``model``
echoed from the request, ``usage`` with an optional OpenRouter ``cost``).

Like the real endpoints, the server checks the request first (``strict``, on by default): a
``tool`` message must answer a ``tool_call_id`` of the assistant message before it, every
assistant tool call must be answered, ``function.arguments`` must be a string, ... and a
request breaking those rules gets OpenAI's ``400 invalid_request_error`` (the script is left
untouched).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from streams.offline.local_http import LocalServer, running
from tests.fakes.chaos import Chaos

CHAT_PATH = "/v1/chat/completions"
ROLES = {"system", "developer", "user", "assistant", "tool"}
FAULTS = ("http_5xx", "rate_limit", "timeout", "drop", "malformed_json", "bad_arguments")


@dataclass(frozen=True)
class SeenRequest:
    """One request as it arrived: path, parsed JSON body, headers (lower-cased names)."""

    path: str
    body: Any
    headers: dict[str, str]
    at: float  # time.monotonic() when it arrived

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return tools if isinstance(tools, list) else []


@dataclass
class Reply:
    """One scripted answer. ``completion`` (without ``model``, filled in from the request) is
    sent as JSON when set; otherwise ``body`` as it is."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    completion: dict[str, Any] | None = None
    body: bytes = b""
    delay: float = 0.0  # seconds the server waits before answering

    def render(self, request_body: Any) -> bytes:
        if self.completion is None:
            return self.body
        model = request_body.get("model") if isinstance(request_body, dict) else None
        return json.dumps({**self.completion, "model": model or "unknown"}).encode()


def _usage(usage: tuple[int, int], cost: float | None) -> dict[str, Any]:
    prompt, completion = usage
    data: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cost is not None:
        data["cost"] = cost
    return data


def _completion(
    message: dict[str, Any], finish_reason: str, usage: tuple[int, int], cost: float | None
) -> dict[str, Any]:
    return {
        "id": f"gen-{int(time.time())}-{secrets.token_hex(10)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "system_fingerprint": None,
        "choices": [
            {"index": 0, "logprobs": None, "finish_reason": finish_reason, "message": message}
        ],
        "usage": _usage(usage, cost),
    }


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def tool_call_reply(
    name: str,
    arguments: dict[str, Any] | str,
    *,
    usage: tuple[int, int] = (120, 30),
    cost: float | None = None,
    call_id: str | None = None,
    content: str | None = None,
) -> Reply:
    """The assistant calls ``name``; a ``str`` is sent verbatim (malformed JSON and all)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {
        "id": call_id or new_call_id(),
        "type": "function",
        "function": {"name": name, "arguments": text},
    }
    message = {"role": "assistant", "content": content, "tool_calls": [call]}
    return Reply(completion=_completion(message, "tool_calls", usage, cost))


def text_reply(
    content: str, *, usage: tuple[int, int] = (120, 30), cost: float | None = None
) -> Reply:
    """The assistant answers in prose, without a tool call."""
    message = {"role": "assistant", "content": content}
    return Reply(completion=_completion(message, "stop", usage, cost))


def error_body(status: int, message: str, kind: str = "invalid_request_error") -> bytes:
    """OpenAI's error shape (OpenRouter adds a numeric ``code``)."""
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": None, "code": status}}
    ).encode()


def status_reply(
    status: int,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | str | dict[str, Any] | None = None,
) -> Reply:
    """Any status; the body defaults to an OpenAI-style error, a ``dict`` is sent as JSON."""
    if body is None:
        data = error_body(status, f"injected HTTP {status}", "server_error")
    elif isinstance(body, dict):
        data = json.dumps(body).encode()
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = body
    return Reply(status=status, headers=dict(headers or {}), body=data)


def check_request(body: Any) -> str | None:
    """What a real endpoint would reject with 400, or None (the rules OpenAI enforces)."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    pending: set[str] = set()  # tool calls of the last assistant message not answered yet
    answerable: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return f"messages[{i}]: invalid role"
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in answerable:
                return (
                    f"messages[{i}]: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'"
                )
            pending.discard(call_id)
            if not isinstance(message.get("content"), str):
                return f"messages[{i}].content: expected a string"
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {sorted(pending)}"
            )
        answerable = set()
        if role == "assistant" and message.get("tool_calls"):
            calls = message["tool_calls"]
            if not isinstance(calls, list):
                return f"messages[{i}].tool_calls: expected an array"
            for j, call in enumerate(calls):
                where = f"messages[{i}].tool_calls[{j}]"
                if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                    return f"{where}.id: missing"
                function = call.get("function")
                if call.get("type") != "function" or not isinstance(function, dict):
                    return f"{where}: expected a function call"
                if not isinstance(function.get("name"), str):
                    return f"{where}.function.name: missing"
                if not isinstance(function.get("arguments"), str):
                    return f"{where}.function.arguments: expected a string"
                answerable.add(call["id"])
            pending = set(answerable)
        elif message.get("content") is None:
            return f"messages[{i}].content: missing"
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. Missing: {sorted(pending)}"
        )
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            return "'tools' must be a non-empty array"
        for k, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if (
                not isinstance(tool, dict)
                or tool.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
                or not isinstance(function.get("parameters", {}), dict)
            ):
                return f"tools[{k}]: invalid function definition"
    if body.get("tool_choice") in {"required", "auto"} and not tools:
        return "'tool_choice' is only allowed when 'tools' are specified"
    return None


# what the prompts ask for: swe-forge's score band per difficulty (classify_difficulty)
BANDS = {"easy": (0.1, 0.35), "medium": (0.4, 0.65), "hard": (0.7, 1.0)}
LEVELS = ("easy", "medium", "hard")


def _classify_arguments(digest: int) -> dict[str, Any]:
    level = LEVELS[digest % 3]
    low, high = BANDS[level]
    score = round(low + (high - low) * ((digest >> 8) % 1000) / 999, 3)
    return {"classification": level, "score": score, "reasoning": f"computed {digest % 10**6}"}


def _score_arguments(digest: int) -> dict[str, Any]:
    score = round(((digest >> 8) % 1000) / 999, 3)
    return {"classification": LEVELS[digest % 3], "score": score, "reasoning": "computed"}


TOOL_ANSWERS: dict[str, Callable[[int], dict[str, Any]]] = {
    "classify_difficulty": _classify_arguments,
    "score_task": _score_arguments,
}


def first_user_message(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def requested_tool(body: Any) -> str:
    tools = body.get("tools") if isinstance(body, dict) else None
    if isinstance(tools, list) and tools and isinstance(tools[0], dict):
        return str((tools[0].get("function") or {}).get("name") or "")
    return ""


def computed_tool_call(body: Any) -> Reply:
    """A valid call of the request's tool, its arguments a function of the first user message
    (the PR the prompt describes): the same PR always gets the same answer."""
    name = requested_tool(body)
    answer = TOOL_ANSWERS.get(name)
    if answer is None:
        return status_reply(500, body=error_body(500, f"no computed answer for tool {name!r}"))
    digest = int(hashlib.sha256(first_user_message(body).encode()).hexdigest(), 16)
    return tool_call_reply(name, answer(digest))


def chaos_reply(kind: str, rng: Any, body: Any, retry_after: float) -> Reply:
    """The faulty answer for ``kind`` (``timeout`` and ``drop`` are the handler's)."""
    if kind == "http_5xx":
        status = rng.choice([500, 502, 503])
        return status_reply(status, body=error_body(status, f"injected {status}", "server_error"))
    if kind == "rate_limit":
        return status_reply(
            429,
            headers={"Retry-After": f"{retry_after:g}"},
            body=error_body(429, "Rate limit exceeded: injected", "rate_limit_exceeded"),
        )
    if kind == "malformed_json":
        return Reply(body=b'{"id": "gen-cut", "object": "chat.completion", "choices": [{"ind')
    if kind == "bad_arguments":
        return tool_call_reply(requested_tool(body) or "unknown", '{"classification": "easy", "sc')
    raise AssertionError(f"unknown fault {kind}")


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "tool_call_id")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


class FakeLLM:
    """State of the fake endpoint (thread-safe): the script, the default, what it saw."""

    def __init__(self) -> None:
        self.base_url = ""  # http://127.0.0.1:PORT/v1, set once listening
        self.requests: list[SeenRequest] = []
        self.default: Callable[[Any], Reply] | None = None
        self.strict = True
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: list[Reply | float] = []  # a float: a delay for the reply after it
        self._chaos: tuple[Chaos, float, float] | None = None  # chaos, delay, retry_after
        self._lock = threading.Lock()

    # the script ---------------------------------------------------------------------------

    def push(self, reply: Reply) -> None:
        with self._lock:
            self._script.append(reply)

    def reply_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        usage: tuple[int, int] = (120, 30),
        cost: float | None = None,
        call_id: str | None = None,
        content: str | None = None,
    ) -> str:
        """Queue a tool call; returns its ``call_...`` id."""
        call_id = call_id or new_call_id()
        self.push(
            tool_call_reply(
                name, arguments, usage=usage, cost=cost, call_id=call_id, content=content
            )
        )
        return call_id

    def reply_tool_calls(self, script: Iterable[tuple[str, dict[str, Any] | str]]) -> None:
        """Queue an agent's turns: one tool call per ``(name, arguments)``, in order."""
        for name, arguments in script:
            self.reply_tool_call(name, arguments)

    def reply_text(
        self, content: str, *, usage: tuple[int, int] = (120, 30), cost: float | None = None
    ) -> None:
        self.push(text_reply(content, usage=usage, cost=cost))

    def reply_status(
        self,
        status: int,
        headers: dict[str, str] | None = None,
        body: bytes | str | dict[str, Any] | None = None,
    ) -> None:
        self.push(status_reply(status, headers=headers, body=body))

    def reply_delay(self, seconds: float) -> None:
        """The next reply (scripted or default) is sent ``seconds`` late."""
        with self._lock:
            self._script.append(float(seconds))

    def answer_tools(self) -> None:
        """Once the script is out, answer every request with a valid call of its tool
        (``computed_tool_call``): one endpoint for any number of PRs."""
        self.default = computed_tool_call

    def chaos(
        self,
        rate: float = 0.2,
        seed: int = 0,
        *,
        kinds: tuple[str, ...] = FAULTS,
        delay: float = 2.0,
        retry_after: float = 0.5,
    ) -> Chaos:
        """From now on fail ``rate`` of the chat requests at random (see the module
        docstring); returns the ``Chaos`` whose ``injected`` counts the faults per kind."""
        unknown = sorted(set(kinds) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {FAULTS}")
        chaos = Chaos(rate, seed, tuple(kinds))
        with self._lock:
            self._chaos = (chaos, delay, retry_after)
        return chaos

    def calm(self) -> None:
        with self._lock:
            self._chaos = None

    @property
    def pending(self) -> int:
        """Scripted replies not sent yet."""
        with self._lock:
            return sum(1 for item in self._script if isinstance(item, Reply))

    # inspection -----------------------------------------------------------------------------

    def chat_requests(self) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == CHAT_PATH]

    # used by the handler ----------------------------------------------------------------------

    def _seen(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, body: Any) -> Reply:
        with self._lock:
            delay = 0.0
            reply: Reply | None = None
            while self._script:
                item = self._script.pop(0)
                if isinstance(item, Reply):
                    reply = item
                    break
                delay += item
            default = self.default
        if reply is None:
            if default is not None:
                reply = default(body)
            else:
                reply = status_reply(500, body=error_body(500, "script exhausted", "server_error"))
        if delay:
            reply = Reply(
                reply.status, reply.headers, reply.completion, reply.body, reply.delay + delay
            )
        return reply

    def _chaos_fault(self, body: Any) -> tuple[str, Reply | None, float] | None:
        """The fault drawn for this request: its kind, its reply (None: no answer at all)
        and how long to wait first."""
        with self._lock:
            chaos = self._chaos
        if chaos is None:
            return None
        engine, delay, retry_after = chaos
        messages = body.get("messages") if isinstance(body, dict) else None
        # tool call ids are random: the same conversation must draw the same fault
        text = json.dumps(_without_ids(messages), sort_keys=True)
        identity = hashlib.sha256(text.encode()).hexdigest()
        kind, rng = engine.draw(identity)
        if kind is None:
            return None
        if kind in ("timeout", "drop"):
            return kind, None, delay if kind == "timeout" else 0.0
        return kind, chaos_reply(kind, rng, body, retry_after), 0.0

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(405, error_body(405, "Method Not Allowed"))

    def do_POST(self) -> None:
        fake: FakeLLM = self.server.fake
        arrived = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        fake._seen(SeenRequest(path, body, headers, arrived))
        if path != CHAT_PATH:
            self._send(404, error_body(404, f"Not Found: {path}"))
            return
        if body is None:
            self._send(400, error_body(400, "We could not parse the JSON body of your request."))
            return
        problem = check_request(body) if fake.strict else None
        if problem is not None:
            self._send(400, error_body(400, problem))
            return
        fake._enter()
        try:
            fault = fake._chaos_fault(body)
            if fault is not None:
                _kind, faulty, wait = fault
                if wait:
                    time.sleep(wait)  # longer than the client waits
                if faulty is None:
                    self.close_connection = True  # hang up without an answer
                else:
                    self._send(faulty.status, faulty.render(body), faulty.headers)
                return
            reply = fake._next(body)
            if reply.delay:
                time.sleep(reply.delay)
            self._send(reply.status, reply.render(body), reply.headers)
        finally:
            fake._leave()

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        names = {name.lower() for name in headers or {}}
        if "content-type" not in names:
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serve_llm(host: str = "127.0.0.1") -> Iterator[FakeLLM]:
    """Run a fake chat-completions endpoint until the block ends (tests and benchmarks);
    ``host``: the address it listens on (``0.0.0.0``: containers reach it too)."""
    fake = FakeLLM()
    server = LocalServer(_Handler, fake, host)
    fake.base_url = server.base_url + "/v1"
    with running(server, "fake-llm"):
        yield fake


@pytest.fixture
def llm_server() -> Iterator[FakeLLM]:
    """A fresh chat-completions look-alike per test, with an empty script."""
    with serve_llm() as fake:
        yield fake
