"""A committed baseline file is validated by a compiled validator first and by jsonschema
only to word a refusal (docs/evalset-reference.md, "Text, nesting and baseline files"): on
hypothesis-drawn files, valid and broken, both ways reach the same verdict, the same
`Baseline` and the same message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdryx_core.errors import BaselineFileError
from verdryx_core.gating import baselines
from verdryx_core.gating.baselines import baseline_from_data, read_baseline_file
from verdryx_core.runs import Baseline

ROOT = Path(__file__).resolve().parent.parent
AGREE = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Values a broken file holds where another was due: every JSON kind, the numbers the schema's
#: bounds and its "never true" rule are about, empty and odd strings.
any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([10**20, -(10**20), 2**63, 1e308, -0.0, 0.5, 1.0000001, -1e-300]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", " ", "x", "2026-07-12T12:00:00+00:00", "\x1b[2J", "c\u202ex"]),
    st.text(max_size=6),
    st.lists(st.integers(0, 1), max_size=2),
    st.dictionaries(st.sampled_from(["value", "id", "x"]), st.integers(0, 1), max_size=2),
)

out_of_range = st.one_of(
    st.floats(min_value=1, exclude_min=True, allow_infinity=False),
    st.floats(max_value=0, exclude_max=True, allow_infinity=False),
    st.integers(min_value=2),
    st.integers(max_value=-1),
)

ids = st.sampled_from(["s", "support", "c1", "c2", "refund-7"]) | st.text(min_size=1, max_size=6)

valid_case = st.fixed_dictionaries(
    {"eval_set_id": ids, "case_id": ids, "value": st.floats(0, 1) | st.integers(0, 1)},
    optional={"fingerprint": st.text(max_size=8), "passed": st.booleans() | st.none()},
)

valid_document = st.fixed_dictionaries(
    {
        "id": ids,
        "run_id": ids,
        "mean": st.floats(0, 1),
        "created_at": st.sampled_from(["2026-07-12T12:00:00+00:00", "2026-07-12T12:00:00Z"]),
        "model": ids,
        "cases": st.lists(valid_case, max_size=5),
    },
    optional={
        "label": st.text(max_size=6),
        "judge_model": ids | st.none(),
        "target": st.none() | st.just("agent:run"),
        "target_version": st.none() | st.just("1.2"),
        "plugin_version": st.just("0.1.0"),
    },
)

TOP_FIELDS = sorted(baselines.baseline_schema()["properties"])
CASE_FIELDS = sorted(baselines.baseline_schema()["$defs"]["case"]["properties"])


@st.composite
def documents(draw: st.DrawFn) -> Any:
    """A valid baseline document, broken in up to three places (or not at all)."""
    document: Any = draw(valid_document)
    for _ in range(draw(st.integers(0, 3))):
        cases = document.get("cases") if isinstance(document, dict) else None
        target = document
        if isinstance(cases, list) and cases and draw(st.booleans()):
            index = draw(st.integers(0, len(cases) - 1))
            if not isinstance(cases[index], dict) or draw(st.integers(0, 9)) == 0:
                cases[index] = draw(any_value)  # a case that is no object
                continue
            target = cases[index]
            fields = CASE_FIELDS
        else:
            fields = TOP_FIELDS
        if not isinstance(target, dict):
            break
        how = draw(st.sampled_from(["retype", "drop", "unknown", "duplicate", "range", "empty"]))
        if how == "range":  # a score just or far outside [0, 1]
            target["value" if fields is CASE_FIELDS else "mean"] = draw(out_of_range)
        elif how == "empty":
            target[draw(st.sampled_from(["id", "run_id", "model", "eval_set_id", "case_id"]))] = ""
        elif how == "retype":
            target[draw(st.sampled_from(fields))] = draw(any_value)
        elif how == "drop" and target:
            target.pop(draw(st.sampled_from(sorted(target))))
        elif how == "unknown":
            target[draw(st.sampled_from(["extra", "Value", "scores", "cases_"]))] = draw(any_value)
        elif how == "duplicate" and isinstance(cases, list) and cases:
            cases.append(json.loads(json.dumps(cases[0])))
    if draw(st.integers(0, 19)) == 7:
        document = draw(any_value)  # not an object at all
    return document


def _outcome(data: Any, *, fast_path: bool) -> Baseline | str:
    # Each way gets its own copy: a validator that changed what it checks would show here.
    copy = json.loads(json.dumps(data))
    try:
        return baseline_from_data(copy, "v1.json", fast_path=fast_path)
    except BaselineFileError as exc:
        return f"refused: {exc}"


@AGREE
@given(data=documents())
def test_the_compiled_validator_accepts_exactly_what_jsonschema_accepts(data: Any) -> None:
    if not isinstance(data, dict):
        return  # refused before any schema is read, the same way on both paths
    slow = not list(baselines._validator().iter_errors(data))
    try:
        baselines._fast_validator()(json.loads(json.dumps(data)))
        fast = True
    except Exception:  # fastjsonschema.JsonSchemaException, whatever its subclass
        fast = False
    assert fast == slow, data


@AGREE
@given(data=documents())
def test_the_fast_path_gives_the_same_baseline_or_the_same_message(data: Any) -> None:
    assert _outcome(data, fast_path=True) == _outcome(data, fast_path=False)


def test_the_drawn_files_are_valid_and_broken_in_every_way_the_schema_names() -> None:
    """The strategy reaches the schema's rules, so the agreement above is not about valid
    files alone (each keyword of the published schema produces at least one refusal)."""
    seen: set[str] = set()
    valid = 0

    @settings(max_examples=600, deadline=None, database=None)
    @given(data=documents())
    def collect(data: Any) -> None:
        nonlocal valid
        if not isinstance(data, dict):
            return
        errors = list(baselines._validator().iter_errors(data))
        valid += not errors
        seen.update(str(error.validator) for error in errors)

    collect()
    assert valid > 0
    expected = {"type", "required", "additionalProperties", "minimum", "maximum", "minLength"}
    assert expected <= seen, seen


def test_a_file_with_an_escaped_surrogate_is_still_refused_by_the_text_rule(
    tmp_path: Path,
) -> None:
    # The text rule's walk is skipped only for text that cannot spell a lone surrogate.
    document = {
        "id": "b1",
        "run_id": "r1",
        "mean": 1.0,
        "created_at": "2026-07-12T12:00:00+00:00",
        "model": "stub",
        "cases": [{"eval_set_id": "s", "case_id": "c1", "value": 1.0, "fingerprint": "\ud800"}],
    }
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(document), encoding="utf-8")  # ensure_ascii: "\\ud800"
    try:
        read_baseline_file(path)
    except BaselineFileError as exc:
        assert "case 'c1' (#1): field 'fingerprint'" in str(exc)
        assert "not valid Unicode" in str(exc)
    else:
        raise AssertionError("a lone surrogate was accepted")
    document["cases"][0]["fingerprint"] = "\U0001f600"  # a valid pair, escaped the same way
    path.write_text(json.dumps(document), encoding="utf-8")
    assert read_baseline_file(path).cases[0].fingerprint == "\U0001f600"


def test_a_valid_file_loads_without_importing_jsonschema() -> None:
    # The slow validator is for wording a refusal only: a gated run with a valid committed
    # baseline never imports it.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from verdryx_core.gating.baselines import read_baseline_file\n"
        "read_baseline_file(Path('.verdryx/baselines/v1.json'))\n"
        "print('jsonschema' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "False"
