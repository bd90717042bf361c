"""API keys: `vk_live_` + 256 random bits, shown once, kept only as their sha256.

sha256 rather than a slow password hash: a slow hash protects guessable secrets, and these
are 256 random bits from `secrets`, which no one can enumerate; a fast hash keeps the lookup
on every request cheap. The database never holds a key, so a copy of it grants nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Final

from verdryx_core.addons.service.storage import ApiKey, ServiceStorage
from verdryx_core.errors import UsageError

__all__ = [
    "KEY_PREFIX",
    "MAX_NAME_LENGTH",
    "create_key",
    "hash_key",
    "key_name_problem",
    "looks_like_key",
]

KEY_PREFIX: Final = "vk_live_"
#: How much of a key `keys list` shows (the fixed prefix plus 4 characters): enough to tell
#: keys apart, far too little to guess the rest.
_SHOWN: Final = len(KEY_PREFIX) + 4
#: A key's name is shown in `keys list` rows and messages: one short printable line.
MAX_NAME_LENGTH: Final = 200


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_key(key: str) -> bool:
    return key.startswith(KEY_PREFIX) and 20 <= len(key) <= 200 and key.isascii()


def key_name_problem(name: str) -> str | None:
    """Why `name` cannot name a key, or None. A name is printed in `keys list` and in
    messages, so it is 1 to 200 printable characters: no control, format or separator
    character (a newline would start a row of its own, a bidi override reorder one), and no
    backslash, which would let a name imitate the escapes `keys list` prints for those."""
    if not name or len(name) > MAX_NAME_LENGTH:
        return f"must be 1 to {MAX_NAME_LENGTH} characters"
    for char in name:
        if char == "\\" or not char.isprintable():
            shown = repr(char)
            return (
                f"holds {shown}: a name is letters, digits, punctuation and spaces (no control, "
                "format or separator character, no backslash)"
            )
    return None


def create_key(storage: ServiceStorage, name: str) -> tuple[ApiKey, str]:
    """A new key named `name`: the stored record, and the key itself (never stored).
    UsageError when the name is not one `key_name_problem` accepts."""
    problem = key_name_problem(name)
    if problem is not None:
        raise UsageError(f"key name {name[:80]!r} {problem}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    record = storage.create_key(
        key_id="key_" + secrets.token_hex(6),
        name=name,
        key_sha256=hash_key(key),
        prefix=key[:_SHOWN],
    )
    return record, key
