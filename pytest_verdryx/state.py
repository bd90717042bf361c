"""What a session learns while it runs, as ONE object merged across xdist workers.

Each worker sends `to_payload()` (builtins only, through xdist's workeroutput); the
controller `merge`s them. Without xdist the one process fills it directly.

Made at its first use, which may come before verdryx turns on, if it ever does (a file
that fails to collect, a worker gone down, are recorded here), so it imports none of the
core: the call tally is made at its first use, and a score's class when a worker's scores
arrive.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from verdryx_core.evaluation import CallTally
    from verdryx_core.runs import Score

__all__ = ["SessionState"]

#: The fields of every `Score.to_dict()`, sent once per payload; the others (set on few
#: scores) go with their row.
_SCORE_FIELDS: Final = (
    "case_id",
    "eval_set_id",
    "value",
    "grader",
    "tokens",
    "cost_usd",
    "judge_cost_usd",
    "unmeasured",
    "fingerprint",
    "passed",
    "samples",
    "output",
    "expected",
    "reason",
    "checks",
)
_SHARED_TEXT: Final = ("eval_set_id", "grader")


def _score_row(seq: int, nodeid: str, score: Score) -> list[Any]:
    data = score.to_dict()
    values = [data.pop(name, None) for name in _SCORE_FIELDS]
    return [seq, nodeid, score.bar, values, data or None]


@dataclass(slots=True)
class SessionState:
    #: node id -> (collection index, score).
    scores: dict[str, tuple[int, Score]] = field(default_factory=dict)
    #: node id -> collection index (this process's items).
    order: dict[str, int] = field(default_factory=dict)
    #: Node ids of this process's selected eval items and verdryx-marked tests.
    expected: set[str] = field(default_factory=set)
    expected_count: int = 0
    #: Selected verdryx items pytest skipped before they could score (a skip marker, a skip
    #: in a fixture): not run is not an error, so they leave the run complete.
    not_run: set[str] = field(default_factory=set)
    #: Case keys collected before -k deselection: the gate tells "removed" from "not selected".
    known_keys: set[str] = field(default_factory=set)
    #: A worker stopped early (-x or --maxfail).
    stopped_early: bool = False
    #: Workers that went down (controller only).
    worker_failures: list[str] = field(default_factory=list)
    _calls: CallTally | None = None
    #: Items that errored instead of scoring (a target that raised or timed out, a model
    #: call that failed): "node id: one-line reason", for the summary's count.
    errors: list[str] = field(default_factory=list)
    #: Scored cases whose output came from a live source (the model or a target): repeats
    #: sample only those, so with none `--verdryx-repeat` changes nothing.
    live_cases: int = 0
    #: Node ids of files that failed to collect (--continue-on-collection-errors, xdist).
    collection_errors: set[str] = field(default_factory=set)
    #: The agent under test of each eval set of this process's selected eval items that
    #: need an output (`module:callable`; None: the model alone), by eval set id.
    targets: dict[str, str | None] = field(default_factory=dict)
    #: Prefetched calls that a stop (-x, --maxfail, Ctrl-C) left unmade.
    calls_not_made: int = 0
    #: Calls in flight at a Ctrl-C, given up without waiting (paid for or not: unknown).
    calls_given_up: int = 0
    #: Prefetched calls that ended after the stop: paid for, scored by no item.
    unscored_calls: int = 0
    unscored_cost_usd: float = 0.0
    #: The selected cases' `human_label`s: (eval set id, case id, output sha256) -> label.
    #: Gathered where the items are (a worker, under xdist) and sent with the scores.
    human_labels: dict[tuple[str, str, str], str | float] = field(default_factory=dict)
    #: node id -> (collection index, the challenger's score of its case), beside `scores`
    #: (docs/targets.md, "A challenger").
    challenger_scores: dict[str, tuple[int, Score]] = field(default_factory=dict)
    #: Cases the challenger errored on: "node id: one-line reason".
    challenger_errors: list[str] = field(default_factory=list)
    #: A worker's summary notes on its collection (how exec cases run, aggregation): every
    #: worker collects the same cases, so the controller keeps each note once.
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> CallTally:
        """What the run's model calls did (the evaluation counts into it)."""
        if self._calls is None:
            from verdryx_core.evaluation.calls import CallTally

            self._calls = CallTally()
        return self._calls

    @property
    def active(self) -> bool:
        """Inert unless this session has eval cases or verdryx-marked tests."""
        return bool(self.expected or self.scores or self.expected_count)

    def add_score(self, nodeid: str, score: Score) -> None:
        self.scores[nodeid] = (self.order.get(nodeid, len(self.order)), score)

    def ordered_scores(self) -> list[Score]:
        return [score for _, score in sorted(self.scores.values(), key=lambda pair: pair[0])]

    def ordered_challenger_scores(self) -> list[Score]:
        return [
            score for _, score in sorted(self.challenger_scores.values(), key=lambda pair: pair[0])
        ]

    def stability(self) -> dict[str, str]:
        """stable-pass / stable-fail / flaky by case key, for scores sampled more than once."""
        from verdryx_core.evaluation import stability

        labels = {}
        for _, score in self.scores.values():
            if score.samples and score.bar is not None:
                labels[score.key] = stability(score.samples, score.bar, score.passes) or ""
        return labels

    def missing(self) -> int:
        """Selected cases with no score that pytest did not skip (errors)."""
        return self.expected_count - len(self.scores) - len(self.not_run - self.scores.keys())

    def to_payload(self) -> dict[str, Any]:
        """Builtins only: what one worker graded, in collection order. Scores go as rows
        under one list of field names (`_score_row`), not as a dict each: the controller
        receives every worker's at once, and a dict per score (its own copy of each key) is
        most of what it would hold."""
        return {
            "score_fields": list(_SCORE_FIELDS),
            "scores": [
                _score_row(seq, nodeid, score) for nodeid, (seq, score) in self.scores.items()
            ],
            "expected": self.expected_count,
            "known_keys": sorted(self.known_keys),
            "stopped_early": self.stopped_early,
            "calls": self.calls.to_payload(),
            "not_run": sorted(self.not_run),
            "collection_errors": sorted(self.collection_errors),
            "errors": list(self.errors),
            "live_cases": self.live_cases,
            "targets": dict(self.targets),
            "calls_not_made": self.calls_not_made,
            "calls_given_up": self.calls_given_up,
            "unscored_calls": self.unscored_calls,
            "unscored_cost_usd": self.unscored_cost_usd,
            "human_labels": [[*key, label] for key, label in self.human_labels.items()],
            "notes": list(self.notes),
            "challenger_scores": [
                _score_row(seq, nodeid, score)
                for nodeid, (seq, score) in self.challenger_scores.items()
            ],
            "challenger_errors": list(self.challenger_errors),
        }

    def merge(self, payload: Mapping[str, Any]) -> None:
        from verdryx_core.runs import Score

        fields = payload["score_fields"]
        for into, rows in (
            (self.scores, payload["scores"]),
            (self.challenger_scores, payload.get("challenger_scores", ())),
        ):
            for seq, nodeid, bar, values, extra in rows:
                data = dict(zip(fields, values, strict=True))
                if extra:
                    data.update(extra)
                for name in _SHARED_TEXT:  # the same few strings for every score
                    if isinstance(data.get(name), str):
                        data[name] = sys.intern(data[name])
                into[nodeid] = (seq, replace(Score.from_dict(data), bar=bar))
        self.challenger_errors.extend(payload.get("challenger_errors", ()))
        self.expected_count = max(self.expected_count, int(payload["expected"]))
        self.known_keys.update(payload["known_keys"])
        self.stopped_early |= bool(payload["stopped_early"])
        self.calls.merge(payload["calls"])
        self.not_run.update(payload["not_run"])
        self.collection_errors.update(payload.get("collection_errors", ()))
        self.errors.extend(payload.get("errors", ()))
        self.live_cases += int(payload.get("live_cases", 0))
        self.targets.update(payload.get("targets") or {})
        self.calls_not_made += int(payload.get("calls_not_made", 0))
        self.calls_given_up += int(payload.get("calls_given_up", 0))
        self.unscored_calls += int(payload.get("unscored_calls", 0))
        self.unscored_cost_usd += float(payload.get("unscored_cost_usd", 0.0))
        for set_id, case_id, sha, label in payload.get("human_labels", ()):
            self.human_labels[(set_id, case_id, sha)] = label
        for note in payload.get("notes", ()):
            if note not in self.notes:
                self.notes.append(note)
