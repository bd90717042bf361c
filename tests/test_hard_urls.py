"""Store URLs: one parser decides the backend and the redaction for every form a PostgreSQL
store can be named in (a URI in any case, with a `+driver` suffix, a libpq key/value
string), and no driver message is ever printed with the password in it
(docs/store.md, "Passwords are never shown"; docs/troubleshooting.md, "Reliability:
stored data").

The forms are tried against the real throwaway server (trust authentication ignores the
password, so a wrong one still connects) and against a port where nothing listens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import fresh_schema, needs_postgres

from verdryx_core.cli import main
from verdryx_core.errors import StoreError
from verdryx_core.runs import EvalRun
from verdryx_core.store import (
    Store,
    StoreUrl,
    is_store_url,
    parse_store_target,
    redact,
    resolve_store_path,
)
from verdryx_core.untrusted.redact import redact_text

T0 = datetime(2025, 5, 1, tzinfo=UTC)

#: Passwords a user may really have: any printable character libpq accepts in each form.
PASSWORDS = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="'\\"),
    min_size=6,
    max_size=24,
).filter(lambda text: not text.isalnum() or any(ch.isdigit() for ch in text))


def _forms(
    password: str, host: str, port: int, database: str, user: str, schema: str | None = None
) -> dict[str, str]:
    """The same store, named every way libpq or a user's habits spell it; `schema` selects
    a schema through libpq's `options` in each form."""
    encoded = quote(password, safe="")
    query = f"options=-csearch_path%3D{schema}" if schema else ""
    keyword = f" options='-csearch_path={schema}'" if schema else ""
    tail = f"?{query}" if query else ""
    return {
        "upper scheme": f"POSTGRESQL://{user}:{encoded}@{host}:{port}/{database}{tail}",
        "mixed scheme": f"PostGres://{user}:{encoded}@{host}:{port}/{database}{tail}",
        "driver suffix": f"postgresql+psycopg://{user}:{encoded}@{host}:{port}/{database}{tail}",
        "psycopg2 suffix": f"postgres+psycopg2://{user}:{encoded}@{host}:{port}/{database}{tail}",
        "query password": (
            f"postgresql://{user}@{host}:{port}/{database}?password={encoded}"
            + (f"&{query}" if query else "")
        ),
        "key/value": (
            f"host={host} port={port} dbname={database} user={user} password={password}{keyword}"
        ),
        "key/value quoted": (
            f"password = '{password}' host={host} port={port} dbname={database} user={user}"
            f"{keyword}"
        ),
    }


@settings(max_examples=60, deadline=None)
@given(password=PASSWORDS)
def test_every_form_is_postgresql_and_prints_without_its_password(password: str) -> None:
    for name, text in _forms(password, "db.internal", 5433, "evals", "ci").items():
        target = parse_store_target(text)
        assert isinstance(target, StoreUrl), name
        assert is_store_url(text) and is_store_url(f"  {text} ")
        assert isinstance(resolve_store_path(text), StoreUrl)
        shown = str(target) + repr(target)
        assert password not in shown and quote(password, safe="") not in shown, (name, shown)
        assert "***" in shown
        # The driver gets a form libpq reads: a lower-case scheme, no driver suffix.
        assert target.url.startswith("postgresql://") or target.is_conninfo, name
        # Any message quoting the text, in any form, comes out clean.
        for quoted in (text, target.url, f'missing "=" after "{text}" in connection info'):
            assert password not in target.redact(quoted), (name, quoted)
            assert quote(password, safe="") not in target.redact(quoted)


@settings(max_examples=40, deadline=None)
@given(password=PASSWORDS)
def test_the_pattern_redaction_alone_covers_each_form(password: str) -> None:
    """`redact` (and the log filter's `redact_text`) without knowing the target: what the
    terminal summary, JUnit and the report apply to any text that may quote a store."""
    encoded = quote(password, safe="")
    for name, text in _forms(password, "h", 1, "d", "u").items():
        secret = password if name.startswith("key/value") else encoded
        assert secret not in redact(text), (name, redact(text))
        assert secret not in redact_text(f"error for {text}: refused"), name


def test_paths_stay_files_and_other_schemes_are_refused_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("v.db", "runs/host.db", "hostname=1.db", "./host=a.db", "C:\\evals\\v.db"):
        assert isinstance(parse_store_target(name), Path), name
    assert isinstance(parse_store_target(Path("host=x password=y")), Path)  # a Path is a file
    for text in ("mysql://ci:T0p-secret@db/evals", "sqlite://ci:T0p-secret@x/y.db"):
        target = parse_store_target(text)
        assert isinstance(target, StoreUrl) and "T0p-secret" not in str(target)
        with pytest.raises(StoreError) as caught:
            Store.open(text)
        assert "T0p-secret" not in str(caught.value) and "not a store" in str(caught.value)
        assert main(["runs", "--db", text]) == 2
        err = capsys.readouterr().err
        assert "T0p-secret" not in err and "ci:***@" in err
    assert list(tmp_path.iterdir()) == []


def test_a_key_value_string_keeps_its_query_and_database() -> None:
    url = StoreUrl("host=h dbname='ev als' password=pw")
    assert url.database == "ev als"
    extended = url.with_query("options=-csearch_path%3Dx")
    assert extended.is_conninfo and "options='-csearch_path=x'" in extended.url
    assert StoreUrl("POSTGRES://u@h/evals?sslmode=require").database == "evals"


# -- the real server: every form opens the same store; no message carries the password -------


@pytest.fixture
def schema() -> Iterator[str]:
    base = needs_postgres()
    with fresh_schema(base) as url:
        yield url.url


def _forms_of(url: str, password: str, *, port: int | None = None) -> dict[str, str]:
    parts = urlsplit(url)
    query = dict(item.split("=", 1) for item in parts.query.split("&") if "=" in item)
    schema = query.get("options", "").partition("%3D")[2] or None
    return _forms(
        password,
        parts.hostname or "127.0.0.1",
        port or parts.port or 5432,
        parts.path.lstrip("/"),
        parts.username or "verdryx",
        schema,
    )


@pytest.mark.parametrize("password", ["Tr1cky?pass#word", "sp@ce:colon/slash", "s3cr3t pw"])
def test_each_form_reaches_the_real_store_and_never_prints_its_password(
    schema: str, password: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    forms = _forms_of(schema, password)
    with Store.open(schema) as store:  # created once through the plain URL
        store.save_run(EvalRun(id="seen-through-every-form", model="stub", started_at=T0))
    for name, text in forms.items():
        if " " in password and not name.startswith("key/value quoted"):
            continue  # a bare key/value word cannot hold a space
        code = main(["runs", "--db", text, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, (name, err)
        assert [row["run_id"] for row in json.loads(out)["runs"]] == ["seen-through-every-form"]
        for shown in (out, err):
            assert password not in shown and quote(password, safe="") not in shown
        # A failing write names the store, redacted, with the driver's own words.
        code = main(["baseline", "no-such-run", "--label", "x", "--db", text])
        err = capsys.readouterr().err
        assert code == 2 and password not in err and quote(password, safe="") not in err
    assert list(tmp_path.iterdir()) == []  # no form was taken for a file name


@pytest.mark.parametrize("password", ["Tr1cky?pass#word", "n0-Echo-please"])
def test_an_unreachable_server_names_itself_redacted_in_every_form(
    password: str, capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    base = needs_postgres()
    for name, text in _forms_of(base, password, port=1).items():  # nothing listens on 1
        with pytest.raises(StoreError) as caught:
            Store.open(text)
        message = str(caught.value)
        assert password not in message and quote(password, safe="") not in message, name
        assert "***" in message and "\n" not in message
        assert main(["show", "x", "--db", text]) == 2
        err = capsys.readouterr().err
        assert password not in err and quote(password, safe="") not in err, name
    # The pytest face: the summary's store line and its error line.
    pytester.makefile(
        ".evalset.json",
        agent=json.dumps(
            {"id": "a", "cases": [{"id": "c", "prompt": "p", "output": "p", "expected": "p"}]}
        ),
    )
    upper = _forms_of(base, password, port=1)["upper scheme"]
    result = pytester.runpytest(f"--verdryx-db={upper}")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert password not in output and quote(password, safe="") not in output
    result.stdout.fnmatch_lines(["*ERROR: the run was not stored: postgresql://*:***@*"])
    assert not list(pytester.path.glob("POSTGRES*")) and not list(pytester.path.glob("host=*"))


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(password=PASSWORDS)
def test_driver_errors_are_scrubbed_of_the_password_the_driver_was_given(password: str) -> None:
    """A key/value string libpq cannot parse makes it quote what it read; the connection's
    own scrub removes the password whatever the driver quotes."""
    pytest.importorskip("psycopg")
    broken = f"host=127.0.0.1 port=1 password={password} dbname"
    with pytest.raises(StoreError) as caught:
        Store.open(broken)
    assert password not in str(caught.value)
