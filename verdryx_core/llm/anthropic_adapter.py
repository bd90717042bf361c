"""The Anthropic adapter: the official `anthropic` SDK behind the adapter protocol.

The SDK is an optional extra, imported on first use. Retries are the SDK's own: it retries
408, 409, 429 and every 5xx (529 "overloaded" included) with exponential backoff and jitter,
and waits exactly what `retry-after` / `retry-after-ms` asks when the server says (see
`anthropic._base_client.BaseClient._calculate_retry_timeout`); `max_retries` bounds it. A
401/403 is never retried. Each attempt is bounded by `timeout` (the SDK's own `timeout=`, a
timeout it also retries), so a provider that accepts a request and never answers costs at most
timeout x (max_retries + 1) plus the backoff between attempts. Whatever still fails becomes a
`ModelCallError` carrying the HTTP status and naming what to do, worded as the OpenAI adapter
words it (verdryx_core.llm.provider_errors); the credential never appears in it (it is redacted
even from the provider's own message, and a URL's user:password part is masked).

A 2xx answer is read by verdryx, not by the SDK: the raw body must be JSON (content type and
all) shaped like a Messages API message. Anything else (truncated JSON, an HTML page from a
proxy, `{}`) is one `ModelCallError` naming the call and the status, never an SDK traceback
and never an empty answer graded as if the model had said nothing (docs/troubleshooting.md).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.cases import ToolCall
from verdryx_core.errors import ModelCallError
from verdryx_core.judge.prompt import reading_from_blocks
from verdryx_core.llm.base import CALL_NAMES, Completion, Judgement
from verdryx_core.llm.call_request import CallRequest, conversation_of
from verdryx_core.llm.connections import http_client_options
from verdryx_core.llm.conversation import anthropic_messages
from verdryx_core.llm.judge_answer import judgement, unreadable_judgement
from verdryx_core.llm.prices import PriceBook
from verdryx_core.llm.provider_errors import Provider, ProviderErrors
from verdryx_core.llm.request_adapter import RequestAdapter
from verdryx_core.llm.usage import TokenUsage
from verdryx_core.llm.wire import MalformedAnswer, read_json_object, token_count
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout
from verdryx_core.untrusted.json_input import json_kind
from verdryx_core.untrusted.redact import install_log_filter, redact_url

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_BASE_URL", "INSTALL_HINT", "AnthropicAdapter", "check_sdk", "import_sdk"]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
INSTALL_HINT: Final = "pip install 'verdryx[anthropic]'"
_KEY_VARIABLE: Final = "ANTHROPIC_API_KEY"
_TOKEN_VARIABLE: Final = "ANTHROPIC_AUTH_TOKEN"


def _error_words(body: object) -> tuple[list[str], str | None]:
    """The kind and message of an Anthropic error body. This SDK hands over the whole
    document (`{"type": "error", "error": {"type", "message"}}`) as `exc.body`; the openai
    SDK only the inner object, in another shape: each adapter reads its own."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return [], None
    kinds = [error["type"]] if isinstance(error.get("type"), str) else []
    return kinds, error["message"] if isinstance(error.get("message"), str) else None


_PROVIDER: Final = Provider(
    name="Anthropic",
    module="anthropic",
    named="a real model",
    install_hint=INSTALL_HINT,
    url_variable="ANTHROPIC_BASE_URL",
    endpoint="an Anthropic Messages API endpoint",
    base_error="AnthropicError",
    error_words=_error_words,
)


def import_sdk() -> Any:
    """The `anthropic` module, or a VerdryxError saying how to install it."""
    return _PROVIDER.import_sdk()


def check_sdk() -> None:
    """A VerdryxError with the install hint when the SDK is missing; never imports it."""
    _PROVIDER.check_installed()


class AnthropicAdapter(RequestAdapter[dict[str, Any]]):
    """Claude through the Messages API. Thread-safe: one SDK client (one connection pool) is
    built on first use and shared by every pool thread; `connections` (the run's concurrency)
    is how many calls it makes at once, each kept alive (verdryx_core.llm.connections).

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
        connections: int | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        self.prices = prices if prices is not None else PriceBook.default()
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.judge_max_tokens = judge_max_tokens
        self.timeout = check_timeout(timeout)
        self.connections = connections
        self._api_key = api_key or None
        self._auth_token = auth_token or None
        self._sdk: Any = None
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicAdapter(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    @property
    def parameters(self) -> Mapping[str, Any]:
        """What changes the answers (the base URL does not: a proxy serves the same model)."""
        return {
            "max_tokens": self.max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            "temperature": self.temperature,
        }

    # -- requests and answers as data (the batch path, verdryx_core.llm.batch) --------------

    def request_params(self, request: CallRequest) -> dict[str, Any]:
        """The Messages API request of one call, exactly as `complete`, `complete_with_tools`
        or `judge` sends it, as a plain dict."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.judge_max_tokens if request.kind == "judge" else self.max_tokens,
        }
        if request.system is not None:
            params["system"] = request.system
        params["messages"] = anthropic_messages(conversation_of(request))
        if request.kind != "complete":
            params["tools"] = [dict(tool) for tool in request.tools or ()]
        if request.tool_choice is not None:
            params["tool_choice"] = dict(request.tool_choice)
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
            where = call or CALL_NAMES.get(kind, kind)
            problem = self._errors().redact(
                f"model {self.model} ({where}): answer unreadable: {exc}"
            )
            if kind == "judge":
                return unreadable_judgement(problem)
            raise ModelCallError(problem) from None
        if kind == "judge":
            return self._judgement(checked, price_factor=price_factor)
        return self._completion(checked, price_factor=price_factor)

    # -- the wire --------------------------------------------------------------------------

    def _errors(self) -> ProviderErrors:
        return ProviderErrors(
            _PROVIDER,
            self,
            # The variable the credential sent came from: a refused one names it.
            credential_variable=_KEY_VARIABLE if self._api_key else _TOKEN_VARIABLE,
            secrets=(self._api_key, self._auth_token),
        )

    def prepare(self) -> None:
        """Import the SDK now, before the first call, so no call's latency carries it."""
        import_sdk()

    def _get_client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not (self._api_key or self._auth_token):
                    raise self._errors().no_credential(_KEY_VARIABLE)
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
                kwargs.update(http_client_options(sdk, self.connections))
                self._sdk = sdk
                self._client = sdk.Anthropic(**kwargs)
                # The SDK and httpx log each request's URL at INFO; a user:password in
                # ANTHROPIC_BASE_URL must not reach a log handler (verdryx_core.untrusted.redact).
                install_log_filter()
            return self._client

    def _create(self, request: CallRequest) -> dict[str, Any]:
        """The answer as a checked plain message (`content` a list of blocks with a `type`,
        `usage` an object of token counts); every failure is one `ModelCallError`."""
        client = self._get_client()
        params = self.request_params(request)
        if "temperature" in params:
            # This SDK version has no keyword for it: sent in the body as is.
            params["extra_body"] = {"temperature": params.pop("temperature")}

        def send() -> tuple[int, str, bytes]:
            # The raw response: the SDK still raises for a 4xx/5xx (after its retries), but
            # a 2xx body is read by verdryx, so a malformed one is named instead of crashing
            # inside the SDK's parser.
            raw = client.messages.with_raw_response.create(**params)
            return int(raw.status_code), str(raw.headers.get("content-type") or ""), raw.read()

        return self._errors().answer(
            send, _read_message, sdk=self._sdk, call=CALL_NAMES[request.kind]
        )

    def _completion(self, message: Mapping[str, Any], *, price_factor: float = 1.0) -> Completion:
        blocks = message["content"]
        usage = _token_usage(message)
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
            input_tokens=usage.input_tokens,
            output_tokens=usage.output,
            cost_usd=usage.cost(self.prices, self.model, factor=price_factor),
        )

    def _judgement(self, message: Mapping[str, Any], *, price_factor: float = 1.0) -> Judgement:
        reading = reading_from_blocks(message["content"], message.get("stop_reason"))
        usage = _token_usage(message)
        return judgement(reading, usage, usage.cost(self.prices, self.model, factor=price_factor))


def _token_usage(message: Mapping[str, Any]) -> TokenUsage:
    """A message's counts: its input tokens leave out those read from or written to the
    prompt cache, which are billed at their own rates."""
    usage = message["usage"]
    return TokenUsage(
        fresh=usage.get("input_tokens") or 0,
        output=usage.get("output_tokens") or 0,
        cache_read=usage.get("cache_read_input_tokens") or 0,
        cache_write=usage.get("cache_creation_input_tokens") or 0,
    )


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
