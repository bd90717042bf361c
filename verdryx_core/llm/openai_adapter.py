"""The OpenAI-compatible adapter: the official `openai` SDK's chat completions behind the
adapter protocol, for OpenAI itself and for anything that speaks its API (vLLM, Ollama,
LiteLLM, llama.cpp's server) through `OPENAI_BASE_URL` (docs/models-and-judges.md).

Model ids are `openai:NAME`; NAME is what the endpoint is asked for. The SDK is an optional
extra, imported on first use. Retries and timeouts are the SDK's own, configured like the
Anthropic adapter's: 408, 409, 429 and 5xx are retried with backoff and jitter honouring
`retry-after`, at most `max_retries` times, each attempt bounded by `timeout`. The judge
answers through a forced function call (`tool_choice`) to `record_verdict`, read by the same
rules as the Anthropic judge (`verdryx_core.llm.judge_prompt`): anything but a number in
[0, 1] with a reason is unmeasured. The credential never appears in an error.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Final

from verdryx_core import jsonload
from verdryx_core.errors import ModelCallError, UsageError, VerdryxError
from verdryx_core.llm.base import Completion, Judgement
from verdryx_core.llm.judge_prompt import (
    JUDGE_SYSTEM,
    RECORD_VERDICT,
    RECORD_VERDICT_TOOL,
    Verdict,
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

__all__ = [
    "DEFAULT_BASE_URL",
    "INSTALL_HINT",
    "MODEL_PREFIX",
    "OpenAIAdapter",
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
_MESSAGE_PREVIEW: Final = 300


def import_sdk() -> Any:
    """The `openai` module, or a VerdryxError saying how to install it."""
    try:
        import openai
    except ImportError:
        raise VerdryxError(
            "an openai: model was named but the OpenAI SDK is not installed",
            hint=f"install it with {INSTALL_HINT}, or use {{model}}=stub",
        ) from None
    return openai


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


_JUDGE_TOOL: Final = openai_tool(RECORD_VERDICT_TOOL)
_JUDGE_CHOICE: Final = {"type": "function", "function": {"name": RECORD_VERDICT}}


def _display_url(url: str) -> str:
    """A URL fit for an error message: any password is masked (verdryx_core.redact)."""
    return redact_url(url)


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_PREVIEW else text[: _MESSAGE_PREVIEW - 3] + "..."


class OpenAIAdapter:
    """A chat-completions model. Thread-safe: one SDK client (one connection pool) is built
    on first use and shared by every pool thread.

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
        self._api_key = api_key or None
        self._sdk: Any = None
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIAdapter(model={self.model!r}, base_url={_display_url(self.base_url)!r})"

    @property
    def parameters(self) -> Mapping[str, Any]:
        """What changes the answers. Unlike the Anthropic adapter's, the endpoint does: the
        same NAME on two servers (two local quantisations, a proxy to another vendor) can be
        two different models, so answers cached from one never stand in for the other."""
        return {
            "max_tokens": self.max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            "temperature": self.temperature,
            "base_url": _display_url(self.base_url),
        }

    @property
    def _official(self) -> bool:
        return urllib.parse.urlsplit(self.base_url).hostname == "api.openai.com"

    # -- the protocol ----------------------------------------------------------------------

    def complete(self, prompt: str, *, repeat: int = 0) -> Completion:
        response = self._create(self.max_tokens, [{"role": "user", "content": prompt}])
        return self._completion(response)

    def complete_with_tools(
        self, prompt: str, tools: Sequence[Mapping[str, Any]], *, repeat: int = 0
    ) -> Completion:
        # Single turn: the function calls of this first response are the trace; no tool is
        # executed and nothing is sent back.
        response = self._create(
            self.max_tokens,
            [{"role": "user", "content": prompt}],
            tools=[openai_tool(tool) for tool in tools],
        )
        return self._completion(response)

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement:
        try:
            response = self._create(
                self.judge_max_tokens,
                [
                    {"role": "system", "content": JUDGE_SYSTEM},
                    {"role": "user", "content": render_judge_prompt(prompt, output, rubric)},
                ],
                tools=[_JUDGE_TOOL],
                tool_choice=_JUDGE_CHOICE,
            )
        except ModelCallError as exc:
            if exc.status is None or not 200 <= exc.status < 300:
                raise  # refused or unreachable: an infrastructure error, not a verdict
            # A 2xx answer the judge rules cannot read is unmeasured, like any other
            # unreadable verdict (docs/models-and-judges.md); its cost is unknown.
            return Judgement(score=None, unmeasured=f"{UNREADABLE_ANSWER}: {exc}")
        verdict = self._verdict(response)
        input_tokens, output_tokens, cost = self._usage(response)
        return Judgement(
            score=verdict.score,
            reason=verdict.reason,
            unmeasured=verdict.unmeasured,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )

    # -- reading answers -------------------------------------------------------------------

    def _message(self, response: Any) -> tuple[Any, str | None]:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelCallError(
                f"model {self.model}: {_display_url(self.base_url)} answered with no choices; "
                "check that the endpoint speaks the chat-completions API"
            )
        choice = choices[0]
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
        input_tokens, output_tokens, cost = self._usage(response)
        return Completion(
            text=str(getattr(message, "content", None) or ""),
            tool_names=tuple(name for name, _ in calls),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            tool_calls=tuple(ToolCall(name=name, arguments=_arguments(raw)) for name, raw in calls),
        )

    def _verdict(self, response: Any) -> Verdict:
        message, finish = self._message(response)
        blocks: list[dict[str, Any]] = []
        content = getattr(message, "content", None)
        if content:
            blocks.append({"type": "text", "text": str(content)})
        for name, raw in self._calls(message):
            try:
                data = jsonload.loads(raw) if raw else None
            except json.JSONDecodeError:
                # Not JSON at all: unmeasured, saying what came back.
                return Verdict(
                    score=None,
                    unmeasured=(
                        f"judge answer unreadable: {RECORD_VERDICT} arguments are not JSON: "
                        f"{_preview(raw)!r}"
                    ),
                )
            blocks.append({"type": "tool_use", "name": name, "input": data})
        return parse_verdict(blocks, "max_tokens" if finish == "length" else finish)

    def _usage(self, response: Any) -> tuple[int, int, float]:
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        output = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        # Cached prompt tokens are part of prompt_tokens, priced at the cache-read rate.
        cached = min(prompt, int(getattr(details, "cached_tokens", 0) or 0))
        priced_as = self.model if self.prices.is_known(self.model) else self.name
        if not self.prices.is_known(priced_as):
            priced_as = self.model  # the fallback note names the id the user wrote
        cost = self.prices.cost(priced_as, prompt - cached, output, cache_read_tokens=cached)
        return prompt, output, cost

    # -- the wire --------------------------------------------------------------------------

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                if not self._api_key and self._official:
                    raise ModelCallError(
                        f"model {self.model}: no OpenAI credential; set {_KEY_VARIABLE} in the "
                        "environment (verdryx never takes a key on the command line), or set "
                        f"{_URL_VARIABLE} to a server that needs none"
                    )
                sdk = import_sdk()
                self._sdk = sdk
                # Key and endpoint explicit, so the SDK never picks others from os.environ.
                self._client = sdk.OpenAI(
                    api_key=self._api_key or _NO_KEY,
                    base_url=self.base_url,
                    max_retries=self.max_retries,
                    # Bounds connecting and every wait for bytes, on each attempt.
                    timeout=self.timeout,
                )
                # The SDK and httpx log each request's URL at INFO (verdryx_core.redact).
                install_log_filter()
            return self._client

    def _create(self, max_tokens: int, messages: list[dict[str, Any]], **request: Any) -> Any:
        client = self._get_client()
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers have always taken max_tokens, and not all know the newer name.
        limit = "max_completion_tokens" if self._official else "max_tokens"
        request[limit] = max_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        try:
            # The raw response: the SDK still raises for a 4xx/5xx (after its retries), but a
            # 2xx body is read by verdryx (verdryx_core.llm.wire), so a malformed one is named
            # instead of crashing inside the SDK's parser or reading as an empty answer.
            raw = client.chat.completions.with_raw_response.create(
                model=self.name, messages=messages, **request
            )
            status = int(raw.status_code)
            content_type = str(raw.headers.get("content-type") or "")
            body = raw.content  # the SDK's legacy raw response has read it already
        except self._sdk.OpenAIError as exc:
            raise self._error(exc) from None
        except Exception as exc:  # anything else the SDK or its HTTP stack lets escape
            raise ModelCallError(
                self._redact(
                    f"model {self.model}: the call to {_display_url(self.base_url)} failed "
                    f"inside the OpenAI SDK ({type(exc).__name__}: {exc})"
                )
            ) from None
        try:
            return _read_completion(body, content_type)
        except MalformedAnswer as exc:
            raise ModelCallError(
                self._redact(
                    f"model {self.model}: {_display_url(self.base_url)} answered HTTP {status} "
                    f"with {exc}; check that the endpoint speaks the chat-completions API"
                ),
                status=status,
            ) from None

    def _error(self, exc: Exception) -> ModelCallError:
        sdk = self._sdk
        where = _display_url(self.base_url)
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            detail = self._provider_detail(exc)
            if status in (401, 403):
                message = (
                    f"model {self.model}: {where} refused the credential (HTTP {status}{detail}); "
                    f"set {_KEY_VARIABLE} to a valid key for this endpoint"
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
            return ModelCallError(self._redact(message), status=status)
        if isinstance(exc, sdk.APITimeoutError):
            return ModelCallError(
                self._redact(
                    f"model {self.model}: {where} did not answer within {self.timeout:g}s, "
                    f"still failing after {self.max_retries} retries"
                ),
                hint="check the endpoint, retry later or raise {timeout}",
            )
        elif isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc
            message = (
                f"model {self.model}: cannot reach {where} ({type(cause).__name__}: {cause}), "
                f"still failing after {self.max_retries} retries; check {_URL_VARIABLE} and "
                "the network"
            )
        else:
            message = f"model {self.model}: the OpenAI SDK failed: {type(exc).__name__}: {exc}"
        return ModelCallError(self._redact(message))

    def _provider_detail(self, exc: Any) -> str:
        """`: <error type>: <message>` from an OpenAI error body, plus the request id."""
        body = getattr(exc, "body", None)
        parts: list[str] = []
        if isinstance(body, Mapping):
            for key in ("type", "code"):
                if isinstance(body.get(key), str) and body[key] not in parts:
                    parts.append(body[key])
            if isinstance(body.get("message"), str):
                parts.append(_preview(body["message"]))
        detail = "".join(f": {part}" for part in parts)
        request_id = getattr(exc, "request_id", None)
        if request_id:
            detail += f", request id {request_id}"
        return detail

    def _redact(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return redact_url(text)


def _arguments(raw: str) -> dict[str, Any] | None:
    """A function call's JSON arguments; anything but a JSON object is not recorded (None)."""
    try:
        data = jsonload.loads(raw) if raw else {}
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
