"""How a model call is made (docs/models-and-judges.md, "How a call is made"): through the
SDK's own client, one per adapter, its connections kept alive from call to call, as many as
the run has calls in flight; the SDK's proxy variables honoured."""

from __future__ import annotations

import socket

import pytest
from fakes.anthropic_server import FakeAnthropic

from verdryx_core.errors import ModelCallError
from verdryx_core.llm import CallPool, make_adapter

MODEL = "claude-haiku-4-5"


def test_an_adapters_calls_share_one_kept_alive_connection(server: FakeAnthropic) -> None:
    adapter = make_adapter(MODEL, env=server.env())
    assert [adapter.complete(f"q{i}").text for i in range(3)] == [
        "echo: q0",
        "echo: q1",
        "echo: q2",
    ]
    assert len({request.client_port for request in server.requests}) == 1


def test_every_connection_of_a_wide_run_is_kept_alive() -> None:
    # Past the SDK's default of 100 idle connections: a second wave of calls at the same
    # concurrency reuses every connection of the first instead of opening 10 anew.
    concurrency = 110
    with FakeAnthropic(latency=0.5) as server:
        adapter = make_adapter(MODEL, env=server.env(), connections=concurrency)
        with CallPool(concurrency) as pool:
            for wave in range(2):
                futures = [
                    pool.submit(adapter.complete, f"w{wave} q{i}") for i in range(concurrency)
                ]
                assert [future.result().text for future in futures] == [
                    f"echo: w{wave} q{i}" for i in range(concurrency)
                ]
        assert server.violations == []
        assert len(server.requests) == 2 * concurrency
        assert len({request.client_port for request in server.requests}) <= concurrency


def test_a_proxy_variable_is_honoured(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead}")
    # The call goes to the (dead) proxy, not to the fake.
    with pytest.raises(ModelCallError):
        make_adapter(MODEL, env=server.env(), max_retries=0).complete("p")
    assert server.requests == []
