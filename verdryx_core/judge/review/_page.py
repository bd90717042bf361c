"""The review page: one HTML document, inline CSS and script, no URL outside the server.

Every text on it came from an agent, a judge or a file: it passes the text rule
(verdryx_core.untrusted.text, `printable`) and is then HTML-escaped, so nothing in an output
can close a tag, run a script or garble the page. Labelled disagreements come first, then
the cases nobody labelled yet, then the ones the judge and the human agree on.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from verdryx_core.judge.calibration.labels import Label
from verdryx_core.judge.calibration.samples import JudgedSample
from verdryx_core.untrusted.text import printable

__all__ = ["ReviewItem", "review_items", "review_page"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewItem:
    sample: JudgedSample
    #: What the case asked: its prompt, or its conversation as `role: content` lines.
    prompt: str
    label: Label | None

    @property
    def human(self) -> bool | None:
        return self.label.verdict(self.sample.bar) if self.label is not None else None

    @property
    def rank(self) -> int:
        """0: a labelled disagreement, 1: unlabelled (or skipped), 2: agreed."""
        human = self.human
        if human is None:
            return 1
        return 0 if human != self.sample.judge_passed else 2


def review_items(
    samples: Sequence[JudgedSample],
    labels: Sequence[Label],
    prompts: Mapping[str, str],
) -> list[ReviewItem]:
    """The samples with their latest label (of the same output), disagreements first."""
    latest = {(x.eval_set_id, x.case_id, x.output_sha256): x for x in labels}
    items = [
        ReviewItem(
            sample=sample,
            prompt=prompts.get(sample.key, ""),
            label=latest.get((sample.eval_set_id, sample.case_id, sample.output_sha256)),
        )
        for sample in samples
    ]
    return sorted(items, key=lambda item: item.rank)


def _text(value: str) -> str:
    return html.escape(printable(value), quote=True)


def _card(index: int, item: ReviewItem) -> str:
    sample = item.sample
    label = item.label
    current = ""
    if label is not None:
        shown = label.label if isinstance(label.label, str) else f"{label.label:g}"
        current = shown
    judge = "pass" if sample.judge_passed else "fail"
    note = _text(label.note if label else "")
    prompt = item.prompt or "(the run does not keep prompts: pass --evalset to show them)"
    return f"""
<section class="case rank{item.rank}" id="case-{index}" data-index="{index}"
  data-eval-set-id="{_text(sample.eval_set_id)}" data-case-id="{_text(sample.case_id)}"
  data-output-sha256="{sample.output_sha256}" data-label="{_text(str(current))}">
  <h2>{_text(sample.eval_set_id)} :: {_text(sample.case_id)}
    <span class="judge {judge}">judge {sample.score:.2f} ({judge})</span>
    <span class="human">{_text("human: " + str(current)) if current else "unlabelled"}</span></h2>
  <h3>prompt</h3><pre>{_text(prompt)}</pre>
  <h3>output</h3><pre>{_text(sample.output)}</pre>
  <h3>judge's reason</h3><pre>{_text(sample.reason)}</pre>
  <div class="controls">
    <button type="button" data-label="pass">pass (p)</button>
    <button type="button" data-label="fail">fail (f)</button>
    <button type="button" data-label="skip">skip (s)</button>
    <input type="text" class="note" placeholder="note (n)" value="{note}">
    <span class="status"></span>
  </div>
</section>"""


_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 70em; padding: 1em; }
.case { border: 1px solid #ccc; border-radius: 6px; margin: 1em 0; padding: 0.5em 1em; }
.case.selected { border-color: #2563eb; box-shadow: 0 0 0 2px #93c5fd; }
.rank0 { background: #fff7ed; }
pre { background: #f6f6f6; padding: 0.5em; white-space: pre-wrap; word-break: break-word; }
h2 { font-size: 1.05em; } h3 { font-size: 0.9em; margin: 0.6em 0 0.2em; color: #555; }
.judge.pass { color: #166534; } .judge.fail { color: #991b1b; }
.human { color: #1e40af; margin-left: 1em; } .note { width: 30em; }
"""

#: Nothing loads from anywhere but this page and its server.
_POLICY: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'"
)

_SCRIPT: Final = """
(function () {
  const token = document.body.dataset.token;
  const cases = Array.from(document.querySelectorAll('.case'));
  let current = 0;
  function select(i) {
    if (!cases.length) return;
    current = Math.max(0, Math.min(cases.length - 1, i));
    cases.forEach((c, k) => c.classList.toggle('selected', k === current));
    cases[current].scrollIntoView({block: 'nearest'});
  }
  async function label(section, value) {
    const status = section.querySelector('.status');
    const body = {
      eval_set_id: section.dataset.evalSetId,
      case_id: section.dataset.caseId,
      output_sha256: section.dataset.outputSha256,
      label: value,
      note: section.querySelector('.note').value,
    };
    const answer = await fetch('/label', {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'X-Verdryx-Token': token},
      body: JSON.stringify(body),
    });
    if (answer.ok) {
      section.dataset.label = value;
      section.querySelector('.human').textContent = 'human: ' + value;
      status.textContent = 'saved';
      const labelled = document.getElementById('labelled');
      labelled.textContent = (await answer.json()).labelled;
    } else {
      status.textContent = 'not saved: ' + (await answer.text());
    }
  }
  cases.forEach((section, k) => {
    section.addEventListener('click', () => select(k));
    section.querySelectorAll('button').forEach((b) =>
      b.addEventListener('click', (e) => {
        e.stopPropagation();
        select(k);
        label(section, b.dataset.label);
      }));
  });
  const keys = {p: 'pass', f: 'fail', s: 'skip'};
  document.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT') {
      if (e.key === 'Escape' || e.key === 'Enter') e.target.blur();
      return;
    }
    if (e.key === 'j' || e.key === 'ArrowDown') { select(current + 1); e.preventDefault(); }
    else if (e.key === 'k' || e.key === 'ArrowUp') { select(current - 1); e.preventDefault(); }
    else if (e.key === 'n') { cases[current].querySelector('.note').focus(); e.preventDefault(); }
    else if (keys[e.key] && cases.length) {
      label(cases[current], keys[e.key]).then(() => select(current + 1));
    }
  });
  select(0);
})();
"""


def review_page(items: Sequence[ReviewItem], *, title: str, token: str) -> str:
    """The whole page. `token` is sent back with every label: another site open in the same
    browser cannot read it, so it cannot write labels through this server."""
    labelled = sum(1 for item in items if item.label is not None)
    cards = "".join(_card(index, item) for index, item in enumerate(items))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_POLICY}">
<title>{_text(title)}</title><style>{_STYLE}</style></head>
<body data-token="{html.escape(token, quote=True)}">
<h1>{_text(title)}</h1>
<p><span id="labelled">{labelled}</span> of {len(items)} judged case(s) labelled.
Keys: j / k next / previous, p pass, f fail, s skip, n note. Disagreements with the judge first.</p>
{cards}
<script>{_SCRIPT}</script>
<script type="application/json" id="verdryx-review">{json.dumps({"cases": len(items)})}</script>
</body></html>
"""
