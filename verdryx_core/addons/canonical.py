"""RFC 8785 canonical JSON, for the add-ons that hash what they keep: the contracts' evidence
bundles and the event log's hash chain. The `rfc8785` package, never hand-rolled, is a base
dependency (a workspace case's contract seals a bundle, and the examples have one), imported
on first use so a session that hashes nothing does not load it."""

from __future__ import annotations

from typing import Any

__all__ = ["CanonicalizationError", "canonical_json"]


class CanonicalizationError(ValueError):
    """A value RFC 8785 has no canonical form for (a float out of range, a non-string key)."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 bytes of `value`. Raises CanonicalizationError for a value with no
    canonical form."""
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise CanonicalizationError(str(exc)) from exc
