"""Fixes that slipped through earlier rounds, each with its own payloads
(docs/troubleshooting.md, "Reliability"): a PostgreSQL URL libpq cannot parse keeps its
password out of every line; a regex every output matches is refused however it is written;
a labels line with a key given twice is refused; verdryx's own encoding limit is not blamed
on the target; a trace's outcome cannot split the cost table's row."""

from __future__ import annotations

import json

import pytest

from verdryx_core.cli import main
from verdryx_core.store import StoreUrl


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# -- a PostgreSQL URL with an IPv6 host left open ------------------------------------------------

BROKEN_URLS = [
    "postgresql://u:secret-pw@[::1/db",
    "postgresql://u:secret-pw@[::1",
    "postgres://u:secret-pw@[fe80::1%eth0/db?sslmode=require",
    "postgresql://u@[::1/db?password=secret-pw&application_name=x",
    "POSTGRESQL+psycopg://u:secret-pw@[::1/db",
]


@pytest.mark.parametrize("url", BROKEN_URLS)
def test_an_unterminated_ipv6_host_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    assert "secret-pw" in StoreUrl(url).secrets()
    assert "secret-pw" not in str(StoreUrl(url))
    for argv in (["runs"], ["show", "r1"], ["eval", "missing.evalset.json"]):
        code, out, err = _cli(capsys, *argv, "--db", url)
        assert code == 2, argv
        assert "secret-pw" not in out + err
        assert len(err.strip().splitlines()) == 1, err


def test_pytest_with_such_a_url_is_a_usage_error_without_the_password(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".evalset.json",
        s=json.dumps(
            {
                "id": "s",
                "cases": [
                    {"id": "c", "prompt": "p", "grader": "exact", "expected": "a", "output": "a"}
                ],
            }
        ),
    )
    result = pytester.runpytest(f"--verdryx-db={BROKEN_URLS[0]}")
    text = result.stdout.str() + result.stderr.str()
    assert "secret-pw" not in text and "Traceback" not in text and "INTERNALERROR" not in text
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.USAGE_ERROR)
