"""The report renders in a real browser: headless Chromium screenshots the page and
the chart area is drawn. Skipped where Debian's chromium is not installed."""

from __future__ import annotations

import importlib.util
import struct
import zlib
from pathlib import Path
from types import ModuleType

import pytest

from tests.history_support import history_store
from verdryx_core.reporting.html import write_report
from verdryx_core.store import Store

CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "screenshot_report.py"


def _script() -> ModuleType:
    """The screenshot script itself, so the test drives Chromium exactly as users' runs do."""
    spec = importlib.util.spec_from_file_location("screenshot_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_rows(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered RGB(A) rows of an 8-bit PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                best = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[x] = (line[x] + best) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_headless_chromium_draws_the_chart(tmp_path: Path) -> None:
    db, _, _ = history_store(tmp_path / "verdryx.db")
    with Store.open(db) as store:
        page = write_report(store, tmp_path / "report.html")
    png = tmp_path / "shot.png"
    _script().screenshot(CHROMIUM, page, png, tmp_path / "profile", height=700, width=800)
    assert png.exists(), "chromium wrote no screenshot"
    width, height, rows = png_rows(png.read_bytes())
    assert (width, height) == (800, 700)
    channels = len(rows[0]) // width
    # The series line and the points are the chart blue (#0969da); the red verdict too.
    blue = red = 0
    for row in rows:
        for x in range(0, len(row), channels):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if r < 40 and 80 < g < 130 and b > 190:
                blue += 1
            elif r > 180 and g < 60 and b < 70:
                red += 1
    assert blue > 200, f"only {blue} chart-blue pixels: the chart was not drawn"
    assert red > 200, f"only {red} verdict-red pixels: the title was not drawn"
