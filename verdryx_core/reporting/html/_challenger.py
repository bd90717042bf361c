"""The challenger on the report page (docs/targets.md, "A challenger"): its verdict against
the champion in the gate's words, the pairwise judge's win rate, and every case it answered
with the two agents' scores and replies side by side, the challenger's worst first.

Both replies are the agents' words: every piece of them goes through `esc` (a transcript
through `dialogue_html`, which escapes each turn), never into the page as markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verdryx_core.reporting.html._dialogue import dialogue_html
from verdryx_core.reporting.html._svg import esc
from verdryx_core.runs import EvalRun, Score

if TYPE_CHECKING:
    from verdryx_core.judge.pairwise import PairVerdict, PairwiseResult

__all__ = ["CHALLENGER_CSS", "ChallengerView", "challenger_section"]

CHALLENGER_CSS = """
table.pair td.reply { width: 34%; }
table.pair pre { max-height: 220px; }
.win { color: #1a7f37; font-weight: 600; }
.loss { color: #cf222e; font-weight: 600; }
.tie { color: #57606a; }
"""

#: Replies are cut on the page beyond this; the summary and JUnit carry the scores.
_REPLY_LIMIT = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class ChallengerView:
    """What the page shows of a challenger: its run, its verdict line against the champion,
    whether it failed the session, and the pairwise judge's verdicts (None: none asked)."""

    run: EvalRun
    verdict: str
    failed: bool
    pairwise: PairwiseResult | None = None


def challenger_section(champion: EvalRun, view: ChallengerView) -> str:
    rival = view.run
    mine = {score.key: score for score in champion.scores}
    pairs: Mapping[str, PairVerdict] = (
        {verdict.key: verdict for verdict in view.pairwise.verdicts} if view.pairwise else {}
    )
    rows = [(mine[score.key], score) for score in rival.scores if score.key in mine]
    rows.sort(key=lambda pair: (_delta(*pair), pair[1].key))
    colour = "#cf222e" if view.failed else "#1a7f37"
    parts = [
        '<h2 id="challenger">Champion and challenger, side by side</h2>',
        f'<p style="border-left:6px solid {colour};padding-left:10px">{esc(view.verdict)}</p>',
        f"<p class=note>Champion <code>{esc(champion.target or 'the model')}</code>, "
        f"challenger <code>{esc(rival.target or '')}</code>: the same {len(rows)} case(s), "
        "the same inputs, the same graders; the challenger's worst case first.</p>",
    ]
    if view.pairwise is not None:
        parts.append(f"<p>{esc(view.pairwise.words())}</p>")
    if rival.errors:
        shown = "; ".join(rival.errors[:5])
        parts.append(f"<p class=note>The challenger errored: {esc(shown)}</p>")
    body = []
    for champ, chall in rows:
        delta = _delta(champ, chall)
        shown = "" if delta == float("inf") else f"{delta:+.3f}"
        trend = "down" if delta < 0 else ("up" if 0 < delta < float("inf") else "flat")
        body.append(
            f"<tr><td>{esc(chall.case_id)}<div class=set>{esc(chall.eval_set_id)}</div></td>"
            f'<td class="num">{_value(champ)}</td><td class="num">{_value(chall)}</td>'
            f'<td class="num"><span class="{trend}">{esc(shown)}</span></td>'
            + (f"<td>{_pairwise_cell(pairs.get(chall.key))}</td>" if view.pairwise else "")
            + f'<td class="reply">{_reply(champ)}</td><td class="reply">{_reply(chall)}</td></tr>'
        )
    parts.append(
        '<table class="cases pair"><thead><tr><th>case</th><th class="num">champion</th>'
        '<th class="num">challenger</th><th class="num">delta</th>'
        + ("<th>pairwise</th>" if view.pairwise else "")
        + "<th>champion's reply</th><th>challenger's reply</th></tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
    return "".join(parts)


def _delta(champion: Score, challenger: Score) -> float:
    if champion.value is None or challenger.value is None:
        return float("inf")  # unmeasured on a side: listed after the compared cases
    return challenger.value - champion.value


def _value(score: Score) -> str:
    return "unmeasured" if score.value is None else f"{score.value:.3f}"


def _pairwise_cell(verdict: PairVerdict | None) -> str:
    if verdict is None:
        return ""
    if verdict.share is None:
        return f'<span class="tag">unmeasured</span> {esc(verdict.unmeasured or "")}'
    outcome = verdict.outcome or "tie"
    return f'<span class="{outcome}">{esc(outcome)}</span> {verdict.share:.2f}'


def _reply(score: Score) -> str:
    text = score.output
    if text is None:
        return '<span class="note">nothing recorded</span>'
    if len(text) > _REPLY_LIMIT:
        text = f"{text[:_REPLY_LIMIT]}\n… ({len(text) - _REPLY_LIMIT:,} more characters)"
    turns = dialogue_html(text)
    return turns if turns is not None else f"<pre>{esc(text)}</pre>"
