"""Where the store is: a SQLite file path or a PostgreSQL URL, and how to name it safely.

One parser, `parse_store_target`, decides for every form of target both the backend and
what must be redacted from it. A URL may carry a password; everything that names a store
(messages, errors, the terminal summary, JUnit properties, the report) uses `redact` or a
`StoreUrl`, whose `str()` is the redacted form, and the store's connection scrubs the
target's own passwords from every driver message (`StoreUrl.redact`). See docs/store.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from verdryx_core.untrusted.redact import (
    KEYWORD_PASSWORD,
    QUERY_PASSWORD,
    redact_database,
    redact_text,
)

__all__ = [
    "StoreTarget",
    "StoreUrl",
    "is_store_url",
    "parse_store_target",
    "redact",
    "resolve_store_path",
]

# The one parser (`parse_store_target`) reads every form a PostgreSQL store is named in and
# decides both the backend and what to redact from it:
#
# * a URI, whatever the case of its scheme (`POSTGRESQL://`) and with or without a driver
#   suffix (`postgresql+psycopg://`, SQLAlchemy's spelling): libpq knows only the lower-case
#   `postgresql://` and `postgres://`, and reads anything else as a key/value string, whose
#   parse error then echoes the whole text, password included;
# * a libpq key/value string (`host=db password=x dbname=evals`), which would otherwise be
#   taken for the name of a SQLite file and printed as one.
#
# Anything else of the form `scheme://` is refused rather than created as a SQLite file.
_URI: Final = re.compile(r"^(?P<scheme>postgres(?:ql)?)(?:\+[A-Za-z0-9_.-]+)?://", re.IGNORECASE)
_OTHER_URI: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: libpq's connection keywords: a string starting `KEYWORD=` is a key/value string.
_KEYWORDS: Final = frozenset(
    {
        "application_name",
        "channel_binding",
        "client_encoding",
        "connect_timeout",
        "dbname",
        "fallback_application_name",
        "gssencmode",
        "host",
        "hostaddr",
        "keepalives",
        "load_balance_hosts",
        "options",
        "passfile",
        "password",
        "port",
        "requirepeer",
        "service",
        "sslcert",
        "sslkey",
        "sslmode",
        "sslpassword",
        "sslrootcert",
        "target_session_attrs",
        "user",
    }
)
_CONNINFO_START: Final = re.compile(r"^(?P<key>[A-Za-z_]+)\s*=")
#: One `key = value` pair of a key/value string: a value is a bare word or single-quoted,
#: with backslash escapes (libpq's rules).
_CONNINFO_PAIR: Final = re.compile(
    r"(?P<key>[A-Za-z_]+)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'?|[^\s']*)", re.DOTALL
)

#: Secrets shorter than this are not searched for in messages (every "a" of a message would
#: go); the patterns above still redact them wherever a URL or keyword string is quoted.
_MIN_SCRUBBED: Final = 3


def parse_store_target(value: str | os.PathLike[str]) -> StoreTarget:
    """What a `--db` value, `VERDRYX_DB` or `--verdryx-db` names: a `StoreUrl` for every
    PostgreSQL form (any-case URI scheme, a `+driver` suffix, a libpq key/value string),
    else the `Path` of a SQLite file. A `Path` given is a file whatever it holds. A URL of
    another scheme (`mysql://...`) is a `StoreUrl` too, so it is named redacted everywhere
    and never created as a file; opening it is refused (`StoreUrl.refusal`)."""
    if isinstance(value, StoreUrl):
        return value
    if isinstance(value, str) and _kind(value) is not None:
        return StoreUrl(value)
    return Path(value)


def _kind(text: str) -> str | None:
    """ "uri", "conninfo", "foreign" (a URL of another scheme), or None for a file path."""
    stripped = text.strip()
    if _URI.match(stripped):
        return "uri"
    start = _CONNINFO_START.match(stripped)
    if start is not None and start.group("key").lower() in _KEYWORDS:
        return "conninfo"
    if _OTHER_URI.match(stripped):
        return "foreign"
    return None


def is_store_url(target: object) -> bool:
    """True for a PostgreSQL target: a `StoreUrl`, or a string in any form `parse_store_target`
    reads as one."""
    if isinstance(target, StoreUrl):
        return True
    return isinstance(target, str) and _kind(target) is not None


def redact(text: object) -> str:
    """`text` with every PostgreSQL password replaced by `***`; anything else unchanged.

    Safe to apply to whole messages (a driver's error may quote the URL). The patterns live
    with every other credential rule, in `verdryx_core/untrusted/redact.py`."""
    return redact_database(str(text))


def _query(url: str) -> str:
    """A URI's query string, read without `urlsplit`: that raises on a URL libpq refuses too
    (`postgresql://u:pw@[::1/db`, an IPv6 host without its `]`), and the passwords must be
    found in exactly such a URL, whose driver error quotes it whole."""
    return url.split("#", 1)[0].partition("?")[2]


def _unquote_conninfo(value: str) -> str:
    if value.startswith("'"):
        body = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
        return re.sub(r"\\(.)", r"\1", body)
    return value


def _quote_conninfo(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A store named by a URL: a PostgreSQL URI or libpq key/value string, or a URL of another
    scheme that no backend opens (`refusal`). `str()` is redacted; only the driver sees
    `.url`, which is normalised so libpq reads it as written: a PostgreSQL URI's scheme
    becomes `postgresql://` (lower case, no `+driver`)."""

    url: str

    def __post_init__(self) -> None:
        text = self.url.strip()
        found = _URI.match(text)
        if found is not None:
            text = "postgresql://" + text[found.end() :]
        object.__setattr__(self, "url", text)

    def __str__(self) -> str:
        return self.redact(self.url)

    def __repr__(self) -> str:
        return f"StoreUrl({str(self)!r})"

    @property
    def kind(self) -> str:
        """ "uri" (postgresql://), "conninfo" (a libpq key/value string) or "foreign" (a URL
        of another scheme, which no backend opens)."""
        return _kind(self.url) or "foreign"

    @property
    def is_conninfo(self) -> bool:
        """A libpq key/value string rather than a URI."""
        return self.kind == "conninfo"

    def refusal(self) -> str | None:
        """Why no backend opens this target (a URL of another scheme), redacted; None when
        PostgreSQL does."""
        if self.kind != "foreign":
            return None
        return (
            f"{self}: not a store verdryx can open: give a SQLite file path, a PostgreSQL URL "
            "(postgresql://...) or a libpq key/value string (host=... dbname=...)"
        )

    def _pairs(self) -> dict[str, str]:
        return {
            match.group("key").lower(): _unquote_conninfo(match.group("value"))
            for match in _CONNINFO_PAIR.finditer(self.url)
        }

    def secrets(self) -> tuple[str, ...]:
        """The passwords this target carries, as written and decoded: what a message must
        never hold, whatever form a driver quotes them in."""
        found: set[str] = set()
        if self.is_conninfo:
            for key, value in self._pairs().items():
                if key in ("password", "sslpassword"):
                    found.add(value)
        elif self.kind == "foreign":
            userinfo = self.url.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0]
            if ":" in userinfo:
                found.add(userinfo.split(":", 1)[1])
        else:
            authority = self.url[len("postgresql://") :].split("/", 1)[0]
            if "@" in authority:
                user_part = authority.split("@", 1)[0]
                if ":" in user_part:
                    found.add(user_part.split(":", 1)[1])
            for key, value in parse_qsl(_query(self.url), keep_blank_values=True):
                if key.lower() in ("password", "sslpassword"):
                    found.add(value)
            for match in QUERY_PASSWORD.finditer(self.url):
                found.add(match.group(0)[len(match.group("key")) :])
        for match in KEYWORD_PASSWORD.finditer(self.url):
            found.add(match.group(0)[len(match.group("key")) :])
        found |= {unquote(item) for item in found}
        return tuple(sorted(item for item in found if len(item) >= _MIN_SCRUBBED))

    def redact(self, text: object) -> str:
        """`text` (a message, a driver's error) with this target's passwords replaced by
        `***`, in every form they were given or a driver may quote them in."""
        # A URL of another scheme: any scheme's user-info is masked (it may be a token); a
        # PostgreSQL user name is not a secret and stays readable.
        value = redact_text(str(text)) if self.kind == "foreign" else redact(text)
        for secret in self.secrets():
            value = value.replace(secret, "***")
        return value

    def exists(self) -> bool:
        """A server cannot be checked without connecting; callers that ask before opening
        (is there a baseline to read?) then open it and get a clear error if it is not there."""
        return True

    @property
    def database(self) -> str:
        """The database name, for messages."""
        if self.is_conninfo:
            return self._pairs().get("dbname", "")
        after = self.url.split("://", 1)[-1].split("#", 1)[0].split("?", 1)[0]
        return after.partition("/")[2]

    def with_query(self, extra: str) -> StoreUrl:
        """The target with `extra` (key=value, URL-encoded) added: to a URI's query string,
        or as one more keyword of a key/value string."""
        if self.is_conninfo:
            key, _, value = extra.partition("=")
            return StoreUrl(f"{self.url} {key}={_quote_conninfo(unquote(value))}")
        parts = urlsplit(self.url)
        query = f"{parts.query}&{extra}" if parts.query else extra
        return StoreUrl(urlunsplit(parts._replace(query=query)))


#: What `resolve_store_path` returns and `Store.open` takes.
StoreTarget = Path | StoreUrl


def _target(value: str) -> StoreTarget:
    return parse_store_target(value)


def resolve_store_path(
    flag: str | None = None, env: Mapping[str, str] | None = None
) -> StoreTarget:
    """The flag, then VERDRYX_DB verbatim, then $TAIPAN_HOME/verdryx.db when that folder
    exists (default ~/.taipan), then ./verdryx.db. Never creates a directory. A PostgreSQL
    URL in the flag or VERDRYX_DB gives a `StoreUrl` (docs/store.md)."""
    env = os.environ if env is None else env
    if flag:
        return _target(flag)
    if env.get("VERDRYX_DB"):
        return _target(env["VERDRYX_DB"])
    home = env.get("TAIPAN_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".taipan"
    )
    if os.path.isdir(home):
        return Path(home) / "verdryx.db"
    return Path("verdryx.db")
