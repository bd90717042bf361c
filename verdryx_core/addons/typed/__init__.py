"""The `typed` grader: a typed verdict from the typryx service (docs/typed-grader.md).

It plugs in by entry point (`grader.TypedGrader`); a face passes its flags on as
`typed_options`, light enough to import on every run.
"""

from __future__ import annotations

from typing import Any

__all__ = ["typed_options"]


def typed_options(
    url: str | None, key_file: str | None, template: str | None
) -> dict[str, dict[str, Any]]:
    """`EvalSettings.grader_options` for the typed grader, from a face's flags: none without
    a URL (typed cases are then unmeasured, with the reason)."""
    if not url:
        return {}
    return {"typed": {"url": url, "key_file": key_file, "template": template}}
