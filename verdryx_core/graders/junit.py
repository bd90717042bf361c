"""What a pytest JUnit XML file says: how many tests ran, passed and were skipped, and the
first failure's name and message."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["TestResults", "read_junit"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TestResults:
    __test__ = False  # not a pytest test class, whatever its name

    total: int
    passed: int
    skipped: int
    #: `test_name: message` of the first failing (or erroring) test, if any.
    first_failure: str | None = None

    @property
    def ran(self) -> int:
        return self.total - self.skipped


def read_junit(path: Path) -> TestResults | None:
    """The results in `path`, or None when it is missing or not JUnit XML."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    total = passed = skipped = 0
    first: str | None = None
    for case in root.iter("testcase"):
        total += 1
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            if first is None:
                first = f"{case.get('name', '?')}: {_message(bad)}"
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return TestResults(total=total, passed=passed, skipped=skipped, first_failure=first)


#: What pytest says of an error it gives no message of its own (the test module could not
#: be imported): the error's last `E ` line says why instead.
_GENERIC: Final = frozenset({"", "collection failure"})


def _message(bad: ElementTree.Element) -> str:
    message = (bad.get("message") or "").strip()
    if message.lower() in _GENERIC:
        said = [line[1:].strip() for line in (bad.text or "").splitlines() if line[:2] == "E "]
        if said:
            return f"{message or 'error'}: {said[-1]}"
    lines = (message or bad.text or "").strip().splitlines()
    return lines[0] if lines else "failed"
