"""A small, real tool-using agent on the Anthropic SDK, shaped as a verdryx target.

The model is given two tools over a toy order database, `lookup_order` and `refund_order`,
and the agent runs the usual tool loop: send the conversation, run every tool the model asks
for, send the results back, until the model answers in text. `answer(case)` is the target
verdryx calls (docs/targets.md): it returns the final text, every tool call with its
arguments (graded by `tool_trace`) and the tokens and dollars the loop spent.

The SDK reads `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` from the environment; the model is
`VERDRYX_AGENT_MODEL` (default claude-haiku-4-5). Needs `pip install 'verdryx[anthropic]'`.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from verdryx_core.llm import PriceBook
from verdryx_core.targets import TargetCase, TargetResult

DEFAULT_MODEL = "claude-haiku-4-5"
MAX_TURNS = 6
SYSTEM = (
    "You are an order-support agent. Look an order up before acting on it. Refund only "
    "delivered orders that were not refunded yet. Answer the customer in one or two sentences."
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup_order",
        "description": "Fetch an order by id: its status, total and whether it was refunded.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
    {
        "name": "refund_order",
        "description": "Refund a delivered order in full.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
]


class OrderDatabase:
    """The toy database the tools act on; one per conversation, so cases never interfere."""

    def __init__(self) -> None:
        self.orders: dict[str, dict[str, Any]] = {
            "A-1001": {"status": "delivered", "total": 42.0, "refunded": False},
            "A-1002": {"status": "shipped", "total": 18.5, "refunded": False},
        }

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(order_id)
        return {"error": f"no order {order_id}"} if order is None else {"id": order_id, **order}

    def refund_order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(order_id)
        if order is None:
            return {"error": f"no order {order_id}"}
        if order["status"] != "delivered" or order["refunded"]:
            return {"error": f"order {order_id} cannot be refunded"}
        order["refunded"] = True
        return {"refunded": order["total"]}

    def run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name == "lookup_order":
            return self.lookup_order(str(arguments.get("order_id", "")))
        if name == "refund_order":
            return self.refund_order(str(arguments.get("order_id", "")))
        return {"error": f"unknown tool {name}"}


def _as_param(block: Any) -> dict[str, Any]:
    """A response content block as the request shape, to send the turn back."""
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {"type": "text", "text": block.text}


@functools.cache
def _client(base_url: str | None, api_key: str | None) -> Any:
    """One SDK client per endpoint for the whole run, shared by every case's thread (the
    SDK's client is thread-safe): its connections are kept alive from case to case, where a
    client per case would open a connection per case (docs/targets.md, "A target on an
    SDK")."""
    import anthropic

    return anthropic.Anthropic(base_url=base_url, api_key=api_key)


def run_agent(case: TargetCase, *, client: Any = None, model: str | None = None) -> TargetResult:
    """The tool loop for one case; raises if the model never finishes (that case's error)."""
    if client is None:
        # Keyed by what the SDK would read from the environment, so a changed endpoint gets
        # its own client rather than the first one's.
        client = _client(os.environ.get("ANTHROPIC_BASE_URL"), os.environ.get("ANTHROPIC_API_KEY"))
    model = model or os.environ.get("VERDRYX_AGENT_MODEL", DEFAULT_MODEL)
    database = OrderDatabase()
    messages: list[dict[str, Any]] = case.conversation()
    calls: list[dict[str, Any]] = []
    input_tokens = output_tokens = 0
    for _ in range(MAX_TURNS):
        response = client.messages.create(
            model=model,
            max_tokens=1024,
            system=case.system or SYSTEM,
            tools=TOOLS,
            messages=messages,
        )
        input_tokens += response.usage.input_tokens
        output_tokens += response.usage.output_tokens
        uses = [block for block in response.content if block.type == "tool_use"]
        if response.stop_reason != "tool_use" or not uses:
            text = "".join(block.text for block in response.content if block.type == "text")
            return TargetResult(
                output=text,
                tool_calls=calls,
                usage={
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cost_usd": PriceBook.default().cost(model, input_tokens, output_tokens),
                },
                metadata={"model": model, "turns": len(messages) // 2 + 1},
            )
        messages.append({"role": "assistant", "content": [_as_param(b) for b in response.content]})
        results = []
        for use in uses:
            arguments = dict(use.input) if isinstance(use.input, dict) else {}
            calls.append({"name": use.name, "arguments": arguments})
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": json.dumps(database.run(use.name, arguments)),
                }
            )
        messages.append({"role": "user", "content": results})
    raise RuntimeError(f"the agent did not finish within {MAX_TURNS} model turns")


def answer(case: TargetCase) -> TargetResult:
    """The target verdryx calls: `--verdryx-target=order_agent:answer`."""
    return run_agent(case)
