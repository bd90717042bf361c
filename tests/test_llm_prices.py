"""The price book: the table and worked numbers of docs/models-and-judges.md ("Prices"), the
fallback that is never silently free, and a price file whose errors name the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verdryx_core.errors import UsageError
from verdryx_core.llm import ModelPrice, PriceBook
from verdryx_core.llm.prices import DEFAULT_PRICES, FALLBACK_PRICE


@pytest.mark.parametrize(
    ("model", "tokens_in", "tokens_out", "dollars"),
    [
        ("claude-haiku-4-5-20251001", 10, 1, 0.000015),
        ("claude-haiku-4-5", 1000, 500, 0.0035),
        ("never-heard-of-it", 1_000_000, 1_000_000, 90.0),
        ("gpt-4o-mini", 2_000_000, 1_000_000, 0.9),
    ],
)
def test_the_documented_worked_numbers(
    model: str, tokens_in: int, tokens_out: int, dollars: float
) -> None:
    assert PriceBook.default().cost(model, tokens_in, tokens_out) == pytest.approx(dollars)


def test_all_four_kinds_of_token() -> None:
    cost = PriceBook.default().cost(
        "claude-sonnet", 10**6, 10**6, cache_read_tokens=10**6, cache_write_tokens=10**6
    )
    assert cost == pytest.approx(22.05)


def test_the_default_table_is_the_documented_table() -> None:
    assert len(DEFAULT_PRICES) == 12
    assert DEFAULT_PRICES["claude-opus-4-5"] == ModelPrice(
        input=5.0, output=25.0, cache_read=0.5, cache_write=6.25
    )
    assert ModelPrice(input=15.0, output=75.0, cache_read=1.5, cache_write=18.75) == FALLBACK_PRICE


def test_an_unknown_model_is_priced_at_the_fallback_and_noted() -> None:
    book = PriceBook.default()
    assert book.note() is None
    assert book.cost("claude-sonnet-4-5", 100, 100) > 0
    assert book.unpriced == set()
    assert book.cost("mystery-model", 100, 0) == pytest.approx(100 * 15.0 / 1e6)
    assert book.unpriced == {"mystery-model"}
    note = book.note()
    assert note is not None
    assert "mystery-model" in note and "verdryx_prices" in note and "$15" in note


def test_a_dated_snapshot_costs_what_its_alias_costs() -> None:
    book = PriceBook.default()
    assert book.cost("claude-opus-4-5-20991231", 10**6, 0) == pytest.approx(5.0)
    assert book.is_known("claude-opus-4-5-20991231")
    assert not book.is_known("claude-opus-4-5-preview")
    assert book.unpriced == set()


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_price_file_adds_and_overrides_models_and_the_fallback(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "models": {
                "claude-haiku-4-5": {"input": 2, "output": 10},
                "my-model": {"input": 1, "output": 2, "cache_read": 0.1, "cache_write": 1.25},
            },
            "fallback": {"input": 100, "output": 100},
        },
    )
    book = PriceBook.from_file(path)
    assert book.cost("claude-haiku-4-5", 10**6, 10**6) == pytest.approx(12.0)
    assert book.cost("my-model", 10**6, 0, cache_write_tokens=10**6) == pytest.approx(2.25)
    assert book.cost("claude-sonnet-4-5", 10**6, 0) == pytest.approx(3.0)  # default kept
    assert book.cost("other", 10**6, 0) == pytest.approx(100.0)
    assert book.source == str(path)


def test_replace_defaults_starts_from_an_empty_table(tmp_path: Path) -> None:
    book = PriceBook.from_file(
        write(tmp_path, {"models": {"m": {"input": 1, "output": 1}}, "replace_defaults": True})
    )
    assert book.is_known("m") and not book.is_known("claude-sonnet-4-5")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([], "holds list, expected a JSON object"),
        ({"modles": {}}, "unknown key 'modles'"),
        ({"models": []}, "models is list"),
        ({"models": {"m": 3}}, "models.m is 3"),
        ({"models": {"m": {"input": 1}}}, "models.m.output is missing"),
        ({"models": {"m": {"input": -1, "output": 1}}}, "models.m.input is -1"),
        ({"models": {"m": {"input": "1", "output": 1}}}, "models.m.input is '1'"),
        ({"models": {"m": {"input": True, "output": 1}}}, "models.m.input is True"),
        ({"models": {"m": {"input": 1, "output": 1, "inptu": 2}}}, "models.m.inptu is not a price"),
        ({"fallback": {"input": 1}}, "fallback.output is missing"),
        ({"replace_defaults": "yes"}, "replace_defaults is 'yes'"),
    ],
)
def test_price_file_errors_name_the_file_and_the_key(
    tmp_path: Path, data: object, fragment: str
) -> None:
    path = write(tmp_path, data)
    with pytest.raises(UsageError) as caught:
        PriceBook.from_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert fragment in message


def test_a_price_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"models": {\n  "m": }', encoding="utf-8")
    with pytest.raises(UsageError, match=r"prices.json: the price file is not JSON \(line 2"):
        PriceBook.from_file(path)


def test_a_missing_price_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"nope\.json: cannot read the price file"):
        PriceBook.from_file(tmp_path / "nope.json")
