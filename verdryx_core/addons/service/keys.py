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

__all__ = ["KEY_PREFIX", "create_key", "hash_key", "looks_like_key"]

KEY_PREFIX: Final = "vk_live_"
#: How much of a key `keys list` shows (the fixed prefix plus 4 characters): enough to tell
#: keys apart, far too little to guess the rest.
_SHOWN: Final = len(KEY_PREFIX) + 4


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_key(key: str) -> bool:
    return key.startswith(KEY_PREFIX) and 20 <= len(key) <= 200 and key.isascii()


def create_key(storage: ServiceStorage, name: str) -> tuple[ApiKey, str]:
    """A new key named `name`: the stored record, and the key itself (never stored)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    record = storage.create_key(
        key_id="key_" + secrets.token_hex(6),
        name=name,
        key_sha256=hash_key(key),
        prefix=key[:_SHOWN],
    )
    return record, key
