"""Reading the three eval set formats into one document (`{"id", ..., "cases": [...]}`).

* `*.evalset.json`: the document itself.
* `*.evalset.jsonl`: the first line is the document without `cases` (`{"id", "defaults"?,
  ...}`), then one case object per line; blank lines are skipped.
* `*.evalset.csv`: one case per row under a header row. A sidecar `NAME.evalset.csv.json`
  beside it may give the set's `id` (default: NAME), `description`, `defaults`, `target`,
  and `columns`, a map from case field to CSV column; without `columns` the headers are
  the case fields. A cell is text, except for fields that are not strings in the schema
  (numbers, booleans, and JSON in the cell for arrays and objects); `tags` may also be words
  separated by spaces or commas, and an `output` cell holding a JSON array is a tool trace.
  An empty cell is a field left out.

Every case keeps the line it starts on, so errors can point at it.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.schema import evalset_schema
from verdryx_core.untrusted.files import read_regular_text
from verdryx_core.untrusted.json_input import MAX_DEPTH, NonFiniteNumber, json_kind, parse_json

__all__ = [
    "CSV_SIDECAR_SUFFIX",
    "EVALSET_SUFFIXES",
    "Document",
    "read_document",
]

#: The file name endings collected as eval sets by default.
EVALSET_SUFFIXES: Final = (".evalset.json", ".evalset.jsonl", ".evalset.csv")
CSV_SIDECAR_SUFFIX: Final = ".json"
_SIDECAR_FIELDS: Final = ("id", "description", "defaults", "target", "columns")
_TRUE: Final = frozenset({"true", "yes", "1"})
_FALSE: Final = frozenset({"false", "no", "0"})


@dataclass(frozen=True, slots=True)
class Document:
    data: object
    #: The 1-based line each case starts on; None for a JSON file.
    case_lines: tuple[int, ...] | None = None
    #: The line of the set-level fields (a JSONL header); None when not one line.
    header_line: int | None = None


def _read_text(path: Path) -> str:
    try:
        # utf-8-sig: editors on Windows save a byte order mark, which is not an error.
        return read_regular_text(path, encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        if _is_broken_link(path):
            raise EvalSetError(path, _broken_link(path)) from None
        raise EvalSetError(path, f"cannot read: {exc}") from None


def _is_broken_link(path: Path) -> bool:
    try:
        return path.is_symlink() and not path.exists()
    except (OSError, ValueError):  # a name too long to look at is no link to explain
        return False


def _broken_link(path: Path) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    try:
        path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 raises this for a loop
        return f"a symbolic link loop (it points to {target!r}); fix or remove the link"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a symbolic link loop (it points to {target!r}); fix or remove the link"
    return f"a symbolic link to {target!r}, which does not exist; fix or remove the link"


def read_document(path: Path) -> Document:
    """The document of an eval set file, by its name's ending (JSON otherwise)."""
    name = path.name
    if name.endswith(".jsonl"):
        return _read_jsonl(path)
    if name.endswith(".csv"):
        return _read_csv(path)
    text = _read_text(path)
    try:
        return Document(parse_json(text, allow_nan=False))
    except json.JSONDecodeError as exc:
        raise EvalSetError(
            path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None


def _parse_line(path: Path, text: str, number: int) -> Any:
    try:
        return parse_json(text, allow_nan=False)
    except NonFiniteNumber as exc:
        raise NonFiniteNumber(exc.name, number) from None
    except json.JSONDecodeError as exc:
        raise EvalSetError(
            path, f"not valid JSON at column {exc.colno}: {exc.msg}", line=number
        ) from None


def _read_jsonl(path: Path) -> Document:
    numbered = [
        (number, line)
        for number, line in enumerate(_read_text(path).splitlines(), start=1)
        if line.strip()
    ]
    if not numbered:
        raise EvalSetError(path, 'the file is empty; the first line is {"id": ...}')
    header_number, header_text = numbered[0]
    header = _parse_line(path, header_text, header_number)
    if not isinstance(header, dict):
        raise EvalSetError(
            path,
            f'the first line is the set\'s header {{"id": ..., "defaults": ...}}, got '
            f"{json_kind(header)}",
            line=header_number,
        )
    if "cases" in header:
        raise EvalSetError(
            path,
            "a .jsonl eval set has no 'cases' field: the cases follow the header, one per line",
            field="cases",
            line=header_number,
        )
    if "prompt" in header or "messages" in header:
        raise EvalSetError(
            path,
            'the first line is the set\'s header {"id": ..., "defaults": ...}; this looks '
            "like a case (it has a prompt); add a header line before it",
            line=header_number,
        )
    rows = numbered[1:]
    # One parse for all the cases is as fast as a .json file; the line-by-line parse runs
    # only when that fails, to name the bad line.
    cases: Any = None
    try:
        cases = parse_json(
            "[" + ",".join(text for _, text in rows) + "]",
            allow_nan=False,
            max_depth=MAX_DEPTH + 1,  # the array wrapped around the lines is one level more
        )
    except (json.JSONDecodeError, NonFiniteNumber):
        cases = None
    if not isinstance(cases, list) or len(cases) != len(rows):
        cases = [_parse_line(path, text, number) for number, text in rows]
    return Document(
        {**header, "cases": cases},
        case_lines=tuple(number for number, _ in rows),
        header_line=header_number,
    )


def _sidecar(path: Path) -> tuple[Path, dict[str, Any]]:
    sidecar = path.with_name(path.name + CSV_SIDECAR_SUFFIX)
    if not sidecar.is_file():
        return sidecar, {}
    text = _read_text(sidecar)
    try:
        data = parse_json(text, allow_nan=False)
    except NonFiniteNumber as exc:
        raise EvalSetError(sidecar, f"not valid JSON: {exc.name} is not a JSON number") from None
    except json.JSONDecodeError as exc:
        raise EvalSetError(
            sidecar, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise EvalSetError(sidecar, f"expected a JSON object, got {json_kind(data)}")
    for name in data:
        if name not in _SIDECAR_FIELDS:
            raise EvalSetError(
                sidecar,
                f"not a known field; use one of {', '.join(_SIDECAR_FIELDS)}",
                field=name,
            )
    columns = data.get("columns", {})
    if not isinstance(columns, dict) or not all(isinstance(v, str) for v in columns.values()):
        raise EvalSetError(
            sidecar, "expected an object mapping case fields to CSV column names", field="columns"
        )
    return sidecar, data


@cache
def _case_types() -> Mapping[str, str]:
    """How a CSV cell reads, per case field: text, number, boolean, words, json, or a label
    (a number when it reads as one, else a word)."""
    schema = evalset_schema()
    properties = schema["$defs"]["case"]["properties"]
    kinds: dict[str, str] = {}
    for name, spec in properties.items():
        kind = spec.get("type")
        if "$ref" in spec and kind is None:
            target = schema["$defs"][spec["$ref"].rsplit("/", 1)[-1]]
            kind = target.get("type")
        if name == "tags":
            kinds[name] = "words"
        elif name == "output":
            kinds[name] = "output"
        elif name == "human_label":
            kinds[name] = "label"  # a word, or a number
        elif isinstance(kind, list) and "string" in kind:
            kinds[name] = "text_or_json"  # a folder, or an object (a workspace's files)
        elif kind is None or kind == "string" or "enum" in spec:
            kinds[name] = "text"
        elif kind == "number":
            kinds[name] = "number"
        elif kind == "boolean":
            kinds[name] = "boolean"
        else:
            kinds[name] = "json"
    return kinds


def _cell(path: Path, line: int, case: str, field: str, text: str) -> Any:
    kind = _case_types().get(field, "text")

    def bad(why: str) -> EvalSetError:
        return EvalSetError(path, why, case=case, field=field, line=line)

    if kind == "text":
        return text
    if kind == "label":
        try:
            return float(text)
        except ValueError:
            return text
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise bad(f"expected a number, got {text!r}") from None
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise bad(f"expected true or false, got {text!r}")
    if kind == "words" and not text.lstrip().startswith("["):
        return [word for word in text.replace(",", " ").split() if word]
    if kind == "text_or_json" and not text.lstrip().startswith("{"):
        return text
    if kind == "output":
        if not text.lstrip().startswith("["):
            return text
        try:
            return parse_json(text)
        except ValueError:
            return text
    try:
        return parse_json(text, allow_nan=False)
    except ValueError as exc:  # NonFiniteNumber too
        raise bad(f"the cell is not valid JSON ({exc})") from None


def _read_csv(path: Path) -> Document:
    sidecar_path, sidecar = _sidecar(path)
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise EvalSetError(path, "the file is empty; the first row names the columns") from None
    except csv.Error as exc:
        raise EvalSetError(path, f"not valid CSV: {exc}", line=1) from None
    columns: Mapping[str, str] = sidecar.get("columns") or {h: h for h in header if h}
    position = {name: index for index, name in enumerate(header)}
    for field, column in columns.items():
        if column not in position:
            raise EvalSetError(
                sidecar_path if sidecar else path,
                f"column {column!r} is not in {path.name}'s header ({', '.join(header)})",
                field=f"columns.{field}" if sidecar else None,
            )
    cases: list[dict[str, Any]] = []
    lines: list[int] = []
    start = reader.line_num + 1
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                start = reader.line_num + 1
                continue
            if len(row) > len(header):
                raise EvalSetError(
                    path,
                    f"{len(row)} cells in a row under a header of {len(header)} columns",
                    line=start,
                )
            label = f"#{len(cases) + 1}"
            id_index = position[columns["id"]] if "id" in columns else len(row)
            # A short row (fewer cells than the header) has no id cell: label it by number.
            case_id = row[id_index] if id_index < len(row) else ""
            if case_id:
                label = f"{case_id!r} (#{len(cases) + 1})"
            case: dict[str, Any] = {}
            for field, column in columns.items():
                index = position[column]
                cell = row[index] if index < len(row) else ""
                if cell == "":
                    continue
                case[field] = _cell(path, start, label, field, cell)
            cases.append(case)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise EvalSetError(path, f"not valid CSV: {exc}", line=reader.line_num) from None
    name = path.name
    stem = name[: -len(".evalset.csv")] if name.endswith(".evalset.csv") else path.stem
    data: dict[str, Any] = {"id": stem}
    data.update({k: v for k, v in sidecar.items() if k != "columns"})
    data["cases"] = cases
    return Document(data, case_lines=tuple(lines))
