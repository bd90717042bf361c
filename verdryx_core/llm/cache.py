"""The response cache: an unchanged re-run calls nothing.

Every answer is keyed by the sha256 of a canonical JSON of (call kind, model, system prompt,
prompt, tools, parameters, repeat index) and kept in the store's `model_cache` table. Modes:

* `on` (default): a hit is served without a call; a miss calls and is remembered.
* `off`: always calls, neither reads nor writes the cache.
* `replay`: never calls; a miss is a `ModelCallError`.
* `refresh` (internal, for a rerun of one item): always calls, never reads, and the fresh
  answer replaces the remembered one.

New entries are buffered in memory and written by `flush()` in one transaction, so a pool of
threads never contends for the SQLite write lock and an interrupted run writes nothing half.
Concurrent calls with the same key (two cases with one prompt) share one request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm.base import Completion, Judgement, ModelAdapter
from verdryx_core.llm.cache_rows import replayable
from verdryx_core.llm.call_request import call_request, conversation_arguments
from verdryx_core.llm.wire import UNREADABLE_ANSWER
from verdryx_core.store import CacheEntry, Store

__all__ = ["CACHE_MODES", "REFRESH", "CacheStats", "CachedAdapter"]

CACHE_MODES: Final = ("off", "on", "replay")
#: Not a user's mode: a rerun's scorer calls again and remembers what it got.
REFRESH: Final = "refresh"
# Bumped when the stored response shape or the key recipe changes: old entries then miss.
_KEY_FORMAT: Final = 1
_PROMPT_PREVIEW: Final = 60

_Answer = TypeVar("_Answer", Completion, Judgement)


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheStats:
    """What the cache did: `saved_usd` is what the hits cost when they were first paid."""

    hits: int = 0
    misses: int = 0
    saved_usd: float = 0.0

    def __add__(self, other: CacheStats) -> CacheStats:
        return CacheStats(
            hits=self.hits + other.hits,
            misses=self.misses + other.misses,
            saved_usd=self.saved_usd + other.saved_usd,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "saved_usd": self.saved_usd}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CacheStats:
        return cls(
            hits=int(data.get("hits", 0)),
            misses=int(data.get("misses", 0)),
            saved_usd=float(data.get("saved_usd", 0.0)),
        )


def _plain(value: Any) -> Any:
    """JSON-ready builtins, so mappings and tuples hash like the dicts and lists they mirror."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _replayable(
    found: dict[str, tuple[dict[str, Any], float]],
) -> dict[str, tuple[dict[str, Any], float]]:
    """The stored answers that read back as what they were; a damaged row is a miss."""
    return {key: entry for key, entry in found.items() if replayable(entry[0])}


def _preview(prompt: str) -> str:
    text = " ".join(prompt.split())
    return repr(text if len(text) <= _PROMPT_PREVIEW else text[: _PROMPT_PREVIEW - 3] + "...")


class CachedAdapter:
    """`inner` behind the response cache; itself a `ModelAdapter`. Thread-safe."""

    def __init__(self, inner: ModelAdapter, store: Store | None, mode: str = "on") -> None:
        if mode not in CACHE_MODES and mode != REFRESH:
            raise UsageError(
                f"cache mode {mode!r} is not known",
                hint=f"pass {{cache}} with one of {', '.join(CACHE_MODES)}",
            )
        self.inner = inner
        self.model = inner.model
        self.store = store
        self.mode = mode
        self._lock = threading.Lock()
        # key -> (response dict, cost): everything read, preloaded or answered this session.
        self._known: dict[str, tuple[dict[str, Any], float]] = {}
        # Keys a preload found absent from the store: no need to ask it again.
        self._absent: set[str] = set()
        self._inflight: dict[str, Future[tuple[dict[str, Any], float]]] = {}
        self._pending: list[CacheEntry] = []
        # Answers paid for by a batch this session (verdryx_core.llm.batch): served once as
        # fresh answers (misses), not as cache hits; and the calls the batch failed.
        self._fresh: set[str] = set()
        self._failed: dict[str, ModelCallError] = {}
        self._hits = 0
        self._misses = 0
        self._saved = 0.0

    # -- stats -----------------------------------------------------------------------------

    @property
    def hits(self) -> int:
        with self._lock:
            return self._hits

    @property
    def misses(self) -> int:
        with self._lock:
            return self._misses

    @property
    def saved_usd(self) -> float:
        with self._lock:
            return self._saved

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(hits=self._hits, misses=self._misses, saved_usd=self._saved)

    @property
    def parameters(self) -> Mapping[str, Any]:
        return getattr(self.inner, "parameters", {})

    @property
    def answers_from_store(self) -> bool:
        """Whether a call may be answered from the store (else every call goes out)."""
        return self.mode in ("on", "replay") and self.store is not None

    def prepare(self) -> None:
        """Get the inner adapter ready to call (its SDK imported), for an adapter that was
        built without (`make_adapter(sdk_now=False)`)."""
        prepare = getattr(self.inner, "prepare", None)
        if prepare is not None:
            prepare()

    # -- keys ------------------------------------------------------------------------------

    def cache_key(
        self,
        kind: str,
        prompt: str,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        output: str | None = None,
        rubric: str | None = None,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """The key of one call; `kind` is "complete", "tools" or "judge"."""
        # The call's whole request: for a judge its prompt template, tool and forced choice
        # are part of the key, so changing them invalidates old verdicts.
        request = call_request(
            kind,
            prompt,
            tools=tools,
            output=output,
            rubric=rubric,
            system=system,
            messages=messages,
        )
        parameters = dict(_plain(getattr(self.inner, "parameters", {})))
        if request.tool_choice is not None:
            parameters["tool_choice"] = _plain(request.tool_choice)
        material = {
            "format": _KEY_FORMAT,
            "kind": kind,
            "model": self.model,
            "system": request.system,
            "prompt": request.prompt,
            "tools": None if request.tools is None else _plain(list(request.tools)),
            "parameters": parameters,
            "repeat": repeat,
        }
        if request.messages is not None:
            # Only when there is a conversation: a bare prompt keeps the key it always had.
            material["messages"] = _plain(list(request.messages))
        text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def preload(self, keys: Iterable[str]) -> int:
        """Read many keys in one query before the pool starts; returns how many were found."""
        if self.mode in ("off", REFRESH) or self.store is None:
            return 0
        wanted = [key for key in dict.fromkeys(keys) if key not in self._known]
        found = _replayable(self.store.cache_get_many(wanted))
        with self._lock:
            self._known.update(found)
            self._absent.update(key for key in wanted if key not in found)
        return len(found)

    def has(self, key: str) -> bool:
        """Whether `key` is answered without a call (read, preloaded, or remembered)."""
        with self._lock:
            return key in self._known

    def peek(self, key: str) -> dict[str, Any] | None:
        """The known answer of `key` as its dict, without counting a use (planning a batch
        of judge calls reads the model's outputs this way)."""
        with self._lock:
            entry = self._known.get(key)
        return None if entry is None else dict(entry[0])

    def remember(self, key: str, answer: Completion | Judgement) -> None:
        """An answer obtained outside the protocol (a Message Batch) for the call `key`: the
        next call with that key is served from it, counted as the fresh answer it is, and it
        is written to the store with the session's other new answers."""
        if self.mode == "off":
            raise UsageError("answers can only be remembered with the response cache on")
        response = answer.to_dict() | {"cached": False}
        with self._lock:
            self._known[key] = (response, answer.cost_usd)
            self._fresh.add(key)
            self._failed.pop(key, None)
            self._pending.append(
                CacheEntry(key=key, model=self.model, response=response, cost_usd=answer.cost_usd)
            )

    def remember_error(self, key: str, error: ModelCallError) -> None:
        """The call `key` failed outside the protocol (a batch request errored or expired): a
        call with that key raises this error instead of calling again."""
        with self._lock:
            self._failed[key] = error

    # -- the protocol ----------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        return self._answer(
            lambda: self.cache_key(
                "complete", prompt, repeat=repeat, system=system, messages=messages
            ),
            "complete",
            prompt,
            lambda: self.inner.complete(
                prompt, repeat=repeat, **conversation_arguments(system, messages)
            ),
            Completion,
        )

    def complete_with_tools(
        self,
        prompt: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        return self._answer(
            lambda: self.cache_key(
                "tools", prompt, tools=tools, repeat=repeat, system=system, messages=messages
            ),
            "tools",
            prompt,
            lambda: self.inner.complete_with_tools(
                prompt, tools, repeat=repeat, **conversation_arguments(system, messages)
            ),
            Completion,
        )

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement:
        return self._answer(
            lambda: self.cache_key("judge", prompt, output=output, rubric=rubric, repeat=repeat),
            "judge",
            prompt,
            lambda: self.inner.judge(prompt, output, rubric, repeat=repeat),
            Judgement,
        )

    def take_pending(self) -> list[CacheEntry]:
        """Hand over the answers gathered since the last flush without writing them: an xdist
        worker sends them to the controller, the only process that writes the store."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def flush(self) -> int:
        """Write the answers gathered since the last flush in one transaction; returns how
        many. Without a store they stay in memory only."""
        with self._lock:
            pending, self._pending = self._pending, []
        if self.store is not None and pending:
            self.store.cache_put_many(pending)
        return len(pending)

    # -- the machinery ---------------------------------------------------------------------

    def _answer(
        self,
        key_of: Callable[[], str],
        kind: str,
        prompt: str,
        call: Callable[[], _Answer],
        kind_type: type[_Answer],
    ) -> _Answer:
        if self.mode == "off":
            # No lookup and nothing kept: the key (a hash of the whole request) is not needed.
            with self._lock:
                self._misses += 1
            return call()
        key = key_of()
        with self._lock:
            failed = self._failed.get(key)
            if failed is not None:
                self._misses += 1
        if failed is not None:
            # A fresh exception per caller: one object raised in several threads would share
            # (and grow) one traceback.
            raise ModelCallError(str(failed), status=failed.status)
        with self._lock:
            entry = self._known.get(key) if self.mode != REFRESH else None
            waiting = self._inflight.get(key) if entry is None else None
            owner = entry is None and waiting is None
            if owner:
                waiting = self._inflight[key] = Future()
        if entry is not None:
            return self._hit(kind_type, entry, key)
        if not owner:
            assert waiting is not None
            return self._hit(kind_type, waiting.result())
        assert waiting is not None
        try:
            entry = self._fetch(key, kind, prompt, call)
        except BaseException as exc:
            with self._lock:
                del self._inflight[key]
            waiting.set_exception(exc)
            raise
        with self._lock:
            del self._inflight[key]
        waiting.set_result(entry)
        return kind_type.from_dict(entry[0])

    def _fetch(
        self, key: str, kind: str, prompt: str, call: Callable[[], Completion | Judgement]
    ) -> tuple[dict[str, Any], float]:
        """The owner's path: the store, else (unless replaying) the model."""
        if self.store is not None and self.mode != REFRESH and key not in self._absent:
            stored = _replayable(self.store.cache_get_many([key])).get(key)
            if stored is not None:
                with self._lock:
                    self._known[key] = stored
                    self._hits += 1
                    self._saved += stored[1]
                return stored[0] | {"cached": True}, stored[1]
        if self.mode == "replay":
            with self._lock:
                self._misses += 1
            raise ModelCallError(
                f"model {self.model}: the {kind} call for prompt {_preview(prompt)} is not in "
                "the cache (cache mode replay)",
                hint="record it first with {cache}=on",
            )
        answer = call()
        response = answer.to_dict() | {"cached": False}
        entry = (response, answer.cost_usd)
        unmeasured = getattr(answer, "unmeasured", None)
        if isinstance(unmeasured, str) and unmeasured.startswith(UNREADABLE_ANSWER):
            # A malformed answer (a proxy's error page) is not the judge's verdict: used for
            # this run, never replayed by the next (docs/troubleshooting.md).
            with self._lock:
                self._misses += 1
            return entry
        with self._lock:
            self._misses += 1
            self._known[key] = entry
            self._pending.append(
                CacheEntry(key=key, model=self.model, response=response, cost_usd=answer.cost_usd)
            )
        return entry

    def _hit(
        self, kind_type: type[_Answer], entry: tuple[dict[str, Any], float], key: str = ""
    ) -> _Answer:
        with self._lock:
            if key in self._fresh:
                # A batch answer's first use: paid this session, so a miss and not cached.
                self._fresh.discard(key)
                self._misses += 1
                return kind_type.from_dict(entry[0])
            self._hits += 1
            self._saved += entry[1]
        return kind_type.from_dict(entry[0] | {"cached": True})
