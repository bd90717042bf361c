"""What `verdryx drift` pays beside the statistics: a score row that reads is accepted by
plain type tests (every row they accept, the column-by-column checks accept too), and a
command imports only its own module (docs/statistics.md, "Reproducibility and speed")."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.store import rows

ROOT = Path(__file__).resolve().parent.parent

#: Column values a store can hand back: the right type, the wrong one, out of range.
_any = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), 9 * 10**12, 9 * 10**12 + 1]),
    st.floats(),  # NaN and infinities included
    st.sampled_from([0.0, 1.0, 0.5, -0.0, 1.0000001, math.nextafter(0.0, -1.0)]),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.sampled_from(["[0.5, 1.0]", "[2]", "not json"]),
)


@settings(max_examples=400, deadline=None)
@given(values=st.lists(_any, min_size=len(rows.SCORE_FIELDS), max_size=len(rows.SCORE_FIELDS)))
def test_a_row_the_fast_check_accepts_reads_column_by_column_too(values: list[Any]) -> None:
    row = ["run-1", 0, *values[2:]]
    if rows._plain_score_row(row):
        assert rows._score_columns_problem(row) is None, row
    assert (rows.score_problem(row) is None) == (rows._score_columns_problem(row) is None)


def test_a_plain_measured_and_a_plain_unmeasured_row_take_the_fast_check() -> None:
    measured = ["r", 0, "s", "c1", 0.75, None, "exact", 12, 0.01, 0, "f", 1, None, "out"]
    unmeasured = ["r", 1, "s", "c2", None, "timeout", "exact", 0, 0, 0.0, "", None, None]
    # The columns after these (expected, reason, per-check results, cluster) are NULL.
    measured += [None] * (len(rows.SCORE_FIELDS) - len(measured))
    unmeasured += [None] * (len(rows.SCORE_FIELDS) - len(unmeasured))
    assert rows._plain_score_row(measured) and rows._plain_score_row(unmeasured)
    # A NaN kept as NULL beside no reason is no plain row: the checks name the column.
    broken = [*measured[:4], None, None, *measured[6:]]
    assert not rows._plain_score_row(broken)
    assert rows.score_problem(broken) == (
        "scores.value",
        "is NULL but the case has no unmeasured reason (a NaN stored?)",
    )


def _imported_after(*argv: str) -> set[str]:
    code = (
        "import sys\n"
        "from verdryx_core.cli.main import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"  # --version and a usage error exit from argparse
        "    pass\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return set(result.stdout.split())


def test_a_command_imports_its_own_module_not_every_command() -> None:
    commands = "verdryx_core.cli.commands."
    # `verdryx serve` is the verification service add-on's command (verdryx_core/hooks.py).
    serve = "verdryx_core.addons.service.serve_command"
    wanted = (commands, serve)
    alone = {name for name in _imported_after("version") if name.startswith(wanted)}
    assert f"{commands}version" in alone and serve not in alone, alone
    # `verdryx --version` (and --help, an unknown command) still builds every command.
    everything = {name for name in _imported_after("--version") if name.startswith(wanted)}
    assert {serve, f"{commands}drift", f"{commands}version"} <= everything


def test_an_unknown_command_still_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "verdryx_core.cli", "drfit"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "invalid choice: 'drfit'" in result.stderr and "drift" in result.stderr
