"""The nine deterministic checks. Each returns pass, fail or error with its evidence in words.

`fail` means the check ran and the world contradicts the promise (a missing file, no match,
a table with no rows). `error` means the check could not run (unreadable, escaping symlink,
locked database, binary text, truncated evidence): never a pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Final

import regex

from verdryx_core.addons.contracts.model import (
    ERROR,
    FAILED,
    PASSED,
    Contract,
    Criterion,
    CriterionResult,
)
from verdryx_core.addons.contracts.validate import pattern_flags
from verdryx_core.addons.contracts.workspace import PathInfo, Source
from verdryx_core.addons.errors import CheckError

__all__ = ["count_lines", "run_check", "run_checks"]

_Outcome = tuple[str, str]
_Check = Callable[[Criterion, Source], _Outcome]

#: How much of a match is quoted back as evidence.
_SNIPPET: Final = 80


def run_checks(contract: Contract, source: Source) -> tuple[CriterionResult, ...]:
    return tuple(run_check(criterion, source) for criterion in contract.success_criteria)


def run_check(criterion: Criterion, source: Source) -> CriterionResult:
    try:
        status, evidence = _CHECKS[criterion.type](criterion, source)
    except CheckError as exc:
        status, evidence = ERROR, str(exc)
    except TimeoutError:
        status, evidence = (
            ERROR,
            f"regex {criterion.pattern!r} did not finish within "
            f"{source.limits.regex_timeout_s:g}s on {criterion.path!r} (catastrophic "
            "backtracking); simplify the pattern",
        )
    return CriterionResult(
        check_id=criterion.id,
        type=criterion.type,
        status=status,
        evidence=evidence,
        description=criterion.description,
    )


def count_lines(data: bytes) -> int:
    """Newline-terminated lines, plus a last line without a newline (like `wc -l` + 1 then)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@lru_cache(maxsize=1024)
def _compiled(pattern: str, flags: int) -> regex.Pattern[str]:
    return regex.compile(pattern, flags=flags)


def _describe(path: str, info: PathInfo) -> str:
    if info.kind == "file":
        return f"{path} is a file ({info.size} bytes)"
    if info.kind == "dir":
        return f"{path} is a directory"
    if info.kind == "missing":
        return f"{path} does not exist"
    return f"{path} is {info.note or 'not a regular file'}"


def _not_a_file(path: str, info: PathInfo) -> _Outcome | None:
    """The failure when `path` is not a regular file, else None."""
    if info.kind == "file":
        return None
    if info.kind == "dir":
        return FAILED, f"{path} is a directory, not a file"
    if info.kind == "missing":
        return FAILED, f"{path} does not exist"
    return FAILED, f"{_describe(path, info)}, not a file"


def _text(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckError(
            f"{path} is not UTF-8 text (byte {exc.start} of {len(data)}); a regex check "
            "reads text, so it cannot run on this file"
        ) from None


def _file_exists(criterion: Criterion, source: Source) -> _Outcome:
    info = source.stat(criterion.path)
    return _not_a_file(criterion.path, info) or (PASSED, _describe(criterion.path, info))


def _file_nonempty(criterion: Criterion, source: Source) -> _Outcome:
    info = source.stat(criterion.path)
    failure = _not_a_file(criterion.path, info)
    if failure:
        return failure
    if not info.size:
        return FAILED, f"{criterion.path} is empty (0 bytes)"
    return PASSED, _describe(criterion.path, info)


def _file_contains(criterion: Criterion, source: Source) -> _Outcome:
    path, pattern = criterion.path, criterion.pattern or ""
    failure = _not_a_file(path, source.stat(path))
    if failure:
        return failure
    text = _text(path, source.read(path))
    match = _compiled(pattern, pattern_flags(criterion.type)).search(
        text, timeout=source.limits.regex_timeout_s
    )
    if match is None:
        return FAILED, f"{path} has no match for {pattern!r} ({len(text)} characters searched)"
    line = text.count("\n", 0, match.start()) + 1
    return PASSED, f"{path} matches {pattern!r} at line {line}: {match.group(0)[:_SNIPPET]!r}"


def _pattern_count_gte(criterion: Criterion, source: Source) -> _Outcome:
    path, pattern, needed = criterion.path, criterion.pattern or "", criterion.min_count or 1
    failure = _not_a_file(path, source.stat(path))
    if failure:
        return failure
    text = _text(path, source.read(path))
    found = sum(
        1
        for _ in _compiled(pattern, pattern_flags(criterion.type)).finditer(
            text, timeout=source.limits.regex_timeout_s
        )
    )
    status = PASSED if found >= needed else FAILED
    return status, f"{path} has {found} matches of {pattern!r} (needs at least {needed})"


def _dir_exists(criterion: Criterion, source: Source) -> _Outcome:
    path = criterion.path
    info = source.stat(path)
    if info.kind == "file":
        return FAILED, f"{path} is a file, not a directory"
    if info.kind == "missing":
        return FAILED, f"{path} does not exist"
    if info.kind != "dir":
        return FAILED, f"{_describe(path, info)}, not a directory"
    try:
        listing = source.listdir(path)
    except CheckError as exc:
        # Existence is the claim; an unreadable listing is context, not a reason to fail.
        return PASSED, f"{path} is a directory (entries unreadable: {exc})"
    shown = ", ".join(listing.entries[:5])
    more = f", ... ({listing.count} in all)" if listing.count > 5 else ""
    noun = "entry" if listing.count == 1 else "entries"
    return PASSED, f"{path} is a directory with {listing.count} {noun}" + (
        f": {shown}{more}" if listing.count else ""
    )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _json_valid(criterion: Criterion, source: Source) -> _Outcome:
    path = criterion.path
    failure = _not_a_file(path, source.stat(path))
    if failure:
        return failure
    data = source.read(path)
    if not data.strip():
        return FAILED, f"{path} is empty, not JSON"
    try:
        # Not `verdryx_core.untrusted.json_input`: this check asks whether any JSON parser
        # reads the agent's file, and verdryx never walks the value, so neither its depth
        # bound nor its number bound applies. NaN and Infinity are Python's extension, not
        # JSON: other parsers refuse them.
        value = json.loads(data, parse_constant=_reject_constant)
    except RecursionError:
        raise CheckError(f"{path} nests too deeply for the JSON parser") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return FAILED, f"{path} is not valid JSON: {exc}"
    kinds: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
    kind = kinds.get(type(value), "a scalar")
    return PASSED, f"{path} is valid JSON ({kind}, {len(data)} bytes)"


def _line_count_gte(criterion: Criterion, source: Source) -> _Outcome:
    path, needed = criterion.path, criterion.min_lines or 0
    failure = _not_a_file(path, source.stat(path))
    if failure:
        return failure
    lines = count_lines(source.read(path))
    status = PASSED if lines >= needed else FAILED
    return status, f"{path} has {lines} lines (needs at least {needed})"


def _sqlite_table_has_rows(criterion: Criterion, source: Source) -> _Outcome:
    path, table, needed = criterion.path, criterion.table or "", criterion.min_rows or 1
    failure = _not_a_file(path, source.stat(path))
    if failure:
        return failure
    facts = source.sqlite_table(path, table)
    if facts.not_sqlite is not None:
        return FAILED, f"{path} is not a SQLite database ({facts.not_sqlite})"
    if facts.absent or facts.rows is None:
        return FAILED, f"{path} has no table {table!r}"
    status = PASSED if facts.rows >= needed else FAILED
    return status, f"table {table!r} in {path} has {facts.rows} rows (needs at least {needed})"


def _path_absent(criterion: Criterion, source: Source) -> _Outcome:
    info = source.stat(criterion.path)
    if info.kind == "missing":
        return PASSED, f"{criterion.path} does not exist"
    return FAILED, f"{_describe(criterion.path, info)}; it was to stay absent"


_CHECKS: Final[Mapping[str, _Check]] = {
    "file_exists": _file_exists,
    "file_nonempty": _file_nonempty,
    "file_contains": _file_contains,
    "pattern_count_gte": _pattern_count_gte,
    "dir_exists": _dir_exists,
    "json_valid": _json_valid,
    "line_count_gte": _line_count_gte,
    "sqlite_table_has_rows": _sqlite_table_has_rows,
    "path_absent": _path_absent,
}
