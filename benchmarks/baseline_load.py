"""Loading a committed baseline file of 20,000 cases, against fastjsonschema on the same file.

    .venv/bin/python benchmarks/baseline_load.py            # 20,000 cases, 7 rounds
    .venv/bin/python benchmarks/baseline_load.py --quick    # 2,000 cases, 3 rounds

A gated CI run reads `.verdryx/baselines/LABEL.json` on every run. verdryx's load
(`read_baseline_file`) reads the file, parses it (depth-checked), applies the text rule
(no lone surrogate), validates it against the published schema, refuses a case listed twice
or an id holding a control character, and builds the `Baseline`. The anchor is the least
any loader that validates can do: `json.loads` of the same file and fastjsonschema's
compiled validator of the same schema. Both are compiled before timing (each process pays
that once; its cost is printed on its own line), and the two sides alternate, round by
round, so a machine getting busier or quieter shifts both alike. The figure is CPU time
(`time.process_time`), the median of the rounds; the machine's load average is printed
beside it. For the record the script also times what the load cost before the fast path:
jsonschema's validator on the same parsed file (docs/evalset-reference.md, "Text, nesting
and baseline files").

Target: the whole load at most 2.0x the anchor's CPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import fastjsonschema
import jsonschema

from verdryx_core.gating.baselines import baseline_schema, read_baseline_file, write_baseline_file
from verdryx_core.runs import Baseline, BaselineCase

TARGET_RATIO = 2.0


def write_file(root: Path, cases: int) -> Path:
    """A baseline as `--verdryx-save-baseline` writes it: 20,000 cases over 8 eval sets,
    distinct float scores, a fingerprint and a pass result each."""
    rng = random.Random(2026)
    baseline = Baseline(
        id="4f1c" * 8,
        label="v1",
        run_id="9d7c" * 8,
        mean=0.71,
        created_at=datetime(2026, 7, 12, 12, 0, tzinfo=UTC),
        model="claude-sonnet-4-5",
        plugin_version="0.1.0",
        cases=tuple(
            BaselineCase(
                eval_set_id=f"support-{index % 8}",
                case_id=f"refund-{index:06d}",
                value=rng.random(),
                fingerprint=f"{rng.getrandbits(256):064x}",
                passed=rng.random() < 0.7,
            )
            for index in range(cases)
        ),
    )
    return write_baseline_file(root, baseline)


def cpu(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 cases, 3 rounds")
    parser.add_argument("--cases", type=int, default=None, help="cases in the file (20,000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per side (7)")
    args = parser.parse_args()
    cases = args.cases or (2_000 if args.quick else 20_000)
    rounds = args.rounds or (3 if args.quick else 7)

    with tempfile.TemporaryDirectory() as folder:
        path = write_file(Path(folder), cases)
        size_mb = path.stat().st_size / 2**20

        start = time.process_time()
        fast = fastjsonschema.compile(copy.deepcopy(baseline_schema()))
        compile_s = time.process_time() - start
        slow = jsonschema.Draft202012Validator(baseline_schema())

        def anchor() -> object:
            return fast(json.loads(path.read_text(encoding="utf-8")))

        def verdryx() -> object:
            return read_baseline_file(path)

        def before() -> object:
            data = json.loads(path.read_text(encoding="utf-8"))
            return list(slow.iter_errors(data))

        loaded = verdryx()  # compiles verdryx's own validator, as the first load in a run does
        assert isinstance(loaded, Baseline) and len(loaded.cases) == cases
        anchor()
        times: dict[str, list[float]] = {"anchor": [], "verdryx": [], "before": []}
        for _ in range(rounds):
            times["anchor"].append(cpu(anchor))
            times["verdryx"].append(cpu(verdryx))
            times["before"].append(cpu(before))
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())

    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["verdryx"] / median["anchor"]
    print(
        f"baseline file of {cases:,} cases ({size_mb:.1f} MiB); CPU time, median of {rounds} "
        f"rounds, interleaved; load average {load} ({os.cpu_count()} cores)"
    )
    print(
        f"  anchor: json.loads + fastjsonschema   {median['anchor']:.3f} s  "
        f"(compiling the schema, once per process: {compile_s * 1000:.0f} ms)"
    )
    print(f"  verdryx read_baseline_file           {median['verdryx']:.3f} s  {ratio:.2f}x")
    print(
        f"  json.loads + jsonschema (the slow validator alone, the load before the fast "
        f"path) {median['before']:.3f} s  {median['before'] / median['anchor']:.1f}x"
    )
    met = ratio <= TARGET_RATIO
    print(
        f"{'PASS' if met else 'MISSED'}: verdryx's load is {ratio:.2f}x the anchor's CPU "
        f"(target <= {TARGET_RATIO:.1f}x; load average {load})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
