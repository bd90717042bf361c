"""verdryx's tool_trace grader against BFCL's own AST checker, on every ground-truth answer of
BFCL's simple, multiple, parallel and parallel_multiple categories, live ones too
(docs/graders.md, "BFCL differences").

    pip download --no-deps bfcl-eval -d /tmp/bfcl && python scripts/bfcl_parity.py \\
        /tmp/bfcl/bfcl_eval-*.whl

Each question is converted by scripts/convert_bfcl.py (`case_of`, as `--all` writes it) and
graded on each answer its possible answers list (`ground_truth_outputs`: the first, and one
per other possible value of each parameter). The same answer goes to BFCL's checker,
imported from the wheel as it ships (never copied here); its package's model registry, which
imports every provider's SDK and which the checker reads only to rename dotted function names
for some providers, is stood in for by one that renames nothing, as verdryx never does. Prints
the agreement per category and every disagreement, with BFCL's own error for it.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import types
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from convert_bfcl import ALL_CATEGORIES, DEFAULTS, case_of, ground_truth_outputs, load_category

from verdryx_core.evalsets.load import load_evalset
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.tool_trace import ToolTraceGrader


class _NoRenaming:
    underscore_to_dot = False


def bfcl_checker(wheel: Path, into: Path) -> Any:
    """BFCL's `ast_checker`, imported from the wheel unpacked into `into`."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(into)
    sys.path.insert(0, str(into))
    registry = types.ModuleType("bfcl_eval.constants.model_config")
    registry.MODEL_CONFIG_MAPPING = collections.defaultdict(_NoRenaming)  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = registry
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    def check(question: Any, output: Any, answer: Any, category: str) -> dict[str, Any]:
        result: dict[str, Any] = ast_checker(
            question["function"], output, answer["ground_truth"], Language.PYTHON, category, "x"
        )
        return result

    return check


def compare(wheel: Path, work: Path, *, shown: int) -> int:
    check = bfcl_checker(wheel, work / "wheel")
    grader = ToolTraceGrader()
    disagreements: list[dict[str, Any]] = []
    table = []
    with zipfile.ZipFile(wheel) as archive:
        for category in ALL_CATEGORIES:
            pairs = load_category(archive, category)
            document = {
                "id": f"bfcl-{category}",
                "defaults": DEFAULTS,
                "cases": [case_of(q, a, category) for q, a in pairs],
            }
            path = work / f"{category}.evalset.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            cases = {case.id: case for case in load_evalset(path).cases}
            context = GradeContext(eval_set_id=document["id"])
            counts = collections.Counter[str]()
            for question, answer in pairs:
                case = cases[question["id"]]
                for index, output in enumerate(ground_truth_outputs(answer)):
                    made = [
                        {"name": name, "arguments": arguments}
                        for call in output
                        for name, arguments in call.items()
                    ]
                    ours = grader.grade(case, made, context)
                    theirs = check(question, output, answer, category)
                    counts["answers"] += 1
                    counts["first"] += index == 0
                    same = (ours.value == 1.0) == bool(theirs["valid"])
                    counts["agree"] += same
                    if not same:
                        counts["first disagree"] += index == 0
                        disagreements.append(
                            {
                                "id": question["id"],
                                "answer": index,
                                "verdryx": ours.value == 1.0,
                                "bfcl": bool(theirs["valid"]),
                                "bfcl_error": theirs.get("error_type"),
                                "why": ours.reason or json.dumps(theirs.get("error"))[:300],
                                "output": output,
                            }
                        )
            table.append((category, len(pairs), counts))
    print(f"{'category':24} {'questions':>9} {'answers':>8} {'agree':>8} {'disagree':>8}")
    for category, questions, counts in table:
        print(
            f"{category:24} {questions:9} {counts['answers']:8} {counts['agree']:8} "
            f"{counts['answers'] - counts['agree']:8}  (first answers: "
            f"{counts['first disagree']} of {counts['first']})"
        )
    kinds = collections.Counter((d["verdryx"], d["bfcl"], d["bfcl_error"]) for d in disagreements)
    print(f"\n{len(disagreements)} disagreements:", dict(kinds))
    for item in disagreements[:shown]:
        print(json.dumps(item, ensure_ascii=False)[:600])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="the bfcl-eval wheel (pip download --no-deps)")
    parser.add_argument("--show", type=int, default=50, help="disagreements printed in full")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        return compare(args.wheel, Path(work), shown=args.show)


if __name__ == "__main__":
    sys.exit(main())
