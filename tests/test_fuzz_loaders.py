"""Fuzzing every file loader (eval sets, baseline files, price files, trace record files,
event logs, labels files) with arbitrary bytes, arbitrary JSON and schema-shaped JSON holding
hostile strings: each ends in a value or one printable line naming the file, never another
exception."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import (
    FUZZ,
    arbitrary_json,
    assert_one_printable_line,
    document_text,
    evalset_documents,
    hostile_text,
)
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.addons.contracts.evidence import load_bundle
from verdryx_core.addons.contracts.validate import load_contract
from verdryx_core.addons.events.log import EventLog, verify_chain
from verdryx_core.addons.traces.records import read_csv, read_ndjson
from verdryx_core.errors import VerdryxError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.gating.baselines import read_baseline_file
from verdryx_core.judge.calibration.labels import LABEL_WORDS, read_labels
from verdryx_core.llm.prices import PriceBook
from verdryx_core.untrusted.text import is_valid_text

_names = itertools.count()


def _field_or(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes anything at all."""
    return st.one_of(good, good, arbitrary_json)


def _write(directory: Path, suffix: str, data: str | bytes) -> Path:
    path = directory / f"f{next(_names)}{suffix}"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8", errors="surrogatepass")
    return path


def _events(path: Path) -> object:
    result = verify_chain(path)
    assert_one_printable_line(result.message)
    # Resuming a damaged log must not crash either: the writer chains onto what it can.
    log = EventLog(path)
    log.emit("fuzz.probe", "agent-fuzz", {"ok": True})
    assert log.written + log.write_failures + log.rejected == 1
    return result


LOADERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "evalset": (".evalset.json", load_evalset),
    "evalset-jsonl": (".evalset.jsonl", load_evalset),
    "evalset-csv": (".evalset.csv", load_evalset),
    "baseline": (".json", read_baseline_file),
    "prices": (".json", PriceBook.from_file),
    "ndjson": (".ndjson", read_ndjson),
    "csv": (".csv", read_csv),
    "events": (".ndjson", _events),
    "contract": (".contract.json", load_contract),
    "bundle": (".bundle.json", load_bundle),
    "labels": (".labels.jsonl", lambda path: read_labels([path])),
}


def _load(kind: str, path: Path) -> Any:
    """The loader's value, or None after checking its error is one printable line."""
    _, loader = LOADERS[kind]
    try:
        return loader(path)
    except VerdryxError as exc:
        message = str(exc)
        assert_one_printable_line(message)
        assert path.name in message or kind == "events", message
        return None


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path: Path, kind: str, data: bytes) -> None:
    _load(kind, _write(tmp_path, LOADERS[kind][0], data))


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(value=arbitrary_json, deep=st.sampled_from([0, 0, 0, 1, 99, 101, 5000]))
def test_arbitrary_json(tmp_path: Path, kind: str, value: object, deep: int) -> None:
    _load(kind, _write(tmp_path, LOADERS[kind][0], document_text(value, deep=deep)))


#: Raw fragments JSON generators never write: numbers too long to read, NaN, a BOM, a torn
#: object, a lone-surrogate escape in a key.
FRAGMENTS = [
    "[" + "9" * 5000 + "]",
    '{"a": NaN, "b": -Infinity}',
    "\ufeff{}",
    '{"id": "s", "cases": [{"id": "c1", "prompt"',
    '{"\\ud800": 1}',
    '{"id": "s", "cases": [{"id": "c", "prompt": "p", "expected": "\\udc00"}]}',
    "{" * 3000,
    '"' + "a" * 100_000,
    "",
    "\n\n",
]


@pytest.mark.parametrize("kind", sorted(LOADERS))
@pytest.mark.parametrize("fragment", FRAGMENTS, ids=range(len(FRAGMENTS)))
def test_raw_fragments(tmp_path: Path, kind: str, fragment: str) -> None:
    _load(kind, _write(tmp_path, LOADERS[kind][0], fragment))


@pytest.mark.parametrize("kind", ["ndjson", "events", "evalset-jsonl", "labels"])
@FUZZ
@given(lines=st.lists(arbitrary_json, max_size=5))
def test_arbitrary_json_lines(tmp_path: Path, kind: str, lines: list[object]) -> None:
    text = "".join(document_text(line) + "\n" for line in lines)
    _load(kind, _write(tmp_path, LOADERS[kind][0], text))


@FUZZ
@given(document=evalset_documents)
def test_schema_shaped_evalsets(tmp_path: Path, document: dict[str, Any]) -> None:
    loaded = _load("evalset", _write(tmp_path, ".evalset.json", document_text(document)))
    if loaded is not None:
        # What loads is safe to store and print: the text rule held at the boundary.
        for case in loaded.cases:
            assert is_valid_text(case.id) and is_valid_text(case.prompt)
            assert case.expected is None or is_valid_text(case.expected)


_baseline_case = st.fixed_dictionaries(
    {
        "eval_set_id": st.sampled_from(["s"]) | hostile_text,
        "case_id": st.sampled_from(["c1", "c2"]) | hostile_text,
        "value": st.one_of(st.floats(-1, 2), st.booleans(), st.none(), hostile_text),
    },
    optional={"fingerprint": hostile_text, "passed": st.booleans(), "extra": arbitrary_json},
)


@FUZZ
@given(
    cases=st.lists(_baseline_case, max_size=4),
    mean=st.one_of(st.floats(allow_nan=False), st.booleans(), hostile_text),
    model=hostile_text,
    created=st.sampled_from(["2026-01-01T00:00:00+00:00", "yesterday", ""]) | hostile_text,
)
def test_schema_shaped_baselines(
    tmp_path: Path, cases: list[dict[str, Any]], mean: object, model: str, created: str
) -> None:
    document = {
        "id": "b1",
        "label": "v1",
        "run_id": "r1",
        "mean": mean,
        "created_at": created,
        "model": model,
        "cases": cases,
    }
    baseline = _load("baseline", _write(tmp_path, ".json", document_text(document)))
    if baseline is not None:
        assert all(0.0 <= case.value <= 1.0 for case in baseline.cases)
        assert len({case.key for case in baseline.cases}) == len(baseline.cases)
        assert all(type(case.value) is float for case in baseline.cases)


_price = st.one_of(
    st.fixed_dictionaries(
        {"input": st.floats(allow_nan=True) | st.booleans() | hostile_text},
        optional={"output": st.floats(), "cache_read": st.integers(), "cache_write": st.none()},
    ),
    arbitrary_json,
)


@FUZZ
@given(
    models=st.dictionaries(hostile_text, _price, max_size=3),
    replace=st.one_of(st.booleans(), arbitrary_json),
)
def test_schema_shaped_price_files(tmp_path: Path, models: dict[str, Any], replace: Any) -> None:
    document = {"models": models, "replace_defaults": replace}
    _load("prices", _write(tmp_path, ".json", document_text(document)))


@FUZZ
@given(document=evalset_documents)
def test_schema_shaped_evalsets_as_jsonl(tmp_path: Path, document: dict[str, Any]) -> None:
    cases = document.get("cases")
    header = {key: value for key, value in document.items() if key != "cases"}
    lines = [document_text(header)]
    lines += [document_text(case) for case in (cases if isinstance(cases, list) else [cases])]
    loaded = _load("evalset-jsonl", _write(tmp_path, ".evalset.jsonl", "\n".join(lines) + "\n"))
    if loaded is not None:
        assert all(is_valid_text(case.id) and is_valid_text(case.prompt) for case in loaded.cases)


@FUZZ
@given(
    header=st.lists(
        st.sampled_from(["id", "prompt", "expected", "output", "tags", "min_score", "grader", "x"])
        | hostile_text,
        max_size=4,
    ),
    rows=st.lists(st.lists(hostile_text, max_size=5), max_size=3),
    sidecar=st.none()
    | arbitrary_json
    | st.fixed_dictionaries(
        {},
        optional={
            "id": hostile_text,
            "description": hostile_text,
            "columns": st.dictionaries(
                st.sampled_from(["id", "prompt", "expected", "output", "grader"]),
                st.sampled_from(["id", "prompt", "expected", "x"]) | hostile_text,
                max_size=3,
            ),
            "defaults": st.fixed_dictionaries(
                {}, optional={"grader": hostile_text, "min_score": arbitrary_json}
            )
            | arbitrary_json,
            "target": arbitrary_json,
        },
    ),
)
def test_schema_shaped_evalsets_as_csv(
    tmp_path: Path, header: list[str], rows: list[list[str]], sidecar: object
) -> None:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    path = _write(tmp_path, ".evalset.csv", buffer.getvalue())
    if sidecar is not None:
        Path(str(path) + ".json").write_text(document_text(sidecar), encoding="utf-8")
    loaded = _load("evalset-csv", path)
    if loaded is not None:
        assert all(is_valid_text(case.id) and is_valid_text(case.prompt) for case in loaded.cases)


_label_line = st.fixed_dictionaries(
    {
        "eval_set_id": _field_or(st.just("s")),
        "case_id": _field_or(st.sampled_from(["c1", "c2"])),
        "label": _field_or(st.sampled_from(LABEL_WORDS) | st.floats(-1, 2)),
    },
    optional={
        "output": _field_or(hostile_text),
        "output_sha256": _field_or(st.just("0" * 64)),
        "labeler": _field_or(hostile_text),
        "note": _field_or(hostile_text),
        "extra": arbitrary_json,
    },
)


@FUZZ
@given(
    lines=st.lists(_label_line, max_size=4),
    twice=st.none() | st.sampled_from(["label", "case_id", "note"]),
)
def test_schema_shaped_labels_files(
    tmp_path: Path, lines: list[dict[str, Any]], twice: str | None
) -> None:
    text = [document_text(line) for line in lines]
    if twice is not None and text:
        # A key given twice, as a hand edit leaves it: refused, never read as its last value.
        text[0] = text[0][:-1] + f', "{twice}": "fail"}}'
    labels = _load("labels", _write(tmp_path, ".labels.jsonl", "\n".join(text) + "\n"))
    if labels is not None:
        assert twice is None or not lines or twice not in lines[0]
        for label in labels:
            assert is_valid_text(label.case_id) and len(label.output_sha256) == 64
            assert label.label in LABEL_WORDS or 0.0 <= float(label.label) <= 1.0
