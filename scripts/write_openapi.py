"""Write the verification service's OpenAPI document to docs/ (a test keeps the two equal)."""

from __future__ import annotations

import json
from pathlib import Path

from verdryx_core.addons.service.openapi import openapi_document

TARGET = Path(__file__).resolve().parent.parent / "docs" / "verification-service.openapi.json"

if __name__ == "__main__":
    text = json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
