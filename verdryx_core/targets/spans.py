"""The OpenTelemetry spans of one target call, collected while it runs (docs/targets.md,
"Frameworks").

Each call runs inside a span of verdryx's own (`verdryx.target_call`), the root of a trace of
its own; every span that ends in that trace while the call runs is the call's, whatever thread
or asyncio task it ended in (a framework's tool run in a worker thread, a task the agent
spawned), as long as OpenTelemetry's context reached it, as it does through tasks,
`asyncio.to_thread` and the frameworks' own instrumentation. Spans are told apart by trace,
so concurrent calls never see each other's.

The spans reach verdryx through a span processor: added to the tracer provider the process
already set (an SDK `TracerProvider`), or, when none is set, to a provider of verdryx's own,
set as the global one so the frameworks' tracers find it. Set once per process.

`opentelemetry-sdk` is imported on the first call that collects, never before: a run with
`off`, without the SDK installed, or without a target pays nothing.
"""

from __future__ import annotations

import contextvars
import importlib.util
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from verdryx_core.settings_table import setting
from verdryx_core.targets.genai import SpanRecord, read_spans, with_reading
from verdryx_core.targets.result import TargetResult

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "OTEL_MODES",
    "CallSpans",
    "SpanCollector",
    "merge_current",
    "outside_call",
    "span_collector",
]

T = TypeVar("T")

#: `--verdryx-otel`: `auto` collects when opentelemetry-sdk is importable, `off` never.
OTEL_MODES: Final = setting("verdryx_otel").choices

_CALL_SPAN: Final = "verdryx.target_call"


class CallSpans:
    """One call's collection: use as `with collector.call(label) as spans:` around the call,
    in the thread or task that makes it. `merge(result)` gives the result what the spans
    ended so far say and it does not (verdryx_core.targets.genai); each span is read once,
    so a dialogue merges each turn's own."""

    def __init__(self, collector: SpanCollector, label: str) -> None:
        self._collector = collector
        self._label = label
        self._span: Span | None = None
        self._tokens: tuple[object, contextvars.Token[CallSpans | None]] | None = None
        self._trace_id = 0
        self._records: list[SpanRecord] = []
        self._read = 0
        #: The spans gave a result something it did not say itself.
        self.took = False
        #: A result said its own tool calls or usage, and the spans had them too.
        self.overridden = False

    def __enter__(self) -> CallSpans:
        from opentelemetry import context, trace

        # A root: the caller's own current span (a test's, the session's) is never a parent,
        # so this call's trace holds only this call.
        span = self._collector.tracer.start_span(
            _CALL_SPAN, context=_empty_context(), attributes={"verdryx.case": self._label}
        )
        self._span = span
        self._trace_id = span.get_span_context().trace_id
        self._collector.watch(self._trace_id, self._records)
        self._tokens = (context.attach(trace.set_span_in_context(span)), _current.set(self))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from opentelemetry import context

        assert self._span is not None and self._tokens is not None
        otel, mine = self._tokens
        try:
            _current.reset(mine)
            context.detach(otel)  # type: ignore[arg-type]
        finally:
            # Forgotten first: verdryx's own span is not one of the call's.
            self._collector.forget(self._trace_id)
            self._span.end()

    def merge(self, result: TargetResult) -> TargetResult:
        # Only spans not read yet are counted; the whole trace gives their parents (a total's
        # children may have been read before).
        with self._collector.lock:
            fresh = self._records[self._read :]
            known = list(self._records)
            self._read = len(known)
        if not fresh:
            return result
        reading = read_spans(sorted(fresh, key=_started), context=known)
        merged, took, overridden = with_reading(result, reading)
        self.took |= took
        self.overridden |= overridden
        return merged


#: The call whose spans are being collected in this context (a dialogue's turns merge there).
_current: contextvars.ContextVar[CallSpans | None] = contextvars.ContextVar(
    "verdryx_call_spans", default=None
)


def merge_current(result: TargetResult) -> TargetResult:
    """`result` merged with the spans of the call this context is collecting, if any."""
    call = _current.get()
    return result if call is None else call.merge(result)


def outside_call(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a context of no call and no span: verdryx's own work inside a call
    (a simulated user's model turn) is never one of the agent's spans."""
    return contextvars.Context().run(function, *args)


def _started(record: SpanRecord) -> int:
    return record.start_ns


class SpanCollector:
    """The process's one span processor and the traces it is watching (one per call in
    flight). Thread-safe: spans end in any thread."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.lock = threading.Lock()
        self._watched: dict[int, list[SpanRecord]] = {}

    def call(self, label: str) -> CallSpans:
        return CallSpans(self, label)

    def watch(self, trace_id: int, records: list[SpanRecord]) -> None:
        with self.lock:
            self._watched[trace_id] = records

    def forget(self, trace_id: int) -> None:
        with self.lock:
            self._watched.pop(trace_id, None)

    def ended(self, span: ReadableSpan) -> None:
        """The processor's `on_end`: a span of a watched trace is kept, any other ignored."""
        context = span.context
        if context is None:
            return
        with self.lock:
            if context.trace_id not in self._watched:
                return
        parent = span.parent
        record = SpanRecord(
            span_id=context.span_id,
            parent_id=None if parent is None else parent.span_id,
            name=span.name,
            start_ns=span.start_time or 0,
            attributes=dict(span.attributes or {}),
        )
        with self.lock:
            records = self._watched.get(context.trace_id)
            if records is not None:
                records.append(record)


_lock = threading.Lock()
_installed: SpanCollector | None = None
_tried = False


def span_collector(mode: str) -> SpanCollector | None:
    """The process's collector, installed on first use; None with `off`, when opentelemetry-sdk
    is not installed, or when the global tracer provider is not the SDK's (a vendor's own
    implementation takes no span processor)."""
    global _installed, _tried
    if mode == "off":
        return None
    with _lock:
        if not _tried:
            _tried = True
            _installed = _install()
        return _installed


def _install() -> SpanCollector | None:
    if importlib.util.find_spec("opentelemetry") is None:
        return None
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    from verdryx_core.version import __version__

    provider: Any = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):  # none set: verdryx's own
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()  # the one that won, had another thread set one
    # The SDK's provider by what it does, not its class: a module imported anew (pytester's
    # in-process sessions restore sys.modules) has another class of the same provider.
    if not callable(getattr(provider, "add_span_processor", None)):
        return None
    collector = SpanCollector(provider.get_tracer("verdryx", __version__))

    class _Processor(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            collector.ended(span)

    provider.add_span_processor(_Processor())
    return collector


def _empty_context() -> Context:
    from opentelemetry.context import Context

    return Context()
