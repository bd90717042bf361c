"""Finding and saving baselines: in the store, and as committed files under the rootdir.

A committed `.verdryx/baselines/LABEL.json` lets a fresh CI runner with an empty store gate:
lookup is the store first, then that folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

from verdryx_core.atomic import write_text_atomic
from verdryx_core.errors import UsageError
from verdryx_core.model import Baseline
from verdryx_core.store import Store

__all__ = [
    "BASELINE_DIR",
    "baseline_file",
    "check_label",
    "find_baseline",
    "known_labels",
    "read_baseline_file",
    "write_baseline_file",
]

BASELINE_DIR: Final = Path(".verdryx") / "baselines"
_LABEL: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_label(label: str) -> str:
    if not _LABEL.match(label):
        raise UsageError(
            f"baseline label {label!r} is not usable: use letters, digits, '.', '_' or '-' "
            "(it names a file), starting with a letter or digit"
        )
    return label


def baseline_file(root: Path, label: str) -> Path:
    return root / BASELINE_DIR / f"{check_label(label)}.json"


def write_baseline_file(root: Path, baseline: Baseline) -> Path:
    """Write the reviewable baseline file atomically (never a half-written file in the repo)."""
    path = baseline_file(root, baseline.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(baseline.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text_atomic(path, text)
    return path


def read_baseline_file(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Baseline.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path}: not a readable verdryx baseline file ({exc})",
            hint="re-create it with {save_baseline}",
        ) from None


def known_labels(store: Store | None, root: Path | None) -> list[str]:
    labels: set[str] = set()
    if store is not None:
        labels.update(label or id_ for id_, label, _, _ in store.list_baselines())
    if root is not None and (root / BASELINE_DIR).is_dir():
        labels.update(path.stem for path in (root / BASELINE_DIR).glob("*.json"))
    return sorted(labels)


def find_baseline(id_or_label: str, *, store: Store | None, root: Path | None) -> Baseline:
    """The store first, then the committed file; an unknown name lists the known ones."""
    if store is not None:
        found = store.get_baseline(id_or_label)
        if found is not None:
            return found
    if root is not None and _LABEL.match(id_or_label):
        path = baseline_file(root, id_or_label)
        if path.is_file():
            return read_baseline_file(path)
    labels = known_labels(store, root)
    if labels:
        raise UsageError(f"unknown baseline {id_or_label!r}; known baselines: {', '.join(labels)}")
    raise UsageError(
        f"unknown baseline {id_or_label!r}; known baselines: none yet",
        hint="save one with {save_baseline}",
    )
