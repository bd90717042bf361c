"""Stable sharding (docs/sharding.md): the K/N parser, and a split that is the same everywhere,
independent of order, and balanced (checked against scipy's chi-square test)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from verdryx_core.errors import UsageError
from verdryx_core.evaluation.sharding import ShardSpec, parse_shard, shard_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1/1", ShardSpec(1, 1)), ("2/3", ShardSpec(2, 3)), (" 3 / 3 ", ShardSpec(3, 3))],
)
def test_parse_accepts_k_of_n(text: str, expected: ShardSpec) -> None:
    assert parse_shard(text) == expected
    assert str(expected) == f"{expected.index}/{expected.total}"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("4/3", "--verdryx-shard 4/3: shard 4 is not in 1..3"),
        ("0/3", "--verdryx-shard 0/3: shard 0 is not in 1..3"),
        ("1/0", "--verdryx-shard 1/0: the shard count 0 is not in 1..1000"),
        ("2", "--verdryx-shard '2': expected K/N"),
        ("a/b", "--verdryx-shard 'a/b': expected K/N"),
        ("-1/3", "--verdryx-shard '-1/3': expected K/N"),
        ("1/3/4", "--verdryx-shard '1/3/4': expected K/N"),
    ],
)
def test_parse_refuses_with_one_line(text: str, words: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_shard(text)
    assert str(info.value).startswith(words)
    assert "\n" not in str(info.value)


def test_the_flag_is_named_as_given() -> None:
    with pytest.raises(UsageError, match=r"^--shards 9/2: shard 9"):
        parse_shard("9/2", flag="--shards")


def _reference(eval_set_id: str, case_id: str, total: int) -> int:
    """The documented rule, written out independently (docs/sharding.md)."""
    digest = hashlib.sha256(eval_set_id.encode() + b"\x00" + case_id.encode()).digest()
    return 1 + int.from_bytes(digest[:8], "big") % total


@given(st.text(min_size=1), st.text(min_size=1), st.integers(min_value=1, max_value=64))
def test_the_split_is_the_documented_rule(set_id: str, case_id: str, total: int) -> None:
    set_id = set_id.encode("utf-8", "replace").decode()
    case_id = case_id.encode("utf-8", "replace").decode()
    shard = shard_of(set_id, case_id, total)
    assert 1 <= shard <= total
    assert shard == _reference(set_id, case_id, total)


@settings(max_examples=50)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=40, unique=True), st.data())
def test_every_case_lands_in_exactly_one_shard_whatever_the_order(
    ids: list[str], data: st.DataObject
) -> None:
    total = data.draw(st.integers(min_value=1, max_value=7))
    shuffled = data.draw(st.permutations(ids))
    split = {case: shard_of("set", case, total) for case in ids}
    assert {case: shard_of("set", case, total) for case in shuffled} == split
    owners = [
        [k for k in range(1, total + 1) if ShardSpec(k, total).holds("set", case)] for case in ids
    ]
    assert all(len(found) == 1 for found in owners)


def test_the_split_does_not_depend_on_the_process() -> None:
    """PYTHONHASHSEED changes Python's own hash; the split must not move with it."""
    code = (
        "from verdryx_core.evaluation.sharding import shard_of;"
        "print([shard_of('set', f'case-{i}', 5) for i in range(50)])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outputs) == 1
    assert outputs.pop().strip() == str([shard_of("set", f"case-{i}", 5) for i in range(50)])


@pytest.mark.parametrize("total", [2, 3, 7, 16])
def test_the_split_is_balanced(total: int) -> None:
    counts = Counter(shard_of("support-v2", f"case-{i:05d}", total) for i in range(20_000))
    observed = [counts[k] for k in range(1, total + 1)]
    assert sum(observed) == 20_000
    # A uniform split passes a chi-square test; a skewed one (e.g. `hash % N` over sequential
    # ids, or an off-by-one leaving a shard empty) fails it by orders of magnitude.
    assert chisquare(observed).pvalue > 0.001
    expected = 20_000 / total
    assert all(abs(count - expected) / expected < 0.05 for count in observed)


def test_the_chi_square_check_can_fail() -> None:
    """The balance check rejects a biased split of the same size."""
    biased = [shard_of("s", f"case-{i}", 3) for i in range(20_000)]
    biased = [1 if i % 10 == 0 else shard for i, shard in enumerate(biased)]
    counts = Counter(biased)
    assert chisquare([counts[k] for k in (1, 2, 3)]).pvalue < 0.001
