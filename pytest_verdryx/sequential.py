"""`--verdryx-sequential` (docs/statistics.md, "The sequential gate"; docs/options.md): the
eval cases run in a seeded random order, their calls are prefetched as usual (the concurrency
is kept), and each graded case's paired difference feeds the core's `SequentialGate`. Once
its confidence sequence settles the verdict, the calls not yet started are cancelled and
the cases left are "not needed": skipped before they are scored, so never passed or failed
and never stored as measured, and counted apart in the summary and JUnit.

Registered by the session object only when the option is set, in one process: under xdist
each worker would see only its own share of the order.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Final

import pytest

from pytest_verdryx.context import SessionContext
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.scoring import ItemScoring
from verdryx_core.gating.sequential import SequentialGate, SequentialVerdict, seeded_order

__all__ = ["NOT_NEEDED", "SequentialGatePlugin", "check_sequential"]

#: The skip reason of a case the sequential gate did not need (its JUnit message starts so).
NOT_NEEDED: Final = "not needed:"
#: The report category pytest's summary counts them under ("12 not needed").
CATEGORY: Final = "not needed"


def check_sequential(config: pytest.Config, context: SessionContext) -> None:
    """Refuse what the sequential gate cannot do, as a usage error (exit 4)."""
    settings = context.settings
    problem = None
    if not settings.baseline:
        problem = "it stops on a verdict against a baseline: name one with --verdryx-baseline"
    elif settings.batch:
        problem = "--verdryx-batch sends every call before any case is graded"
    elif settings.challenger:
        # The challenger is gated on every case the target answers; stopping early would
        # leave its comparison on the cases one verdict happened to need.
        problem = "--verdryx-challenger is compared on every case, so no call can be left out"
    elif context.is_worker or getattr(config.option, "numprocesses", None):
        problem = (
            "it decides when to stop from every case in one order, which one process holds: "
            "drop -n (--verdryx-concurrency keeps the calls in parallel)"
        )
    if problem is not None:
        raise pytest.UsageError(f"--verdryx-sequential: {problem}")


class _NotNeeded:
    """The skip as a plain `pytest_runtest_setup` of its own: a wrapper raising before it
    yields would skip pytest's own setup hooks, whose stash its report reads."""

    def __init__(self, plugin: SequentialGatePlugin) -> None:
        self._plugin = plugin

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._plugin.skip_when_not_needed(item)


class SequentialGatePlugin:
    def __init__(self, context: SessionContext, scoring: ItemScoring) -> None:
        self.context = context
        self.scoring = scoring
        self.gate: SequentialGate | None = None
        #: Node ids of the cases the verdict made unnecessary.
        self.not_needed: set[str] = set()

    def register(self, config: pytest.Config) -> None:
        config.pluginmanager.register(self, "verdryx-sequential")
        config.pluginmanager.register(_NotNeeded(self), "verdryx-sequential-skip")

    # -- the order ---------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)  # after every deselection (-k, -m, shards)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The eval cases in a seeded random order, in the places eval cases held (other
        tests keep theirs), so the cases graded first are a fair sample of the set."""
        places = [index for index, item in enumerate(items) if isinstance(item, EvalCaseItem)]
        cases = [items[index] for index in places]
        order = seeded_order(len(cases), self.context.settings.sequential_seed)
        for place, picked in zip(places, order, strict=True):
            items[place] = cases[picked]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        settings, baseline = self.context.settings, self.context.baseline
        self.gate = SequentialGate(
            baseline.case_map() if baseline is not None else {},
            detect=settings.detect,
            seed=settings.sequential_seed,
            metric=settings.gate_metric,
        )

    # -- the stop ----------------------------------------------------------------------------

    def skip_when_not_needed(self, item: pytest.Item) -> None:
        """A case after the verdict whose call has not started is skipped as not needed (by
        `_NotNeeded`'s plain hook: pytest's own tryfirst setup hooks have run then, and the
        item's setup, where it would make its call, has not)."""
        gate = self.gate
        if (
            isinstance(item, EvalCaseItem)
            and gate is not None
            and gate.settled
            and not self._called(item.nodeid)
        ):
            self.not_needed.add(item.nodeid)
            gate.not_needed += 1
            item.user_properties.append(("verdryx.not_needed", "true"))
            pytest.skip(f"{NOT_NEEDED} the sequential gate settled its verdict first")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        """Each case graded, in the seeded order: its difference to the sequence."""
        gate = self.gate
        result = yield
        score = item.score if isinstance(item, EvalCaseItem) else None
        if score is not None and gate is not None and gate.observe(score) is not None:
            self._cancel_the_rest()
        return result

    def _called(self, nodeid: str) -> bool:
        """Whether the case's call has started (it is paid for, so it is graded); a call
        not yet started is cancelled here."""
        future = self.scoring.futures.get(nodeid)
        if future is None or future.cancel():
            self.scoring.futures.pop(nodeid, None)
            return False
        return True

    def _cancel_the_rest(self) -> None:
        """The verdict is settled: the calls not yet started never will be (a cancelled call
        is not one "not made" by a stop: nothing needed it)."""
        futures = self.scoring.futures
        for nodeid in [key for key, future in futures.items() if future.cancel()]:
            del futures[nodeid]

    def verdict(self) -> SequentialVerdict | None:
        return self.gate.verdict() if self.gate is not None else None

    # -- what it says ------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        if report.skipped and report.nodeid in self.not_needed:
            return CATEGORY, "n", "NOT NEEDED"
        return None

    def junit_properties(self) -> dict[str, Any]:
        verdict = self.verdict()
        if verdict is None:
            return {}
        return {
            "verdryx.sequential_verdict": verdict.verdict or "",
            "verdryx.sequential_low": f"{verdict.lower:.6g}",
            "verdryx.sequential_high": f"{verdict.upper:.6g}",
            "verdryx.sequential_n": verdict.n,
            "verdryx.sequential_seed": verdict.seed,
            "verdryx.called": verdict.called,
            "verdryx.not_needed": verdict.not_needed,
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        verdict = self.verdict()
        # A settled verdict is said with the gate's lines (`terminal.write_summary`).
        if verdict is not None and not verdict.settled and verdict.called:
            terminalreporter.write_line(f"verdryx: {verdict.words()}")
