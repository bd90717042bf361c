"""NDJSON and CSV record files: one record per line or row, each problem named by line.

These files hold records that are already one per run (`{"outcome", "cost_usd", ...}`);
they pass through unchanged. Reading them needs no pyarrow.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from verdryx_core.addons.errors import TraceError
from verdryx_core.limits import cost_problem
from verdryx_core.untrusted.files import open_regular
from verdryx_core.untrusted.json_input import parse_json

__all__ = [
    "iter_csv",
    "iter_ndjson",
    "optional_cost",
    "optional_float",
    "optional_int",
    "read_csv",
    "read_ndjson",
    "required_cost",
    "required_outcome",
]


def iter_ndjson(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """`("<file>: line N", record)` per non-blank line; anything else is an error."""
    try:
        # Only a regular file: a FIFO would wait for a writer, /dev/zero never end.
        handle = open(open_regular(path), "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror}); check the path") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}: line {number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TraceError(
                    f"{where}: not UTF-8 ({exc.reason}); save the file as UTF-8"
                ) from exc
            if not text.strip():
                continue
            try:
                record = parse_json(text)
            except json.JSONDecodeError as exc:
                raise TraceError(
                    f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); expected one "
                    'JSON object per line such as {"outcome": "case_resolved", "cost_usd": 0.15}'
                ) from exc
            if not isinstance(record, dict):
                raise TraceError(
                    f"{where}: a JSON {type(record).__name__} where a JSON object was expected; "
                    "write one object per line"
                )
            yield where, record


def iter_csv(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """`("<file>: row N", record)` per data row (N counts the header as row 1); values
    stay strings, an empty cell is None. A row with more cells than the header is an error."""
    try:
        handle = open(open_regular(path), newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror}); check the path") from exc
    with handle:
        reader = csv.DictReader(handle)
        row = 1
        try:
            for record in reader:
                row += 1
                where = f"{path}: row {row} (line {reader.line_num})"
                if None in record:
                    raise TraceError(
                        f"{where}: {len(reader.fieldnames or []) + len(record[None])} cells "
                        f"where the header has {len(reader.fieldnames or [])}; quote cells "
                        "that contain commas"
                    )
                yield (
                    where,
                    {key: (value if value != "" else None) for key, value in record.items()},
                )
        except csv.Error as exc:
            raise TraceError(f"{path}: line {reader.line_num}: not valid CSV ({exc})") from exc
        except UnicodeDecodeError as exc:
            raise TraceError(
                f"{path}: after line {reader.line_num}: not UTF-8 ({exc.reason}); save as UTF-8"
            ) from exc


def read_ndjson(path: str | Path) -> list[dict[str, Any]]:
    return [record for _, record in iter_ndjson(path)]


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    return [record for _, record in iter_csv(path)]


def required_outcome(record: Mapping[str, Any], where: str) -> str:
    """The record's outcome tag as a string; absent or null is an error."""
    value = record.get("outcome")
    if value is None or isinstance(value, dict | list):
        raise TraceError(
            f"{where}: outcome is {'missing' if value is None else repr(value)}; expected a tag "
            'string such as "case_resolved" (the column is required in a record file)'
        )
    return str(value)


def _number(value: Any, field: str, where: str, example: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TraceError(f"{where}: {field} {value!r} is not a number; expected e.g. {example}")
    try:
        number = float(value)
    except ValueError:
        raise TraceError(
            f"{where}: {field} {value!r} is not a number; expected e.g. {example}"
        ) from None
    if not math.isfinite(number):
        raise TraceError(f"{where}: {field} {value!r} is not finite; expected e.g. {example}")
    return number


def required_cost(record: Mapping[str, Any], where: str) -> float:
    """The record's `cost_usd` in dollars; absent, null, unparseable, negative or past the
    maximum (docs/store.md, "Maxima") is an error."""
    value = record.get("cost_usd")
    if value is None:
        raise TraceError(
            f"{where}: cost_usd is missing; expected dollars such as 0.15 (the column is "
            "required in a record file)"
        )
    return _cost(value, where)


def optional_cost(record: Mapping[str, Any], where: str) -> float | None:
    """`cost_usd` when the record has one, held to the same rules as `required_cost`."""
    value = record.get("cost_usd")
    return None if value is None else _cost(value, where)


def _cost(value: Any, where: str) -> float:
    number = _number(value, "cost_usd", where, "0.15")
    # A negative cost would be shown as spend given back ("$ -5.00") and offset real spend in
    # every total; a huge one would overflow the sums. Refused here, where the record enters.
    problem = cost_problem(number)
    if problem is not None:
        raise TraceError(f"{where}: cost_usd {problem}; expected dollars such as 0.15")
    return number


def optional_float(record: Mapping[str, Any], field: str, where: str) -> float | None:
    value = record.get(field)
    return None if value is None else _number(value, field, where, "0.15")


def optional_int(record: Mapping[str, Any], field: str, where: str) -> int | None:
    value = record.get(field)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    number = _number(value, field, where, "3")
    if not number.is_integer():
        raise TraceError(f"{where}: {field} {value!r} is not a whole number; expected e.g. 3")
    return int(number)
