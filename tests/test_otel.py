"""OTLP span export: the payload parses as an ExportTraceServiceRequest, a loopback
collector receives it before a process exits, and a silent collector costs at most the timeout.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from fakes.otlp_collector import FakeCollector
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from verdryx_core.addons.events.otlp import (
    SpanExporter,
    build_payload,
    resolve_otlp_endpoint,
    run_span_attributes,
    span_id,
    trace_id,
    traces_url,
)
from verdryx_core.errors import UsageError
from verdryx_core.runs import EvalRun, Score

ATTRIBUTES = {
    "model": "claude-x",
    "cases": 5,
    "mean_score": 0.9,
    "delta": -0.2,
    "verdict": "regressed",
    "regressed": True,
    "total_cost_usd": 0.0125,
    "ci_low": None,
    "t_statistic": float("nan"),
}


def parse(payload: dict[str, Any]) -> ExportTraceServiceRequest:
    """Parse as the generated protobuf code does: strict about every field name and type."""
    return json_format.Parse(json.dumps(payload), ExportTraceServiceRequest())


def parse_with_ids(payload: dict[str, Any]) -> ExportTraceServiceRequest:
    """OTLP/JSON writes ids as hex where protobuf JSON expects base64: translate, then parse."""
    payload = copy.deepcopy(payload)
    for resource in payload["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return parse(payload)


def attributes_of(span: Any) -> dict[str, Any]:
    values = {}
    for item in span.attributes:
        kind = item.value.WhichOneof("value")
        values[item.key] = getattr(item.value, kind)
    return values


def test_ids_are_derived_from_the_run_id() -> None:
    # sha256("verdryx-trace|run-1")[:32] (docs/events-and-otlp.md), computed independently.
    assert trace_id("run-1") == "09f6f5433782223fc5e6cec9b152cc8b"
    assert trace_id("run-1") != trace_id("run-2")
    assert len(span_id("run-1", "eval_run", 1)) == 16
    assert span_id("run-1", "eval_run", 1) != span_id("run-1", "quality_drift", 1)


def test_payload_parses_into_export_trace_service_request() -> None:
    payload = build_payload(
        "eval_run", "run-1", ATTRIBUTES, agent_id="agent://a.example/bot", timestamp_ns=1_700
    )
    request = parse(payload)
    assert len(request.resource_spans) == 1
    request = parse_with_ids(payload)
    resource = request.resource_spans[0]
    assert attributes_of(resource.resource)["service.name"] == "verdryx"
    assert resource.scope_spans[0].scope.name == "verdryx"
    (span,) = resource.scope_spans[0].spans
    assert span.name == "eval_run"
    assert span.trace_id == bytes.fromhex(trace_id("run-1")) and len(span.trace_id) == 16
    assert len(span.span_id) == 8
    assert span.kind == span.SPAN_KIND_INTERNAL
    assert span.start_time_unix_nano == span.end_time_unix_nano == 1_700
    assert attributes_of(span) == {
        "verdryx.run_id": "run-1",
        "verdryx.agent_id": "agent://a.example/bot",
        "verdryx.model": "claude-x",
        "verdryx.cases": 5,
        "verdryx.mean_score": 0.9,
        "verdryx.delta": -0.2,
        "verdryx.verdict": "regressed",
        "verdryx.regressed": True,
        "verdryx.total_cost_usd": 0.0125,
        # ci_low (None) and t_statistic (NaN) are left out, never sent as a made-up number
    }
    keys = [item.key for item in span.attributes]
    assert keys[:2] == ["verdryx.run_id", "verdryx.agent_id"]


def test_payload_is_pure_and_a_run_and_its_drift_check_share_a_trace() -> None:
    first = build_payload("eval_run", "run-7", {"cases": 3}, timestamp_ns=10)
    assert first == build_payload("eval_run", "run-7", {"cases": 3}, timestamp_ns=10)
    drift = build_payload("quality_drift", "run-7", {"verdict": "on-track"}, timestamp_ns=99)
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    later = drift["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == later["traceId"]
    assert span["spanId"] != later["spanId"]
    assert [a["key"] for a in span["attributes"]] == ["verdryx.run_id", "verdryx.cases"]


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://h:4318",
        "http://h:4318/",
        "http://h:4318/v1/traces",
        "http://h:4318/v1/traces/",
        " http://h:4318 ",
    ],
)
def test_traces_url_normalisation(endpoint: str) -> None:
    assert traces_url(endpoint) == "http://h:4318/v1/traces"


def test_a_bad_endpoint_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="VERDRYX_OTLP_ENDPOINT"):
        SpanExporter("localhost:4318")


def test_resolve_otlp_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_otlp_endpoint({"VERDRYX_OTLP_ENDPOINT": "http://c:4318"}) == "http://c:4318"
    assert resolve_otlp_endpoint({"VERDRYX_OTLP_ENDPOINT": "  "}) is None
    assert resolve_otlp_endpoint({}) is None
    monkeypatch.setenv("VERDRYX_OTLP_ENDPOINT", "http://live:4318")
    assert resolve_otlp_endpoint() == "http://live:4318"


def test_run_span_attributes() -> None:
    run = EvalRun(
        id="run-1",
        model="stub",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        scores=(
            Score(case_id="a", eval_set_id="s", value=1.0, grader="exact", cost_usd=0.5),
            Score(case_id="b", eval_set_id="s", value=None, grader="typed", unmeasured="timeout"),
        ),
    )
    attributes = run_span_attributes(run)
    assert attributes["cases"] == 1 and attributes["unmeasured"] == 1
    assert attributes["mean_score"] == 1.0 and attributes["total_cost_usd"] == 0.5
    parse(build_payload("eval_run", run.id, attributes, timestamp_ns=1))


# -- delivery ----------------------------------------------------------------------------------


def test_a_loopback_collector_receives_the_span() -> None:
    with FakeCollector() as collector:
        exporter = SpanExporter(collector.url, timeout=2.0)
        exporter.export("eval_run", "run-1", {"cases": 2, "mean_score": 0.5})
        assert exporter.wait() is True
        (received,) = collector.received
    assert received.method == "POST" and received.path == "/v1/traces"
    assert received.content_type == "application/json"
    request = parse_with_ids(received.json())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    assert span.name == "eval_run"
    assert span.trace_id == bytes.fromhex(trace_id("run-1"))
    assert exporter.delivered == 1 and exporter.failed == 0


SUBPROCESS = textwrap.dedent(
    """
    import sys, time
    from verdryx_core.addons.events.otlp import SpanExporter
    exporter = SpanExporter(sys.argv[1], timeout=float(sys.argv[2]))
    exporter.export("eval_run", "run-sub", {"cases": 1})
    started = time.monotonic()
    delivered = exporter.wait()
    print(delivered, round(time.monotonic() - started, 3))
    """
)


def run_exporting_process(url: str, timeout: float) -> tuple[bool, float, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, url, str(timeout)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    delivered, waited = done.stdout.split()
    return delivered == "True", float(waited), time.monotonic() - started


def test_the_span_arrives_before_the_process_exits() -> None:
    with FakeCollector() as collector:
        delivered, _, _ = run_exporting_process(collector.url, 2.0)
        # The process has exited; the collector already holds the span.
        assert delivered
        (received,) = collector.received
    span = received.json()["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == trace_id("run-sub")


def test_a_collector_that_never_answers_costs_at_most_the_timeout() -> None:
    timeout = 0.4
    spans = 25  # one timeout each, one after the other, would be 10 s: 2.5x the bound below
    with FakeCollector(mode="hang") as collector:
        exporter = SpanExporter(collector.url, timeout=timeout)
        started = time.monotonic()
        for index in range(spans):  # many spans, one shared deadline: not one timeout each
            exporter.export("eval_run", f"run-{index}", {"cases": 1})
        exported_in = time.monotonic() - started
        waiting = time.monotonic()
        delivered = exporter.wait()
        waited = time.monotonic() - waiting
        assert collector.arrived.is_set()
    # export returns at once, without waiting to deliver: waiting would cost spans x timeout
    # (10 s); a fifth of that leaves a busy machine's scheduling room.
    assert exported_in < spans * timeout / 5, exported_in
    assert delivered is False
    # One shared deadline: a timeout per span would be spans x timeout. The bound is 10x the
    # one timeout expected, so a busy machine's scheduling cannot fail it.
    assert waited <= 10 * timeout, waited
    assert time.monotonic() - started <= 10 * timeout


def test_a_silent_collector_does_not_hold_a_process_past_the_timeout() -> None:
    with FakeCollector(mode="hang") as collector:
        delivered, waited, _ = run_exporting_process(collector.url, 0.4)
    assert not delivered
    # The collector hangs until it is closed: waiting past the timeout would reach the
    # subprocess's own 30 s. 10x the 0.4 s timeout proves it was not waited for.
    assert waited <= 10 * 0.4, waited


def test_a_refused_connection_fails_fast_and_quietly() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = SpanExporter(f"http://127.0.0.1:{port}", timeout=2.0)
    started = time.monotonic()
    exporter.export("eval_run", "run-1", {"cases": 1})
    assert exporter.wait() is False
    assert time.monotonic() - started < 1.0
    assert exporter.failed == 1 and exporter.last_error


def test_a_collector_error_status_counts_as_not_delivered() -> None:
    with FakeCollector(mode=503) as collector:
        exporter = SpanExporter(collector.url, timeout=2.0)
        exporter.export("eval_run", "run-1", {"cases": 1})
        assert exporter.wait() is False
    assert exporter.failed == 1 and "503" in (exporter.last_error or "")


def test_wait_with_nothing_exported_returns_at_once() -> None:
    exporter = SpanExporter("http://127.0.0.1:9", timeout=5.0)
    started = time.monotonic()
    assert exporter.wait() is True
    assert time.monotonic() - started < 0.5  # far below the 5 s timeout
