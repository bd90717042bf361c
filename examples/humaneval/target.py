"""A HumanEval "agent": it answers each problem with the canonical solution, or, for some
problems and samples, a realistic mutation of it (docs/workspaces-and-execution.md,
"HumanEval").

Which samples are mutated, and how, is decided by a seed and the case id and repeat alone,
so a run is reproducible: `HUMANEVAL_SEED` (default 0) and `HUMANEVAL_MUTATION_RATE`
(default 0.3; 0 answers every problem correctly).

    pytest examples/humaneval --verdryx-target target:solve --verdryx-repeat 5
"""

from __future__ import annotations

import ast
import os
import random
from collections.abc import Callable
from typing import Any

from verdryx_core.targets import TargetCase

#: Each mutation a careless programmer makes, by name: off-by-one, wrong operator,
#: returning early.
_SWAPS: dict[type[ast.AST], type[ast.AST]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


def canonical(case: TargetCase) -> str:
    """The prompt with its canonical solution: a whole module defining the entry point."""
    metadata = case.metadata or {}
    return case.prompt + str(metadata["canonical_solution"])


def _sites(tree: ast.Module, entry: str) -> list[tuple[str, Callable[[], None]]]:
    """Every place in the entry point's function where a mutation can be planted, each
    with the edit that plants it."""
    function = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry), None
    )
    if function is None:
        return []
    sites: list[tuple[str, Callable[[], None]]] = []

    def swap(holder: Any, index: int | None, op: ast.AST) -> Callable[[], None]:
        def apply() -> None:
            new = _SWAPS[type(op)]()
            if index is None:
                holder.op = new
            else:
                holder.ops[index] = new

        return apply

    for node in ast.walk(function):
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _SWAPS:
                    sites.append(("wrong comparison", swap(node, index, op)))
        elif isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in _SWAPS:
            sites.append(("wrong operator", swap(node, None, node.op)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):

            def bump(constant: ast.Constant = node) -> None:
                constant.value = constant.value + 1

            sites.append(("off by one", bump))
    body = function.body
    start = (
        1
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else 0
    )
    if len(body) > start + 1:

        def early() -> None:
            body.insert(start + 1, ast.Return(value=ast.Constant(value=None)))

        sites.append(("returns early", early))
    return sites


def mutate(source: str, entry: str, rng: random.Random) -> tuple[str, str] | None:
    """`source` with one mutation planted in `entry`, and its name; None when there is no
    place for one."""
    tree = ast.parse(source)
    sites = _sites(tree, entry)
    if not sites:
        return None
    name, plant = rng.choice(sites)
    plant()
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", name


def answer(case: TargetCase, *, seed: int, rate: float) -> tuple[str, str | None]:
    """The answer to `case` and the mutation planted in it (None: the canonical one)."""
    rng = random.Random(f"{seed}:{case.id}:{case.repeat}")
    source = canonical(case)
    if rng.random() >= rate:
        return source, None
    entry = str((case.metadata or {})["entry_point"])
    mutated = mutate(source, entry, rng)
    return (source, None) if mutated is None else mutated


def solve(case: TargetCase) -> str:
    seed = int(os.environ.get("HUMANEVAL_SEED", "0"))
    rate = float(os.environ.get("HUMANEVAL_MUTATION_RATE", "0.3"))
    return answer(case, seed=seed, rate=rate)[0]
