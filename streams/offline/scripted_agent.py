"""A scripted agent: an OpenAI-compatible chat-completions endpoint on 127.0.0.1 that answers
an agent's conversations from a YAML script, in place of a model (benchmarks, demos).

    conversations:
      - repository: owner/name          # the conversation whose first user message names it
        purpose: setup                  # optional: only requests whose tools include
        turns:                          #   this purpose's submit tool (see TOOLS)
          - tool: shell
            arguments: {command: "cat tox.ini"}
          - tool: submit_recipe
            arguments: {pre_test: ["make -C locale"], explanation: "translations"}

The reply to a request is the turn numbered by how many assistant messages the conversation
already holds, so the answers do not depend on the order or concurrency of conversations;
past the last turn, and for a conversation the script does not know, the reply is prose
without a tool call (the agent loop then runs out of budget, as with a model that gives up).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from streams.core.settings import safe_load_yaml
from streams.offline.local_http import LocalServer, running

TOOLS = {"setup": "submit_recipe", "testgen": "submit_tests"}
_REPOSITORY_LINE = re.compile(r"^Repository: (\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Turn:
    tool: str
    arguments: dict[str, Any]


@dataclass
class Conversation:
    repository: str
    turns: list[Turn]
    purpose: str | None = None


@dataclass
class AgentScript:
    conversations: list[Conversation] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> AgentScript:
        """The script in ``path``; ValueError naming what is wrong."""
        data = safe_load_yaml(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict) or not isinstance(data.get("conversations"), list):
            raise ValueError(f"{path}: expected a mapping with a `conversations:` list")
        conversations = []
        for number, item in enumerate(data["conversations"], 1):
            try:
                turns = [
                    Turn(str(t["tool"]), dict(t.get("arguments") or {})) for t in item["turns"]
                ]
                repository, purpose = str(item["repository"]), item.get("purpose")
                conversations.append(Conversation(repository, turns, purpose))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}: conversation {number}: {exc!r}") from None
        return cls(conversations)

    def conversation(self, body: dict[str, Any]) -> Conversation | None:
        messages = body.get("messages") or []
        first_user: dict[str, Any] = next((m for m in messages if m.get("role") == "user"), {})
        named = _REPOSITORY_LINE.search(str(first_user.get("content") or ""))
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        for conversation in self.conversations:
            if named is None or named[1].lower() != conversation.repository.lower():
                continue
            if conversation.purpose and TOOLS.get(conversation.purpose) not in tools:
                continue
            return conversation
        return None

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion answering ``body``."""
        conversation = self.conversation(body)
        done = sum(m.get("role") == "assistant" for m in body.get("messages") or [])
        if conversation is None or done >= len(conversation.turns):
            message: dict[str, Any] = {"role": "assistant", "content": "I have nothing to add."}
            return _completion(body, message, "stop")
        turn = conversation.turns[done]
        call = {
            "id": f"call_{secrets.token_hex(12)}",
            "type": "function",
            "function": {"name": turn.tool, "arguments": json.dumps(turn.arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return _completion(body, message, "tool_calls")


def _completion(body: dict[str, Any], message: dict[str, Any], finish: str) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
    completion = len(json.dumps(message)) // 4
    return {
        "id": f"gen-{int(time.time())}-{secrets.token_hex(10)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "scripted",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class _Handler(BaseHTTPRequestHandler):
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.server.count_request()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            payload, status = self.server.fake.reply(body), 200
        except (ValueError, AttributeError) as exc:
            payload, status = {"error": {"message": str(exc), "type": "invalid_request"}}, 400
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serve_agent_script(script: AgentScript) -> Iterator[LocalServer]:
    """Serve ``script`` until the block ends; ``.base_url + "/v1"`` is the ``llm.base_url``."""
    server = LocalServer(_Handler, script)
    with running(server, "scripted-agent") as started:
        yield started
