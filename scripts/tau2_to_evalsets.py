"""Convert tau2-bench tasks, as the `inspect-evals` wheel ships them, into verdryx eval sets
with simulated users (docs/scenarios.md, "The tau2 sample").

    pip download inspect-evals --no-deps -d /tmp/wheels
    python scripts/tau2_to_evalsets.py /tmp/wheels/inspect_evals-*.whl tests/fixtures/tau2

For each domain (airline, retail) the first N tasks that expect at least one action become
one eval set `tau2-DOMAIN.json`. A task becomes a dialogue case:

- the customer's reason for calling opens it (`prompt`);
- what the customer knows, then the task's instructions, are the scripted user's turns;
- the expected actions, in order, are a `tool_trace` check (names and arguments);
- the effect of the expected write actions (every action that is not a lookup) is a
  `final_state` check: the ledger `{tool: [arguments, ...]}` the environment holds after
  them, which the simulated agent reports as its `state`;
- the first piece of information the agent must communicate, when the task has one, is an
  `icontains` check of the final reply;
- `min_score` 1.0: a task passes only when every check does, as tau2 counts a task.

`agent_script.json` beside them holds, per case, what a correct agent does (its actions, and
what it must say): the
offline simulated agent of the tests reads it. The wheel is read in place (a zip file); only
the tasks are used (not the databases or policies). tau2-bench and inspect-evals are MIT
licensed.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

_TASKS: Final = "inspect_evals/tau2/data/domains/{domain}/tasks.json"
DOMAINS: Final = ("airline", "retail")
#: Tools that only read the environment; every other action changes it.
_READS: Final = ("get_", "find_", "search_", "list_", "calculate")
_MAX_TURNS: Final = 4


def is_write(name: str) -> bool:
    return not name.startswith(_READS)


def ledger(actions: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The environment's state after `actions`: each write tool's arguments, in order."""
    state: dict[str, list[Any]] = {}
    for action in actions:
        if is_write(action["name"]):
            state.setdefault(action["name"], []).append(dict(action.get("arguments") or {}))
    return state


def _text(value: Any) -> str:
    return " ".join(str(value or "").split())


def convert_task(domain: str, task: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One task as a case, and what a correct agent does (its actions, what it says)."""
    instructions = task["user_scenario"]["instructions"]
    actions = [
        {"name": a["name"], "arguments": dict(a.get("arguments") or {})}
        for a in task["evaluation_criteria"]["actions"] or ()
    ]
    turns = [
        text
        for text in (
            _text(instructions.get("known_info")),
            _text(instructions.get("task_instructions")),
        )
        if len(text) > 1  # some tasks' instructions are a lone "."
    ]
    case: dict[str, Any] = {
        "id": f"{domain}-{task['id']}",
        "prompt": _text(instructions["reason_for_call"]),
        "user": {"turns": turns or ["Thank you."], "max_turns": _MAX_TURNS},
        "metadata": {"domain": domain, "tau2_task": str(task["id"])},
        "min_score": 1.0,
        "checks": [
            {"grader": "tool_trace", "expected_tool_calls": actions},
            {"grader": "final_state", "expected": ledger(actions)},
        ],
    }
    info = [str(i) for i in task["evaluation_criteria"].get("communicate_info") or () if str(i)]
    if info:
        case["checks"].append({"grader": "icontains", "expected": info[0]})
    return case, {"actions": actions, "say": info[0] if info else None}


def read_tasks(wheel: Path, domain: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(wheel) as archive:
        data: list[dict[str, Any]] = json.loads(archive.read(_TASKS.format(domain=domain)))
    return data


def convert(wheel: Path, out: Path, per_domain: int) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    script: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for domain in DOMAINS:
        cases = []
        for task in read_tasks(wheel, domain):
            if not task["evaluation_criteria"]["actions"]:
                continue  # nothing to trace: tau2 grades those by the conversation alone
            case, does = convert_task(domain, task)
            cases.append(case)
            script[case["id"]] = does
            if len(cases) == per_domain:
                break
        document = {
            "id": f"tau2-{domain}",
            "description": f"tau2-bench {domain} tasks (MIT), converted by "
            "scripts/tau2_to_evalsets.py",
            "cases": cases,
        }
        # Not named *.evalset.json: pytest would collect them under tests/ (the tests copy them).
        path = out / f"tau2-{domain}.json"
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
        counts[domain] = len(cases)
    (out / "agent_script.json").write_text(json.dumps(script, indent=1, sort_keys=True) + "\n")
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the inspect-evals wheel (.whl)")
    parser.add_argument("out", type=Path, help="the folder to write the eval sets to")
    parser.add_argument("--per-domain", type=int, default=20, help="tasks per domain")
    args = parser.parse_args(argv)
    counts = convert(args.wheel, args.out, args.per_domain)
    print(", ".join(f"{domain}: {count} cases" for domain, count in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
