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


# -- the OpenAI Responses API (``POST /v1/responses``) ---------------------------------

RESPONSES_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "item_reference",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
"""The input item types a Responses request may hold (the hosted tools' items left out:
this server offers none)."""
_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file"})
_OUTPUT_PARTS = frozenset({"output_text", "refusal"})


@dataclass
class ResponsesServer(ProviderServer):
    """An OpenAI Responses endpoint: ``POST /v1/responses``, whole or streamed.

    Rejects (HTTP 400, ``rejected``) what the real API rejects: an ``input`` that breaks
    the pairing rules (:func:`mnesis.context.validate`, ``"responses"``: a
    ``function_call_output`` without its ``function_call``, a call without its output),
    an unknown item type, a message with a role or content part the API does not take
    (an output message's parts are ``output_text`` / ``refusal``, a user message's
    ``input_*``), a call or output missing its fields, a function tool without a name,
    and a ``previous_response_id`` (this server stores no responses, so it is unknown)."""

    kind: str = "openai-responses"

    def problems(self, body: dict[str, Any]) -> list[str]:
        """What the Responses API would reject in ``body`` (empty: nothing)."""
        problems: list[str] = []
        if not body.get("model"):
            problems.append("model: required")
        if body.get("previous_response_id"):
            problems.append(f"previous_response_id {body['previous_response_id']!r} not found")
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            return [*problems, "input: must be a string or a list of items"]
        for index, item in enumerate(items):
            problems.extend(_responses_item_problems(index, item))
        for index, tool in enumerate(body.get("tools") or []):
            if tool.get("type") != "function" or not tool.get("name"):
                problems.append(f"tools[{index}]: only named function tools are offered")
        return problems or validate(items, "responses")

    def reply(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """(text, tool calls): a call to ``lcm_grep`` (or the first tool) unless the input
        ends with a function call's output, then the final text."""
        items = body.get("input") or []
        answered = isinstance(items, list) and bool(items)
        answered = answered and items[-1].get("type") == "function_call_output"
        tools = body.get("tools") or []
        if tools and (self.always_call or not answered):
            names = [t["name"] for t in tools]
            name = "lcm_grep" if "lcm_grep" in names else names[0]
            return "", [{"id": f"call_{len(self.bodies)}", "name": name, "input": TOOL_ARGS}]
        return FINAL_TEXT, []


def _responses_item_problems(index: int, item: Any) -> list[str]:
    where = f"input[{index}]"
    if not isinstance(item, dict):
        return [f"{where}: not an object"]
    kind = item.get("type", "message")
    if kind not in RESPONSES_ITEM_TYPES:
        return [f"{where}: invalid item type {kind!r}"]
    if kind == "function_call":
        missing = [k for k in ("call_id", "name") if not item.get(k)]
        if not isinstance(item.get("arguments"), str):
            missing.append("arguments")
        return [f"{where}: function_call without {', '.join(missing)}"] if missing else []
    if kind == "function_call_output":
        if not item.get("call_id") or not isinstance(item.get("output"), str | list):
            return [f"{where}: function_call_output needs call_id and output"]
        return []
    if kind != "message":
        return []
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        return [f"{where}: invalid role {role!r}"]
    content = item.get("content")
    if isinstance(content, str):
        return [] if role == "user" or content else [f"{where}: empty content"]
    if not isinstance(content, list) or not content:
        return [f"{where}: content must be a string or a non-empty list"]
    allowed = _OUTPUT_PARTS if role == "assistant" else _INPUT_PARTS
    if role == "assistant" and "id" not in item:
        allowed = _OUTPUT_PARTS | {"input_text"}
    bad = [
        p.get("type") for p in content if not isinstance(p, dict) or p.get("type") not in allowed
    ]
    return [f"{where}: {role} message with content part types {bad}"] if bad else []


def _responses_output(text: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{call['id']}",
            "call_id": call["id"],
            "name": call["name"],
            "arguments": json.dumps(call["input"]),
            "status": "completed",
        }
        for call in calls
    ]
    if text:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    return output


def _responses_body(
    body: dict[str, Any], number: int, output: list[dict[str, Any]], status: str
) -> dict[str, Any]:
    usage = {
        "input_tokens": 11,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 18,
    }
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": body.get("model", "m"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "instructions": body.get("instructions"),
        "text": {"format": {"type": "text"}},
        "usage": usage if status == "completed" else None,
    }


def _responses(
    body: dict[str, Any], number: int, text: str, calls: list[dict[str, Any]]
) -> tuple[str, bytes]:
    output = _responses_output(text, calls)
    if not body.get("stream"):
        return "application/json", json.dumps(
            _responses_body(body, number, output, "completed")
        ).encode()
    events: list[tuple[str | None, dict[str, Any] | str]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

    emit("response.created", response=_responses_body(body, number, [], "in_progress"))
    for index, item in enumerate(output):
        if item["type"] == "function_call":
            emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        else:
            emit("response.output_item.added", output_index=index, item={**item, "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=_responses_body(body, number, output, "completed"))
    return "text/event-stream", _sse(events)


def _responses_handler(server: ResponsesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/responses":
                self._send(404, {"error": {"type": "not_found", "message": self.path}})
                return
            problems = server.problems(body)
            if problems:
                server.rejected.append((body, problems))
                error = {"type": "invalid_request_error", "message": "; ".join(problems)}
                self._send(400, {"error": {**error, "param": "input", "code": None}})
                return
            text, calls = server.reply(body)
            server.bodies.append(body)
            server.paths.append(self.path)
            content_type, data = _responses(body, len(server.bodies), text, calls)
            self._send(200, data, content_type)

        def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def serve_responses(*, always_call: bool = False) -> Iterator[ResponsesServer]:
    """Run a Responses server until the generator ends."""
    state = ResponsesServer(always_call=always_call)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _responses_handler(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
