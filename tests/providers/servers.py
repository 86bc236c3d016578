"""Small provider-compatible HTTP servers on 127.0.0.1 for the wire-format tests.

Each server records the JSON body of every request and answers like a model that
uses tools properly: when tools are offered it calls one (``parallel`` calls at once)
unless the conversation ends with a tool result, then answers with text; with
``rounds=N`` it makes N rounds of calls after the user's last text before answering.
``always_call=True`` makes it call the tool again and again (a doom loop). Both
streaming (server-sent events) and whole responses are served, as the request asks.

Like the real APIs, a server REJECTS a request that breaks its provider's rules
(:func:`mnesis.context.validate`: unanswered or orphan tool calls, two user turns in a
row, more than four ``cache_control`` blocks, ...) with HTTP 400 and the provider's error
body; rejected requests are kept in ``rejected``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mnesis.context import validate

__all__ = ["FINAL_TEXT", "TOOL_ARGS", "ProviderServer", "serve"]

FINAL_TEXT = "The port is 8443."
TOOL_ARGS = {"query": "port"}


@dataclass
class ProviderServer:
    """A running server: its base URL and the bodies it received."""

    kind: str
    port: int = 0
    always_call: bool = False
    rounds: int = 1
    parallel: int = 1
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    rejected: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (append ``/v1`` for OpenAI clients)."""
        return f"http://127.0.0.1:{self.port}"

    def problems(self, body: dict[str, Any]) -> list[str]:
        """What the provider would reject in ``body`` (empty: nothing)."""
        messages = body.get("messages") or []
        if self.kind == "openai":
            return validate(messages, "openai")
        return validate({"system": body.get("system"), "messages": messages}, "anthropic")

    def rounds_done(self, messages: list[dict[str, Any]]) -> int:
        """Tool rounds of the assistant since the user's last text."""
        count = 0
        for message in reversed(messages):
            content = message.get("content")
            if message.get("role") == "user":
                blocks = content if isinstance(content, list) else [{"type": "text"}]
                if any(b.get("type") == "text" for b in blocks):
                    return count
            elif message.get("role") == "assistant":
                calls = message.get("tool_calls") or [
                    b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"
                ]
                count += bool(calls)
        return count

    def reply(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """(text, tool calls) for ``body``."""
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        last = messages[-1] if messages else {}
        answered = last.get("role") == "tool" or (
            isinstance(last.get("content"), list)
            and any(b.get("type") == "tool_result" for b in last["content"])
        )
        # One round (the default): answer once the conversation ends with a result.
        more = not answered if self.rounds == 1 else self.rounds_done(messages) < self.rounds
        if tools and (self.always_call or more):
            names = [t["function"]["name"] if "function" in t else t["name"] for t in tools]
            name = "lcm_grep" if "lcm_grep" in names else names[0]
            ids = [f"call_{len(self.bodies)}"]
            if self.parallel > 1:
                ids = [f"call_{len(self.bodies)}_{i}" for i in range(self.parallel)]
            return "", [{"id": i, "name": name, "input": TOOL_ARGS} for i in ids]
        return FINAL_TEXT, []


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for event, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {event}\n" if event else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def _openai(body: dict[str, Any], text: str, calls: list[dict[str, Any]]) -> tuple[str, bytes]:
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    finish = "tool_calls" if calls else "stop"
    tool_calls = [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["input"])},
        }
        for call in calls
    ] or None
    base = {"id": "chatcmpl-1", "created": 1, "model": body.get("model", "m")}
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        whole = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return "application/json", json.dumps(whole).encode()
    chunk = {**base, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, dict[str, Any] | str]] = []
    if text:
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            delta = {"role": "assistant", "content": piece}
            events.append((None, {**chunk, "choices": [{"index": 0, "delta": delta}]}))
    for number, tool_call in enumerate(tool_calls or []):
        args = tool_call["function"]["arguments"]
        name = tool_call["function"]["name"]
        first = {"index": number, **tool_call, "function": {"name": name, "arguments": ""}}
        rest = {"index": number, "function": {"arguments": args}}
        for piece in (first, rest):
            delta = {"role": "assistant", "content": None, "tool_calls": [piece]}
            events.append((None, {**chunk, "choices": [{"index": 0, "delta": delta}]}))
    end = {"index": 0, "delta": {}, "finish_reason": finish}
    events.append((None, {**chunk, "choices": [end]}))
    events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return "text/event-stream", _sse(events)


def _anthropic(body: dict[str, Any], text: str, calls: list[dict[str, Any]]) -> tuple[str, bytes]:
    usage = {"input_tokens": 11, "output_tokens": 7}
    stop = "tool_use" if calls else "end_turn"
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.extend({"type": "tool_use", **call} for call in calls)
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return "application/json", json.dumps(message).encode()
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(content):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "text/event-stream", _sse(events)


def _handler(server: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            problems = server.problems(body)
            if problems:
                server.rejected.append((body, problems))
                self._reject("; ".join(problems))
                return
            text, calls = server.reply(body)
            server.bodies.append(body)
            server.paths.append(self.path)
            render = _openai if server.kind == "openai" else _anthropic
            content_type, data = render(body, text, calls)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _reject(self, message: str) -> None:
            """HTTP 400 with the provider's error body."""
            error = {"type": "invalid_request_error", "message": message}
            if server.kind == "openai":
                payload: dict[str, Any] = {"error": {**error, "param": "messages", "code": None}}
            else:
                payload = {"type": "error", "error": error}
            data = json.dumps(payload).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def serve(
    kind: str, *, always_call: bool = False, rounds: int = 1, parallel: int = 1
) -> Iterator[ProviderServer]:
    """Run a ``kind`` (``"openai"`` or ``"anthropic"``) server until the generator ends."""
    state = ProviderServer(kind, always_call=always_call, rounds=rounds, parallel=parallel)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
