"""Small provider-compatible HTTP servers on 127.0.0.1 for the wire-format tests.

Each server records the JSON body of every request and answers like a model that
uses tools properly: when the conversation ends with a tool result (an OpenAI
``role: "tool"`` message, an Anthropic ``tool_result`` block) it answers with text;
otherwise, when tools are offered, it calls the first one. ``always_call=True``
makes it call the tool again and again (a doom loop). Both streaming (server-sent
events) and whole responses are served, as the request asks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FINAL_TEXT", "TOOL_ARGS", "ProviderServer", "serve"]

FINAL_TEXT = "The port is 8443."
TOOL_ARGS = {"query": "port"}


@dataclass
class ProviderServer:
    """A running server: its base URL and the bodies it received."""

    kind: str
    port: int = 0
    always_call: bool = False
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (append ``/v1`` for OpenAI clients)."""
        return f"http://127.0.0.1:{self.port}"

    def reply(self, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """(text, tool call or None) for ``body``."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        answered = last.get("role") == "tool" or (
            isinstance(last.get("content"), list)
            and any(b.get("type") == "tool_result" for b in last["content"])
        )
        tools = body.get("tools") or []
        if tools and (self.always_call or not answered):
            names = [t["function"]["name"] if "function" in t else t["name"] for t in tools]
            name = "lcm_grep" if "lcm_grep" in names else names[0]
            return "", {"id": f"call_{len(self.bodies)}", "name": name, "input": TOOL_ARGS}
        return FINAL_TEXT, None


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for event, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {event}\n" if event else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def _openai(body: dict[str, Any], text: str, call: dict[str, Any] | None) -> tuple[str, bytes]:
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    finish = "tool_calls" if call else "stop"
    tool_calls = (
        [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["input"])},
            }
        ]
        if call
        else None
    )
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
    if call and tool_calls:
        args = tool_calls[0]["function"]["arguments"]
        first = {"index": 0, **tool_calls[0], "function": {"name": call["name"], "arguments": ""}}
        rest = {"index": 0, "function": {"arguments": args}}
        for piece in (first, rest):
            delta = {"role": "assistant", "content": None, "tool_calls": [piece]}
            events.append((None, {**chunk, "choices": [{"index": 0, "delta": delta}]}))
    end = {"index": 0, "delta": {}, "finish_reason": finish}
    events.append((None, {**chunk, "choices": [end]}))
    events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return "text/event-stream", _sse(events)


def _anthropic(body: dict[str, Any], text: str, call: dict[str, Any] | None) -> tuple[str, bytes]:
    usage = {"input_tokens": 11, "output_tokens": 7}
    stop = "tool_use" if call else "end_turn"
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    if call:
        content.append({"type": "tool_use", **call})
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
            text, call = server.reply(body)
            server.bodies.append(body)
            server.paths.append(self.path)
            render = _openai if server.kind == "openai" else _anthropic
            content_type, data = render(body, text, call)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def serve(kind: str, *, always_call: bool = False) -> Iterator[ProviderServer]:
    """Run a ``kind`` (``"openai"`` or ``"anthropic"``) server until the generator ends."""
    state = ProviderServer(kind, always_call=always_call)
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
