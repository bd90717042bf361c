"""Credentials out of everything verdryx prints or records.

A URL may carry a credential in its user-info part (`https://user:secret@proxy.example`): in
ANTHROPIC_BASE_URL, VERDRYX_OTLP_ENDPOINT, a typed service URL or a database URL. verdryx shows
such a URL as `https://user:***@proxy.example` (a user-info without a password, often a token
on its own, as `https://***@host`), a `password=` query value or keyword as `password=***`
(the rule for database URLs and libpq key/value strings, `redact_database`, which the store
uses for every form of its target), and a `logging.Filter` does the same to the records of
the HTTP libraries it drives (the SDK and httpx log each request's URL at INFO), so
`--log-cli-level=INFO` does not print the secret either (docs/troubleshooting.md).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Final

__all__ = [
    "AUTHORITY_PASSWORD",
    "KEYWORD_PASSWORD",
    "MASK",
    "QUERY_PASSWORD",
    "URLCredentialFilter",
    "install_log_filter",
    "redact_database",
    "redact_text",
    "redact_url",
]

MASK: Final = "***"


# scheme://userinfo@ where userinfo has no '/', '@' or whitespace; the last '@' before the host
# ends it (a password may itself hold an unescaped '@').
_USERINFO: Final = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s]*@)")

# A password anywhere a libpq URI or key/value string can carry one: user:PASSWORD@ in a URI
# (libpq ends the user part at the first '@' before the first '/', so a password may hold
# '?', '#' or ':'), password=... or sslpassword=... in a query, or as a keyword (quoted or
# not, with spaces around '=', at the very start of the text too).
AUTHORITY_PASSWORD: Final = re.compile(
    r"(?P<scheme>postgres(?:ql)?(?:\+[A-Za-z0-9_.-]+)?://[^:/@\s]*):[^@/\s]*@", re.IGNORECASE
)
QUERY_PASSWORD: Final = re.compile(r"(?i)(?P<key>[?&](?:ssl)?password=)[^&\s]*")
# In a key/value string a bare value runs to the next whitespace (it may hold '&' or '"'),
# a quoted one to its closing quote; more is redacted rather than less.
KEYWORD_PASSWORD: Final = re.compile(
    r"(?i)(?P<key>(?:^|[\s(\"'])(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S*)"
)


#: The loggers of the libraries that log request URLs on verdryx's behalf.
LOGGERS: Final = ("anthropic", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "openai")


def redact_url(url: str) -> str:
    """`url` with its password masked; a URL without credentials is unchanged."""
    return redact_text(url)


def redact_text(text: str) -> str:
    """Every URL in `text` with its password (or a lone user-info token) replaced by `***`."""
    if "@" in text:
        text = _USERINFO.sub(_mask, text)
    lowered = text.lower()
    if "password" in lowered or "postgres" in lowered:
        # A `password = x` keyword, a password holding '?' or '#' that libpq still reads.
        text = redact_database(text)
    return text


def redact_database(text: str) -> str:
    """`text` with every PostgreSQL password replaced by `***`, in each form libpq reads one
    (the store names its target with it: verdryx_core/store/target.py)."""
    text = AUTHORITY_PASSWORD.sub(r"\g<scheme>:***@", text)
    text = QUERY_PASSWORD.sub(r"\g<key>***", text)
    return KEYWORD_PASSWORD.sub(r"\g<key>***", text)


def _mask(match: re.Match[str]) -> str:
    userinfo = match.group("userinfo")[:-1]  # without the '@'
    user, colon, _ = userinfo.partition(":")
    shown = f"{user}:{MASK}" if colon and user else MASK
    return f"{match.group('scheme')}{shown}@"


class URLCredentialFilter(logging.Filter):
    """Rewrites a record's message with `redact_text`; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg = redacted
            record.args = ()
        return True


_FILTER: Final = URLCredentialFilter()
_lock = threading.Lock()


def install_log_filter() -> None:
    """Put the filter on the HTTP libraries' loggers and every child logger that exists now.

    A filter on a logger sees only records logged on that very logger (not those propagated
    from its children), so each existing child gets it too; call again after importing an SDK.
    Idempotent.
    """
    with _lock:
        names = set(LOGGERS)
        for name in list(logging.Logger.manager.loggerDict):
            if any(name == root or name.startswith(root + ".") for root in LOGGERS):
                names.add(name)
        for name in names:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
