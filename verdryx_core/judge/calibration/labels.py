"""Human labels kept in the repository: `*.labels.jsonl` files, one label a line
(docs/calibrating-the-judge.md, "Labels files").

A line is `{"eval_set_id", "case_id", "output_sha256" or "output", "label", "labeler",
"note"}`; `label` is `"pass"`, `"fail"`, `"skip"` (looked at, not decided: never counted) or
a number in [0, 1] read against the case's pass bar. A bad line is one `LabelError` naming
the file, the line and the field. Later lines win over earlier ones for the same output, so
a relabel is an append, never an edit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.errors import UsageError
from verdryx_core.untrusted.files import open_regular, read_regular_text
from verdryx_core.untrusted.json_input import json_kind, parse_json
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    from verdryx_core.evalsets.load import EvalSet

__all__ = [
    "LABEL_WORDS",
    "Label",
    "LabelError",
    "append_label",
    "case_labels",
    "labels_files",
    "read_labels",
]

#: The words a label may be, besides a number.
LABEL_WORDS: Final = ("pass", "fail", "skip")

_KEYS: Final = frozenset(
    {"eval_set_id", "case_id", "output_sha256", "output", "label", "labeler", "note"}
)


class LabelError(UsageError):
    """A labels file that cannot be read as labels: names the file, the line and the field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Label:
    """One human label of one output of one case."""

    eval_set_id: str
    case_id: str
    output_sha256: str
    #: `"pass"`, `"fail"`, `"skip"`, or a score in [0, 1].
    label: str | float
    labeler: str = ""
    note: str = ""
    #: Where it was read (file:line), for messages; "" when made in code.
    origin: str = ""

    def verdict(self, bar: float) -> bool | None:
        """Whether the human passed the output (a number against `bar`); None for a skip."""
        if isinstance(self.label, str):
            return None if self.label == "skip" else self.label == "pass"
        return self.label >= bar

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_set_id": self.eval_set_id,
            "case_id": self.case_id,
            "output_sha256": self.output_sha256,
            "label": self.label,
            "labeler": self.labeler,
            "note": self.note,
        }


def output_sha256(output: str) -> str:
    """The hash a label names an output by: sha256 of its UTF-8 text, hex."""
    return hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest()


def labels_files(path: Path) -> list[Path]:
    """The labels files `path` names: itself, or every `*.labels.jsonl` under it when it is a
    folder (as `--verdryx-labels` and `verdryx judge-agreement --labels` take it)."""
    return sorted(path.rglob("*.labels.jsonl")) if path.is_dir() else [path]


def read_labels(paths: Iterable[Path]) -> list[Label]:
    """Every label of `paths` (files, or folders of them: `labels_files`), in file then line
    order; a missing file is an error, and so is one that is not a regular file (a FIFO would
    never end its read, nor would `/dev/zero`)."""
    labels: list[Label] = []
    for path in (found for given in paths for found in labels_files(given)):
        try:
            text = read_regular_text(path, encoding="utf-8")
        except FileNotFoundError:
            raise LabelError(f"{path}: no such labels file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise LabelError(f"{path}: cannot read the labels file: {exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                labels.append(_label(line, f"{path}:{number}"))
    return labels


def _label(line: str, where: str) -> Label:
    try:
        # A key given twice is refused, as in every other file verdryx reads: which of the
        # two labels the labeller meant is unknown (Python's reader keeps the last).
        data = parse_json(line, allow_nan=False, unique_keys=True)
    except ValueError as exc:
        raise LabelError(f"{where}: not a JSON object: {exc}") from None
    if not isinstance(data, dict):
        raise LabelError(f"{where}: expected a JSON object, got {json_kind(data)}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise LabelError(
            f"{where}: field {printable(unknown[0], keep_newlines=False)!r}: not a label "
            f"field (known: {', '.join(sorted(_KEYS))})"
        )
    eval_set_id = _text(data, "eval_set_id", where, required=True)
    case_id = _text(data, "case_id", where, required=True)
    sha = _text(data, "output_sha256", where)
    output = data.get("output")
    if sha and output is not None:
        raise LabelError(f"{where}: field 'output': give output_sha256 or output, not both")
    if output is not None:
        if not isinstance(output, str):
            raise LabelError(f"{where}: field 'output': expected a string, got {json_kind(output)}")
        sha = output_sha256(output)
    elif not sha:
        raise LabelError(
            f"{where}: field 'output_sha256': missing; a label names the output it judged "
            "(output_sha256, or the output itself)"
        )
    elif len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise LabelError(f"{where}: field 'output_sha256': expected 64 lowercase hex digits")
    return Label(
        eval_set_id=eval_set_id,
        case_id=case_id,
        output_sha256=sha,
        label=_value(data.get("label"), where),
        labeler=_text(data, "labeler", where),
        note=_text(data, "note", where),
        origin=where,
    )


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise LabelError(f"{where}: field {key!r}: missing")
        return ""
    if not isinstance(value, str) or (required and not value):
        raise LabelError(
            f"{where}: field {key!r}: expected a non-empty string, got {json_kind(value)}"
        )
    return value


def _value(value: object, where: str) -> str | float:
    if isinstance(value, str) and value in LABEL_WORDS:
        return value
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    ):
        return float(value)
    shown = printable(json.dumps(value), keep_newlines=False)[:40]
    raise LabelError(
        f"{where}: field 'label': {shown} is not a label; expected 'pass', 'fail', 'skip' "
        "or a number in [0, 1]"
    )


def append_label(path: Path, label: Label) -> None:
    """Append one label as one line, in one `write` under `O_APPEND` (POSIX appends it whole:
    a reader or a second writer never sees half a line), flushed to disk before returning."""
    line = json.dumps(label.to_dict(), ensure_ascii=True, sort_keys=True) + "\n"
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        # A file whose last line lacks its newline (edited by hand) gets one first, so the
        # new label is a line of its own.
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    line = "\n" + line
        os.write(fd, line.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)


def case_labels(sets: Iterable[EvalSet]) -> list[Label]:
    """The `human_label` of every case that has one, as labels of its recorded output (the
    load rules require a text output beside it)."""
    labels = []
    for evalset in sets:
        for case in evalset.cases:
            if case.human_label is None or not isinstance(case.output, str):
                continue
            labels.append(
                Label(
                    eval_set_id=evalset.id,
                    case_id=case.id,
                    output_sha256=output_sha256(case.output),
                    label=case.human_label,
                    origin=f"{evalset.path}::{case.id}" if evalset.path else "",
                )
            )
    return labels
