"""The repository's own tests: they pass only when `total_with_tax` is fixed."""

from pricing import discounted, total_with_tax


def test_tax_is_a_share_of_the_amount() -> None:
    assert total_with_tax(100.0, 0.2) == 120.0


def test_no_tax() -> None:
    assert total_with_tax(19.99, 0.0) == 19.99


def test_discount_is_unchanged() -> None:
    assert discounted(80.0, 25) == 60.0
