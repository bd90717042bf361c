"""Baselines in the store and as committed files: lookup is the store first, then the file."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.gating.baselines import (
    BASELINE_DIR,
    baseline_file,
    check_label,
    find_baseline,
    known_labels,
    read_baseline_file,
    write_baseline_file,
)
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def make_baseline(label: str, values: list[float], *, id: str | None = None) -> Baseline:
    run = EvalRun(
        id=f"run-{label}",
        model="stub",
        started_at=T0,
        eval_set_ids=("s",),
        scores=tuple(
            Score(case_id=f"c{i}", eval_set_id="s", value=v, grader="exact", fingerprint=f"f{i}")
            for i, v in enumerate(values)
        ),
    )
    return Baseline.from_run(run, id=id or f"id-{label}", label=label, created_at=T0)


def test_a_committed_file_round_trips(tmp_path: Path) -> None:
    baseline = make_baseline("v1", [1.0, 0.5, 0.0])
    path = write_baseline_file(tmp_path, baseline)
    assert path == tmp_path / BASELINE_DIR / "v1.json" == baseline_file(tmp_path, "v1")
    assert read_baseline_file(path) == baseline
    # Reviewable in a diff: sorted keys, indented, one trailing newline; no temp files left.
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and '\n  "cases": [' in text
    assert json.loads(text) == baseline.to_dict()
    assert [p.name for p in path.parent.iterdir()] == ["v1.json"]


def test_a_committed_file_has_the_umask_mode_not_0600(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = write_baseline_file(tmp_path, make_baseline("v1", [1.0]))
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_rewriting_a_file_replaces_it(tmp_path: Path) -> None:
    write_baseline_file(tmp_path, make_baseline("v1", [1.0]))
    newer = make_baseline("v1", [0.0], id="id-newer")
    write_baseline_file(tmp_path, newer)
    assert read_baseline_file(baseline_file(tmp_path, "v1")) == newer


def test_lookup_is_the_store_first_then_the_file(tmp_path: Path) -> None:
    in_store = make_baseline("v1", [1.0], id="from-store")
    in_file = make_baseline("v1", [0.0], id="from-file")
    only_file = make_baseline("v2", [0.5], id="only-file")
    write_baseline_file(tmp_path, in_file)
    write_baseline_file(tmp_path, only_file)
    with Store.open(tmp_path / "v.db") as store:
        # An empty store (a fresh CI runner) falls back to the committed file.
        assert find_baseline("v1", store=store, root=tmp_path) == in_file
        store.save_baseline(in_store)
        assert find_baseline("v1", store=store, root=tmp_path) == in_store
        assert find_baseline("from-store", store=store, root=tmp_path) == in_store
        assert find_baseline("v2", store=store, root=tmp_path) == only_file
        assert known_labels(store, tmp_path) == ["v1", "v2"]
    assert find_baseline("v2", store=None, root=tmp_path) == only_file


def test_an_unknown_baseline_lists_what_exists(tmp_path: Path) -> None:
    write_baseline_file(tmp_path, make_baseline("from-file", [1.0]))
    with Store.open(tmp_path / "v.db") as store:
        store.save_baseline(make_baseline("v1", [1.0]))
        with pytest.raises(UsageError) as info:
            find_baseline("v9", store=store, root=tmp_path)
    message = str(info.value)
    assert isinstance(info.value, VerdryxError) and "\n" not in message
    assert message == "unknown baseline 'v9'; known baselines: from-file, v1"


def test_an_unknown_baseline_with_none_known_says_how_to_make_one(tmp_path: Path) -> None:
    with Store.open(tmp_path / "v.db") as store, pytest.raises(UsageError) as info:
        find_baseline("../etc/passwd", store=store, root=tmp_path)
    assert "'../etc/passwd'" in str(info.value) and "none yet" in str(info.value)


@pytest.mark.parametrize("label", ["", "../up", "a b", "-dash", "x" * 101, "v1/evil", ".hidden"])
def test_a_bad_label_is_refused(tmp_path: Path, label: str) -> None:
    with pytest.raises(UsageError, match="is not usable") as info:
        check_label(label)
    assert "\n" not in str(info.value)
    with pytest.raises(UsageError):
        write_baseline_file(tmp_path, replace(make_baseline("ok", [1.0]), label=label))
    assert not (tmp_path / ".verdryx").exists()


@pytest.mark.parametrize("label", ["v1", "release-2025.03", "A_b"])
def test_good_labels_pass(label: str) -> None:
    assert check_label(label) == label


_NOT_A_DATE = '{"id": "x", "run_id": "r", "mean": 1, "created_at": "yesterday", "model": "m"}'


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"id": "x"}', _NOT_A_DATE])
def test_an_unreadable_file_is_one_usage_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / BASELINE_DIR / "v1.json"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        find_baseline("v1", store=None, root=tmp_path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message


def test_a_run_scoring_a_case_twice_cannot_be_a_baseline() -> None:
    # `verdryx eval a.json a.json` scores every case twice; the store would refuse the
    # baseline with a bare UNIQUE-constraint message.
    score = Score(case_id="c", eval_set_id="s", value=1.0, grader="exact")
    run = EvalRun(id="r", model="stub", started_at=T0, scores=(score, score))
    with pytest.raises(ValueError, match=r"'s::c' more than once"):
        Baseline.from_run(run, id="b", label="v1")
