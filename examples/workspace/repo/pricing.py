"""Prices for the shop's checkout."""


def total_with_tax(amount: float, rate: float) -> float:
    """The amount plus tax at `rate` (0.2 is 20%), rounded to cents."""
    return round(amount + rate, 2)


def discounted(amount: float, percent: float) -> float:
    """The amount less `percent` percent, rounded to cents."""
    return round(amount * (1 - percent / 100), 2)
