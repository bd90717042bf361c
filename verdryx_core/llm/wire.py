"""Reading a provider's 2xx answer: raw bytes in, a JSON object out, or `MalformedAnswer`.

Both adapters take the SDK's raw response and read the body here instead of letting the SDK
parse it: a truncated body, an HTML page from a proxy, `{}` or `null` would otherwise crash
deep in the SDK (a traceback) or read as an empty answer graded as if the model had said
nothing (a lie). What is wrong becomes one line (docs/troubleshooting.md, "Reliability").
"""

from __future__ import annotations

import json
from typing import Any

from verdryx_core.limits import token_problem
from verdryx_core.untrusted.json_input import json_kind, parse_json

__all__ = ["UNREADABLE_ANSWER", "MalformedAnswer", "read_json_object", "token_count"]

#: How a judge's malformed 2xx answer starts its unmeasured reason. Such an answer is not
#: cached: a proxy's error page is a passing fault, not the judge's verdict to replay.
UNREADABLE_ANSWER = "judge answer unreadable (cost unknown)"


class MalformedAnswer(ValueError):
    """A 2xx answer that is not what the API sends; the text says what is wrong."""


def read_json_object(body: bytes, content_type: str) -> dict[str, Any]:
    """The body as a JSON object; `MalformedAnswer` for any other content type or body."""
    kind = content_type.split(";")[0].strip().lower()
    if kind != "application/json":
        preview = " ".join(body[:80].decode("utf-8", "replace").split())
        raise MalformedAnswer(
            f"content type {kind or 'none'!r}, not application/json (it starts {preview!r})"
        )
    try:
        data = parse_json(body)
    except UnicodeDecodeError:
        raise MalformedAnswer("a body that is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(
            f"a body that is not valid JSON ({exc.msg}: byte {exc.pos} of {len(body)})"
        ) from None
    if not isinstance(data, dict):
        raise MalformedAnswer(f"JSON that is not a message object ({json_kind(data)})")
    return data


def token_count(container: dict[str, Any], name: str, where: str) -> int:
    """`container[name]` as a token count (0 when absent); `MalformedAnswer` when it is not
    a whole number >= 0 (a wrong count would record a wrong cost)."""
    value = container.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedAnswer(f"{where}.{name} {value!r} is not a token count")
    # Past the bound no call is real, and its sums would pass what the store keeps.
    problem = token_problem(value)
    if problem is not None:
        raise MalformedAnswer(f"{where}.{name}: {problem}")
    return value
