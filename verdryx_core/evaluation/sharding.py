"""Stable sharding: which of N shards measures a case, the same on every run and machine.

A case belongs to shard `1 + H(eval set id, case id) mod N`, where H is the first eight bytes
of a sha256 read as an unsigned integer. The split depends on nothing but the two ids: not the
order of files or cases, not the Python hash seed, not the machine, so N CI jobs running
`--verdryx-shard=1/N` .. `N/N` measure every case exactly once between them (docs/sharding.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final

from verdryx_core.errors import UsageError

__all__ = ["MAX_SHARDS", "ShardSpec", "parse_shard", "shard_of"]

#: More shards than this is almost certainly a typo (CI matrices top out at 256 jobs).
MAX_SHARDS: Final = 1000
_FORM: Final = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
# Two ids joined by a byte that can appear in neither (ids are text, NUL is not allowed in
# them), so ("a/b", "c") and ("a", "b/c") never hash alike.
_SEPARATOR: Final = "\x00"


def shard_of(eval_set_id: str, case_id: str, total: int) -> int:
    """The 1-based shard of a case among `total` shards."""
    if total < 1:
        raise ValueError(f"shard count {total} is not a positive number")
    digest = hashlib.sha256(
        f"{eval_set_id}{_SEPARATOR}{case_id}".encode("utf-8", "surrogatepass")
    ).digest()
    return 1 + int.from_bytes(digest[:8], "big") % total


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Shard `index` of `total` (1-based): `str()` is the `K/N` form stored on a run."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"

    def holds(self, eval_set_id: str, case_id: str) -> bool:
        """Whether this shard measures the case."""
        return shard_of(eval_set_id, case_id, self.total) == self.index


def parse_shard(text: str, *, flag: str = "--verdryx-shard") -> ShardSpec:
    """`K/N` with 1 <= K <= N; anything else is one `UsageError` line naming `flag`."""
    match = _FORM.match(text)
    if match is None:
        raise UsageError(
            f"{flag} {text!r}: expected K/N, this job's shard K of N shards (e.g. 2/3)"
        )
    index, total = int(match.group(1)), int(match.group(2))
    if total < 1 or total > MAX_SHARDS:
        raise UsageError(f"{flag} {text}: the shard count {total} is not in 1..{MAX_SHARDS}")
    if not 1 <= index <= total:
        raise UsageError(
            f"{flag} {text}: shard {index} is not in 1..{total} (shards are numbered from 1)"
        )
    return ShardSpec(index, total)
