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
  error and its class name (``error_type``). Failures never raise out of
  :meth:`LLMMap.run`: a template that cannot render an input (a division by zero,
  a bound of the sandbox) fails that input alone, and so does any unexpected error.
* Templates render in a thread, within the bounds of
  :class:`~mnesis.operators.bounds.RenderLimits`, so the event loop never waits on one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping, Sized
from dataclasses import dataclass
from typing import Any, Unpack

from pydantic import BaseModel

from mnesis.config import MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.events.bus import EventBus
from mnesis.llm import LLMClient, LLMRequest, complete, resolve_client
from mnesis.models.ids import new_id
from mnesis.models.tokens import TokenUsage
from mnesis.operators.checks import (
    check_event_bus,
    check_model,
    int_option,
    operator_config,
    run_model,
)
from mnesis.operators.concurrency import enumerate_inputs
from mnesis.operators.errors import TemplateRenderError
from mnesis.operators.jsonl import Unreadable, map_file
from mnesis.operators.options import LLMMapOptions, MapOptions
from mnesis.operators.output import InvalidOutput, OutputSpec
from mnesis.operators.results import MapBatch, MapFileSummary, MapResult
from mnesis.operators.runner import MapRun, collect_batch, ms_since
from mnesis.operators.template import ItemTemplate
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "LLMMap"]

logger = logging.getLogger("mnesis.operators")

DEFAULT_TIMEOUT_SECONDS = 120.0
"""Per-call model timeout when ``timeout`` is not given."""

_FEEDBACK = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only the corrected answer, no explanation."
)
_MAX_BACKOFF_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class _Plan:
    """One run's arguments, checked, with the defaults filled in."""

    run_id: str
    template: ItemTemplate
    output: OutputSpec
    """How each reply is parsed and validated."""
    model: str
    client: LLMClient
    prefix: tuple[dict[str, Any], ...]
    """The system message sent before every item's prompt, if there is one."""
    max_retries: int
    timeout: float
    concurrency: int
    total: int | None
    """The number of inputs; ``None`` for an iterable without a length."""
    temperature: float | None = None
    """Sent to the model only when given."""
    guidance: str | None = None
    """The text of the follow-up message after an invalid output (``retry_guidance``)."""


class LLMMap:
    """Stateless parallel model calls over many inputs.

    ``config`` gives ``llm_map_concurrency`` and ``max_retries``; ``event_bus``, if
    given, receives ``map.started``, ``map.item_completed``, ``map.completed`` and
    ``llm.retry``. ``llm`` is any :class:`~mnesis.llm.LLMClient` (default: the
    client :func:`~mnesis.llm.resolve_client` picks for the model). A model error is
    retried after ``retry_backoff`` seconds, doubling per attempt (at most 8 s).

    ``estimator`` is accepted for 0.4.0's code and not used (LLMMap counts the tokens
    the model reports); an :class:`~mnesis.events.EventBus` given in its place (the
    earlier ``LLMMap(config, bus)``) is taken as ``event_bus``.
    """

    def __init__(
        self,
        config: OperatorConfig | MnesisConfig | None = None,
        estimator: TokenEstimator | EventBus | None = None,
        event_bus: EventBus | None = None,
        model: str | None = None,
        *,
        llm: LLMClient | None = None,
        retry_backoff: float = 0.5,
    ) -> None:
        self._config = operator_config(config)
        if isinstance(estimator, EventBus) and event_bus is None:
            estimator, event_bus = None, estimator
        if estimator is not None and not isinstance(estimator, TokenEstimator):
            raise InvalidArgumentError(
                f"estimator must be a TokenEstimator, got {type(estimator).__name__}"
            )
        self._bus = check_event_bus(event_bus)
        if model is not None:
            check_model(model)
        if isinstance(retry_backoff, bool) or not isinstance(retry_backoff, int | float):
            raise InvalidArgumentError("retry_backoff must be a number of seconds")
        if retry_backoff < 0:
            raise InvalidArgumentError(f"retry_backoff must be >= 0, got {retry_backoff}")
        self._llm = llm
        self._model = model
        self._backoff = float(retry_backoff)

    # -- public API -----------------------------------------------------------
    def run(
        self,
        inputs: Iterable[Any] | AsyncIterable[Any],
        prompt_template: str,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        **options: Unpack[LLMMapOptions],
    ) -> AsyncGenerator[MapResult, None]:
        """Map ``prompt_template`` over ``inputs``; yields results in completion order.

        ``inputs`` is any iterable or async iterable (consumed lazily). The template
        sees ``item`` and ``index``. ``output_schema`` is a pydantic model (each output
        is an instance of it), a JSON-schema dict (the output is the parsed JSON) or
        ``None`` (the output is the reply text). The keyword ``options`` are those of
        :class:`~mnesis.operators.LLMMapOptions` (``model``, ``system_prompt``,
        ``max_retries``, ``timeout``, ``concurrency``, ``temperature``,
        ``retry_guidance``, or all of them as ``options=MapOptions(...)``).

        Raises :class:`~mnesis.errors.InvalidArgumentError` immediately, before any
        model call, for a template without ``{{ item }}`` or any other bad argument
        (:class:`~mnesis.operators.UnknownOptionError` for a keyword that is no option).
        Per-item failures are reported in the results, never raised. Break out of
        the loop inside ``contextlib.aclosing(...)`` to stop in-flight work at once.
        """
        plan = self._plan(options, "run", prompt_template, inputs, output_schema)
        return self._stream(plan, enumerate_inputs(inputs))

    async def run_all(
        self,
        inputs: Iterable[Any] | AsyncIterable[Any],
        prompt_template: str,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        **options: Unpack[LLMMapOptions],
    ) -> MapBatch:
        """Like :meth:`run`, collected into a :class:`MapBatch` sorted by ``index``."""
        plan = self._plan(options, "run_all", prompt_template, inputs, output_schema)
        stream = self._stream(plan, enumerate_inputs(inputs))
        return await collect_batch(stream, plan.run_id, MapBatch)

    async def run_jsonl(
        self,
        input_path: str,
        output_path: str,
        prompt_template: str,
        *,
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        **options: Unpack[LLMMapOptions],
    ) -> MapFileSummary:
        """File mode: each non-blank line of ``input_path`` is one JSON input; one JSON
        line per result is written to ``output_path`` as results complete. The options
        are those of :meth:`run`.

        An output line is ``{"index", "input", "success", "output", "error",
        "attempts"}``; ``index`` is the 0-based line number of the input. A line that
        is not JSON becomes a failed result (it is never sent to the model). The input
        is read in small batches and at most ``concurrency`` items are in flight, so
        memory stays bounded whatever the file size. ``output_path`` is overwritten
        (a bad argument raises before it is opened). Raises ``OSError`` if a file
        cannot be opened.
        """
        plan = self._plan(options, "run_jsonl", prompt_template, None, output_schema)
        for name, path in (("input_path", input_path), ("output_path", output_path)):
            if not isinstance(path, str) or not path.strip():
                raise InvalidArgumentError(f"{name} must be a non-empty path, got {path!r}")
        started = time.perf_counter()
        completed, failed = await map_file(
            input_path, output_path, lambda lines: self._stream(plan, lines)
        )
        return MapFileSummary(
            run_id=plan.run_id,
            output_path=output_path,
            total=completed + failed,
            completed=completed,
            failed=failed,
            elapsed_ms=ms_since(started),
        )

    # -- planning -------------------------------------------------------------
    def _plan(
        self,
        keywords: LLMMapOptions,
        method: str,
        prompt_template: str,
        inputs: object,
        output_schema: type[BaseModel] | dict[str, Any] | None,
    ) -> _Plan:
        """Check every argument of ``method`` (``inputs`` is ``None`` in file mode)."""
        options = MapOptions.from_keywords(keywords, f"LLMMap.{method}", output_schema)
        if inputs is not None:
            _check_inputs(inputs)
        template = ItemTemplate(prompt_template)
        output = OutputSpec(options.output_schema)
        chosen = run_model(options.model, self._model, "LLMMap")
        system_prompt = options.system_prompt
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        timeout = options.timeout if options.timeout is not None else options.timeout_secs
        seconds = DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise InvalidArgumentError(f"timeout must be a positive number, got {timeout!r}")
        system = "\n\n".join(p for p in (system_prompt, output.instruction) if p)
        return _Plan(
            run_id=new_id("run"),
            template=template,
            output=output,
            model=chosen,
            client=resolve_client(chosen, self._llm),
            prefix=({"role": "system", "content": system},) if system else (),
            max_retries=int_option(options.max_retries, self._config.max_retries, 0, "max_retries"),
            timeout=float(seconds),
            concurrency=int_option(
                options.concurrency, self._config.llm_map_concurrency, 1, "concurrency"
            ),
            total=len(inputs) if isinstance(inputs, Sized) else None,
            temperature=_temperature(options.temperature),
            guidance=_guidance(options.retry_guidance),
        )

    # -- execution ------------------------------------------------------------
    async def _stream(
        self, plan: _Plan, source: AsyncIterator[tuple[int, Any]]
    ) -> AsyncGenerator[MapResult, None]:
        run = MapRun("llm_map", plan.run_id, self._bus)
        run.start(plan.total, model=plan.model, concurrency=plan.concurrency)

        async def one(entry: tuple[int, Any]) -> MapResult:
            return await self._process(plan, run, *entry)

        mapped = run.map(source, one, concurrency=plan.concurrency, total=plan.total)
        async with contextlib.aclosing(mapped) as results:
            async for result in results:
                yield result
        run.finish(run.completed + run.failed)

    async def _process(self, plan: _Plan, run: MapRun, index: int, item: Any) -> MapResult:
        """One item, whatever happens to it: every failure becomes a failed result."""
        if isinstance(item, Unreadable):
            return MapResult(
                index=index,
                input=item.raw,
                success=False,
                error=item.error,
                error_type="InvalidArgumentError",
            )
        try:
            prompt = await plan.template.render_async(item, index)
        except TemplateRenderError as exc:
            return MapResult(
                index=index, input=item, success=False, error=str(exc), error_type=_name(exc)
            )
        try:
            return await self._attempts(plan, run, index, item, prompt)
        except Exception as exc:  # a per-item failure must never abort the batch
            logger.warning("llm_map item %d failed unexpectedly", index, exc_info=True)
            return MapResult(
                index=index,
                input=item,
                success=False,
                error=f"{type(exc).__name__}: {exc}",
                error_type=_name(exc),
            )

    async def _attempts(
        self, plan: _Plan, run: MapRun, index: int, item: Any, prompt: str
    ) -> MapResult:
        """The attempt loop of one item: a model error is retried with the same
        prompt after a backoff, an invalid output with the validation error as feedback."""
        base = [*plan.prefix, {"role": "user", "content": prompt}]
        messages = base
        usage = TokenUsage()
        error = ""
        error_type = ""
        attempts = plan.max_retries + 1
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                run.retry(index, attempt, error)
            request = LLMRequest(
                model=plan.model, messages=messages, purpose="map", temperature=plan.temperature
            )
            try:
                response = await complete(plan.client, request, timeout=plan.timeout)
            except LLMError as exc:
                error, error_type = str(exc), _name(exc)
                logger.debug("llm_map item %d attempt %d failed: %s", index, attempt, error)
                if attempt < attempts and self._backoff:
                    delay = self._backoff * 2 ** (attempt - 1)
                    await asyncio.sleep(min(delay, _MAX_BACKOFF_SECONDS))
                continue
            usage = response.usage if attempt == 1 else usage + response.usage
            try:
                output = plan.output.parse(response.text)
            except InvalidOutput as exc:
                error, error_type = f"invalid output: {exc}", _name(exc)
                logger.debug("llm_map item %d attempt %d: %s", index, attempt, error)
                # Only the latest exchange is replayed, so retries do not grow the prompt.
                messages = [
                    *base,
                    {"role": "assistant", "content": response.text},
                    {"role": "user", "content": _feedback(plan, exc)},
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
            error_type=error_type,
            attempts=attempts,
            token_usage=usage,
        )


def _name(exc: BaseException) -> str:
    return type(exc).__name__


def _feedback(plan: _Plan, exc: Exception) -> str:
    if plan.guidance is None:
        return _FEEDBACK.format(error=exc)
    return f"{plan.guidance}\n\nThe problem: {exc}"


def _temperature(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise InvalidArgumentError(f"temperature must be a number from 0 to 2, got {value!r}")
    return float(value)


def _guidance(value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InvalidArgumentError(f"retry_guidance must be a non-empty string, got {value!r}")
    return value


def _check_inputs(inputs: object) -> None:
    if isinstance(inputs, str | bytes | bytearray | Mapping):
        raise InvalidArgumentError(
            f"inputs must be a list or iterable of items, got a {type(inputs).__name__}; "
            "wrap a single input in a list"
        )
    if not isinstance(inputs, Iterable | AsyncIterable):
        raise InvalidArgumentError(f"inputs must be iterable, got {type(inputs).__name__}")
