"""RFC 8785 canonical JSON, for the add-ons that hash what they keep: the contracts' evidence
bundles and the event log's hash chain. The `rfc8785` package, never hand-rolled, is an
extra of those add-ons (`pip install 'verdryx[contracts]'` or `'verdryx[events]'`), imported
on first use, so grading a `contract` case (which seals no bundle) does not need it."""

from __future__ import annotations

from typing import Any, Final

from verdryx_core.errors import UsageError

__all__ = [
    "INSTALL_HINT",
    "CanonicalizationError",
    "canonical_json",
    "canonical_json_missing",
    "require_canonical_json",
]

INSTALL_HINT: Final = (
    "canonical JSON (evidence bundles, the event log) needs the rfc8785 package: "
    "pip install 'verdryx[contracts]' (or 'verdryx[events]')"
)


class CanonicalizationError(ValueError):
    """A value RFC 8785 has no canonical form for (a float out of range, a non-string key)."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 bytes of `value`. Raises CanonicalizationError for a value with no
    canonical form, UsageError naming the extra when `rfc8785` is not installed."""
    try:
        import rfc8785
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise CanonicalizationError(str(exc)) from exc


def canonical_json_missing() -> bool:
    """Whether the `rfc8785` package cannot be imported (its extra is not installed)."""
    try:
        import rfc8785  # noqa: F401
    except ImportError:
        return True
    return False


def require_canonical_json() -> None:
    """UsageError naming the extra when `rfc8785` is not installed (checked at start, so an
    event log asked for is not silently lost at the end)."""
    if canonical_json_missing():
        raise UsageError(INSTALL_HINT)
