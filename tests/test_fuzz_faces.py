"""Fuzzing both faces with generated files: the `verdryx` CLI in-process (`cli.main`) and a few
pytest sessions through pytester. Each ends in an exit code and, on an error, one printable
`error:` line; never a traceback, never INTERNALERROR, never a half-written store."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
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
from hypothesis import example, given, settings
from hypothesis import strategies as st

from verdryx_core.cli import main
from verdryx_core.store import Store

_names = itertools.count()


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    out.encode("utf-8")
    if code == 2:
        assert err.startswith("error: "), err[:300]
        assert_one_printable_line(err)
    else:
        assert code in (0, 1), (code, err[:300])
    return code, out, err


def _assert_store_whole(db: Path) -> None:
    """No half-written store: it opens, passes SQLite's own check, and holds whole runs."""
    if not db.exists():
        return
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Store.open(db) as store:
        for summary in store.list_runs():
            run = store.load_run(summary.id)
            assert run is not None and run.complete
            assert len(run.scores) == summary.cases


@FUZZ
@given(document=evalset_documents, deep=st.sampled_from([0, 0, 0, 3000]))
def test_cli_eval_of_generated_evalsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any], deep: int
) -> None:
    number = next(_names)
    path = tmp_path / f"g{number}.evalset.json"
    path.write_text(document_text(document, deep=deep), encoding="utf-8")
    db = tmp_path / f"g{number}.db"
    code, out, _ = _cli(capsys, "eval", str(path), "--model", "stub", "--db", str(db), "--json")
    if code != 2:
        json.loads(out)  # one JSON document, even with hostile outputs in it
        code, _, _ = _cli(capsys, "runs", "--db", str(db))
        code, _, _ = _cli(capsys, "show", "latest", "--db", str(db))
    _assert_store_whole(db)


@FUZZ
@given(data=st.binary(max_size=200) | st.sampled_from([b"[" * 50_000, b"\xff\xfe", b""]))
def test_cli_eval_of_arbitrary_bytes_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    number = next(_names)
    path = tmp_path / f"b{number}.evalset.json"
    path.write_bytes(data)
    db = tmp_path / f"b{number}.db"
    code, _, _ = _cli(capsys, "eval", str(path), "--model", "stub", "--db", str(db))
    assert code == 2
    _assert_store_whole(db)
    if db.exists():
        with Store.open(db) as store:
            assert store.list_runs() == []


@FUZZ
@given(document=arbitrary_json | st.fixed_dictionaries({"cases": st.just([]), "id": hostile_text}))
def test_cli_drift_with_a_generated_baseline_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object
) -> None:
    root = tmp_path / f"r{next(_names)}"
    (root / ".verdryx" / "baselines").mkdir(parents=True)
    (root / ".verdryx" / "baselines" / "v1.json").write_text(document_text(document))
    for command in ("drift", "report"):
        extra = ["-o", str(root / "r.html")] if command == "report" else []
        _cli(
            capsys,
            command,
            "--baseline",
            "v1",
            "--root",
            str(root),
            "--db",
            str(root / "s.db"),
            *extra,
        )


@FUZZ
@given(lines=st.lists(arbitrary_json, max_size=4), raw=st.binary(max_size=60))
def test_cli_record_and_event_commands_with_generated_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[object], raw: bytes
) -> None:
    number = next(_names)
    records = tmp_path / f"rec{number}.ndjson"
    records.write_bytes(
        "".join(document_text(line) + "\n" for line in lines).encode("utf-8", "surrogatepass") + raw
    )
    csv_file = tmp_path / f"rec{number}.csv"
    csv_file.write_bytes(b"outcome,cost_usd\n" + raw)
    for argv in (
        ["cost-per-correct", "--input", str(records)],
        ["cost-per-correct", "--input", str(csv_file), "--json"],
        ["slo", "--input", str(records)],
        ["events", "verify", str(records)],
    ):
        _cli(capsys, *argv)


@FUZZ
@example(argv=["x" * 20_000])  # a name too long for the file system: one line, not OSError
@given(
    argv=st.lists(
        # What an OS can hand a process: any bytes but NUL, decoded as Python decodes argv
        # (an undecodable byte becomes a lone surrogate, U+DC80..U+DCFF).
        st.one_of(
            st.binary(max_size=20),
            hostile_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
        ).map(lambda raw: os.fsdecode(raw.replace(b"\x00", b""))),
        max_size=4,
    )
)
def test_cli_arbitrary_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    for command in ("eval", "runs", "show", "drift", "baseline", "diff"):
        try:
            _cli(capsys, command, *argv, "--db", str(tmp_path / "a.db"))
        except SystemExit as exit_:  # argparse's own usage errors exit 2 with one line
            assert exit_.code == 2
            _, err = capsys.readouterr()
            assert "Traceback" not in err


# -- the pytest face ---------------------------------------------------------------------------


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 4))
@given(document=evalset_documents)
def test_pytest_sessions_on_generated_evalsets(
    pytester: pytest.Pytester, document: dict[str, Any]
) -> None:
    number = next(_names)
    directory = pytester.path / f"s{number}"
    directory.mkdir()
    (directory / "gen.evalset.json").write_text(document_text(document), encoding="utf-8")
    db = directory / "s.db"
    result = pytester.runpytest(str(directory), f"--verdryx-db={db}", "-p", "no:cacheprovider")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert result.ret in (0, 1, 2), text[-2000:]
    # A collection error names the file in one line; nothing is stored for a file that
    # did not load; whatever is stored is whole.
    _assert_store_whole(db)
