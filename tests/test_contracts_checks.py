"""Every deterministic check on real files in temp dirs, and the base-path guard.

Binary files, empty files, FIFOs, a locked database, a file that is not SQLite, and
symlinks that escape the base path: each gives pass, fail or error, never a wrong pass.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.addons.contracts import (
    CheckError,
    ContractError,
    CriterionResult,
    Limits,
    contract_from_data,
    run_check,
)
from verdryx_core.addons.contracts.paths import resolve_under
from verdryx_core.addons.contracts.workspace import WorkspaceSource, base_directory
from verdryx_core.errors import UsageError

FAST = Limits(sqlite_timeout_s=0.05, regex_timeout_s=0.2)
BINARY = bytes(range(256)) * 4  # every byte value; 0x80.. alone is never valid UTF-8


def check(base: Path, limits: Limits = FAST, **criterion: Any) -> CriterionResult:
    contract = contract_from_data({"task_id": "t", "success_criteria": [{"id": "c", **criterion}]})
    return run_check(contract.success_criteria[0], WorkspaceSource(base, limits))


def write(base: Path, name: str, data: bytes | str) -> Path:
    path = base / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def make_db(path: Path, rows: int = 3, *, table: str = "orders", wal: bool = False) -> Path:
    connection = sqlite3.connect(path)
    if wal:
        connection.execute("PRAGMA journal_mode = WAL")
    connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, note TEXT)")
    connection.executemany(
        f"INSERT INTO {table} (note) VALUES (?)", [(f"row {i}",) for i in range(rows)]
    )
    connection.commit()
    connection.close()
    return path


# -- file_exists / file_nonempty -------------------------------------------------------------


def test_file_exists_passes_on_a_file_and_names_its_size(tmp_path: Path) -> None:
    write(tmp_path, "out/report.md", "hello\n")
    result = check(tmp_path, type="file_exists", path="out/report.md")
    assert (result.status, result.check_id, result.type) == ("pass", "c", "file_exists")
    assert "6 bytes" in result.evidence


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda base: None, "x does not exist"),
        (lambda base: (base / "x").mkdir(), "x is a directory, not a file"),
        (lambda base: os.mkfifo(base / "x"), "x is a FIFO, not a file"),
        (lambda base: write(base, "x/inner.txt", "below"), "x is a directory, not a file"),
    ],
    ids=["missing", "directory", "fifo", "parent-of-file"],
)
def test_file_exists_fails_on_anything_but_a_regular_file(
    tmp_path: Path, setup: Any, expected: str
) -> None:
    setup(tmp_path)
    result = check(tmp_path, type="file_exists", path="x")
    assert (result.status, result.evidence) == ("fail", expected)


def test_a_path_through_a_file_is_missing_not_an_error(tmp_path: Path) -> None:
    write(tmp_path, "plain.txt", "x")
    assert check(tmp_path, type="file_exists", path="plain.txt/inside").status == "fail"
    assert check(tmp_path, type="path_absent", path="plain.txt/inside").status == "pass"


def test_file_nonempty_on_empty_binary_and_text_files(tmp_path: Path) -> None:
    write(tmp_path, "empty", b"")
    write(tmp_path, "binary", BINARY)
    write(tmp_path, "text", "x")
    empty = check(tmp_path, type="file_nonempty", path="empty")
    assert empty.status == "fail"
    assert "empty (0 bytes)" in empty.evidence
    assert check(tmp_path, type="file_nonempty", path="binary").status == "pass"
    assert check(tmp_path, type="file_nonempty", path="text").status == "pass"
    assert check(tmp_path, type="file_nonempty", path="missing").status == "fail"


def test_a_fifo_never_blocks_a_content_check(tmp_path: Path) -> None:
    # Opening a FIFO for reading blocks until a writer comes; the check must refuse it first.
    os.mkfifo(tmp_path / "pipe")
    result = check(tmp_path, type="file_contains", path="pipe", pattern="x")
    assert result.status == "fail"
    assert "FIFO" in result.evidence


# -- file_contains / pattern_count_gte -------------------------------------------------------


def test_file_contains_searches_anywhere_and_quotes_the_match(tmp_path: Path) -> None:
    write(tmp_path, "log.txt", "start\nrefund issued: 42 EUR\nend\n")
    result = check(tmp_path, type="file_contains", path="log.txt", pattern=r"refund issued: \d+")
    assert result.status == "pass"
    assert "line 2" in result.evidence
    assert "'refund issued: 42'" in result.evidence
    missing = check(tmp_path, type="file_contains", path="log.txt", pattern="chargeback")
    assert missing.status == "fail"
    assert "no match for 'chargeback'" in missing.evidence


def test_file_contains_is_re_search_so_line_anchors_need_the_m_flag(tmp_path: Path) -> None:
    write(tmp_path, "r.md", "# Title\n## Summary\n")
    assert check(tmp_path, type="file_contains", path="r.md", pattern="^## Summary").status == (
        "fail"
    )
    assert check(
        tmp_path, type="file_contains", path="r.md", pattern="(?m)^## Summary$"
    ).status == ("pass")


def test_file_contains_on_an_empty_file_fails(tmp_path: Path) -> None:
    write(tmp_path, "empty.txt", b"")
    assert check(tmp_path, type="file_contains", path="empty.txt", pattern="x").status == "fail"
    # An empty pattern matches even an empty file: the regex decides, not a special case.
    assert check(tmp_path, type="file_contains", path="empty.txt", pattern="").status == "pass"


@pytest.mark.parametrize("check_type", ["file_contains", "pattern_count_gte"])
def test_a_regex_check_on_a_binary_file_is_an_error_never_a_pass(
    tmp_path: Path, check_type: str
) -> None:
    # The bytes contain b"A" (0x41), so a lenient decode would have "matched".
    write(tmp_path, "blob.bin", BINARY)
    extra = {"min_count": 1} if check_type == "pattern_count_gte" else {}
    result = check(tmp_path, type=check_type, path="blob.bin", pattern="A", **extra)
    assert result.status == "error"
    assert "not UTF-8 text" in result.evidence


def test_catastrophic_backtracking_is_an_error_not_a_hang(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "a" * 40 + "!")
    result = check(tmp_path, type="file_contains", path="a.txt", pattern="(a|aa)+$")
    assert result.status == "error"
    assert "did not finish" in result.evidence


def test_pattern_count_gte_counts_line_anchored_matches(tmp_path: Path) -> None:
    write(tmp_path, "todo.md", "- one\n- two\nnot a bullet - three\n- four\n")
    at_least_three = check(
        tmp_path, type="pattern_count_gte", path="todo.md", pattern="^- ", min_count=3
    )
    assert at_least_three.status == "pass"
    assert "3 matches" in at_least_three.evidence
    four = check(tmp_path, type="pattern_count_gte", path="todo.md", pattern="^- ", min_count=4)
    assert four.status == "fail"
    assert "needs at least 4" in four.evidence
    write(tmp_path, "empty.md", b"")
    empty = check(tmp_path, type="pattern_count_gte", path="empty.md", pattern="x", min_count=1)
    assert empty.status == "fail"


# -- dir_exists ------------------------------------------------------------------------------


def test_dir_exists(tmp_path: Path) -> None:
    write(tmp_path, "out/a.txt", "a")
    (tmp_path / "out" / "sub").mkdir()
    result = check(tmp_path, type="dir_exists", path="out")
    assert result.status == "pass"
    assert "2 entries: a.txt, sub/" in result.evidence
    assert check(tmp_path, type="dir_exists", path=".").status == "pass"
    assert check(tmp_path, type="dir_exists", path="out/a.txt").status == "fail"
    assert check(tmp_path, type="dir_exists", path="nope").status == "fail"
    (tmp_path / "empty").mkdir()
    assert check(tmp_path, type="dir_exists", path="empty").evidence == (
        "empty is a directory with 0 entries"
    )


# -- json_valid ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "status", "evidence"),
    [
        (b'{"a": [1, 2.5, null]}', "pass", "an object"),
        (b"[]", "pass", "an array"),
        (b'"just a string"', "pass", "a string"),
        (b"", "fail", "empty, not JSON"),
        (b"  \n", "fail", "empty, not JSON"),
        (b'{"a": 1,}', "fail", "not valid JSON"),
        (b'{"a": NaN}', "fail", "NaN is not a JSON value"),
        (b"[Infinity]", "fail", "Infinity is not a JSON value"),
        (BINARY, "fail", "not valid JSON"),
        (b"[" * 200_000 + b"]" * 200_000, "error", "nests too deeply"),
    ],
    ids=[
        "object",
        "array",
        "string",
        "empty",
        "blank",
        "trailing-comma",
        "nan",
        "inf",
        "binary",
        "deep",
    ],
)
def test_json_valid(tmp_path: Path, data: bytes, status: str, evidence: str) -> None:
    write(tmp_path, "data.json", data)
    result = check(tmp_path, type="json_valid", path="data.json")
    assert (result.status, evidence in result.evidence) == (status, True), result.evidence


# -- line_count_gte --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "lines"),
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\nb\n", 2), (b"\n\n\n", 3)],
)
def test_line_count_gte_counts_a_last_line_without_newline(
    tmp_path: Path, data: bytes, lines: int
) -> None:
    write(tmp_path, "f.txt", data)
    assert check(tmp_path, type="line_count_gte", path="f.txt", min_lines=lines).status == "pass"
    above = check(tmp_path, type="line_count_gte", path="f.txt", min_lines=lines + 1)
    assert above.status == "fail"
    assert f"has {lines} lines" in above.evidence


def test_line_count_gte_reads_bytes_so_binary_files_count_too(tmp_path: Path) -> None:
    write(tmp_path, "blob.bin", BINARY)  # 0x0a appears once per 256 bytes
    result = check(tmp_path, type="line_count_gte", path="blob.bin", min_lines=5)
    assert result.status == "pass"
    assert "has 5 lines" in result.evidence


# -- sqlite_table_has_rows -------------------------------------------------------------------


def test_sqlite_table_has_rows(tmp_path: Path) -> None:
    make_db(tmp_path / "app.db", rows=3)
    result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert result.status == "pass"
    assert "has 3 rows" in result.evidence
    too_few = check(
        tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders", min_rows=4
    )
    assert too_few.status == "fail"
    # SQLite identifiers are case-insensitive; so is the check.
    assert check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="ORDERS").status == (
        "pass"
    )


def test_sqlite_empty_table_missing_table_and_missing_file_fail(tmp_path: Path) -> None:
    make_db(tmp_path / "app.db", rows=0)
    empty = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert (empty.status, "has 0 rows" in empty.evidence) == ("fail", True)
    absent = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="users")
    assert (absent.status, "no table 'users'" in absent.evidence) == ("fail", True)
    missing = check(tmp_path, type="sqlite_table_has_rows", path="none.db", table="orders")
    assert (missing.status, "does not exist" in missing.evidence) == ("fail", True)


@pytest.mark.parametrize(
    "data", [b"this is a text file, not a database\n", BINARY], ids=["text", "binary"]
)
def test_a_file_that_is_not_sqlite_fails(tmp_path: Path, data: bytes) -> None:
    write(tmp_path, "app.db", data)
    result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert result.status == "fail"
    assert "not a SQLite database" in result.evidence


def test_an_empty_file_is_an_empty_database_and_stays_empty(tmp_path: Path) -> None:
    write(tmp_path, "app.db", b"")
    result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert (result.status, "no table" in result.evidence) == ("fail", True)
    assert (tmp_path / "app.db").read_bytes() == b""


def test_a_header_over_garbage_is_not_a_database(tmp_path: Path) -> None:
    write(tmp_path, "app.db", b"SQLite format 3\x00" + b"\xff" * 200)
    result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert result.status == "fail"
    assert "not a SQLite database (SQLite says: file is not a database)" in result.evidence


def test_a_damaged_database_is_an_error(tmp_path: Path) -> None:
    # A real database cut in half: SQLite cannot count, so the check cannot run.
    db = make_db(tmp_path / "app.db", rows=2000)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    assert result.status == "error"
    assert "malformed" in result.evidence


def test_a_locked_database_is_an_error_never_a_pass(tmp_path: Path) -> None:
    db = make_db(tmp_path / "app.db", rows=3)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        # Rollback-journal mode: an EXCLUSIVE lock keeps every reader out until it ends.
        holder.execute("BEGIN EXCLUSIVE")
        result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
        assert result.status == "error"
        assert "locked" in result.evidence
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders").status == (
        "pass"
    )


def test_the_check_opens_read_only_and_leaves_the_database_untouched(tmp_path: Path) -> None:
    db = make_db(tmp_path / "app.db", rows=2)
    before = (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns)
    os.chmod(db, 0o444)
    try:
        result = check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders")
    finally:
        os.chmod(db, 0o644)
    assert result.status == "pass"
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no journal left behind


def test_a_wal_database_is_readable(tmp_path: Path) -> None:
    make_db(tmp_path / "app.db", rows=5, wal=True)
    assert check(tmp_path, type="sqlite_table_has_rows", path="app.db", table="orders").status == (
        "pass"
    )


def test_a_path_with_uri_characters_is_quoted_not_interpreted(tmp_path: Path) -> None:
    # '?' and '#' would end the path in a SQLite URI; '%' would start an escape.
    make_db(tmp_path / "odd ?name#%20.db", rows=1)
    assert (
        check(
            tmp_path, type="sqlite_table_has_rows", path="odd ?name#%20.db", table="orders"
        ).status
        == "pass"
    )


@pytest.mark.parametrize(
    "table",
    ['orders"; DROP TABLE orders; --', "orders; DELETE FROM orders", "main.orders", "1abc", ""],
)
def test_a_table_name_is_an_identifier_never_sql(tmp_path: Path, table: str) -> None:
    with pytest.raises(ContractError) as info:
        check(tmp_path, type="sqlite_table_has_rows", path="app.db", table=table)
    assert info.value.field == "table"
    assert "'c' (#1)" in str(info.value)


def test_the_source_refuses_a_bad_identifier_on_its_own(tmp_path: Path) -> None:
    # Validation already refuses it; the source must be safe without relying on that.
    db = make_db(tmp_path / "app.db", rows=1)
    with pytest.raises(CheckError, match="plain SQL identifier"):
        WorkspaceSource(tmp_path, FAST).sqlite_table("app.db", 'x" OR 1=1 --')
    assert db.exists()


# -- path_absent -----------------------------------------------------------------------------


def test_path_absent_is_a_scope_guard(tmp_path: Path) -> None:
    assert check(tmp_path, type="path_absent", path=".env").status == "pass"
    write(tmp_path, ".env", "SECRET=1")
    present = check(tmp_path, type="path_absent", path=".env")
    assert present.status == "fail"
    assert "was to stay absent" in present.evidence
    (tmp_path / "build").mkdir()
    assert check(tmp_path, type="path_absent", path="build").status == "fail"


def test_a_dangling_symlink_is_present_not_absent(tmp_path: Path) -> None:
    (tmp_path / "gone").symlink_to(tmp_path / "never-created")
    absent = check(tmp_path, type="path_absent", path="gone")
    assert (absent.status, "dangling symlink" in absent.evidence) == ("fail", True)
    assert check(tmp_path, type="file_exists", path="gone").status == "fail"


# -- the base path guard ---------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret outside the workspace, and the workspace `tmp_path/ws` itself."""
    write(tmp_path, "secret/token.txt", "TOKEN=hunter2\n")
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.mark.parametrize(
    ("check_type", "extra"),
    [
        ("file_exists", {}),
        ("file_nonempty", {}),
        ("file_contains", {"pattern": "hunter2"}),
        ("pattern_count_gte", {"pattern": "TOKEN", "min_count": 1}),
        ("json_valid", {}),
        ("line_count_gte", {"min_lines": 1}),
        ("sqlite_table_has_rows", {"table": "t"}),
        ("path_absent", {}),
    ],
)
def test_a_symlinked_file_escaping_the_base_path_is_an_error(
    outside: Path, check_type: str, extra: dict[str, Any]
) -> None:
    (outside / "token.txt").symlink_to(outside.parent / "secret" / "token.txt")
    result = check(outside, type=check_type, path="token.txt", **extra)
    assert result.status == "error"
    assert "outside the base path" in result.evidence
    assert "hunter2" not in result.evidence


def test_a_symlinked_directory_escaping_the_base_path_is_an_error(outside: Path) -> None:
    (outside / "link").symlink_to(outside.parent / "secret", target_is_directory=True)
    for criterion in (
        {"type": "dir_exists", "path": "link"},
        {"type": "file_contains", "path": "link/token.txt", "pattern": "hunter2"},
    ):
        result = check(outside, **criterion)
        assert result.status == "error"
        assert "outside the base path" in result.evidence


def test_a_symlink_inside_the_base_path_is_followed(outside: Path) -> None:
    write(outside, "real/data.txt", "inside\n")
    (outside / "alias").symlink_to(outside / "real", target_is_directory=True)
    result = check(outside, type="file_contains", path="alias/data.txt", pattern="inside")
    assert result.status == "pass"


def test_a_symlink_loop_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert check(tmp_path, type="file_exists", path="a").status == "error"


def test_an_unreadable_file_is_an_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    path = write(tmp_path, "locked.txt", "x")
    path.chmod(0)
    try:
        assert check(tmp_path, type="file_contains", path="locked.txt", pattern="x").status == (
            "error"
        )
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../secret/token.txt", "'..'"),
        ("out/../../x", "'..'"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/win.ini", "absolute"),
        ("..\\x", "backslash"),
        ("a\x00b", "NUL"),
    ],
)
def test_climbing_and_absolute_paths_are_refused_when_the_contract_loads(
    tmp_path: Path, path: str, words: str
) -> None:
    with pytest.raises(ContractError) as info:
        check(tmp_path, type="file_exists", path=path)
    assert info.value.field == "path"
    assert words in str(info.value)


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x"])
def test_resolution_refuses_climbing_on_its_own(tmp_path: Path, path: str) -> None:
    with pytest.raises(CheckError):
        resolve_under(tmp_path.resolve(), path)


def test_a_base_path_that_is_not_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        base_directory(tmp_path / "nope")
    write(tmp_path, "file", "x")
    with pytest.raises(UsageError, match="is not a directory"):
        base_directory(tmp_path / "file")


def test_a_file_larger_than_the_read_limit_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "big.txt", "x" * 2000)
    result = check(
        tmp_path, Limits(max_read_bytes=1000), type="file_contains", path="big.txt", pattern="x"
    )
    assert result.status == "error"
    assert "more than the 1000" in result.evidence


def test_one_observation_per_path(tmp_path: Path) -> None:
    # Several checks on one file see the same bytes, and the bundle records exactly those.
    path = write(tmp_path, "f.txt", "first\n")
    source = WorkspaceSource(tmp_path, FAST)
    assert source.read("f.txt") == b"first\n"
    path.write_text("changed while checking\n")
    assert source.read("./f.txt") == b"first\n"
    assert source.artifacts["f.txt"]["content"]["data"] == "first\n"
