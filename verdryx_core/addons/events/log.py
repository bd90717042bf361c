"""The agent-event log: one NDJSON line per event, chained by `prev_hash`.

Each line is an agent-event v0.2 envelope with `source: "verdryx"`. Each event's `prev_hash`
is `chain_hash` of the line before it in the same file: sha256 over the RFC 8785 canonical
form (the `rfc8785` package, never hand-rolled) of that event without its own `prev_hash`.
One file is one chain; a new `EventLog` on the same file resumes it from the last line.

The log is opt-in and fails open: nothing is opened until an `EventLog` is constructed, and
`emit` never raises into the eval; skips and failures are counted and logged on the logger
`verdryx.events`. One writer per file: two processes appending to one file fork the chain.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.addons.canonical import canonical_json
from verdryx_core.errors import UsageError
from verdryx_core.untrusted.files import NotARegularFile, file_kind, open_regular
from verdryx_core.untrusted.json_input import parse_json

if TYPE_CHECKING:
    from verdryx_core.runs import EvalRun

__all__ = [
    "ENV_EVENTS_PATH",
    "SCHEMA",
    "SEVERITY",
    "SOURCE",
    "EventLog",
    "VerifyResult",
    "canonical_bytes",
    "chain_hash",
    "check_events_path",
    "drift_event_data",
    "drift_events",
    "is_canonical_agent_id",
    "resolve_events_path",
    "run_events",
    "verify_chain",
]

SCHEMA: Final = "taipanbox.dev/agent-event/v0.2"
SOURCE: Final = "verdryx"
ENV_EVENTS_PATH: Final = "VERDRYX_EVENTS_PATH"

#: Fixed per type; a type not listed here is "info".
SEVERITY: Final[Mapping[str, str]] = {
    "eval_run": "info",
    "quality_score": "info",
    "quality_drift": "high",
    "slo_burn": "high",
}

#: The Agent Passport subject grammar, as the v0.2 schema states it.
_AGENT_ID = re.compile(r"agent://[a-z0-9.-]+/[a-z0-9._/-]+")
_AGENT_ID_MAX = 255
_PREV_HASH = re.compile(r"sha256:[0-9a-f]{64}")

#: How much of a file's end is read to resume its chain; an event line is far smaller.
_TAIL_BYTES: Final = 1 << 20
#: Distinct rejected agent ids warned about; past this only the counter grows.
_WARNED_IDS_MAX: Final = 64

_log = logging.getLogger("verdryx.events")


def resolve_events_path(flag: str | None, env: Mapping[str, str] | None = None) -> Path | None:
    """The event log path: the flag, else `$VERDRYX_EVENTS_PATH` (read now, not at import),
    else None, and then no log exists at all."""
    if flag:
        return Path(flag)
    value = (os.environ if env is None else env).get(ENV_EVENTS_PATH)
    return Path(value) if value else None


def _not_a_log(path: Path, kind: str) -> UsageError:
    return UsageError(
        f"event log {str(path)!r} is {kind}; an event log is a regular file (one that does "
        "not exist yet is created)"
    )


def check_events_path(path: str | os.PathLike[str]) -> None:
    """Refuse an event log path that is not a regular file: reading the end of a FIFO or
    a device to resume the chain would wait forever (or never end), and a folder cannot
    be appended to. A path that does not exist yet is fine; it is created on the first event.
    Raises UsageError naming the path."""
    where = Path(path)
    try:
        mode = where.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"event log {str(where)!r}: {exc.strerror or exc}") from exc
    kind = file_kind(mode)
    if kind is not None:
        raise _not_a_log(where, kind)


def _open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor on `path`, which must be a regular file (`open_regular`: a FIFO put there
    since the check cannot hold the open); a `UsageError` naming the log otherwise."""
    try:
        return open_regular(path, flags, mode)
    except NotARegularFile as exc:
        raise _not_a_log(path, exc.kind) from None


def is_canonical_agent_id(agent_id: str) -> bool:
    """Whether `agent_id` fits the Passport grammar the schema requires (`agent://host/path`)."""
    return len(agent_id) <= _AGENT_ID_MAX and _AGENT_ID.fullmatch(agent_id) is not None


def canonical_bytes(event: Mapping[str, Any]) -> bytes:
    """RFC 8785 bytes of `event` without `prev_hash`; the caller's mapping is not changed."""
    body = {key: value for key, value in event.items() if key != "prev_hash"}
    return canonical_json(body)


def chain_hash(event: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of `canonical_bytes(event)`: the next event's `prev_hash`."""
    return "sha256:" + hashlib.sha256(canonical_bytes(event)).hexdigest()


def _timestamp(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Tail:
    """What resuming found at the end of a file."""

    last_hash: str | None
    #: The file does not end with a newline, so the next write must start with one.
    needs_newline: bool
    torn: str | None


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """The event on one line, or None when it is not a JSON object that canonicalises."""
    try:
        event = parse_json(raw.decode("utf-8"))
        if not isinstance(event, dict):
            return None
        canonical_bytes(event)
    except (UnicodeDecodeError, ValueError, TypeError):
        return None
    return event


def _read_tail(path: Path) -> _Tail:
    """Find the event to chain onto: the last line of the file that is a complete event.

    A torn last line (a crash mid-write leaves a fragment without its newline) is never chained
    onto: the chain resumes from the last complete event before it, the fragment is kept (it is
    evidence) and closed with a newline, and `torn` says what happened. `verify_chain` then
    names the fragment's line, since the file really is damaged there.
    """
    try:
        with os.fdopen(_open_regular(path, os.O_RDONLY), "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - _TAIL_BYTES)
            handle.seek(start)
            tail = handle.read()
    except FileNotFoundError:
        return _Tail(last_hash=None, needs_newline=False, torn=None)
    except OSError as exc:
        _log.warning("event log %s: cannot read its end to resume the chain (%s)", path, exc)
        return _Tail(last_hash=None, needs_newline=False, torn=None)
    needs_newline = bool(tail) and not tail.endswith(b"\n")
    base, body = start, tail
    if start > 0:  # the read began mid-line: that partial line is not ours to judge
        cut = tail.find(b"\n")
        base, body = (size, b"") if cut < 0 else (start + cut + 1, tail[cut + 1 :])
    located: list[tuple[int, bytes]] = []
    position = base
    for line in body.split(b"\n"):
        located.append((position, line))
        position += len(line) + 1
    damaged: list[int] = []
    for line_start, line in reversed(located):
        if not line.strip():
            continue
        event = _parse_line(line)
        if event is not None:
            torn = None
            if damaged:
                torn = (
                    f"event log {path}: {len(damaged)} damaged line(s) at its end, from byte "
                    f"{min(damaged)} (a write torn by a crash?); the chain resumes from the "
                    "last complete event before them; `verdryx events verify` names the line"
                )
            return _Tail(last_hash=chain_hash(event), needs_newline=needs_newline, torn=torn)
        damaged.append(line_start)
    torn = None
    if damaged:
        torn = (
            f"event log {path}: no complete event in its last {len(tail)} bytes (damaged from "
            f"byte {min(damaged)}); a new chain starts after them, unlinked to what came before"
        )
    return _Tail(last_hash=None, needs_newline=needs_newline, torn=torn)


class EventLog:
    """Appends chained agent-event lines to one file; `emit` never raises.

    Counters: `written`, `skipped_no_agent` (agent id None or "": never given a made-up id),
    `rejected` (an agent id outside the Passport grammar, an empty type, data that is not
    JSON), `write_failures` (the file could not be written; the chain does not advance).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, clock: Callable[[], datetime] = _now
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._warned_ids: set[str] = set()
        self.written = 0
        self.skipped_no_agent = 0
        self.rejected = 0
        self.write_failures = 0
        check_events_path(self.path)
        tail = _read_tail(self.path)
        self._prev_hash = tail.last_hash
        self._needs_newline = tail.needs_newline
        #: Set when the file's end was damaged on resume: what was found and what was done.
        self.torn_tail: str | None = tail.torn
        if tail.torn:
            _log.warning("%s", tail.torn)

    def __repr__(self) -> str:
        return (
            f"EventLog(path={str(self.path)!r}, written={self.written}, "
            f"skipped_no_agent={self.skipped_no_agent}, rejected={self.rejected}, "
            f"write_failures={self.write_failures})"
        )

    def emit(
        self,
        type: str,
        agent_id: str | None,
        data: Mapping[str, Any],
        *,
        run_id: str | None = None,
    ) -> bool:
        """Append one event; True when it was written, False when skipped or failed."""
        if not agent_id:
            with self._lock:
                self.skipped_no_agent += 1
            return False
        try:
            return self._emit(type, agent_id, data, run_id)
        except Exception:  # the eval must complete whatever goes wrong here
            _log.warning(
                "event log %s: unexpected error writing %r", self.path, type, exc_info=True
            )
            with self._lock:
                self.write_failures += 1
            return False

    def _emit(self, type: str, agent_id: str, data: Mapping[str, Any], run_id: str | None) -> bool:
        if not isinstance(type, str) or not type:
            return self._reject(f"event type {type!r} is not a non-empty string")
        if run_id is not None and not isinstance(run_id, str):
            return self._reject(f"run id {run_id!r} is not a string")
        if not is_canonical_agent_id(agent_id):
            with self._lock:
                self.rejected += 1
                first = agent_id not in self._warned_ids
                if first and len(self._warned_ids) < _WARNED_IDS_MAX:
                    self._warned_ids.add(agent_id)
                else:
                    first = False
            if first:
                _log.warning(
                    "event log %s: agent id %r does not match the Agent Passport grammar "
                    "agent://<host>/<path> (lowercase, at most 255 characters); its events "
                    "are not written",
                    self.path,
                    agent_id,
                )
            return False
        with self._lock:
            event: dict[str, Any] = {
                "schema": SCHEMA,
                "ts": _timestamp(self._clock()),
                "source": SOURCE,
                "type": type,
                "severity": SEVERITY.get(type, "info"),
                "agent_id": agent_id,
                "data": dict(data),
            }
            if run_id is not None:
                event["run_id"] = run_id
            if self._prev_hash is not None:
                event["prev_hash"] = self._prev_hash
            try:
                line = json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
                # Hash what a reader will parse back, so the writer, a resumed writer and
                # `verify_chain` agree even for values JSON cannot keep (tuples, int subclasses).
                next_hash = chain_hash(parse_json(line))
                payload = line.encode("utf-8") + b"\n"  # a lone surrogate fails here
            except (TypeError, ValueError) as exc:
                self.rejected += 1
                _log.warning(
                    "event log %s: %s event data is not JSON that RFC 8785 accepts (%s); "
                    "not written",
                    self.path,
                    type,
                    exc,
                )
                return False
            if self._needs_newline:
                payload = b"\n" + payload
            written = self._append(payload)
            if written != len(payload):
                if written:
                    # A partial line is now on disk: close it off before the next event.
                    self._needs_newline = True
                return False
            self._needs_newline = False
            self._prev_hash = next_hash
            self.written += 1
            return True

    def _reject(self, why: str) -> bool:
        with self._lock:
            self.rejected += 1
        _log.warning("event log %s: %s; not written", self.path, why)
        return False

    def _append(self, payload: bytes) -> int:
        """Bytes appended. Opened per event, not held, so a long session holds no descriptor."""
        done = 0
        try:
            fd = _open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                while done < len(payload):
                    done += os.write(fd, payload[done:])
            finally:
                os.close(fd)
        except OSError as exc:
            self.write_failures += 1
            # The first failure says why; the rest would repeat it once per event.
            level = logging.WARNING if self.write_failures == 1 else logging.DEBUG
            _log.log(level, "event log %s: write failed (%s); the eval goes on", self.path, exc)
        return done


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_events(run: EvalRun) -> list[tuple[str, dict[str, Any], str]]:
    """`(type, data, run_id)` for one run: a `quality_score` per measured case, then `eval_run`.

    Unmeasured cases emit no `quality_score`; `eval_run.unanswered` counts them and `cases`
    counts the measured ones, so `mean_score` (null when nothing was measured) is over `cases`.
    """
    events: list[tuple[str, dict[str, Any], str]] = []
    for score in run.scores:
        if score.value is None:
            continue
        events.append(
            (
                "quality_score",
                {
                    "case_id": score.case_id,
                    "eval_set_id": score.eval_set_id,
                    "grader": score.grader,
                    "value": score.value,
                    "tokens": score.tokens,
                    "cost_usd": score.cost_usd + score.judge_cost_usd,
                },
                run.id,
            )
        )
    events.append(
        (
            "eval_run",
            {
                "model": run.model,
                "cases": len(run.measured),
                "mean_score": run.mean_score,
                "total_tokens": run.total_tokens,
                "total_cost_usd": run.total_cost_usd,
                "unanswered": len(run.unmeasured),
                "eval_set_ids": list(run.eval_set_ids),
                "complete": run.complete,
            },
            run.id,
        )
    )
    return events


_DRIFT_FIELDS: Final = (
    "baseline_id",
    "window",
    "mean_score",
    "delta",
    "verdict",
    "baseline_n",
    "t_statistic",
    "ci_low",
    "ci_high",
)


def drift_event_data(drift: Mapping[str, Any]) -> dict[str, Any]:
    """The `quality_drift` payload from `DriftStats.to_dict()`; missing or non-finite -> null.
    `ci_low`, `ci_high`: the interval the verdict used, paired when cases paired
    (docs/events-and-otlp.md)."""
    data = {name: _finite(drift.get(name)) for name in _DRIFT_FIELDS}
    paired = drift.get("paired")
    if isinstance(paired, Mapping) and paired.get("ci_low") is not None:
        data["ci_low"] = _finite(paired.get("ci_low"))
        data["ci_high"] = _finite(paired.get("ci_high"))
    return data


def drift_events(drift: Mapping[str, Any], run_id: str) -> list[tuple[str, dict[str, Any], str]]:
    """`[("quality_drift", data, run_id)]` when the verdict is regressed, else nothing."""
    if drift.get("verdict") != "regressed":
        return []
    return [("quality_drift", drift_event_data(drift), run_id)]


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """The outcome of checking one file's chain.

    `first_broken_line` is the first line (1-based) whose integrity cannot be established:
    every line before it is proven by the chain, it and those after are not.
    """

    ok: bool
    lines: int
    first_broken_line: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "lines": self.lines,
            "first_broken_line": self.first_broken_line,
            "message": self.message,
        }


def _lines(handle: Any) -> Iterator[bytes]:
    """Physical lines split on LF only (never on VT, FF or U+2028 as `splitlines` would)."""
    for raw in handle:
        yield raw[:-1] if raw.endswith(b"\n") else raw


def verify_chain(path: str | os.PathLike[str]) -> VerifyResult:
    """Check every link of the chain in `path`, streaming (memory stays one line).

    Line 1 must carry no `prev_hash` (a first line that has one means earlier lines were cut);
    every later line must carry `chain_hash` of the line before it. A link that does not match
    names the earlier line: its content is what the link attests, and an edit to it is far
    likelier than an edit that keeps a 64-digit hash well-formed. What the chain cannot see:
    the newest line is attested by no later line, so an edit to it that keeps it valid JSON
    goes unnoticed; and the chain covers parsed content, so a byte change that parses to the
    same values (a float's 17th digit that rounds to the same double) changes no event.
    """
    file = Path(path)
    try:
        handle = os.fdopen(_open_regular(file, os.O_RDONLY), "rb")
    except UsageError:
        raise
    except OSError as exc:
        raise UsageError(
            f"cannot read event log {str(file)!r}: {exc.strerror or exc}; "
            "pass the path of an NDJSON event file"
        ) from exc
    broken: tuple[int, str] | None = None
    count = 0
    previous_hash: str | None = None
    with handle:
        for number, raw in enumerate(_lines(handle), start=1):
            count = number
            if broken is not None:
                continue
            broken, previous_hash = _check_line(number, raw, previous_hash)
    if broken is not None:
        line, message = broken
        return VerifyResult(ok=False, lines=count, first_broken_line=line, message=message)
    if count == 0:
        return VerifyResult(ok=True, lines=0, first_broken_line=None, message="no events")
    return VerifyResult(
        ok=True,
        lines=count,
        first_broken_line=None,
        message=f"{count} event(s), every prev_hash matches the line before it",
    )


def _check_line(
    number: int, raw: bytes, previous_hash: str | None
) -> tuple[tuple[int, str] | None, str | None]:
    """(break or None, this line's chain hash) for one line given the previous line's hash."""
    if not raw.strip():
        return (number, f"line {number} is blank; an event log has one event per line"), None
    try:
        event = parse_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return (number, f"line {number} is not a JSON event (a torn write or an edit): {exc}"), None
    if not isinstance(event, dict):
        return (number, f"line {number} is JSON but not an object"), None
    try:
        this_hash = chain_hash(event)
    except (TypeError, ValueError) as exc:
        return (number, f"line {number} has a value RFC 8785 cannot canonicalise: {exc}"), None
    prev = event.get("prev_hash")
    if number == 1:
        if prev is not None:
            return (
                1,
                f"line 1 carries prev_hash {prev!r} but is the first line: earlier "
                "events were removed, or this file continues another one",
            ), None
        return None, this_hash
    if prev is None:
        return (
            number,
            f"line {number} has no prev_hash, so nothing attests line {number - 1}: "
            "the chain was cut here",
        ), None
    if not isinstance(prev, str) or _PREV_HASH.fullmatch(prev) is None:
        return (
            number,
            f"line {number} has a malformed prev_hash {prev!r} (expected sha256:<64 hex digits>)",
        ), None
    if prev != previous_hash:
        return (
            number - 1,
            f"line {number - 1} does not match the prev_hash line {number} records for it: "
            f"line {number - 1} was changed after it was written (or line {number}'s "
            "prev_hash was)",
        ), None
    return None, this_hash
