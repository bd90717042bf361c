"""The OpenAI-compatible adapter: the official `openai` SDK's chat completions behind the
adapter protocol, for OpenAI itself and for anything that speaks its API (vLLM, Ollama,
LiteLLM, llama.cpp's server) through `OPENAI_BASE_URL` (docs/models-and-judges.md).

Model ids are `openai:NAME`; NAME is what the endpoint is asked for. The SDK is an optional
extra, imported on first use. Retries and timeouts are the SDK's own, configured like the
Anthropic adapter's: 408, 409, 429 and 5xx are retried with backoff and jitter honouring
`retry-after`, at most `max_retries` times, each attempt bounded by `timeout`. The judge
answers through a forced function call (`tool_choice`) to `record_verdict`, read by the same
rules as the Anthropic judge (`verdryx_core.judge.prompt`): anything but a number in
[0, 1] with a reason is unmeasured. The credential never appears in an error.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, Final

from verdryx_core.cases import ToolCall
from verdryx_core.errors import UsageError
from verdryx_core.judge.prompt import RECORD_VERDICT, JudgeReading, reading_from_blocks
from verdryx_core.llm.base import CALL_NAMES, Completion, Judgement
from verdryx_core.llm.call_request import CallRequest, conversation_of
from verdryx_core.llm.connections import http_client_options
from verdryx_core.llm.conversation import openai_messages
from verdryx_core.llm.judge_answer import judgement
from verdryx_core.llm.prices import PriceBook
from verdryx_core.llm.provider_errors import Provider, ProviderErrors, preview
from verdryx_core.llm.request_adapter import RequestAdapter
from verdryx_core.llm.usage import TokenUsage
from verdryx_core.llm.wire import MalformedAnswer, read_json_object, token_count
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout
from verdryx_core.untrusted.json_input import parse_json
from verdryx_core.untrusted.redact import install_log_filter, redact_url

__all__ = [
    "DEFAULT_BASE_URL",
    "INSTALL_HINT",
    "MODEL_PREFIX",
    "OpenAIAdapter",
    "check_sdk",
    "import_sdk",
    "openai_tool",
]

MODEL_PREFIX: Final = "openai:"
DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
INSTALL_HINT: Final = "pip install 'verdryx[openai]'"
_KEY_VARIABLE: Final = "OPENAI_API_KEY"
_URL_VARIABLE: Final = "OPENAI_BASE_URL"
#: Sent to a custom endpoint when no key is set: local servers (Ollama, vLLM without
#: --api-key) ignore it, and the SDK refuses to send no key at all.
_NO_KEY: Final = "no-key"


def _error_words(body: object) -> tuple[list[str], str | None]:
    """The kinds (`type`, `code`) and message of an OpenAI error. This SDK hands over the
    inner error object (`{"message", "type", "code", "param"}`) as `exc.body`; the anthropic
    SDK the whole document, in another shape: each adapter reads its own."""
    if not isinstance(body, Mapping):
        return [], None
    kinds: list[str] = []
    for key in ("type", "code"):
        if isinstance(body.get(key), str) and body[key] not in kinds:
            kinds.append(body[key])
    return kinds, body["message"] if isinstance(body.get("message"), str) else None


_PROVIDER: Final = Provider(
    name="OpenAI",
    module="openai",
    named="an openai: model",
    install_hint=INSTALL_HINT,
    url_variable=_URL_VARIABLE,
    endpoint="a chat-completions endpoint",
    base_error="OpenAIError",
    error_words=_error_words,
)


def import_sdk() -> Any:
    """The `openai` module, or a VerdryxError saying how to install it."""
    return _PROVIDER.import_sdk()


def check_sdk() -> None:
    """A VerdryxError with the install hint when the SDK is missing; never imports it."""
    _PROVIDER.check_installed()


def openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An eval set tool (`name`, `description`, `input_schema`, as the Anthropic API takes
    them) as a chat-completions function tool; one already in that form passes unchanged."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
        return {"type": "function", "function": dict(tool["function"])}
    function: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = dict(tool.get("input_schema") or {"type": "object"})
    return {"type": "function", "function": function}


def _chat_request(request: CallRequest) -> dict[str, Any]:
    """A call's request in the chat-completions shape: the system prompt as a system message,
    each tool as a function tool, a forced tool as a forced function."""
    messages = [] if request.system is None else [{"role": "system", "content": request.system}]
    chat: dict[str, Any] = {"messages": [*messages, *openai_messages(conversation_of(request))]}
    if request.kind != "complete":
        chat["tools"] = [openai_tool(tool) for tool in request.tools or ()]
    if request.tool_choice is not None:
        chat["tool_choice"] = {
            "type": "function",
            "function": {"name": request.tool_choice["name"]},
        }
    return chat


class OpenAIAdapter(RequestAdapter[Any]):
    """A chat-completions model. Thread-safe: one SDK client (one connection pool) is built
    on first use and shared by every pool thread; `connections` (the run's concurrency) is
    how many calls it makes at once, each kept alive (verdryx_core.llm.connections).

    The credential comes from the caller (`make_adapter` reads `OPENAI_API_KEY`), never from
    a flag. OpenAI's own endpoint needs it, and its absence fails the first call naming the
    variable; a custom endpoint (a local server) may take none. Building the adapter never
    fails on the credential, so a replay run needs no key.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        prices: PriceBook | None = None,
        max_retries: int = 4,
        temperature: float | None = None,
        max_tokens: int = 1024,
        judge_max_tokens: int = 1024,
        timeout: float = DEFAULT_TIMEOUT_S,
        connections: int | None = None,
    ) -> None:
        name = model[len(MODEL_PREFIX) :] if model.startswith(MODEL_PREFIX) else ""
        if not name.strip():
            raise UsageError(
                f"model {model!r} is not an OpenAI-compatible model id; expected "
                f"{MODEL_PREFIX}NAME, e.g. {MODEL_PREFIX}gpt-4o-mini or {MODEL_PREFIX}llama3.1"
            )
        self.model = model
        #: What the endpoint is asked for.
        self.name = name
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.prices = prices if prices is not None else PriceBook.default()
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.judge_max_tokens = judge_max_tokens
        self.timeout = check_timeout(timeout)
        self.connections = connections
        self._api_key = api_key or None
        self._sdk: Any = None
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIAdapter(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    @property
    def parameters(self) -> Mapping[str, Any]:
        """What changes the answers. Unlike the Anthropic adapter's, the endpoint does: the
        same NAME on two servers (two local quantisations, a proxy to another vendor) can be
        two different models, so answers cached from one never stand in for the other."""
        return {
            "max_tokens": self.max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            "temperature": self.temperature,
            "base_url": redact_url(self.base_url),
        }

    @property
    def _official(self) -> bool:
        return urllib.parse.urlsplit(self.base_url).hostname == "api.openai.com"

    # -- reading answers -------------------------------------------------------------------

    def _message(self, response: Any) -> tuple[Any, str | None]:
        choice = response.choices[0]  # `_read_completion` checked there is one
        return getattr(choice, "message", None), getattr(choice, "finish_reason", None)

    def _calls(self, message: Any) -> list[tuple[str, str]]:
        """(name, raw JSON arguments) of each function call, in order."""
        calls = []
        for call in getattr(message, "tool_calls", None) or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            calls.append((str(function.name), str(getattr(function, "arguments", "") or "")))
        return calls

    def _completion(self, response: Any) -> Completion:
        message, _ = self._message(response)
        calls = self._calls(message)
        usage = _token_usage(response)
        return Completion(
            text=str(getattr(message, "content", None) or ""),
            tool_names=tuple(name for name, _ in calls),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output,
            cost_usd=self._cost(usage),
            tool_calls=tuple(ToolCall(name=name, arguments=_arguments(raw)) for name, raw in calls),
        )

    def _judgement(self, response: Any) -> Judgement:
        usage = _token_usage(response)
        return judgement(self._reading(response), usage, self._cost(usage))

    def _reading(self, response: Any) -> JudgeReading:
        message, finish = self._message(response)
        blocks: list[dict[str, Any]] = []
        content = getattr(message, "content", None)
        if content:
            blocks.append({"type": "text", "text": str(content)})
        for name, raw in self._calls(message):
            try:
                data = parse_json(raw) if raw else None
            except json.JSONDecodeError:
                # Not JSON at all: unmeasured, saying what came back.
                return JudgeReading(
                    score=None,
                    unmeasured=(
                        f"judge answer unreadable: {RECORD_VERDICT} arguments are not JSON: "
                        f"{preview(raw)!r}"
                    ),
                )
            blocks.append({"type": "tool_use", "name": name, "input": data})
        return reading_from_blocks(blocks, "max_tokens" if finish == "length" else finish)

    def _cost(self, usage: TokenUsage) -> float:
        priced_as = self.model if self.prices.is_known(self.model) else self.name
        if not self.prices.is_known(priced_as):
            priced_as = self.model  # the fallback note names the id the user wrote
        return usage.cost(self.prices, priced_as)

    # -- the wire --------------------------------------------------------------------------

    def _errors(self) -> ProviderErrors:
        return ProviderErrors(
            _PROVIDER, self, credential_variable=_KEY_VARIABLE, secrets=(self._api_key,)
        )

    def prepare(self) -> None:
        """Import the SDK now, before the first call, so no call's latency carries it."""
        import_sdk()

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                if not self._api_key and self._official:
                    raise self._errors().no_credential(
                        _KEY_VARIABLE,
                        otherwise=f", or set {_URL_VARIABLE} to a server that needs none",
                    )
                sdk = import_sdk()
                self._sdk = sdk
                # Key and endpoint explicit, so the SDK never picks others from os.environ.
                self._client = sdk.OpenAI(
                    **http_client_options(sdk, self.connections),
                    api_key=self._api_key or _NO_KEY,
                    base_url=self.base_url,
                    max_retries=self.max_retries,
                    # Bounds connecting and every wait for bytes, on each attempt.
                    timeout=self.timeout,
                )
                # The SDK and httpx log each request's URL at INFO (verdryx_core.untrusted.redact).
                install_log_filter()
            return self._client

    def _create(self, request: CallRequest) -> Any:
        client = self._get_client()
        chat = _chat_request(request)
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers have always taken max_tokens, and not all know the newer name.
        limit = "max_completion_tokens" if self._official else "max_tokens"
        chat[limit] = self.judge_max_tokens if request.kind == "judge" else self.max_tokens
        if self.temperature is not None:
            chat["temperature"] = self.temperature

        def send() -> tuple[int, str, bytes]:
            # The raw response: the SDK still raises for a 4xx/5xx (after its retries), but a
            # 2xx body is read by verdryx (verdryx_core.llm.wire), so a malformed one is named
            # instead of crashing inside the SDK's parser or reading as an empty answer.
            raw = client.chat.completions.with_raw_response.create(model=self.name, **chat)
            # The SDK's legacy raw response has read the body already.
            return int(raw.status_code), str(raw.headers.get("content-type") or ""), raw.content

        return self._errors().answer(
            send, _read_completion, sdk=self._sdk, call=CALL_NAMES[request.kind]
        )


def _token_usage(response: Any) -> TokenUsage:
    """A completion's counts (none from a server that sends no usage): its prompt tokens
    include those read from the prompt cache, billed at the cache-read rate."""
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = min(prompt, int(getattr(details, "cached_tokens", 0) or 0))
    return TokenUsage(
        fresh=prompt - cached,
        output=int(getattr(usage, "completion_tokens", 0) or 0),
        cache_read=cached,
    )


def _arguments(raw: str) -> dict[str, Any] | None:
    """A function call's JSON arguments; anything but a JSON object is not recorded (None)."""
    try:
        data = parse_json(raw) if raw else {}
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _read_completion(body: bytes, content_type: str) -> Any:
    """A 2xx chat.completion body, checked where verdryx reads it, as attribute objects (the
    shape the SDK's own models have); `MalformedAnswer` otherwise."""
    data = read_json_object(body, content_type)
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise MalformedAnswer("a completion without a 'choices' list")
    if not choices:
        raise MalformedAnswer("a completion with no choices")
    for index, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise MalformedAnswer(f"choice #{index + 1} without a 'message' object")
        if not isinstance(message.get("content"), str | None):
            raise MalformedAnswer(f"choice #{index + 1}: content is not a string")
        calls = message.get("tool_calls")
        if not isinstance(calls, list | None):
            raise MalformedAnswer(f"choice #{index + 1}: tool_calls is not a list")
        for number, call in enumerate(calls or (), start=1):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise MalformedAnswer(f"tool call #{number} without a function name")
            if not isinstance(function.get("arguments"), str | None):
                raise MalformedAnswer(f"tool call #{number}: arguments is not a string")
    usage = data.get("usage")
    if usage is not None:
        # A local server may leave usage out (its calls cost nothing); one that sends it
        # must send counts, or the recorded cost would be wrong.
        if not isinstance(usage, dict):
            raise MalformedAnswer("usage is not an object")
        for name in ("prompt_tokens", "completion_tokens"):
            token_count(usage, name, "usage")
        details = usage.get("prompt_tokens_details")
        if details is not None:
            if not isinstance(details, dict):
                raise MalformedAnswer("usage.prompt_tokens_details is not an object")
            token_count(details, "cached_tokens", "usage.prompt_tokens_details")
    return _attributes(data)


def _attributes(value: Any) -> Any:
    """JSON objects as `SimpleNamespace` (read with getattr, like the SDK's models)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(key): _attributes(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_attributes(item) for item in value]
    return value
