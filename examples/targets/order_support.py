"""An offline example target: a tiny, rule-based order-support agent.

It stands in for "your agent": verdryx calls `answer(case)` once per case and grades what it
returns. It is plain Python and deterministic (no model, no network), so the example runs
anywhere; a real agent has the same shape (see examples/agent/ for one on the Anthropic SDK).

Rules:
- no order id in the request: ask for one, call nothing;
- "where", "status", "track": look the order up and say where it is;
- "refund": look it up, refund it when it was delivered within the refund window (30 days,
  60 for customers whose case metadata says `"tier": "gold"`), otherwise say why not;
- anything else about an order: hand it to a human (`escalate`).
"""

from __future__ import annotations

import re
from typing import Any

from verdryx_core.targets import TargetCase, TargetResult

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"status": "delivered", "days_since_delivery": 3, "total": 42.00, "refunded": False},
    "A-1002": {"status": "shipped", "days_since_delivery": None, "total": 18.50, "refunded": False},
    "A-1003": {"status": "delivered", "days_since_delivery": 45, "total": 99.00, "refunded": False},
    "A-1004": {"status": "delivered", "days_since_delivery": 10, "total": 12.00, "refunded": True},
}

_ORDER_ID = re.compile(r"\b([A-Z]-\d{4})\b")


class _Tools:
    """The agent's tools, recording every call with its arguments (the trace verdryx grades)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def lookup_order(self, order_id: str) -> dict[str, Any] | None:
        self.calls.append({"name": "lookup_order", "arguments": {"order_id": order_id}})
        return ORDERS.get(order_id)

    def refund_order(self, order_id: str, amount: float) -> None:
        self.calls.append(
            {"name": "refund_order", "arguments": {"order_id": order_id, "amount": amount}}
        )

    def escalate(self, reason: str) -> None:
        self.calls.append({"name": "escalate", "arguments": {"reason": reason}})


def _refund_window(case: TargetCase) -> int:
    metadata = case.metadata or {}
    return 60 if metadata.get("tier") == "gold" else 30


def _reply(case: TargetCase, tools: _Tools) -> str:
    request = case.prompt
    found = _ORDER_ID.search(request.upper())
    if found is None:
        return "Could you give me your order number? It looks like A-1234."
    order_id = found.group(1)
    words = request.lower()
    if "refund" in words:
        order = tools.lookup_order(order_id)
        if order is None:
            return f"I could not find order {order_id}."
        if order["refunded"]:
            return f"Order {order_id} was already refunded."
        if order["status"] != "delivered":
            return f"Order {order_id} has not been delivered yet, so it cannot be refunded."
        if order["days_since_delivery"] > _refund_window(case):
            return (
                f"Order {order_id} was delivered {order['days_since_delivery']} days ago, "
                "outside the refund window."
            )
        tools.refund_order(order_id, order["total"])
        return f"Refunded ${order['total']:.2f} for order {order_id}."
    if any(word in words for word in ("where", "status", "track")):
        order = tools.lookup_order(order_id)
        if order is None:
            return f"I could not find order {order_id}."
        return f"Order {order_id} is {order['status']}."
    tools.escalate(f"unsupported request about {order_id}")
    return f"I have passed your request about order {order_id} to a colleague."


def answer(case: TargetCase) -> TargetResult:
    """The target: one support conversation turn for one case."""
    tools = _Tools()
    output = _reply(case, tools)
    return TargetResult(
        output=output,
        tool_calls=tools.calls,
        # A rule-based agent spends no tokens; a model-backed one reports its usage here.
        usage={"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
        metadata={"rules_version": "1"},
    )


async def answer_async(case: TargetCase) -> TargetResult:
    """The same agent as an `async def` target: verdryx awaits it on its one event loop."""
    return answer(case)
