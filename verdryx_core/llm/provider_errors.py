"""A provider's failure as one clear line, worded alike through every adapter.

Both SDKs (`anthropic`, `openai`) are generated from one template: the same retry loop and
the same exception tree (`APIStatusError` carrying the HTTP status, `APITimeoutError`,
`APIConnectionError`, under the SDK's own base error). So a missing SDK, a missing or refused
credential, an exhausted rate limit, a 5xx, a timeout, an unreachable endpoint and a 2xx answer
that cannot be read say the same through either adapter: which model and which of a case's
calls failed, the endpoint (any password masked), the status with the provider's own words,
and what to do (docs/troubleshooting.md). The adapter's credentials never appear, not even
where the provider echoes them back.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from verdryx_core.errors import ModelCallError, VerdryxError
from verdryx_core.llm.wire import MalformedAnswer
from verdryx_core.untrusted.redact import redact_url

__all__ = ["Provider", "ProviderErrors", "named_call", "preview"]

_PREVIEW: Final = 300
_Answer = TypeVar("_Answer")


def preview(text: str) -> str:
    """A provider's text on one line, at most 300 characters."""
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


def named_call(message: str, call: str) -> str:
    """`model M (judge call): ...`: which of a case's calls failed."""
    prefix, sep, rest = message.partition(": ")
    return f"{prefix} ({call}){sep}{rest}" if sep else message


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """What the messages say about one provider and its SDK."""

    #: As messages name it: "Anthropic".
    name: str
    #: The SDK's module: "anthropic".
    module: str
    #: What the user named that needs it: "a real model".
    named: str
    install_hint: str
    #: The variable that sets the endpoint: "ANTHROPIC_BASE_URL".
    url_variable: str
    #: What that endpoint must be: "an Anthropic Messages API endpoint".
    endpoint: str
    #: The SDK's base exception class (`anthropic.AnthropicError`): what it raises on purpose.
    base_error: str
    #: The error kinds and the message of a status error's `body`, as this SDK hands it over.
    error_words: Callable[[object], tuple[Sequence[str], str | None]]

    def import_sdk(self) -> Any:
        """The SDK module, or a VerdryxError saying how to install it."""
        try:
            return importlib.import_module(self.module)
        except ImportError:
            raise self._not_installed() from None

    def check_installed(self) -> None:
        """A VerdryxError saying how to install the SDK when it is not there, without
        importing it: an SDK takes a second or more to import, which a run whose every call is
        answered from the store's cache never needs (the first call imports it)."""
        try:
            found = importlib.util.find_spec(self.module)
        except (ImportError, ValueError):  # a parent that is no package, a broken entry
            found = None
        if found is None:
            raise self._not_installed()

    def _not_installed(self) -> VerdryxError:
        return VerdryxError(
            f"{self.named} was named but the {self.name} SDK is not installed",
            hint=f"install it with {self.install_hint}, or use {{model}}=stub",
        )


class Settings(Protocol):
    """The adapter settings a failure message names."""

    model: str
    base_url: str
    max_retries: int
    timeout: float


class ProviderErrors:
    """The failures of one adapter's calls, each as one `ModelCallError`.

    `credential_variable` is the variable a refused credential came from; `secrets` are
    removed from every message (None entries are skipped)."""

    def __init__(
        self,
        provider: Provider,
        adapter: Settings,
        *,
        credential_variable: str,
        secrets: Iterable[str | None],
    ) -> None:
        self.provider = provider
        self.model = adapter.model
        self.where = redact_url(adapter.base_url)
        self.max_retries = adapter.max_retries
        self.timeout = adapter.timeout
        self.credential_variable = credential_variable
        self._secrets = tuple(secret for secret in secrets if secret)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return redact_url(text)

    # -- before a request ------------------------------------------------------------------

    def no_credential(self, variable: str, *, otherwise: str = "") -> ModelCallError:
        """No credential to send: `otherwise` says what else would do."""
        return ModelCallError(
            f"model {self.model}: no {self.provider.name} credential; set {variable} in the "
            f"environment (verdryx never takes a key on the command line){otherwise}"
        )

    # -- a request -------------------------------------------------------------------------

    def answer(
        self,
        send: Callable[[], tuple[int, str, bytes]],
        read: Callable[[bytes, str], _Answer],
        *,
        sdk: Any,
        call: str,
    ) -> _Answer:
        """`send()` the request through the SDK (its retries and timeouts included) for the
        status, content type and body of a 2xx answer, then `read` that body: every failure
        on the way is one `ModelCallError` naming `call`."""
        try:
            status, content_type, body = send()
        except getattr(sdk, self.provider.base_error) as exc:
            raise self.from_sdk(exc, sdk, call) from None
        except Exception as exc:  # anything else the SDK or its HTTP stack lets escape
            # A transport error the SDK let through unwrapped (its HTTP stack's core imported
            # twice in one process does that) is worded as the SDK's own would be.
            if _timed_out(exc, itself=True):
                raise self._timeout(call) from None
            if _transport_error(exc):
                raise self._unreachable(exc, call) from None
            raise ModelCallError(
                self.redact(
                    f"model {self.model}: the {call} to {self.where} failed inside the "
                    f"{self.provider.name} SDK ({type(exc).__name__}: {exc})"
                )
            ) from None
        try:
            return read(body, content_type)
        except MalformedAnswer as exc:
            raise self.unreadable(status, exc, call) from None

    def from_sdk(self, exc: Exception, sdk: Any, call: str) -> ModelCallError:
        """What the SDK raised, after its own retries."""
        if isinstance(exc, sdk.APIStatusError):
            return self.from_status(int(exc.status_code), self._detail(exc), call)
        # Before APIConnectionError (a subclass); on a busy machine the SDK may also wrap a
        # read timeout of its HTTP stack as a connection error: it timed out all the same.
        if isinstance(exc, sdk.APITimeoutError) or _timed_out(exc):
            return self._timeout(call)
        if isinstance(exc, sdk.APIConnectionError):
            return self._unreachable(exc.__cause__ or exc, call)
        message = (
            f"model {self.model}: the {self.provider.name} SDK failed: {type(exc).__name__}: {exc}"
        )
        return ModelCallError(self.redact(named_call(message, call)))

    def _timeout(self, call: str) -> ModelCallError:
        return ModelCallError(
            self.redact(
                named_call(
                    f"model {self.model}: {self.where} did not answer within "
                    f"{self.timeout:g}s, still failing after {self.max_retries} retries",
                    call,
                )
            ),
            hint="check the endpoint, retry later or raise {timeout}",
        )

    def _unreachable(self, cause: BaseException, call: str) -> ModelCallError:
        message = (
            f"model {self.model}: cannot reach {self.where} ({type(cause).__name__}: "
            f"{cause}), still failing after {self.max_retries} retries; check "
            f"{self.provider.url_variable} and the network"
        )
        return ModelCallError(self.redact(named_call(message, call)))

    def from_status(self, status: int, detail: str, call: str) -> ModelCallError:
        """An HTTP error status; `detail` is the provider's own words (`_detail`)."""
        hint = None
        if status in (401, 403):
            message = (
                f"model {self.model}: {self.where} refused the credential (HTTP {status}"
                f"{detail}); set {self.credential_variable} to a valid key for this endpoint"
            )
        elif status in (408, 409, 429) or status >= 500:
            message = (
                f"model {self.model}: HTTP {status}{detail} from {self.where}, still failing "
                f"after {self.max_retries} retries"
            )
            if status == 429:
                hint = "lower {concurrency} or raise your rate limit"
            else:
                message += "; retry later"
        else:
            message = (
                f"model {self.model}: {self.where} rejected the request (HTTP {status}"
                f"{detail}); check the model id and the request"
            )
        return ModelCallError(self.redact(named_call(message, call)), status=status, hint=hint)

    def unreadable(self, status: int, problem: object, call: str) -> ModelCallError:
        """A 2xx answer that is not what the API sends (`problem` says what is wrong)."""
        return ModelCallError(
            self.redact(
                f"model {self.model}: the {call} to {self.where} got HTTP {status} with "
                f"{problem}; is {self.provider.url_variable} {self.provider.endpoint} (a "
                "proxy's error page is not)?"
            ),
            status=status,
        )

    def _detail(self, exc: Any) -> str:
        """`: <error kind>: <message>, request id <id>` from a status error."""
        kinds, message = self.provider.error_words(getattr(exc, "body", None))
        parts = [*kinds] if message is None else [*kinds, preview(message)]
        detail = "".join(f": {part}" for part in parts)
        request_id = getattr(exc, "request_id", None)
        if request_id:
            detail += f", request id {request_id}"
        return detail


def _transport_error(exc: BaseException) -> bool:
    """An error of the SDK's HTTP stack (httpx, httpcore) or of the socket under it."""
    return isinstance(exc, OSError) or type(exc).__module__.startswith(("httpx", "httpcore"))


def _timed_out(exc: BaseException, *, itself: bool = False) -> bool:
    """Whether a timeout of the HTTP stack (httpx's, httpcore's or the socket's) is among the
    causes of `exc` (or is `exc`, with `itself`)."""
    seen: set[int] = set()
    cause: BaseException | None = exc if itself else exc.__cause__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, TimeoutError) or (
            type(cause).__module__.startswith(("httpx", "httpcore"))
            and type(cause).__name__.endswith("Timeout")
        ):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
