"""The read commands on every kind of store: PostgreSQL (same output as SQLite, no password
anywhere), a missing store (an error, nothing created), a read-only folder (read anyway), and
a pytest session writing to PostgreSQL. See docs/store.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from junitparser import JUnitXml

from tests.history_support import history_store
from tests.plugin_support import exact_case, write_evalset
from tests.store_support import fresh_schema, needs_postgres
from verdryx_core.cli import main
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store, StoreUrl

SECRET = "pw-Zq81x"

READ_COMMANDS: list[list[str]] = [
    ["runs"],
    ["runs", "--json"],
    ["show", "c5555555"],
    ["show", "c5555555", "--json"],
    ["diff", "a1111111", "c5555555"],
    ["diff", "a1111111", "c5555555", "--json"],
    ["drift", "--baseline", "v1"],
    ["drift", "--baseline", "v1", "--json"],
]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def postgres_with_password() -> Iterator[StoreUrl]:
    """A fresh PostgreSQL schema named by a URL that carries a password (trust auth on the
    test server accepts any)."""
    parts = urlsplit(needs_postgres())
    netloc = f"{parts.username}:{SECRET}@{parts.hostname}:{parts.port}"
    with fresh_schema(urlunsplit(parts._replace(netloc=netloc))) as url:
        yield url


def test_every_read_command_says_the_same_on_postgres(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, postgres_with_password: StoreUrl
) -> None:
    sqlite_path = tmp_path / "v.db"
    history_store(sqlite_path)
    history_store(postgres_with_password)  # type: ignore[arg-type]
    shown = str(postgres_with_password)
    assert "***" in shown
    for command in READ_COMMANDS:
        on_sqlite = cli(capsys, *command, "--db", str(sqlite_path))
        on_postgres = cli(capsys, *command, "--db", postgres_with_password.url)
        assert SECRET not in on_postgres[1] + on_postgres[2], command
        normalised = tuple(
            part.replace(shown, "STORE") if isinstance(part, str) else part for part in on_postgres
        )
        expected = tuple(
            part.replace(str(sqlite_path), "STORE") if isinstance(part, str) else part
            for part in on_sqlite
        )
        assert normalised == expected, command
    report = tmp_path / "report.html"
    code, _, err = cli(capsys, "report", "-o", str(report), "--db", postgres_with_password.url)
    assert code == 0, err
    page = report.read_text()
    assert SECRET not in page and shown.replace("&", "&amp;") in page
    code, out, err = cli(
        capsys, "baseline", "c5555555", "--label", "v2", "--db", postgres_with_password.url
    )
    assert code == 0, err
    with Store.open(postgres_with_password, read_only=True) as store:
        saved = store.get_baseline("v2")
    assert saved is not None and saved.run_id == "c5555555-run"
    assert SECRET not in out + err


def test_the_env_var_selects_postgres(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    postgres_with_password: StoreUrl,
) -> None:
    history_store(postgres_with_password)  # type: ignore[arg-type]
    monkeypatch.setenv("VERDRYX_DB", postgres_with_password.url)
    code, out, err = cli(capsys, "runs", "--json")
    assert code == 0, err
    assert len(json.loads(out)["runs"]) == 5


@pytest.mark.parametrize(
    "command",
    [["runs"], ["show", "abc"], ["diff", "a", "b"], ["drift", "--baseline", "v1"], ["report"]],
)
def test_reading_a_missing_store_is_one_line_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "missing.db"
    extra = ["-o", str(tmp_path / "r.html")] if command == ["report"] else []
    code, out, err = cli(capsys, *command, *extra, "--db", str(missing))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(missing) in err and "no verdryx store" in err
    assert list(tmp_path.iterdir()) == []


def test_a_missing_postgres_store_is_not_created_by_a_read(
    capsys: pytest.CaptureFixture[str], postgres_with_password: StoreUrl
) -> None:
    code, _, err = cli(capsys, "runs", "--db", postgres_with_password.url)
    assert code == 2 and "no verdryx store" in err and SECRET not in err
    assert err.count("\n") == 1


def _freeze(path: Path, mode: int) -> None:
    """Make `path` unwritable: chmod, and as root (to whom modes do not apply) the immutable
    attribute, which binds root too."""
    path.chmod(mode)
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if done.returncode:
            pytest.skip("running as root without chattr +i: cannot make a folder read-only")


def _thaw(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    path.chmod(0o755)


@pytest.mark.parametrize("folder_writable", [False, True])
def test_a_read_only_store_is_readable_by_the_read_commands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, folder_writable: bool
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "v.db"
    history_store(db)
    frozen = [db] if folder_writable else [db, folder]
    try:
        for path in frozen:
            _freeze(path, 0o444 if path == db else 0o555)
        assert not os.access(db, os.W_OK)
        for command in [*READ_COMMANDS, ["report", "-o", str(tmp_path / "r.html")]]:
            code, out, err = cli(capsys, *command, "--db", str(db))
            expected = 1 if command[0] == "drift" else 0  # the history ends in a regression
            assert code == expected, (command, err)
            assert "unable to open" not in err and (out or command[0] == "report")
        assert (tmp_path / "r.html").is_file()
        assert sorted(p.name for p in folder.iterdir()) == ["v.db"]  # no -wal, no -shm left
    finally:
        for path in reversed(frozen):
            _thaw(path)


@pytest.mark.parametrize("folder_writable", [False, True])
def test_a_read_only_store_is_called_read_only_by_the_commands_that_write(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    pytester: pytest.Pytester,
    folder_writable: bool,
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "v.db"
    history_store(db)
    before = db.read_bytes()
    write_evalset(tmp_path, "basic", "basic", [exact_case("a", "yes")])
    frozen = [db] if folder_writable else [db, folder]
    try:
        for path in frozen:
            _freeze(path, 0o444 if path == db else 0o555)
        code, _, err = cli(capsys, "eval", str(tmp_path / "basic.evalset.json"), "--db", str(db))
        (line,) = err.strip().splitlines()
        assert code == 2 and "the verdryx store is read-only" in line
        assert "not a verdryx store" not in line and line.endswith("another store with --db")
        write_evalset(pytester.path, "basic", "basic", [exact_case("a", "yes")])
        result = pytester.runpytest(f"--verdryx-db={db}")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            ["ERROR: the run was not stored: *v.db: the verdryx store is read-only (*"]
        )
        assert "not a verdryx store" not in result.stdout.str()
    finally:
        for path in reversed(frozen):
            _thaw(path)
    assert db.read_bytes() == before


def test_a_pytest_session_stores_its_run_in_postgres(
    pytester: pytest.Pytester, postgres_with_password: StoreUrl
) -> None:
    write_evalset(pytester.path, "basic", "basic", [exact_case("a", "yes"), exact_case("b", "no")])
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        f"--verdryx-db={postgres_with_password.url}",
        f"--junitxml={junit}",
        f"--verdryx-report={pytester.path / 'report.html'}",
    )
    text = result.stdout.str() + result.stderr.str()
    assert SECRET not in text
    assert f"in {postgres_with_password}" in text  # "stored: <id> in <store>", redacted
    assert SECRET not in junit.read_text()
    JUnitXml.fromfile(str(junit))  # well-formed
    assert SECRET not in (pytester.path / "report.html").read_text()
    with Store.open(postgres_with_password, read_only=True) as store:
        runs = store.list_runs()
        assert len(runs) == 1 and runs[0].cases == 2


def test_without_the_driver_a_url_names_the_extra_to_install() -> None:
    # psycopg made unimportable in a fresh interpreter, as on an install without the extra.
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "from verdryx_core.cli import main\n"
        f"sys.exit(main(['runs', '--db', 'postgresql://u:{SECRET}@127.0.0.1:1/x']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'verdryx[postgres]'" in done.stderr
    assert SECRET not in done.stderr and "postgresql://u:***@127.0.0.1:1/x" in done.stderr


def test_slo_joins_scores_from_a_postgres_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, postgres_with_password: StoreUrl
) -> None:
    from tests.test_slo_cli import A, fleet, write_records

    start = datetime(2026, 8, 1, tzinfo=UTC)
    with Store.open(postgres_with_password) as store:
        for n, agent in enumerate([A, None]):
            values = [1.0 if i % 4 else 0.0 for i in range(24)]
            store.save_run(
                EvalRun(
                    id=f"run-{n}",
                    model="m",
                    started_at=start + timedelta(days=n),
                    finished_at=start + timedelta(days=n, minutes=5),
                    eval_set_ids=("set",),
                    agent_id=agent,
                    scores=tuple(
                        Score(case_id=f"c{i}", eval_set_id="set", value=v, grader="exact")
                        for i, v in enumerate(values)
                    ),
                )
            )
    source = write_records(tmp_path / "runs.ndjson", fleet())
    argv = ["slo", "--input", str(source), "--scores-db", postgres_with_password.url]
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["total_scores"] == 48 and document["unattributed_scores"] == 24
    assert document["scores_db"] == str(postgres_with_password)
    code, out, err = cli(capsys, *argv)
    assert code == 0, err
    assert f"48 score(s) joined from {postgres_with_password}" in out
    assert SECRET not in out + err
