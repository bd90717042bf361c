"""Judged samples of a run, and the human labels that match them (docs/calibrating-the-judge.md,
"How labels are matched").

A label matches a sample when eval set id, case id and the sha256 of the output are the
same: a label of another output of the case is stale (the agent answered differently since
it was labelled) and is counted, never used. Each sample carries its judge's fingerprint
(model, rubric, prompt template version): a figure measured for one judge says nothing
about another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from verdryx_core.cases import case_key
from verdryx_core.judge.calibration.labels import Label, output_sha256
from verdryx_core.judge.prompt import JUDGE_SYSTEM, RECORD_VERDICT_TOOL, render_judge_prompt
from verdryx_core.runs import EvalRun

__all__ = [
    "JUDGE_TEMPLATE_VERSION",
    "JudgeFingerprint",
    "JudgedSample",
    "Matched",
    "judged_samples",
    "match_labels",
]

#: The prompt template's version: a hash of what the judge is told besides the case (the
#: system prompt, the user message around the case, the verdict tool), so a changed template
#: is a new judge whose figures start over.
JUDGE_TEMPLATE_VERSION: Final = hashlib.sha256(
    json.dumps(
        [
            JUDGE_SYSTEM,
            render_judge_prompt("{prompt}", "{output}", "{rubric}"),
            RECORD_VERDICT_TOOL,
        ],
        sort_keys=True,
    ).encode()
).hexdigest()[:12]

#: The pass bar a numeric label is read against when the run does not know the case's bar
#: (a run read back from the store keeps `passed`, not its bar).
DEFAULT_BAR: Final = 0.5


@dataclass(frozen=True, slots=True, order=True)
class JudgeFingerprint:
    """Which judge produced a figure: its model, the rubric's sha256 (first 12 hex digits)
    and the prompt template version."""

    model: str
    rubric: str
    template: str = JUDGE_TEMPLATE_VERSION

    @property
    def key(self) -> str:
        return f"{self.model}|{self.rubric}|{self.template}"

    def to_dict(self) -> dict[str, str]:
        return {"model": self.model, "rubric": self.rubric, "template": self.template}


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgedSample:
    """One judged output of a run: what the judge decided and why."""

    eval_set_id: str
    case_id: str
    output: str
    output_sha256: str
    score: float
    judge_passed: bool
    bar: float
    reason: str
    fingerprint: JudgeFingerprint

    @property
    def key(self) -> str:
        return case_key(self.eval_set_id, self.case_id)


def judged_samples(run: EvalRun) -> list[JudgedSample]:
    """The measured `llm_judge` scores of `run`, in run order (the only scores a judge gave)."""
    samples = []
    for score in run.scores:
        if score.grader != "llm_judge" or score.value is None or score.output is None:
            continue
        bar = score.bar if score.bar is not None else DEFAULT_BAR
        rubric = hashlib.sha256((score.expected or "").encode("utf-8", "replace")).hexdigest()
        samples.append(
            JudgedSample(
                eval_set_id=score.eval_set_id,
                case_id=score.case_id,
                output=score.output,
                output_sha256=output_sha256(score.output),
                score=score.value,
                judge_passed=bool(score.passed) if score.passed is not None else score.value >= bar,
                bar=bar,
                reason=score.reason or "",
                fingerprint=JudgeFingerprint(model=run.judge_model or "", rubric=rubric[:12]),
            )
        )
    return samples


@dataclass(frozen=True, slots=True, kw_only=True)
class Matched:
    """Samples paired with the human's verdict; what did not pair, counted."""

    pairs: tuple[tuple[JudgedSample, bool, Label], ...]
    #: Labels of a case the run judged, for another output than the run's.
    stale: int
    #: Labels that are skips (looked at, not decided).
    skipped: int
    #: Judged samples no label covers.
    unlabelled: int

    @property
    def judge(self) -> list[bool]:
        return [sample.judge_passed for sample, _, _ in self.pairs]

    @property
    def human(self) -> list[bool]:
        return [human for _, human, _ in self.pairs]


def match_labels(samples: Sequence[JudgedSample], labels: Iterable[Label]) -> Matched:
    """Pair each sample with the last label of its case and output."""
    latest: dict[tuple[str, str, str], Label] = {}
    for each in labels:
        latest[(each.eval_set_id, each.case_id, each.output_sha256)] = each
    by_case = {(s.eval_set_id, s.case_id) for s in samples}
    outputs = {(s.eval_set_id, s.case_id, s.output_sha256) for s in samples}
    stale = sum(1 for key in latest if key not in outputs and (key[0], key[1]) in by_case)
    pairs, skipped, unlabelled = [], 0, 0
    for sample in samples:
        found = latest.get((sample.eval_set_id, sample.case_id, sample.output_sha256))
        if found is None:
            unlabelled += 1
            continue
        human = found.verdict(sample.bar)
        if human is None:
            skipped += 1
            continue
        pairs.append((sample, human, found))
    return Matched(pairs=tuple(pairs), stale=stale, skipped=skipped, unlabelled=unlabelled)
