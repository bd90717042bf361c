"""Batch model calls: a run's Anthropic calls sent as ONE Message Batch, answers into the cache.

Planned calls (each: its response cache key, its kind and its request exactly as the adapter
would send it) are submitted with `client.messages.batches.create`, the batch is polled with
a progress line and a bounded total wait, and its JSONL results are mapped back to the keys:
a `succeeded` message is read and priced like a normal answer, at the batch discount (50% of
the price book's price); an `errored`, `expired` or `canceled` request is that call's
`ModelCallError`, naming the case's call and the result type. Answers go into the response
cache, so the normal evaluation then reads them without any further call. Judge calls need
the model's outputs, so a run sends two batches: model calls first, then judge calls
(docs/sharding.md, "Batch model calls").
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
from verdryx_core.llm.base import CALL_NAMES, Completion, Judgement
from verdryx_core.llm.cache import CachedAdapter
from verdryx_core.llm.call_request import call_request
from verdryx_core.llm.progress import Progress, TextStream
from verdryx_core.untrusted.redact import redact_url

__all__ = [
    "BATCH_PRICE_FACTOR",
    "DEFAULT_MAX_WAIT_S",
    "DEFAULT_POLL_S",
    "BatchResult",
    "PlannedCall",
    "check_batchable",
    "custom_id",
    "plan_call",
    "prefetch_batch",
    "run_batch",
]

#: Message Batches are billed at half the standard price (input and output tokens alike).
BATCH_PRICE_FACTOR: Final = 0.5
#: Most batches end within the hour; the provider's own limit is 24 hours.
DEFAULT_MAX_WAIT_S: Final = 3600.0
#: The first wait between polls; each next one doubles, up to `MAX_POLL_S`: a small batch
#: that ends in seconds is seen in seconds, a long one costs a request every half minute.
DEFAULT_POLL_S: Final = 0.25
MAX_POLL_S: Final = 30.0


def custom_id(key: str) -> str:
    """The batch request id of a call: `^[a-zA-Z0-9_-]{1,64}$`, from its cache key."""
    return "v" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCall:
    """One call to make in a batch."""

    #: The response cache key (`CachedAdapter.cache_key`).
    key: str
    #: complete, tools or judge.
    kind: str
    #: The Messages API request, exactly as the adapter sends it (`request_params`).
    params: Mapping[str, Any]
    #: Names the case's call in an error, e.g. "case support::c3".
    label: str = ""

    @property
    def call(self) -> str:
        name = CALL_NAMES.get(self.kind, self.kind)
        return f"{self.label}, {name}" if self.label else name


def plan_call(
    cached: CachedAdapter,
    kind: str,
    prompt: str,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    output: str | None = None,
    rubric: str | None = None,
    repeat: int = 0,
    label: str = "",
    system: str | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
) -> PlannedCall:
    """The planned call the protocol call `kind` (with these arguments) would make."""
    adapter = _anthropic(cached)
    arguments: dict[str, Any] = {
        "tools": tools,
        "output": output,
        "rubric": rubric,
        "system": system,
        "messages": messages,
    }
    return PlannedCall(
        key=cached.cache_key(kind, prompt, repeat=repeat, **arguments),
        kind=kind,
        params=adapter.request_params(call_request(kind, prompt, **arguments)),
        label=label,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    batch_id: str | None
    answers: Mapping[str, Completion | Judgement] = field(default_factory=dict)
    errors: Mapping[str, ModelCallError] = field(default_factory=dict)


def _anthropic(cached: CachedAdapter | AnthropicAdapter) -> AnthropicAdapter:
    inner = cached.inner if isinstance(cached, CachedAdapter) else cached
    if not isinstance(inner, AnthropicAdapter):
        raise UsageError(
            f"batch model calls need an Anthropic model; {inner.model!r} is not one",
            hint="drop {batch}, or evaluate a claude-* model",
        )
    return inner


def run_batch(
    adapter: AnthropicAdapter,
    calls: Sequence[PlannedCall],
    *,
    poll_s: float = DEFAULT_POLL_S,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
    stream: TextStream | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> BatchResult:
    """Submit `calls` (distinct keys) as one batch, wait for it, map its results to keys.

    A failure of the batch as a whole (refused, unreachable, not ended within `max_wait_s`)
    raises one `ModelCallError`; a failed request is that key's error in the result."""
    if not calls:
        return BatchResult(batch_id=None)
    by_id: dict[str, PlannedCall] = {}
    for planned in calls:
        by_id.setdefault(custom_id(planned.key), planned)
    out = sys.stderr if stream is None else stream
    client = adapter._get_client()
    sdk = adapter._sdk
    requests: list[Any] = [{"custom_id": cid, "params": dict(p.params)} for cid, p in by_id.items()]
    kinds = Counter(CALL_NAMES.get(p.kind, p.kind) for p in by_id.values())
    shown = ", ".join(
        f"{count} {name}{'s' if count != 1 else ''}" for name, count in sorted(kinds.items())
    )
    try:
        batch = client.messages.batches.create(requests=requests)
    except sdk.AnthropicError as exc:
        raise adapter._errors().from_sdk(exc, sdk, "batch submission") from None
    out.write(
        f"batch {batch.id}: {len(requests)} requests ({shown}) submitted to "
        f"{redact_url(adapter.base_url)}; waiting for it at most {max_wait_s:g}s\n"
    )
    out.flush()
    progress = Progress(len(requests), stream=out, label=f"batch {batch.id}", clock=clock)
    started = clock()
    wait = poll_s
    try:
        while batch.processing_status != "ended":
            if clock() - started >= max_wait_s:
                _cancel(client, batch.id)
                raise ModelCallError(
                    f"model {adapter.model}: batch {batch.id} did not end within "
                    f"{max_wait_s:g}s ({_counts(batch)}); it was asked to cancel. Run again "
                    "without batching, or allow a longer wait"
                )
            sleep(wait)
            wait = min(MAX_POLL_S, wait * 2)
            try:
                batch = client.messages.batches.retrieve(batch.id)
            except sdk.AnthropicError as exc:
                raise adapter._errors().from_sdk(exc, sdk, f"batch {batch.id} status") from None
            progress.advance(_done(batch) - progress.done)
        progress.advance(len(requests) - progress.done)
    finally:
        progress.close()
    try:
        lines = list(client.messages.batches.results(batch.id))
    except sdk.AnthropicError as exc:
        raise adapter._errors().from_sdk(exc, sdk, f"batch {batch.id} results") from None
    return _map_results(adapter, batch.id, by_id, lines)


def _done(batch: Any) -> int:
    counts = batch.request_counts
    return int(counts.succeeded + counts.errored + counts.canceled + counts.expired)


def _counts(batch: Any) -> str:
    counts = batch.request_counts
    return (
        f"{counts.processing} processing, {counts.succeeded} succeeded, {counts.errored} "
        f"errored, {counts.expired} expired, {counts.canceled} canceled"
    )


def _cancel(client: Any, batch_id: str) -> None:
    # Best effort: the error that follows says what happened either way.
    with contextlib.suppress(Exception):
        client.messages.batches.cancel(batch_id)


def _map_results(
    adapter: AnthropicAdapter, batch_id: str, by_id: Mapping[str, PlannedCall], lines: Iterable[Any]
) -> BatchResult:
    answers: dict[str, Completion | Judgement] = {}
    errors: dict[str, ModelCallError] = {}
    for line in lines:
        planned = by_id.get(getattr(line, "custom_id", None) or "")
        if planned is None:
            continue  # not ours: ids are hashes of our keys, so a stray line is ignored
        result = line.result
        kind = getattr(result, "type", None)
        where = f"model {adapter.model} ({planned.call}, batch result {kind})"
        if kind == "succeeded":
            message = (
                result.message.to_dict(mode="json", warnings=False)
                if result.message is not None
                else None
            )
            try:
                answers[planned.key] = adapter.answer_from_message(
                    planned.kind, message, price_factor=BATCH_PRICE_FACTOR, call=planned.call
                )
            except ModelCallError as exc:
                errors[planned.key] = exc
        elif kind == "errored":
            error = getattr(getattr(result, "error", None), "error", None)
            detail = f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', '')}"
            errors[planned.key] = ModelCallError(
                adapter._errors().redact(
                    f"{where}: the provider refused this request in batch {batch_id} "
                    f"({detail.strip()}); check the request, or run it without batching"
                )
            )
        else:
            errors[planned.key] = ModelCallError(
                f"{where}: batch {batch_id} ended without an answer for this request; run "
                "again (answers that succeeded are cached and not sent twice)"
            )
    for planned in by_id.values():
        if planned.key not in answers and planned.key not in errors:
            errors[planned.key] = ModelCallError(
                f"model {adapter.model} ({planned.call}): batch {batch_id} returned no result "
                "for this request; run again"
            )
    return BatchResult(batch_id=batch_id, answers=answers, errors=errors)


def check_batchable(model: str, *, cache: str = "on") -> None:
    """A `UsageError` now, at configure time, when `model` cannot be batched (or the cache,
    through which the answers reach the cases, is not on)."""
    if model == "stub" or ":" in model:
        raise UsageError(
            f"batch model calls need an Anthropic model; {model!r} is not one",
            hint="drop {batch}, or evaluate a claude-* model",
        )
    if cache != "on":
        raise UsageError(
            f"batch model calls need the response cache on, not {cache!r}: the batch's "
            "answers reach the cases through it",
            hint="pass {cache} on, or drop {batch}",
        )


def prefetch_batch(
    cached: CachedAdapter,
    calls: Iterable[PlannedCall],
    **options: Any,
) -> BatchResult:
    """Answer `calls` through one batch and put every answer (and every failed call's error)
    into `cached`, so the evaluation then calls nothing. Calls already in the response cache
    (or repeated in `calls`) are not sent. `options` go to `run_batch`."""
    adapter = _anthropic(cached)
    if cached.mode != "on":
        raise UsageError(
            f"batch model calls need the response cache on, not {cached.mode!r}: the "
            "batch's answers reach the cases through it",
            hint="pass {cache} on, or drop {batch}",
        )
    unique: dict[str, PlannedCall] = {}
    for planned in calls:
        unique.setdefault(planned.key, planned)
    cached.preload(unique)
    wanted = [planned for key, planned in unique.items() if not cached.has(key)]
    try:
        result = run_batch(adapter, wanted, **options)
    except ModelCallError as exc:
        # The batch as a whole failed (refused, unreachable, not ended in time): each of its
        # calls fails with that error, so each case says why; nothing is paid twice by
        # quietly sending the calls again one by one.
        result = BatchResult(
            batch_id=None,
            errors={
                planned.key: ModelCallError(f"{exc} ({planned.call})", status=exc.status)
                for planned in wanted
            },
        )
    for key, answer in result.answers.items():
        cached.remember(key, answer)
    for key, error in result.errors.items():
        cached.remember_error(key, error)
    return result
