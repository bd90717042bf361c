"""Run id strings to dense integer codes (0, 1, 2, ... in first-seen order), exactly.

Why not just a string hash table: when a trace's rows are scattered (each run's calls spread
over every segment) millions of lookups land at random places in a table of every run id,
and each one costs a cache miss for the slot and another for the stored string. Here each
id is first cut into its length and little-endian 8-byte words (numpy, straight from the
Arrow buffers, no Python object per id), the words are mixed into a 64-bit fingerprint, and
the fingerprints are coded through an integer hash table, several times cheaper.

Exact, not probabilistic: every coded id's length and words are compared with those stored
for its code, which is equality of the strings. A fingerprint collision (about one chance in
2**64 / ids**2) is therefore detected, and from then on the coder codes strings directly
(slower, same codes). Ids longer than `_MAX_WORDS` words are coded as strings too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

__all__ = ["HashIndex", "Keys", "RunCoder", "concat_keys", "fingerprint", "split_words"]

#: Ids up to 8 * this many bytes are fingerprinted (UUIDs and the like are 36 bytes).
_MAX_WORDS: Final = 16

_MIX_A: Final = np.uint64(0x9E3779B97F4A7C15)
_MIX_B: Final = np.uint64(0xBF58476D1CE4E5B9)
_ALL: Final = np.uint64(0xFFFFFFFFFFFFFFFF)

Words = tuple[np.ndarray, list[np.ndarray]]


def split_words(ids: Any) -> Words | None:
    """(byte length, [word 0, word 1, ...]) per id of an Arrow string array, words zero
    past the end of each id; None when an id is longer than `_MAX_WORDS` words."""
    n = len(ids)
    buffers = ids.buffers()
    kind = np.dtype(np.int64 if str(ids.type) == "large_string" else np.int32)
    offsets: np.ndarray = np.frombuffer(
        buffers[1], dtype=kind, count=n + 1, offset=ids.offset * kind.itemsize
    ).astype(np.int64)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if n else 0
    if longest > 8 * _MAX_WORDS:
        return None
    low, high = int(offsets[0]), int(offsets[-1])
    # A private copy, 8-byte aligned and padded: an id's word is assembled from the two
    # aligned words it straddles (unaligned gathers are several times slower in numpy).
    size = -(-(high - low) // 8) + 2
    aligned = np.zeros(size, dtype=np.uint64)
    if high > low:
        aligned.view(np.uint8)[: high - low] = np.frombuffer(buffers[2], dtype=np.uint8)[low:high]
    starts = offsets[:-1] - low
    slot = starts >> 3
    right = ((starts & 7) * 8).astype(np.uint64)
    # Shifting a uint64 by 64 is undefined, so the high part is shifted in two steps.
    left = np.uint64(63) - right
    words = []
    for index in range(-(-longest // 8)):
        remaining = lengths - 8 * index
        # Ids shorter than this word would read past the copy; their word is zeroed below.
        at = np.minimum(slot + index, size - 2)
        word = aligned[at] >> right
        word |= (aligned[at + 1] << np.uint64(1)) << left
        # Keep the id's own bytes: the low 8*remaining bits (little-endian).
        drop = (8 * (8 - np.clip(remaining, 1, 8))).astype(np.uint64)
        word = (word << drop) >> drop
        word[remaining <= 0] = 0
        words.append(word)
    return lengths, words


def fingerprint(lengths: np.ndarray, words: list[np.ndarray]) -> np.ndarray:
    """A 64-bit mix of an id's length and words (splitmix-style multiply and shift); a
    function of the id alone."""
    value = lengths.astype(np.uint64) * _MIX_A
    for index, word in enumerate(words):
        mixed = (value ^ word) * _MIX_B
        mixed ^= mixed >> np.uint64(31)
        # Only words inside the id: the same id gets the same fingerprint whatever the
        # longest id of its batch (which decides how many words there are).
        value = np.where(lengths > 8 * index, mixed, value)
    return value


class HashIndex:
    """uint64 keys to int64 values: open addressing with linear probing, in numpy.

    Why not Arrow's hash table: its `index_in` rebuilds the table of known keys on every
    call and hashes each key again; these keys are fingerprints, uniform already, so their
    top bits are the slot. Every operation is a few whole-array passes: a lookup gathers the
    keys at the queries' slots and moves the unresolved ones one slot on, round by round (at
    most half the slots are used, so rounds are few). Slots are never emptied, so a key is
    always found before the first empty slot after its home.
    """

    __slots__ = ("_bits", "_keys", "_size", "_values")

    def __init__(self, bits: int = 10) -> None:
        self._bits = bits
        self._keys = np.zeros(1 << bits, dtype=np.uint64)
        self._values = np.full(1 << bits, -1, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return (keys >> np.uint64(64 - self._bits)).astype(np.int64)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The value of each key, -1 for keys not in the index."""
        out = np.full(len(keys), -1, dtype=np.int64)
        mask = (1 << self._bits) - 1
        pending = np.arange(len(keys))
        slot = self._home(keys)
        wanted = keys
        while pending.size:
            values = self._values[slot]
            hit = (values >= 0) & (self._keys[slot] == wanted)
            out[pending[hit]] = values[hit]
            onward = (values >= 0) & ~hit  # an other key sits here: probe the next slot
            pending, slot, wanted = pending[onward], (slot[onward] + 1) & mask, wanted[onward]
        return out

    def insert(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add distinct keys that are not in the index yet."""
        if 2 * (self._size + len(keys)) > len(self._keys):
            bits = self._bits
            while 2 * (self._size + len(keys)) > 1 << bits:
                bits += 1
            held = self._values >= 0
            old_keys, old_values = self._keys[held], self._values[held]
            self.__init__(bits)  # type: ignore[misc]
            self._place(old_keys, old_values)
        self._place(keys, values)

    def _place(self, keys: np.ndarray, values: np.ndarray) -> None:
        mask = (1 << self._bits) - 1
        slot = self._home(keys)
        while keys.size:
            free = self._values[slot] < 0
            # Of the keys aiming at one free slot the first takes it; the rest move on.
            taken, first = np.unique(slot[free], return_index=True)
            winners = np.flatnonzero(free)[first]
            self._keys[taken] = keys[winners]
            self._values[taken] = values[winners]
            self._size += winners.size
            rest = np.ones(keys.size, dtype=bool)
            rest[winners] = False
            keys, values, slot = keys[rest], values[rest], (slot[rest] + 1) & mask


@dataclass(frozen=True, slots=True)
class Keys:
    """What an id is coded by: its byte length, words and fingerprint (see `split_words`)."""

    lengths: np.ndarray
    words: list[np.ndarray]
    hashes: np.ndarray


def concat_keys(parts: Sequence[Keys]) -> Keys:
    """The keys of several id arrays, in order (shorter word lists padded with zeros)."""
    depth = max(len(part.words) for part in parts)
    return Keys(
        lengths=np.concatenate([part.lengths for part in parts]),
        words=[
            np.concatenate(
                [
                    part.words[index]
                    if index < len(part.words)
                    else np.zeros(len(part.lengths), np.uint64)
                    for part in parts
                ]
            )
            for index in range(depth)
        ],
        hashes=np.concatenate([part.hashes for part in parts]),
    )


class RunCoder:
    """Codes run ids batch after batch, each id keeping the code it first got.

    `fingerprint_fn` exists for tests, which force collisions to check the fallback."""

    __slots__ = (
        "_fingerprint",
        "_hashes",
        "_lengths",
        "_pa",
        "_pc",
        "_strings",
        "_table",
        "_words",
        "by_strings",
    )

    def __init__(
        self,
        pa: Any,
        pc: Any,
        *,
        fingerprint_fn: Callable[[np.ndarray, list[np.ndarray]], np.ndarray] = fingerprint,
    ) -> None:
        self._pa, self._pc = pa, pc
        self._fingerprint = fingerprint_fn
        self._strings = pa.array([], type=pa.string())
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._words: list[np.ndarray] = []
        self._table = HashIndex()
        #: Set once ids are coded as strings (a collision, or an id too long to split).
        self.by_strings = False

    def __len__(self) -> int:
        return len(self._strings)

    @property
    def strings(self) -> Any:
        """The ids in code order (an Arrow string array)."""
        return self._strings

    def keys(self, ids: Any) -> Keys | None:
        """The keys of an Arrow string array, or None once ids are coded as strings (an id
        too long to split switches the coder to strings for good)."""
        if self.by_strings:
            return None
        split = split_words(_plain(self._pa, ids))
        if split is None:
            self.by_strings = True
            return None
        lengths, words = split
        return Keys(lengths, words, self._fingerprint(lengths, words))

    def code(self, ids: Any, keys: Keys | None = None) -> np.ndarray:
        """int64 code per id of a non-null Arrow string array; `keys`, when given, are
        `self.keys(ids)` computed earlier (batch by batch, while the data is in cache)."""
        ids = _plain(self._pa, ids)
        if not self.by_strings:
            keys = keys or self.keys(ids)
            if keys is not None:
                codes = self._code_words(ids, keys.lengths, keys.words, keys.hashes)
                if codes is not None:
                    return codes
            self.by_strings = True
        return self._code_strings(ids)

    def _code_words(
        self, ids: Any, lengths: np.ndarray, words: list[np.ndarray], hashes: np.ndarray
    ) -> np.ndarray | None:
        pa, pc = self._pa, self._pc
        known = len(self._hashes)
        if known:
            codes = self._table.lookup(hashes)
            fresh = np.flatnonzero(codes < 0)
        else:
            codes = np.full(len(hashes), -1, dtype=np.int64)
            fresh = np.arange(len(hashes))
        new_hashes = self._hashes
        new_lengths = self._lengths
        stored = self._words + [np.zeros(known, np.uint64)] * (len(words) - len(self._words))
        first = fresh[:0]
        if fresh.size:
            encoded = pc.dictionary_encode(pa.array(hashes[fresh]))
            local = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            codes[fresh] = local + known
            # New codes are numbered in first-seen order: a code's first row is where the
            # running maximum steps up.
            peak = np.maximum.accumulate(local)
            first = fresh[np.flatnonzero(np.diff(peak, prepend=-1) > 0)]
            new_hashes = np.concatenate([self._hashes, hashes[first]])
            new_lengths = np.concatenate([self._lengths, lengths[first]])
            zeros = np.zeros(first.size, np.uint64)
            stored = [
                np.concatenate([column, words[i][first] if i < len(words) else zeros])
                for i, column in enumerate(stored)
            ]
        # Equal length and equal words is equal strings: a collision cannot slip through.
        if not np.array_equal(new_lengths[codes], lengths):
            return None
        for index, word in enumerate(words):
            if not np.array_equal(stored[index][codes], word):
                return None
        self._hashes, self._lengths, self._words = new_hashes, new_lengths, stored
        if first.size:
            self._table.insert(hashes[first], np.arange(known, known + first.size))
            taken = ids.take(pa.array(first, type=pa.int64()))
            self._strings = pa.concat_arrays([self._strings, _plain(pa, taken)])
        return codes

    def _code_strings(self, ids: Any) -> np.ndarray:
        pa, pc = self._pa, self._pc
        ids = _plain(pa, ids)
        if len(self._strings):
            found = pc.index_in(ids, value_set=self._strings)
            codes = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
            unseen = codes < 0
            fresh = ids.filter(pa.array(unseen))
        else:
            codes = np.full(len(ids), -1, dtype=np.int64)
            unseen = np.ones(len(ids), dtype=bool)
            fresh = ids
        if len(fresh):
            encoded = pc.dictionary_encode(fresh)
            codes[unseen] = encoded.indices.to_numpy(zero_copy_only=False) + len(self._strings)
            self._strings = pa.concat_arrays([self._strings, encoded.dictionary])
        return codes


def _plain(pa: Any, ids: Any) -> Any:
    return ids if pa.types.is_string(ids.type) else ids.cast(pa.string())
