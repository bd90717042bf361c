"""Finding and saving baselines: in the store, and as committed files under the rootdir.

A committed `.verdryx/baselines/LABEL.json` lets a fresh CI runner with an empty store gate:
lookup is the store first, then that folder.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.atomic import write_text_atomic
from verdryx_core.errors import PYTHON_FLAGS, BaselineFileError, UsageError, VerdryxError
from verdryx_core.runs import Baseline, BaselineCase, Score
from verdryx_core.untrusted.files import read_regular_text
from verdryx_core.untrusted.json_input import NonFiniteNumber, item_label, json_kind, parse_json
from verdryx_core.untrusted.text import (
    first_hidden_character,
    first_invalid_text,
    json_text_may_hold_invalid,
)

if TYPE_CHECKING:
    import jsonschema

    from verdryx_core.store import Store

__all__ = [
    "BASELINE_DIR",
    "baseline_file",
    "baseline_schema",
    "check_label",
    "excuse",
    "find_baseline",
    "known_labels",
    "read_baseline_file",
    "write_baseline_file",
]

BASELINE_DIR: Final = Path(".verdryx") / "baselines"
_LABEL: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def excuse(base: BaselineCase, score: Score) -> BaselineCase | None:
    """`base` when it excuses `score` (the item then xfails instead of failing): the same
    case was below this score's bar in the baseline too. An edited case is a new measurement
    (the gate reports it as changed): its old score cannot excuse a failure today."""
    if score.value is None or score.passed is not False or score.bar is None:
        return None
    # Not passed in the baseline either: below the bar, or a check below its own.
    if base.value >= score.bar and base.passed is not False:
        return None
    if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
        return None
    return base


def check_label(label: str) -> str:
    if not _LABEL.match(label):
        raise UsageError(
            f"baseline label {label!r} is not usable: use letters, digits, '.', '_' or '-' "
            "(it names a file), starting with a letter or digit"
        )
    return label


def baseline_file(root: Path, label: str) -> Path:
    return root / BASELINE_DIR / f"{check_label(label)}.json"


def write_baseline_file(root: Path, baseline: Baseline) -> Path:
    """Write the reviewable baseline file atomically (never a half-written file in the repo)."""
    path = baseline_file(root, baseline.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(baseline.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text_atomic(path, text)
    return path


@cache
def baseline_schema() -> dict[str, Any]:
    """The published baseline file JSON Schema."""
    text = resources.files("verdryx_core.schemas").joinpath("baseline.schema.json").read_text()
    return json.loads(text)


@cache
def _fast_validator() -> Callable[[Any], Any]:
    """The schema compiled to Python by fastjsonschema: the check every load pays
    (docs/evalset-reference.md, "Text, nesting and baseline files")."""
    import fastjsonschema

    # A copy: fastjsonschema rewrites the `$ref`s of the schema it compiles, in place, and the
    # cached schema is what jsonschema's messages and the docs test read.
    return fastjsonschema.compile(copy.deepcopy(baseline_schema()))


@cache
def _validator() -> jsonschema.Draft202012Validator:
    """jsonschema's validator: only for a file the fast path refused, to word its error."""
    import jsonschema

    return jsonschema.Draft202012Validator(baseline_schema())


def _schema_errors(
    data: Mapping[str, Any], *, fast_path: bool = True
) -> list[jsonschema.ValidationError]:
    """Every schema error of `data`, first in path order; none for a valid file.

    The compiled validator decides (about 20x faster than jsonschema on a valid file of
    thousands of cases); jsonschema runs only when it refuses, so the message names the
    first error as jsonschema finds it. The two agree on every file (a test checks it)."""
    import fastjsonschema

    if fast_path:
        try:
            _fast_validator()(data)
            return []
        except fastjsonschema.JsonSchemaException:
            pass
    return sorted(
        _validator().iter_errors(data), key=lambda e: [str(part) for part in e.absolute_path]
    )


def read_baseline_file(path: Path) -> Baseline:
    """Read and validate a committed baseline as strictly as an eval set: the JSON Schema
    (numbers in [0, 1], never `true`; no unknown field), then no case twice and valid text."""
    try:
        text = read_regular_text(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineFileError(path, f"cannot read: {exc}") from None
    try:
        data = parse_json(text, allow_nan=False)
    except json.JSONDecodeError as exc:
        raise BaselineFileError(
            path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except NonFiniteNumber as exc:
        raise BaselineFileError(path, f"{exc.name} is not a JSON number") from None
    return baseline_from_data(data, path, text_checked=not json_text_may_hold_invalid(text))


def baseline_from_data(
    data: object, path: Path | str, *, text_checked: bool = False, fast_path: bool = True
) -> Baseline:
    """Validate a parsed baseline file and build it; `text_checked`: the JSON text it was
    parsed from can spell no invalid string, so the text rule needs no walk; `fast_path`
    False: validate with jsonschema alone (the tests check that both ways agree)."""
    if not isinstance(data, dict):
        raise BaselineFileError(
            path, f"top level must be a JSON object (a baseline), got {json_kind(data)}"
        )
    invalid = None if text_checked else first_invalid_text(data)
    if invalid is not None:
        case, field = _locate(data, invalid[0])
        raise BaselineFileError(
            path, f"'{invalid[1]}' is not valid Unicode (a lone surrogate)", case=case, field=field
        )
    errors = _schema_errors(data, fast_path=fast_path)
    if errors:
        error = errors[0]
        location = list(error.absolute_path)
        named = _named_field(error)
        case, field = _locate(data, [*location, named] if named else location)
        raise BaselineFileError(path, _describe(error), case=case, field=field)
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(data["cases"]):
        key = (item["eval_set_id"], item["case_id"])
        for field in ("eval_set_id", "case_id"):
            # As at an eval set's load (docs/evalset-reference.md): an id is listed raw by the
            # gate's lines, so one with a control or format character is refused.
            hidden = first_hidden_character(item[field])
            if hidden is not None:
                raise BaselineFileError(
                    path,
                    f"{item[field]!r} holds the control or format character '{hidden}', "
                    "which no eval set id or case id may hold",
                    case=_case_label(item, index),
                    field=field,
                )
        if key in seen:
            raise BaselineFileError(
                path,
                f"duplicate case: #{seen[key] + 1} is the same eval set and case id "
                "(a baseline holds one score per case)",
                case=_case_label(item, index),
                field="case_id",
            )
        seen[key] = index
    try:
        return Baseline.from_dict(data)
    except ValueError as exc:  # created_at is not an ISO-8601 time
        raise BaselineFileError(path, f"not an ISO-8601 time ({exc})", field="created_at") from None


def _case_label(item: object, index: int) -> str:
    if isinstance(item, Mapping) and isinstance(item.get("case_id"), str):
        return item_label({"id": item["case_id"]}, index)
    return f"#{index + 1}"


def _locate(data: Mapping[str, Any], location: Any) -> tuple[str | None, str | None]:
    parts = list(location)
    case: str | None = None
    if len(parts) >= 2 and parts[0] == "cases" and isinstance(parts[1], int):
        case = _case_label(data["cases"][parts[1]], parts[1])
        parts = parts[2:]
    field = "".join(str(p) if i == 0 else f"[{p}]" for i, p in enumerate(parts)) or None
    return case, field


def _named_field(error: jsonschema.ValidationError) -> str | None:
    # `required` and `additionalProperties` are reported on the object holding the field.
    instance = error.instance
    if not isinstance(instance, Mapping):
        return None
    # The stubs type these attributes as "maybe unset"; a reported error always has them.
    required: Any = error.validator_value
    schema: Any = error.schema
    if error.validator == "required":
        return next((name for name in required if name not in instance), None)
    if error.validator == "additionalProperties":
        known = schema.get("properties", {})
        return next((name for name in instance if name not in known), None)
    return None


def _describe(error: jsonschema.ValidationError) -> str:
    schema: Any = error.schema
    if error.validator == "required":
        return "required but missing"
    if error.validator == "additionalProperties":
        known = ", ".join(sorted(schema.get("properties", {})))
        return f"not a known field; expected only {known}"
    if error.validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected_text}, got {json_kind(error.instance)}"
    if error.validator in ("minimum", "maximum"):
        value: Any = error.instance
        shown = repr(value) if isinstance(value, float) or abs(value) < 10**12 else "a huge number"
        return f"{shown} is not in [0, 1]"
    if error.validator == "minLength":
        return "must not be empty"
    return error.message


def known_labels(store: Store | None, root: Path | None) -> list[str]:
    labels: set[str] = set()
    if store is not None:
        labels.update(label or id_ for id_, label, _, _ in store.list_baselines())
    if root is not None and (root / BASELINE_DIR).is_dir():
        labels.update(path.stem for path in (root / BASELINE_DIR).glob("*.json"))
    return sorted(labels)


def find_baseline(
    id_or_label: str,
    *,
    store: Store | None = None,
    root: str | os.PathLike[str] | None = None,
    flags: Mapping[str, str] = PYTHON_FLAGS,
) -> Baseline:
    """The baseline `id_or_label`: in `store` first, then the committed file under `root`
    (`.verdryx/baselines/LABEL.json`); an unknown name lists the known ones (UsageError).
    Hints are worded in `flags` (by default a Python caller's)."""
    try:
        return _find_baseline(id_or_label, store, None if root is None else Path(root))
    except VerdryxError as exc:
        exc.in_words(flags)
        raise


def _find_baseline(id_or_label: str, store: Store | None, root: Path | None) -> Baseline:
    if store is not None:
        found = store.get_baseline(id_or_label)
        if found is not None:
            return found
    if root is not None and _LABEL.match(id_or_label):
        path = baseline_file(root, id_or_label)
        if path.is_file():
            return read_baseline_file(path)
    labels = known_labels(store, root)
    if labels:
        raise UsageError(f"unknown baseline {id_or_label!r}; known baselines: {', '.join(labels)}")
    raise UsageError(
        f"unknown baseline {id_or_label!r}; known baselines: none yet",
        hint="save one with {save_baseline}",
    )
