"""``LLMMap``: one independent, schema-checked model call per input, in parallel.

Invariants:

* The template is checked (it must use ``{{ item }}``) and every argument is
  validated when :meth:`LLMMap.run` is *called*, before any model call.
* At most ``concurrency`` items are in flight at any moment, so at most that many
  model calls run at once; inputs are pulled from the iterable only when a worker
  is free, and finished results wait in a bounded queue for the consumer. A
  million-line input therefore never sits in memory at once.
* Each input yields exactly one :class:`MapResult`, in completion order, carrying
  its ``index`` and ``input``. A model error or an output that fails validation is
  retried (the validation error is shown to the model as a follow-up message) up
  to ``max_retries`` times; after that the result is marked failed with the last
  error. Failures never raise out of :meth:`LLMMap.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import json
import logging
import re
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sized,
)
from dataclasses import dataclass
from typing import IO, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from mnesis.config import MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient, LLMRequest, complete, resolve_client
from mnesis.models.ids import new_id
from mnesis.models.tokens import TokenUsage
from mnesis.operators.results import MapBatch, MapFileSummary, MapResult
from mnesis.operators.template import ItemTemplate, TemplateError

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "LLMMap", "bounded_map"]

logger = logging.getLogger("mnesis.operators")
T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TIMEOUT_SECONDS = 120.0
"""Per-call model timeout when ``timeout`` is not given."""

_FEEDBACK = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only the corrected answer, no explanation."
)
_FILE_BATCH = 256


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """An input line that is not JSON: reported as a failed result, never sent."""

    raw: str
    error: str


@dataclass(frozen=True, slots=True)
class _Crash:
    """A worker died of an unexpected exception; the consumer re-raises it."""

    error: BaseException


_DONE = object()


@dataclass(frozen=True, slots=True)
class _Plan:
    run_id: str
    template: ItemTemplate
    output: _OutputSpec
    model: str
    client: LLMClient
    prefix: tuple[dict[str, Any], ...]
    max_retries: int
    timeout: float
    concurrency: int
    total: int | None


@dataclass(slots=True)
class _Tally:
    completed: int = 0
    failed: int = 0


# -- output validation --------------------------------------------------------
class _InvalidOutput(ValueError):
    """A reply that does not satisfy the output schema (handled by the retry loop)."""


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_text(text: str) -> str:
    """The JSON part of a reply: the first fenced block if there is one, else all of it."""
    stripped = text.strip()
    match = _FENCE.search(stripped)
    return match.group(1).strip() if match else stripped


class _OutputSpec:
    """How replies are checked: a pydantic model, a JSON-schema dict, or plain text.

    Raises :class:`~mnesis.errors.InvalidArgumentError` for anything else, or for a
    dict that is not a valid JSON schema.
    """

    def __init__(self, schema: object) -> None:
        self.model: type[BaseModel] | None = None
        self.instruction: str | None = None
        self._check: Callable[[Any], list[str]] | None = None
        if schema is None:
            return
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model = schema
            described: Any = schema.model_json_schema()
        elif isinstance(schema, dict):
            self._check = _schema_checker(schema)
            described = schema
        else:
            raise InvalidArgumentError(
                "output_schema must be a pydantic BaseModel subclass, a JSON-schema dict "
                f"or None, got {schema!r}"
            )
        try:
            rendered = json.dumps(described, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"output_schema is not JSON-serialisable: {exc}") from None
        self.instruction = (
            "Reply with only a JSON value (no prose) that matches this JSON schema:\n" + rendered
        )

    def parse(self, text: str) -> Any:
        """The validated output of ``text``; raises :class:`_InvalidOutput`."""
        if self.model is not None:
            try:
                return self.model.model_validate_json(_json_text(text))
            except ValidationError as exc:
                raise _InvalidOutput(_describe_validation_error(exc)) from None
        if self._check is not None:
            try:
                value = json.loads(_json_text(text))
            except json.JSONDecodeError as exc:
                raise _InvalidOutput(f"the reply is not valid JSON ({exc})") from None
            problems = self._check(value)
            if problems:
                raise _InvalidOutput(_join_problems(problems))
            return value
        if not text.strip():
            raise _InvalidOutput("the reply was empty")
        return text


def _join_problems(problems: list[str], limit: int = 5) -> str:
    shown = "; ".join(problems[:limit])
    return shown if len(problems) <= limit else f"{shown} (+{len(problems) - limit} more)"


def _describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        problems.append(f"{where}: {err['msg']}")
    return _join_problems(problems)


def _schema_checker(schema: dict[str, Any]) -> Callable[[Any], list[str]]:
    """A function listing the problems of a value, by ``jsonschema`` when installed
    (it is not a dependency), else by :func:`_basic_schema_errors`."""
    try:
        jsonschema = importlib.import_module("jsonschema")
    except ImportError:
        _check_basic_schema(schema, "output_schema")
        return lambda value: _basic_schema_errors(value, schema, "$")
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise InvalidArgumentError(
            f"output_schema is not a valid JSON schema: {exc.message}"
        ) from None
    validator = validator_class(schema)

    def check(value: Any) -> list[str]:
        return [f"{_path(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]

    return check


def _path(parts: Iterable[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _check_basic_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    names = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    unknown = [n for n in names if n not in _TYPES]
    if unknown or (kind is not None and not names):
        raise InvalidArgumentError(f"{where} has an unknown JSON-schema type {kind!r}")
    for key, sub in (schema.get("properties") or {}).items():
        _check_basic_schema(sub, f"{where}.properties.{key}")
    _check_basic_schema(schema.get("items"), f"{where}.items")


def _basic_schema_errors(value: Any, schema: Any, path: str) -> list[str]:
    """The subset of JSON schema checked without ``jsonschema``: ``type``, ``enum``,
    ``const``, ``required``, ``properties``, ``additionalProperties`` and ``items``.
    Other keywords are ignored."""
    if schema is False:
        return [f"{path}: no value is allowed here"]
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else list(kind)
        if not any(_TYPES[n](value) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {_json_type(value)}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"{path}: missing required property {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                errors.extend(_basic_schema_errors(item, properties[key], f"{path}.{key}"))
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                errors.extend(_basic_schema_errors(item, extra, f"{path}.{key}"))
    if isinstance(value, list) and isinstance(schema.get("items"), dict | bool):
        for position, element in enumerate(value):
            errors.extend(_basic_schema_errors(element, schema["items"], f"{path}[{position}]"))
    return errors


class LLMMap:
    """Stateless parallel model calls over many inputs.

    ``config`` gives ``llm_map_concurrency`` and ``max_retries``; ``event_bus``, if
    given, receives ``map.started``, ``map.item_completed``, ``map.completed`` and
    ``llm.retry``. ``llm`` is any :class:`~mnesis.llm.LLMClient` (default: the
    client :func:`~mnesis.llm.resolve_client` picks for the model). A model error is
    retried after ``retry_backoff`` seconds, doubling per attempt (at most 8 s).
    """

    def __init__(
        self,
        config: OperatorConfig | MnesisConfig | None = None,
        event_bus: EventBus | None = None,
        *,
        llm: LLMClient | None = None,
        model: str | None = None,
        retry_backoff: float = 0.5,
    ) -> None:
        self._config = _operator_config(config)
        if event_bus is not None and not isinstance(event_bus, EventBus):
            raise InvalidArgumentError(
                f"event_bus must be an EventBus, got {type(event_bus).__name__}"
            )
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
        if isinstance(retry_backoff, bool) or not isinstance(retry_backoff, int | float):
            raise InvalidArgumentError("retry_backoff must be a number of seconds")
        if retry_backoff < 0:
            raise InvalidArgumentError(f"retry_backoff must be >= 0, got {retry_backoff}")
        self._bus = event_bus
        self._llm = llm
        self._model = model
        self._backoff = float(retry_backoff)

    # -- public API -----------------------------------------------------------
    def run(
        self,
        inputs: Iterable[Any] | AsyncIterable[Any],
        prompt_template: str,
        *,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
    ) -> AsyncGenerator[MapResult, None]:
        """Map ``prompt_template`` over ``inputs``; yields results in completion order.

        ``inputs`` is any iterable or async iterable (consumed lazily). The template
        sees ``item`` and ``index``. ``output_schema`` is a pydantic model (the
        output is an instance of it), a JSON-schema dict (the output is the parsed
        JSON) or ``None`` (the output is the reply text). ``max_retries`` defaults
        to ``config.max_retries``, ``concurrency`` to ``config.llm_map_concurrency``,
        ``timeout`` (per model call) to 120 s.

        Raises :class:`~mnesis.errors.InvalidArgumentError` immediately, before any
        model call, for a template without ``{{ item }}`` or any other bad argument.
        Per-item failures are reported in the results, never raised. Break out of
        the loop inside ``contextlib.aclosing(...)`` to stop in-flight work at once.
        """
        plan = self._plan(
            inputs,
            prompt_template,
            output_schema=output_schema,
            model=model,
            system_prompt=system_prompt,
            max_retries=max_retries,
            timeout=timeout,
            concurrency=concurrency,
        )
        return self._stream(plan, _enumerate(inputs))

    async def run_all(
        self,
        inputs: Iterable[Any] | AsyncIterable[Any],
        prompt_template: str,
        *,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
    ) -> MapBatch:
        """Like :meth:`run`, collected into a :class:`MapBatch` sorted by ``index``."""
        plan = self._plan(
            inputs,
            prompt_template,
            output_schema=output_schema,
            model=model,
            system_prompt=system_prompt,
            max_retries=max_retries,
            timeout=timeout,
            concurrency=concurrency,
        )
        started = time.perf_counter()
        results: list[MapResult] = []
        async with contextlib.aclosing(self._stream(plan, _enumerate(inputs))) as stream:
            async for result in stream:
                results.append(result)
        results.sort(key=lambda r: r.index)
        completed = sum(1 for r in results if r.success)
        return MapBatch(
            run_id=plan.run_id,
            results=results,
            completed=completed,
            failed=len(results) - completed,
            elapsed_ms=_ms_since(started),
        )

    async def run_jsonl(
        self,
        input_path: str,
        output_path: str,
        prompt_template: str,
        *,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
    ) -> MapFileSummary:
        """File mode: each non-blank line of ``input_path`` is one JSON input; one JSON
        line per result is written to ``output_path`` as results complete.

        An output line is ``{"index", "input", "success", "output", "error",
        "attempts"}``; ``index`` is the 0-based line number of the input. A line that
        is not JSON becomes a failed result (it is never sent to the model). The input
        is read in small batches and at most ``concurrency`` items are in flight, so
        memory stays bounded whatever the file size. ``output_path`` is overwritten.
        Raises ``OSError`` if a file cannot be opened.
        """
        plan = self._plan(
            None,
            prompt_template,
            output_schema=output_schema,
            model=model,
            system_prompt=system_prompt,
            max_retries=max_retries,
            timeout=timeout,
            concurrency=concurrency,
        )
        for name, path in (("input_path", input_path), ("output_path", output_path)):
            if not isinstance(path, str) or not path.strip():
                raise InvalidArgumentError(f"{name} must be a non-empty path, got {path!r}")
        started = time.perf_counter()
        source = await asyncio.to_thread(open, input_path, encoding="utf-8")
        try:
            sink = await asyncio.to_thread(open, output_path, "w", encoding="utf-8")
            try:
                tally = await self._map_file(plan, source, sink)
            finally:
                await asyncio.to_thread(sink.close)
        finally:
            await asyncio.to_thread(source.close)
        return MapFileSummary(
            run_id=plan.run_id,
            output_path=output_path,
            total=tally.completed + tally.failed,
            completed=tally.completed,
            failed=tally.failed,
            elapsed_ms=_ms_since(started),
        )

    # -- planning -------------------------------------------------------------
    def _plan(
        self,
        inputs: object,
        prompt_template: str,
        *,
        output_schema: type[BaseModel] | dict[str, Any] | None,
        model: str | None,
        system_prompt: str | None,
        max_retries: int | None,
        timeout: float | None,
        concurrency: int | None,
    ) -> _Plan:
        if inputs is not None:
            _check_inputs(inputs)
        template = ItemTemplate(prompt_template)
        output = _OutputSpec(output_schema)
        chosen = model if model is not None else self._model
        if chosen is None:
            raise InvalidArgumentError("no model: pass model= to LLMMap(...) or to run()")
        if not isinstance(chosen, str) or not chosen.strip():
            raise InvalidArgumentError(f"model must be a non-empty string, got {chosen!r}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        retries = _non_negative_int(
            self._config.max_retries if max_retries is None else max_retries, "max_retries"
        )
        workers = _positive_int(
            self._config.llm_map_concurrency if concurrency is None else concurrency,
            "concurrency",
        )
        seconds = DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise InvalidArgumentError(f"timeout must be a positive number, got {timeout!r}")
        system = "\n\n".join(p for p in (system_prompt, output.instruction) if p)
        prefix = ({"role": "system", "content": system},) if system else ()
        return _Plan(
            run_id=new_id("run"),
            template=template,
            output=output,
            model=chosen,
            client=resolve_client(chosen, self._llm),
            prefix=prefix,
            max_retries=retries,
            timeout=float(seconds),
            concurrency=workers,
            total=len(inputs) if isinstance(inputs, Sized) else None,
        )

    # -- execution ------------------------------------------------------------
    async def _stream(
        self, plan: _Plan, source: AsyncIterator[tuple[int, Any]]
    ) -> AsyncGenerator[MapResult, None]:
        tally = _Tally()
        started = time.perf_counter()
        self._publish(
            MnesisEvent.MAP_STARTED,
            {
                "operator": "llm_map",
                "run_id": plan.run_id,
                "total": plan.total,
                "model": plan.model,
                "concurrency": plan.concurrency,
            },
        )
        logger.info(
            "llm_map %s started: model=%s concurrency=%d", plan.run_id, plan.model, plan.concurrency
        )

        async def one(entry: tuple[int, Any]) -> MapResult:
            result = await self._process(plan, *entry)
            if result.success:
                tally.completed += 1
            else:
                tally.failed += 1
            self._publish(
                MnesisEvent.MAP_ITEM_COMPLETED,
                {
                    "operator": "llm_map",
                    "run_id": plan.run_id,
                    "index": result.index,
                    "success": result.success,
                    "attempts": result.attempts,
                    "completed": tally.completed + tally.failed,
                    "total": plan.total,
                },
            )
            return result

        async with contextlib.aclosing(bounded_map(source, one, plan.concurrency)) as results:
            async for result in results:
                yield result
        elapsed = _ms_since(started)
        self._publish(
            MnesisEvent.MAP_COMPLETED,
            {
                "operator": "llm_map",
                "run_id": plan.run_id,
                "total": tally.completed + tally.failed,
                "completed": tally.completed,
                "failed": tally.failed,
                "elapsed_ms": elapsed,
            },
        )
        logger.info(
            "llm_map %s finished: %d completed, %d failed in %d ms",
            plan.run_id,
            tally.completed,
            tally.failed,
            elapsed,
        )

    async def _process(self, plan: _Plan, index: int, item: Any) -> MapResult:
        if isinstance(item, _Unreadable):
            return MapResult(index=index, input=item.raw, success=False, error=item.error)
        try:
            prompt = plan.template.render(item, index)
        except TemplateError as exc:
            return MapResult(
                index=index,
                input=item,
                success=False,
                error=f"the template could not render this input: {type(exc).__name__}: {exc}",
            )
        base = [*plan.prefix, {"role": "user", "content": prompt}]
        messages = base
        usage = TokenUsage()
        error = ""
        attempts = plan.max_retries + 1
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                self._publish(
                    MnesisEvent.LLM_RETRY,
                    {
                        "operator": "llm_map",
                        "run_id": plan.run_id,
                        "index": index,
                        "attempt": attempt,
                        "error": error,
                    },
                )
            request = LLMRequest(model=plan.model, messages=messages, purpose="map")
            try:
                response = await complete(plan.client, request, timeout=plan.timeout)
            except LLMError as exc:
                error = str(exc)
                logger.debug("llm_map item %d attempt %d failed: %s", index, attempt, error)
                if attempt < attempts and self._backoff:
                    await asyncio.sleep(min(self._backoff * 2 ** (attempt - 1), 8.0))
                continue
            usage = response.usage if attempt == 1 else usage + response.usage
            try:
                output = plan.output.parse(response.text)
            except _InvalidOutput as exc:
                error = f"invalid output: {exc}"
                logger.debug("llm_map item %d attempt %d: %s", index, attempt, error)
                # Only the latest exchange is replayed, so retries do not grow the prompt.
                messages = [
                    *base,
                    {"role": "assistant", "content": response.text},
                    {"role": "user", "content": _FEEDBACK.format(error=exc)},
                ]
                continue
            return MapResult(
                index=index,
                input=item,
                success=True,
                output=output,
                attempts=attempt,
                token_usage=usage,
            )
        return MapResult(
            index=index,
            input=item,
            success=False,
            error=error,
            attempts=attempts,
            token_usage=usage,
        )

    async def _map_file(self, plan: _Plan, source: IO[str], sink: IO[str]) -> _Tally:
        tally = _Tally()
        pending: list[str] = []
        async with contextlib.aclosing(self._stream(plan, _read_jsonl(source))) as stream:
            async for result in stream:
                if result.success:
                    tally.completed += 1
                else:
                    tally.failed += 1
                pending.append(_result_line(result))
                if len(pending) >= _FILE_BATCH:
                    await asyncio.to_thread(_write_lines, sink, pending)
                    pending = []
        if pending:
            await asyncio.to_thread(_write_lines, sink, pending)
        return tally

    def _publish(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        if self._bus is not None:
            self._bus.publish(event, payload)


# -- helpers ------------------------------------------------------------------
def _operator_config(config: object) -> OperatorConfig:
    if config is None:
        return OperatorConfig()
    if isinstance(config, MnesisConfig):
        return config.operators
    if isinstance(config, OperatorConfig):
        return config
    raise InvalidArgumentError(
        f"config must be an OperatorConfig (or MnesisConfig), got {type(config).__name__}"
    )


def _check_inputs(inputs: object) -> None:
    if isinstance(inputs, str | bytes | bytearray | Mapping):
        raise InvalidArgumentError(
            f"inputs must be a list or iterable of items, got a {type(inputs).__name__}; "
            "wrap a single input in a list"
        )
    if not isinstance(inputs, Iterable | AsyncIterable):
        raise InvalidArgumentError(f"inputs must be iterable, got {type(inputs).__name__}")


def _non_negative_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _ms_since(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def bounded_map(
    source: AsyncIterator[T], fn: Callable[[T], Awaitable[R]], concurrency: int
) -> AsyncGenerator[R, None]:
    """Apply ``fn`` to every element of ``source`` with ``concurrency`` workers; yield
    the results in completion order (shared by both operators).

    Workers pull the next element only when they are free and put results in a
    bounded queue, so a slow consumer pauses the workers instead of letting results
    pile up, and at most ``concurrency`` calls of ``fn`` run at once. An exception
    escaping ``fn`` (or ``source``) stops the workers and is raised to the consumer.
    Closing the generator early cancels the workers and closes ``source``.
    """
    queue: asyncio.Queue[object] = asyncio.Queue(maxsize=concurrency * 2)
    pull = asyncio.Lock()

    async def worker() -> None:
        while True:
            # An async generator cannot be advanced by two tasks at once.
            async with pull:
                try:
                    entry = await anext(source)
                except StopAsyncIteration:
                    return
            await queue.put(await fn(entry))

    async def produce() -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(concurrency):
                    group.create_task(worker())
        except Exception as exc:
            await queue.put(_Crash(_unwrap(exc)))
        else:
            await queue.put(_DONE)

    producer = asyncio.create_task(produce())
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Crash):
                raise item.error
            yield cast(R, item)
    finally:
        # Reached on completion, on error, and when the consumer stops early
        # (aclose or cancellation): stop the workers first, then the reader.
        if not producer.done():
            producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


async def _enumerate(inputs: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[tuple[int, Any]]:
    if isinstance(inputs, AsyncIterable):
        iterator = aiter(inputs)
        try:
            index = 0
            async for item in iterator:
                yield index, item
                index += 1
        finally:
            # Stopping early must also stop the caller's async generator.
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
    else:
        for index, item in enumerate(inputs):
            yield index, item


def _read_batch(source: IO[str]) -> list[str]:
    return list(itertools.islice(source, _FILE_BATCH))


async def _read_jsonl(source: IO[str]) -> AsyncIterator[tuple[int, Any]]:
    line_number = 0
    while True:
        batch = await asyncio.to_thread(_read_batch, source)
        if not batch:
            return
        for raw in batch:
            index = line_number
            line_number += 1
            if not raw.strip():
                continue
            try:
                yield index, json.loads(raw)
            except json.JSONDecodeError as exc:
                yield index, _Unreadable(raw.rstrip("\r\n"), f"line {index + 1} is not JSON: {exc}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def _result_line(result: MapResult) -> str:
    record = {
        "index": result.index,
        "input": result.input,
        "success": result.success,
        "output": _jsonable(result.output),
        "error": result.error,
        "attempts": result.attempts,
    }
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


def _write_lines(sink: IO[str], lines: list[str]) -> None:
    sink.writelines(lines)
    sink.flush()
