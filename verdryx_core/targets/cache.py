"""Target results in the store's response cache, only under a declared version
(docs/targets.md, "Caching").

A target is the user's own code and verdryx cannot see when it changes, so nothing is cached
unless the run declares `--verdryx-target-version`: then a result is keyed by the sha256 of
(target name, version, everything the case object carries, repeat). Modes follow
`--verdryx-cache`: `on` reads and writes, `off` neither, `replay` only reads and a miss is
that case's error. Errors are never cached. New results are buffered and written by
`flush()` in one transaction, like model answers.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from verdryx_core.errors import TargetResultError, UsageError
from verdryx_core.llm.cache import CACHE_MODES, REFRESH
from verdryx_core.store import CacheEntry, Store
from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.result import TargetResult

__all__ = ["TargetCache"]

# Bumped when the stored result shape or the key recipe changes: old entries then miss.
_KEY_FORMAT: Final = 1


class TargetCache:
    """Thread-safe: the runner reads it from the caller's thread and writes it from its own."""

    def __init__(self, store: Store | None, *, mode: str = "on", version: str | None) -> None:
        if mode not in CACHE_MODES and mode != REFRESH:
            raise UsageError(
                f"cache mode {mode!r} is not known; expected one of {', '.join(CACHE_MODES)}",
                hint="fix {cache}",
            )
        if version is not None and not version.strip():
            raise UsageError(
                "the target version is empty", hint="name the agent's version with {target_version}"
            )
        if mode == "replay" and version is None:
            raise UsageError(
                "a replay cannot replay target calls: they are cached only under a declared "
                "version",
                hint="pass {target_version} V, the version they were recorded under",
            )
        self.store = store
        self.mode = mode
        self.version = version
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, Any]] = {}
        self._absent: set[str] = set()
        self._pending: list[CacheEntry] = []
        self.hits = 0
        self.misses = 0
        self.saved_usd = 0.0

    @property
    def enabled(self) -> bool:
        """Whether results are read or written at all."""
        return self.version is not None and self.mode != "off"

    @property
    def replaying(self) -> bool:
        return self.enabled and self.mode == "replay"

    def key(self, spec: str, case: TargetCase, variant: Mapping[str, Any] | None = None) -> str:
        material: dict[str, Any] = {
            "format": _KEY_FORMAT,
            "kind": "target",
            "target": spec,
            "version": self.version,
            "case": case.to_dict(),
        }
        if variant is not None:  # only when set: every other key stays what it was
            material["variant"] = dict(variant)
        text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def preload(self, keys: Iterable[str]) -> int:
        """Read many keys in one query before the calls start; returns how many were found."""
        if not self.enabled or self.store is None:
            return 0
        wanted = [key for key in dict.fromkeys(keys) if key not in self._known]
        found = self.store.cache_get_many(wanted)
        with self._lock:
            self._known.update({key: entry[0] for key, entry in found.items()})
            self._absent.update(key for key in wanted if key not in found)
        return len(found)

    def get(self, key: str) -> TargetResult | None:
        """The stored result, counted as a hit, or None (a miss, counted when recorded)."""
        if not self.enabled:
            return None
        if self.mode == REFRESH:  # a rerun: call again, whatever was recorded
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            data = self._known.get(key)
            absent = key in self._absent
        if data is None and not absent and self.store is not None:
            entry = self.store.cache_get_many([key]).get(key)
            data = None if entry is None else entry[0]
            with self._lock:
                if data is None:
                    self._absent.add(key)
                else:
                    self._known[key] = data
        result = None if data is None else _stored_result(data)
        if result is None:
            with self._lock:
                self.misses += 1
                if data is not None:  # damaged: called again, and the new result replaces it
                    self._known.pop(key, None)
                    self._absent.add(key)
            return None
        with self._lock:
            self.hits += 1
            self.saved_usd += result.usage.cost_usd
        return result

    def remember(self, key: str, spec: str, result: TargetResult) -> None:
        if not self.enabled or self.mode == "replay":
            return
        data = result.to_dict()
        with self._lock:
            self._known[key] = data
            self._absent.discard(key)
            self._pending.append(
                CacheEntry(
                    key=key,
                    model=f"target:{spec}@{self.version}",
                    response=data,
                    cost_usd=result.usage.cost_usd,
                )
            )

    def take_pending(self) -> list[CacheEntry]:
        """The results gathered since the last flush, unwritten (an xdist worker sends them
        to the controller, the only process that writes the store)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def flush(self) -> int:
        """Write the gathered results in one transaction; returns how many."""
        pending = self.take_pending()
        if self.store is not None and pending:
            self.store.cache_put_many(pending)
        return len(pending)


def _stored_result(data: Mapping[str, Any]) -> TargetResult | None:
    """A stored row as the result it was; None when another tool, a bad merge or a hand edit
    left it as something a target could not have returned (docs/targets.md, "Caching")."""
    try:
        return TargetResult.from_dict(data, dialogue=True)
    except (TargetResultError, TypeError, ValueError):
        return None
