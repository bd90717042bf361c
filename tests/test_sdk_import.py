"""A model SDK is imported before the pool starts when a call will go out, and not at all
when the response cache answers every call the cases will make (docs/models-and-judges.md,
"Concurrency and progress"). The calls are real ones through the cache and a real SQLite
store; the adapter is the offline stub posing as a paid model, counting `prepare`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from verdryx_core.cases import EvalCase
from verdryx_core.evaluation import CaseScorer, EvalSettings, ModelSource
from verdryx_core.evaluation.sdk_import import import_sdks_if_calling
from verdryx_core.graders import build_graders
from verdryx_core.graders.base import GradeContext
from verdryx_core.llm import CachedAdapter, StubAdapter
from verdryx_core.store import Store

CONTEXT = GradeContext(eval_set_id="s")


class _CountsPrepare(StubAdapter):
    """The stub under a paid model's name: `prepare` is what imports a real adapter's SDK."""

    def __init__(self) -> None:
        super().__init__(model="claude-haiku-4-5", completion=lambda prompt: f"about {prompt}")
        self.prepared = 0

    def prepare(self) -> None:
        self.prepared += 1


def _cases() -> list[EvalCase]:
    return [
        EvalCase(id="a", prompt="one", grader="exact", expected="about one"),
        EvalCase(id="b", prompt="two", grader="contains", expected="two"),
        EvalCase(
            id="tools",
            prompt="look it up",
            grader="tool_trace",
            tools=({"name": "lookup", "input_schema": {"type": "object"}},),
            expected_tools=("lookup",),
        ),
        EvalCase(id="j", prompt="three", grader="llm_judge", rubric="is it about three"),
        EvalCase(
            id="chat",
            prompt="and now?",
            grader="llm_judge",
            rubric="answers the last turn",
            system="be brief",
            messages=(
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": "and now?"},
            ),
        ),
        EvalCase(id="rec", prompt="four", grader="llm_judge", rubric="r", output="recorded"),
    ]


class _Run:
    def __init__(self, store: Store | None, mode: str, repeat: int) -> None:
        self.model_inner, self.judge_inner = _CountsPrepare(), _CountsPrepare()
        self.model = CachedAdapter(self.model_inner, store, mode)
        self.judge = CachedAdapter(self.judge_inner, store, mode)
        self.scorer = CaseScorer(
            graders=build_graders(judge=self.judge),
            live=ModelSource(self.model),
            repeat=repeat,
            min_score=0.5,
            flags=EvalSettings().flags,
        )

    def score(self, cases: Sequence[EvalCase]) -> None:
        for case in cases:
            self.scorer.score(case, CONTEXT)

    @property
    def prepared(self) -> tuple[int, int]:
        return self.model_inner.prepared, self.judge_inner.prepared


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "s.db") as opened:
        yield opened


def _recorded(store: Store, cases: Sequence[EvalCase], repeat: int = 1) -> None:
    """One run of `cases` through the cache, its answers flushed into `store`."""
    first = _Run(store, "on", repeat)
    first.score(cases)
    first.model.flush()
    first.judge.flush()


@pytest.mark.parametrize("repeat", [1, 3])
def test_every_call_answered_by_the_store_imports_no_sdk(store: Store, repeat: int) -> None:
    cases = _cases()
    _recorded(store, cases, repeat)
    rerun = _Run(store, "on", repeat)
    import_sdks_if_calling(rerun.scorer, cases)
    assert rerun.prepared == (0, 0)  # the keys planned are the keys the calls use
    rerun.score(cases)
    assert rerun.model.misses == 0 and rerun.judge.misses == 0


def test_one_model_call_missing_imports_the_models_sdk(store: Store) -> None:
    cases = _cases()
    _recorded(store, cases)
    new = EvalCase(id="new", prompt="five", grader="exact", expected="about five")
    rerun = _Run(store, "on", 1)
    import_sdks_if_calling(rerun.scorer, [*cases, new])
    assert rerun.prepared == (1, 0)


def test_one_verdict_missing_imports_the_judges_sdk(store: Store) -> None:
    cases = _cases()
    _recorded(store, cases)
    new = EvalCase(id="rec2", prompt="six", grader="llm_judge", rubric="r", output="other")
    rerun = _Run(store, "on", 1)
    import_sdks_if_calling(rerun.scorer, [*cases, new])
    assert rerun.prepared == (0, 1)


def test_more_samples_than_recorded_are_calls(store: Store) -> None:
    cases = _cases()
    _recorded(store, cases, repeat=1)
    rerun = _Run(store, "on", 2)
    import_sdks_if_calling(rerun.scorer, cases)
    assert rerun.prepared == (1, 1)


@pytest.mark.parametrize("mode", ["off", "refresh"])
def test_a_cache_that_answers_nothing_imports_both(store: Store, mode: str) -> None:
    cases = _cases()
    _recorded(store, cases)
    run = _Run(store, mode, 1)
    import_sdks_if_calling(run.scorer, cases)
    assert run.prepared == (1, 1)


def test_without_a_store_every_call_goes_out() -> None:
    run = _Run(None, "on", 1)
    import_sdks_if_calling(run.scorer, _cases())
    assert run.prepared == (1, 1)


def test_a_store_that_cannot_be_read_counts_as_calls(tmp_path: Path) -> None:
    # Only a guess at what the run will call: the calls report the store themselves.
    store = Store.open(tmp_path / "s.db")
    run = _Run(store, "on", 1)
    store.close()
    import_sdks_if_calling(run.scorer, _cases())
    assert run.prepared == (1, 1)


def test_a_replay_never_imports_an_sdk(store: Store) -> None:
    # A missing answer is that case's error, and nothing is called.
    run = _Run(store, "replay", 1)
    import_sdks_if_calling(run.scorer, _cases())
    assert run.prepared == (0, 0)
