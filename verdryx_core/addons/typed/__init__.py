"""The `typed` grader: a typed verdict from the typryx service (docs/typed-grader.md).

It plugs in by entry point (`grader.TypedGrader`); a face passes its flags on as
`typed_options`, light enough to import on every run.
"""

from __future__ import annotations

from typing import Any, Final

from verdryx_core.errors import declare_addon_words

__all__ = ["typed_options"]

#: The add-on's options (its hooks, verdryx_core.addons.typed_plugin), each with the entry of
#: `EvalSettings.grader_options['typed']` it fills: how a hint names it to a Python caller.
_ENTRIES: Final = {"typed_url": "url", "typed_key_file": "key_file", "typed_template": "template"}
for _option, _entry in _ENTRIES.items():
    declare_addon_words(_option, python=f"EvalSettings.grader_options['typed'][{_entry!r}]")


def typed_options(
    url: str | None, key_file: str | None, template: str | None
) -> dict[str, dict[str, Any]]:
    """`EvalSettings.grader_options` for the typed grader, from a face's flags: none without
    a URL (typed cases are then unmeasured, with the reason)."""
    if not url:
        return {}
    return {"typed": {"url": url, "key_file": key_file, "template": template}}
