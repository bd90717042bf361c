"""The Anthropic adapter: the official `anthropic` SDK behind the adapter protocol.

The SDK is an optional extra, imported on first use. Retries are the SDK's own: it retries
408, 409, 429 and every 5xx (529 "overloaded" included) with exponential backoff and jitter,
and waits exactly what `retry-after` / `retry-after-ms` asks when the server says (see
`anthropic._base_client.BaseClient._calculate_retry_timeout`); `max_retries` bounds it. A
401/403 is never retried. Each attempt is bounded by `timeout` (the SDK's own `timeout=`, a
timeout it also retries), so a provider that accepts a request and never answers costs at most
timeout x (max_retries + 1) plus the backoff between attempts. Whatever still fails becomes a
`ModelCallError` carrying the HTTP status and naming what to do; the credential never appears
in it (it is redacted even from the provider's own message, and a URL's user:password part is
masked).

A 2xx answer is read by verdryx, not by the SDK: the raw body must be JSON (content type and
all) shaped like a Messages API message. Anything else (truncated JSON, an HTML page from a
proxy, `{}`) is one `ModelCallError` naming the call and the status, never an SDK traceback
and never an empty answer graded as if the model had said nothing (docs/troubleshooting.md).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.errors import ModelCallError, VerdryxError
from verdryx_core.jsonwords import json_kind
from verdryx_core.llm.base import Completion, Judgement
from verdryx_core.llm.judge_prompt import (
    JUDGE_SYSTEM,
    RECORD_VERDICT_TOOL,
    TOOL_CHOICE,
    parse_verdict,
    render_judge_prompt,
)
from verdryx_core.llm.prices import PriceBook
from verdryx_core.llm.wire import (
    UNREADABLE_ANSWER,
    MalformedAnswer,
    read_json_object,
    token_count,
)
from verdryx_core.model import ToolCall
from verdryx_core.redact import install_log_filter, redact_url
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_BASE_URL", "INSTALL_HINT", "AnthropicAdapter", "import_sdk"]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
INSTALL_HINT: Final = "pip install 'verdryx[anthropic]'"
_KEY_VARIABLE: Final = "ANTHROPIC_API_KEY"
_TOKEN_VARIABLE: Final = "ANTHROPIC_AUTH_TOKEN"
_MESSAGE_PREVIEW: Final = 300


def import_sdk() -> Any:
    """The `anthropic` module, or a VerdryxError saying how to install it."""
    try:
        import anthropic
    except ImportError:
        raise VerdryxError(
            "a real model was named but the Anthropic SDK is not installed",
            hint=f"install it with {INSTALL_HINT}, or use {{model}}=stub",
        ) from None
    return anthropic


def _display_url(url: str) -> str:
    """A URL fit for an error message: any user:password part is masked."""
    return redact_url(url)


class AnthropicAdapter:
    """Claude through the Messages API. Thread-safe: one SDK client (one connection pool) is
    built on first use and shared by every pool thread.

    Credentials come from the caller (`make_adapter` reads `ANTHROPIC_API_KEY`, or
    `ANTHROPIC_AUTH_TOKEN` for proxies that want a bearer token), never from a flag. With no
    credential, the first call fails naming the variable; building the adapter does not, so a
    replay run needs no key.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        prices: PriceBook | None = None,
        max_retries: int = 4,
        temperature: float | None = None,
        max_tokens: int = 1024,
        judge_max_tokens: int = 1024,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        self.prices = prices if prices is not None else PriceBook.default()
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.judge_max_tokens = judge_max_tokens
        self.timeout = check_timeout(timeout)
        self._api_key = api_key or None
        self._auth_token = auth_token or None
        self._sdk: Any = None
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicAdapter(model={self.model!r}, base_url={_display_url(self.base_url)!r})"

    @property
    def parameters(self) -> Mapping[str, Any]:
        """What changes the answers (the base URL does not: a proxy serves the same model)."""
        return {
            "max_tokens": self.max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            "temperature": self.temperature,
        }

    # -- the protocol ----------------------------------------------------------------------

    def complete(self, prompt: str, *, repeat: int = 0) -> Completion:
        message = self._create("model call", self.request_params("complete", prompt))
        return self._completion(message)

    def complete_with_tools(
        self, prompt: str, tools: Sequence[Mapping[str, Any]], *, repeat: int = 0
    ) -> Completion:
        # Single turn: the names of the tool_use blocks of this first response are the trace;
        # no tool is executed and nothing is sent back.
        message = self._create(
            "model call with tools", self.request_params("tools", prompt, tools=tools)
        )
        return self._completion(message)

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement:
        try:
            message = self._create(
                "judge call", self.request_params("judge", prompt, output=output, rubric=rubric)
            )
        except ModelCallError as exc:
            if exc.status is None or not 200 <= exc.status < 300:
                raise  # refused or unreachable: an infrastructure error, not a verdict
            # A 2xx answer the judge rules cannot read is unmeasured, like any other
            # unreadable verdict (docs/models-and-judges.md); its cost is unknown.
            return Judgement(score=None, unmeasured=f"{UNREADABLE_ANSWER}: {exc}")
        return self._judgement(message)

    # -- requests and answers as data (the batch path, verdryx_core.llm.batch) --------------

    def request_params(
        self,
        kind: str,
        prompt: str,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        output: str | None = None,
        rubric: str | None = None,
    ) -> dict[str, Any]:
        """The Messages API request of one call, exactly as `complete`, `complete_with_tools`
        or `judge` sends it (`kind`: complete, tools, judge), as a plain dict."""
        if kind == "judge":
            params: dict[str, Any] = {
                "model": self.model,
                "max_tokens": self.judge_max_tokens,
                "system": JUDGE_SYSTEM,
                "messages": [
                    {
                        "role": "user",
                        "content": render_judge_prompt(prompt, output or "", rubric or ""),
                    }
                ],
                "tools": [dict(RECORD_VERDICT_TOOL)],
                "tool_choice": dict(TOOL_CHOICE),
            }
        elif kind in ("complete", "tools"):
            params = {
                "model": self.model,
                "max_tokens": self.max_tokens,
                "messages": [{"role": "user", "content": prompt}],
            }
            if kind == "tools":
                params["tools"] = [dict(tool) for tool in tools or ()]
        else:
            raise ValueError(f"unknown call kind {kind!r}")
        if self.temperature is not None:
            # Sent only when configured (0.0 included).
            params["temperature"] = self.temperature
        return params

    def answer_from_message(
        self, kind: str, message: Any, *, price_factor: float = 1.0, call: str | None = None
    ) -> Completion | Judgement:
        """A Messages API message (a decoded JSON object) read and priced as the matching
        protocol call reads its HTTP answer; `price_factor` scales the price book's price (a
        batch is billed at half). A message that is not one raises `ModelCallError` (for a
        judge: an unmeasured verdict), naming `call`."""
        try:
            checked = _check_message(message)
        except MalformedAnswer as exc:
            where = call or _CALL_NAMES.get(kind, kind)
            problem = self._redact(f"model {self.model} ({where}): answer unreadable: {exc}")
            if kind == "judge":
                return Judgement(score=None, unmeasured=f"{UNREADABLE_ANSWER}: {problem}")
            raise ModelCallError(problem) from None
        if kind == "judge":
            return self._judgement(checked, price_factor=price_factor)
        return self._completion(checked, price_factor=price_factor)

    # -- the wire --------------------------------------------------------------------------

    def _get_client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not (self._api_key or self._auth_token):
                    raise ModelCallError(
                        f"model {self.model}: no Anthropic credential; set {_KEY_VARIABLE} in "
                        "the environment (verdryx never takes a key on the command line)"
                    )
                sdk = import_sdk()
                kwargs: dict[str, Any] = {
                    # Always explicit, so the SDK never falls back to os.environ or a profile
                    # behind the caller's back.
                    "base_url": self.base_url,
                    "max_retries": self.max_retries,
                    # Bounds connecting and every wait for bytes, on each attempt.
                    "timeout": self.timeout,
                }
                if self._api_key:
                    kwargs["api_key"] = self._api_key
                else:
                    kwargs["auth_token"] = self._auth_token
                self._sdk = sdk
                self._client = sdk.Anthropic(**kwargs)
                # The SDK and httpx log each request's URL at INFO; a user:password in
                # ANTHROPIC_BASE_URL must not reach a log handler (verdryx_core.redact).
                install_log_filter()
            return self._client

    def _create(self, call: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The answer as a checked plain message (`content` a list of blocks with a `type`,
        `usage` an object of token counts); every failure is one `ModelCallError`."""
        client = self._get_client()
        request = dict(params)
        if "temperature" in request:
            # This SDK version has no keyword for it: sent in the body as is.
            request["extra_body"] = {"temperature": request.pop("temperature")}
        try:
            # The raw response: the SDK still raises for a 4xx/5xx (after its retries), but a
            # 2xx body is read below, so a malformed one is named instead of crashing inside
            # the SDK's parser.
            raw = client.messages.with_raw_response.create(**request)
            status = int(raw.status_code)
            content_type = str(raw.headers.get("content-type") or "")
            body = raw.read()
        except self._sdk.AnthropicError as exc:
            raise self._error(exc, call) from None
        except Exception as exc:  # anything else the SDK or its HTTP stack lets escape
            raise ModelCallError(
                self._redact(
                    f"model {self.model}: the {call} to {_display_url(self.base_url)} failed "
                    f"inside the Anthropic SDK ({type(exc).__name__}: {exc})"
                )
            ) from None
        try:
            return _read_message(body, content_type)
        except MalformedAnswer as exc:
            raise ModelCallError(
                self._redact(
                    f"model {self.model}: the {call} to {_display_url(self.base_url)} got HTTP "
                    f"{status} with {exc}; is ANTHROPIC_BASE_URL an Anthropic Messages API "
                    "endpoint (a proxy's error page is not)?"
                ),
                status=status,
            ) from None

    def _completion(self, message: Mapping[str, Any], *, price_factor: float = 1.0) -> Completion:
        blocks = message["content"]
        input_tokens, output_tokens, cost = self._usage(message, price_factor=price_factor)
        return Completion(
            text="".join(block["text"] or "" for block in blocks if block["type"] == "text"),
            tool_names=tuple(str(block["name"]) for block in blocks if block["type"] == "tool_use"),
            tool_calls=tuple(
                ToolCall(
                    name=str(block["name"]),
                    arguments=dict(block["input"]) if isinstance(block["input"], Mapping) else {},
                )
                for block in blocks
                if block["type"] == "tool_use"
            ),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )

    def _judgement(self, message: Mapping[str, Any], *, price_factor: float = 1.0) -> Judgement:
        verdict = parse_verdict(message["content"], message.get("stop_reason"))
        input_tokens, output_tokens, cost = self._usage(message, price_factor=price_factor)
        return Judgement(
            score=verdict.score,
            reason=verdict.reason,
            unmeasured=verdict.unmeasured,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )

    def _usage(
        self, message: Mapping[str, Any], *, price_factor: float = 1.0
    ) -> tuple[int, int, float]:
        usage = message["usage"]
        plain = usage.get("input_tokens") or 0
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        output = usage.get("output_tokens") or 0
        cost = self.prices.cost(
            self.model,
            plain,
            output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        return plain + cache_read + cache_write, output, cost * price_factor

    def _error(self, exc: Exception, call: str = "model call") -> ModelCallError:
        sdk = self._sdk
        where = _display_url(self.base_url)
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            detail = self._provider_detail(exc)
            if status in (401, 403):
                # Name the variable the refused credential came from.
                variable = _KEY_VARIABLE if self._api_key else _TOKEN_VARIABLE
                message = (
                    f"model {self.model}: {where} refused the credential (HTTP {status}{detail}); "
                    f"set {variable} to a valid key for this endpoint"
                )
            elif status in (408, 409, 429) or status >= 500:
                if status == 429:
                    return ModelCallError(
                        self._redact(
                            f"model {self.model}: HTTP {status}{detail} from {where}, still "
                            f"failing after {self.max_retries} retries"
                        ),
                        status=status,
                        hint="lower {concurrency} or raise your rate limit",
                    )
                message = (
                    f"model {self.model}: HTTP {status}{detail} from {where}, still failing "
                    f"after {self.max_retries} retries; retry later"
                )
            else:
                message = (
                    f"model {self.model}: {where} rejected the request (HTTP {status}{detail}); "
                    "check the model id and the request"
                )
            return ModelCallError(self._redact(_named_call(message, call)), status=status)
        if isinstance(exc, sdk.APITimeoutError):
            return ModelCallError(
                self._redact(
                    _named_call(
                        f"model {self.model}: {where} did not answer within {self.timeout:g}s, "
                        f"still failing after {self.max_retries} retries",
                        call,
                    )
                ),
                hint="check the endpoint, retry later or raise {timeout}",
            )
        elif isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc
            message = (
                f"model {self.model}: cannot reach {where} ({type(cause).__name__}: {cause}), "
                f"still failing after {self.max_retries} retries; check ANTHROPIC_BASE_URL "
                "and the network"
            )
        else:
            message = f"model {self.model}: the Anthropic SDK failed: {type(exc).__name__}: {exc}"
        return ModelCallError(self._redact(_named_call(message, call)))

    def _provider_detail(self, exc: Any) -> str:
        """`: <error type>: <message>` from an Anthropic error body, plus the request id."""
        body = getattr(exc, "body", None)
        error = body.get("error") if isinstance(body, Mapping) else None
        parts: list[str] = []
        if isinstance(error, Mapping):
            if isinstance(error.get("type"), str):
                parts.append(error["type"])
            if isinstance(error.get("message"), str):
                text = " ".join(error["message"].split())
                if len(text) > _MESSAGE_PREVIEW:
                    text = text[: _MESSAGE_PREVIEW - 3] + "..."
                parts.append(text)
        detail = "".join(f": {part}" for part in parts)
        request_id = getattr(exc, "request_id", None)
        if request_id:
            detail += f", request id {request_id}"
        return detail

    def _redact(self, text: str) -> str:
        for secret in (self._api_key, self._auth_token):
            if secret:
                text = text.replace(secret, "[redacted]")
        return redact_url(text)


#: How messages name each kind of call.
_CALL_NAMES: Final = {
    "complete": "model call",
    "tools": "model call with tools",
    "judge": "judge call",
}


def _named_call(message: str, call: str) -> str:
    """`model M (judge call): ...`: which of a case's calls failed."""
    prefix, sep, rest = message.partition(": ")
    return f"{prefix} ({call}){sep}{rest}" if sep else message


_USAGE_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _read_message(body: bytes, content_type: str) -> dict[str, Any]:
    """A 2xx body as a plain message with the fields verdryx reads; `MalformedAnswer`
    otherwise."""
    return _check_message(read_json_object(body, content_type))


def _check_message(data: Any) -> dict[str, Any]:
    """A decoded message as the plain dict verdryx reads; `MalformedAnswer` when it is not one."""
    if not isinstance(data, dict):
        raise MalformedAnswer(f"JSON that is not a message object ({json_kind(data)})")
    content = data.get("content")
    if not isinstance(content, list):
        raise MalformedAnswer("a message without a 'content' list")
    blocks: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MalformedAnswer(f"content block #{index + 1} without a 'type'")
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            raise MalformedAnswer(f"text block #{index + 1} without a 'text' string")
        if block["type"] == "tool_use" and not isinstance(block.get("name"), str):
            raise MalformedAnswer(f"tool_use block #{index + 1} without a 'name' string")
        blocks.append(
            {
                "type": block["type"],
                "name": block.get("name"),
                "input": block.get("input"),
                "text": block.get("text"),
            }
        )
    usage = data.get("usage")
    if not isinstance(usage, dict):
        # Without usage the call's cost would be recorded as 0: a lie, not a default.
        raise MalformedAnswer("a message without a 'usage' object (its cost would be unknown)")
    counts = {name: token_count(usage, name, "usage") for name in _USAGE_FIELDS}
    stop_reason = data.get("stop_reason")
    return {
        "content": blocks,
        "usage": counts,
        "stop_reason": stop_reason if isinstance(stop_reason, str) else None,
    }
