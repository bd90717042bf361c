"""The per-session plugin object: prefetch, scores in, one stored run out, the gate, the summary.

One instance per pytest session, kept in `config.stash`. Only the controller (or a run without
xdist) writes the store or a baseline file; workers send plain dicts (see `xdist.py`).
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import os
import time
import uuid
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_verdryx import outputs
from pytest_verdryx.fixture import custom_case_identity
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import Settings
from pytest_verdryx.terminal import TerminalStream
from verdryx_core import __version__
from verdryx_core.baselines import check_label, find_baseline, write_baseline_file
from verdryx_core.errors import StoreError, UsageError, VerdryxError
from verdryx_core.evalset import load_evalset
from verdryx_core.gate import GateResult, check_models, compare_to_baseline, select_window
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.model import Baseline, BaselineCase, EvalCase, EvalRun, Score
from verdryx_core.runner import CaseEvaluator, is_remote, stability
from verdryx_core.store import Store, resolve_store_path

__all__ = ["SESSION_KEY", "VerdryxSession", "session_of"]

SESSION_KEY = pytest.StashKey["VerdryxSession"]()


def session_of(config: pytest.Config) -> VerdryxSession:
    return config.stash[SESSION_KEY]


def _to_usage_error(exc: VerdryxError) -> pytest.UsageError:
    return pytest.UsageError(f"verdryx: {exc}")


class VerdryxSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.is_worker = self.workerinput is not None
        self.run_id = str(uuid.uuid4())
        self.started_at = datetime.now(UTC)
        self.baseline: Baseline | None = None
        self._baseline_cases: dict[str, BaselineCase] = {}
        #: nodeid -> (collection index, score)
        self.scores: dict[str, tuple[int, Score]] = {}
        self.order: dict[str, int] = {}
        self.expected: set[str] = set()
        self.expected_count = 0
        #: Selected verdryx items pytest skipped before they could score (a skip marker, a
        #: skip in a fixture): not run is not an error, so they leave the run complete.
        self.not_run: set[str] = set()
        self.known_keys: set[str] = set()
        #: eval set id -> the file that declared it (one file per id).
        self.eval_set_files: dict[str, Path] = {}
        self.worker_interrupted = False
        self.worker_failures: list[str] = []
        self.cache_entries: list[Any] = []
        self.cache_stats: dict[str, float] = {"hits": 0, "misses": 0, "saved_usd": 0.0}
        self.messages: list[str] = []
        self.unpriced: set[str] = set()
        self.run: EvalRun | None = None
        self.result: GateResult | None = None
        self.gate_error: str | None = None
        self.saved_baseline: str | None = None
        self.incomplete: str | None = None
        #: Contract cases' own task and agent ids, by case key (workers send theirs).
        self.contract_ids: dict[str, dict[str, str | None]] = {}
        self._store: Store | None = None
        self._evaluator: CaseEvaluator | None = None
        self._adapters: list[Any] = []
        self._futures: dict[str, Future[Score]] = {}
        self.prefetch_seconds = 0.0
        self.stability: dict[str, str] = {}
        #: Each scored case's pass bar, by case key: the summary's xfailed count must use the
        #: bar the item's outcome used (workers send theirs).
        self.bars: dict[str, float] = {}
        self._exporter: Any = None
        self._typed: Any = None
        self._pytest_session: pytest.Session | None = None
        self._workers_prefetched = False
        # Read once: docs/options.md.
        self.otlp_endpoint = os.environ.get("VERDRYX_OTLP_ENDPOINT") or None
        if self.workerinput is not None:
            self._adopt_controller_state(self.workerinput.get("verdryx") or {})

    # -- start ------------------------------------------------------------------------------

    def check_wires(self) -> None:
        """Opt-in wires are checked at configure time, so a typo is exit 4, not a silent
        drop at the end of a long run."""
        try:
            agent_id = self.settings.agent_id
            if agent_id:
                from verdryx_core.events import is_canonical_agent_id

                if not is_canonical_agent_id(agent_id):
                    raise UsageError(
                        f"--verdryx-agent-id {agent_id!r} is not an agent id of the form "
                        "agent://host/path (lowercase letters, digits, '.', '_', '/', '-')"
                    )
            if self.otlp_endpoint and not self.is_worker:
                from verdryx_core.otel import SpanExporter

                self._exporter = SpanExporter(self.otlp_endpoint)
            if self.settings.typed_url:
                self._typed = self._typed_client()
            if self.settings.report and not self.settings.store:
                raise UsageError(
                    "--verdryx-report draws the run history from the store, and "
                    "--no-verdryx-store keeps this run out of it: drop one of the two"
                )
        except VerdryxError as exc:
            raise _to_usage_error(exc) from None

    def load_baseline(self) -> None:
        """On the controller, at configure time: an unknown label is a usage error (exit 4)
        before anything is collected or paid for."""
        if self.is_worker or not self.settings.baseline:
            return
        try:
            # A store that does not exist yet holds no baseline: do not create it just to look.
            exists = resolve_store_path(self.settings.db).exists()
            store = self._open_store() if exists else None
            baseline = find_baseline(self.settings.baseline, store=store, root=self.rootdir)
            probe = EvalRun(
                id="-",
                model=self.settings.model,
                judge_model=self.settings.judge,
                started_at=self.started_at,
            )
            message = check_models(probe, baseline, allow=self.settings.allow_model_change)
        except VerdryxError as exc:
            raise _to_usage_error(exc) from None
        if message:
            self.messages.append(f"WARNING: {message}")
        self._set_baseline(baseline)

    def _set_baseline(self, baseline: Baseline) -> None:
        self.baseline = baseline
        self._baseline_cases = baseline.case_map()

    def controller_state(self) -> dict[str, Any]:
        """What workers need from the controller (sent through xdist's workerinput)."""
        return {
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat(),
            "baseline": self.baseline.to_dict() if self.baseline else None,
        }

    def _adopt_controller_state(self, state: dict[str, Any]) -> None:
        self.run_id = state.get("run_id", self.run_id)
        if state.get("started_at"):
            self.started_at = datetime.fromisoformat(state["started_at"])
        if state.get("baseline"):
            self._set_baseline(Baseline.from_dict(state["baseline"]))

    @property
    def rootdir(self) -> Path:
        return Path(self.config.rootpath)

    @property
    def baseline_name(self) -> str:
        if self.baseline is None:
            return ""
        return self.baseline.label or self.baseline.id

    def baseline_case(self, key: str) -> BaselineCase | None:
        return self._baseline_cases.get(key)

    def _open_store(self) -> Store:
        if self._store is None:
            path = resolve_store_path(self.settings.db)
            self._store = Store.open(path)
        return self._store

    # -- collection -------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.order = {item.nodeid: index for index, item in enumerate(session.items)}
        self.expected = {
            item.nodeid
            for item in session.items
            if isinstance(item, EvalCaseItem) or item.get_closest_marker("verdryx") is not None
        }
        self.expected_count = len(self.expected)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # Custom cases are known cases too (before -k), or the gate would call a custom case
        # of the baseline "removed" whenever an eval set file is collected beside it.
        if not isinstance(item, EvalCaseItem) and item.get_closest_marker("verdryx") is not None:
            self.known_keys.add("::".join(custom_case_identity(item)))

    def note_collected(self, eval_set_id: str, case_ids: Iterable[str]) -> None:
        self.known_keys.update(f"{eval_set_id}::{case_id}" for case_id in case_ids)

    @property
    def active(self) -> bool:
        """Inert unless this session has eval cases or verdryx-marked tests."""
        return bool(self.expected or self.scores or self.expected_count)

    # -- grading ----------------------------------------------------------------------------

    def evaluator(self) -> CaseEvaluator:
        if self._evaluator is None:
            self._evaluator = self._build_evaluator()
        return self._evaluator

    def _build_evaluator(self, cases: Sequence[EvalCase] | None = None) -> CaseEvaluator:
        """The evaluator for `cases` (default: this session's items); model and judge
        adapters exist only when some case needs them."""
        custom_judge = False
        if cases is None:
            items = self._session_items()
            cases = [item.case for item in items if isinstance(item, EvalCaseItem)]
            custom_judge = self._has_custom_judge_cases()
        needs_model = any(case.needs_model for case in cases)
        judge_name = self.settings.judge_model
        needs_judge = judge_name is not None and (
            custom_judge or any(case.grader == "llm_judge" for case in cases)
        )
        adapter = judge = None
        try:
            if needs_model or needs_judge:
                adapter, judge = self._model_adapters(needs_model, needs_judge, judge_name)
        except VerdryxError as exc:
            raise _to_usage_error(exc) from None
        graders = build_graders(judge=judge, typed_client=self._typed)
        return CaseEvaluator(
            graders=graders,
            adapter=adapter,
            repeat=self.settings.repeat,
            min_score=self.settings.min_score,
        )

    def _has_custom_judge_cases(self) -> bool:
        for item in self._session_items():
            marker = item.get_closest_marker("verdryx")
            if marker is not None and marker.kwargs.get("grader") == "llm_judge":
                return True
        return False

    def _model_adapters(
        self, needs_model: bool, needs_judge: bool, judge_name: str | None
    ) -> tuple[Any, Any]:
        from verdryx_core.llm import PriceBook, make_adapter

        prices = PriceBook.from_file(self._price_file()) if self.settings.prices else None
        adapter = judge = None
        if needs_model:
            adapter = self._cached(make_adapter(self.settings.model, prices=prices))
        if needs_judge and judge_name is not None:
            judge = self._cached(make_adapter(judge_name, prices=prices))
        return adapter, judge

    def _price_file(self) -> Path:
        """An ini key's relative path is read from the ini file's folder, as pytest does."""
        path = Path(self.settings.prices or "")
        base = self.config.inipath.parent if self.config.inipath else self.rootdir
        return path if path.is_absolute() else base / path

    def _cached(self, adapter: Any) -> Any:
        from verdryx_core.llm import CachedAdapter

        if adapter.model == "stub":  # free and deterministic: nothing to save by caching it
            return adapter
        cached = CachedAdapter(adapter, self._open_store(), self.settings.cache)
        self._adapters.append(cached)
        return cached

    def _typed_client(self) -> Any:
        from verdryx_core.typryx import TypryxClient, read_key_file

        if not self.settings.typed_key_file:
            raise UsageError(
                "--verdryx-typed-url was given with no key: pass --verdryx-typed-key-file PATH "
                "or set $VERDRYX_TYPRYX_KEY_FILE"
            )
        key = read_key_file(self.settings.typed_key_file)
        return TypryxClient(
            self.settings.typed_url or "", key, template=self.settings.typed_template
        )

    def _session_items(self) -> list[pytest.Item]:
        session = self._pytest_session
        return list(session.items) if session is not None else []

    def context_for(self, item: EvalCaseItem) -> GradeContext:
        return GradeContext(
            eval_set_id=item.evalset.id, eval_set_path=item.evalset.path, run_id=self.run_id
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self._pytest_session = session
        if (
            not self.is_worker
            and not session.config.option.collectonly
            and not self._collection_failed()  # pytest stops before any item: pay for nothing
            and self.expected
        ):
            self._prefetch(session)
        try:
            return (yield)
        finally:
            self._finish_adapters()

    def _collection_failed(self) -> bool:
        session = self._pytest_session
        return bool(
            session is not None
            and session.testsfailed
            and not self.config.option.continue_on_collection_errors
        )

    def _prefetch(self, session: pytest.Session) -> None:
        """Start every model call the selected items need, before the first item runs, and
        wait for them with a progress line; items then read their own result in order."""
        items = [item for item in session.items if isinstance(item, EvalCaseItem)]
        evaluator = self.evaluator()
        work = [
            (item.nodeid, item.case, self.context_for(item))
            for item in items
            if is_remote(item.case, evaluator.graders)
        ]
        self._futures = self._call_ahead(evaluator, work)

    def prefetch_for_workers(self, node_ids: Sequence[str]) -> None:
        """Under xdist the controller collects nothing, and workers learn their items a batch
        at a time. So the controller makes every model call of the collected cases itself,
        into the store's response cache, before xdist schedules the first item; workers then
        grade from the cache: one call per case, `--verdryx-concurrency` in flight."""
        if (
            self._workers_prefetched
            or self.settings.cache != "on"  # the cache is how the answers reach the workers
            or not self.settings.store
            or self.config.option.collectonly
            or self._collection_failed()  # pytest stops before any item: pay for nothing
        ):
            return
        self._workers_prefetched = True
        work = self._cases_of(node_ids)
        if not work:
            return
        evaluator = self._build_evaluator([case for _, case, _ in work])
        if not self._adapters:
            return  # the stub model and judge: free, nothing to call ahead
        # A typed verdict posts labels back to the service: it is asked once, by its worker.
        remote = [entry for entry in work if entry[1].grader != "typed"]
        self._call_ahead(
            evaluator, [entry for entry in remote if is_remote(entry[1], evaluator.graders)]
        )
        self._finish_adapters()
        if self.cache_entries:
            self._open_store().cache_put_many(self.cache_entries)
            self.cache_entries.clear()

    def _cases_of(self, node_ids: Sequence[str]) -> list[tuple[str, EvalCase, GradeContext]]:
        """The eval cases behind collected node ids (`path::case-id`), read from their files."""
        wanted: dict[str, set[str]] = {}
        for node_id in node_ids:
            path, sep, case_id = node_id.partition("::")
            name = Path(path).name
            if sep and any(fnmatch.fnmatch(name, pattern) for pattern in self.settings.patterns):
                wanted.setdefault(path, set()).add(case_id)
        work = []
        for path, case_ids in wanted.items():
            try:
                evalset = load_evalset(self.rootdir / path)
            except VerdryxError:
                continue  # the workers report it as a collection error
            context = GradeContext(
                eval_set_id=evalset.id, eval_set_path=evalset.path, run_id=self.run_id
            )
            work.extend(
                (f"{path}::{case.id}", case, context)
                for case in evalset.cases
                if case.id in case_ids
            )
        return work

    def _call_ahead(
        self, evaluator: CaseEvaluator, work: Sequence[tuple[str, EvalCase, GradeContext]]
    ) -> dict[str, Future[Score]]:
        """Evaluate `work` in the bounded pool with a progress line, and wait for all of it."""
        if not work:
            return {}
        from verdryx_core.llm import CallPool
        from verdryx_core.llm.progress import Progress

        started = time.perf_counter()
        progress = Progress(len(work), stream=TerminalStream(self.config))
        pool = CallPool(self.settings.concurrency, progress=progress)
        futures: dict[str, Future[Score]] = {}
        try:
            for key, case, context in work:
                futures[key] = pool.submit(evaluator.evaluate, case, context)
            concurrent.futures.wait(futures.values())
        except KeyboardInterrupt:
            for future in futures.values():
                future.cancel()
            raise
        finally:
            pool.close()
            progress.close()
            self.prefetch_seconds += time.perf_counter() - started
        return futures

    def score_item(self, item: EvalCaseItem) -> Score:
        future = self._futures.pop(item.nodeid, None)
        if future is not None:
            score = future.result()
        else:
            score = self.evaluator().evaluate(item.case, self.context_for(item))
        self.record(item, score)
        return score

    def record(self, item: pytest.Item, score: Score) -> None:
        self.scores[item.nodeid] = (self.order.get(item.nodeid, len(self.order)), score)
        self.bars[score.key] = score_bar(item, self.settings.min_score)
        properties = [
            ("verdryx.score", "" if score.value is None else f"{score.value:.6g}"),
            ("verdryx.grader", score.grader),
            ("verdryx.cost_usd", f"{score.cost_usd + score.judge_cost_usd:.6g}"),
        ]
        if score.samples:
            label = stability(score.samples, score_bar(item, self.settings.min_score)) or ""
            self.stability[score.key] = label
            properties.append(("verdryx.stability", label))
        if score.value is None:
            properties.append(("verdryx.unmeasured", score.unmeasured or ""))
        item.user_properties.extend(properties)
        case = getattr(item, "case", None)
        if case is not None and case.grader == "contract":
            from verdryx_core.contracts.history import promise_of

            self.contract_ids[score.key] = promise_of(case)

    def _finish_adapters(self) -> None:
        for adapter in self._adapters:
            stats = getattr(adapter, "stats", None)
            if stats is not None:
                self.cache_stats["hits"] += getattr(stats, "hits", 0)
                self.cache_stats["misses"] += getattr(stats, "misses", 0)
                self.cache_stats["saved_usd"] += getattr(stats, "saved_usd", 0.0)
            self.cache_entries.extend(adapter.take_pending())
            prices = getattr(getattr(adapter, "inner", None), "prices", None)
            self.unpriced.update(getattr(prices, "unpriced", ()) or ())
        self._adapters.clear()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if (
            call.when == "call"
            and report.passed
            and item.nodeid in self.expected
            and item.nodeid not in self.scores
            and not isinstance(item, EvalCaseItem)
        ):
            # A marked test that passes without a score would leave the run incomplete with
            # every item green; say what is missing where it is missing.
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid}: marked @pytest.mark.verdryx but never called "
                "verdryx.grade(...) or verdryx.record(...): the case has no score"
            )
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and report.nodeid in self.expected:
            self.not_run.add(report.nodeid)

    # -- end --------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            from pytest_verdryx.xdist import worker_payload

            assert self.workerinput is not None
            self.config.workeroutput["verdryx"] = worker_payload(self, session)  # type: ignore[attr-defined]
            return
        if not self.active or self.config.option.collectonly:
            # Listing cases measures nothing: no run, not even an incomplete one.
            self.close_store()
            return
        try:
            self._finish(session, exitstatus)
        finally:
            self.close_store()

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        self.incomplete = self._incomplete_reason(session, exitstatus)
        interrupted = self.incomplete is not None
        run = self._build_run(complete=not interrupted)
        self.run = run
        try:
            if self.settings.store:
                store = self._open_store()
                if self.cache_entries:
                    store.cache_put_many(self.cache_entries)
                store.save_run(run)
                self._save_contract_verdicts(store, run)
        except StoreError as exc:
            self.messages.append(f"ERROR: the run was not stored: {exc}")
            _fail(session)
        if self.baseline is not None:
            self._gate(session, run)
        if self.settings.save_baseline:
            self._save_baseline(session, run)
        outputs.add_junit_properties(self.config, run, self.result, self.baseline_name)
        self._emit_wires(run)

    def _incomplete_reason(self, session: pytest.Session, exitstatus: int) -> str | None:
        """Why this run is not a whole measurement, in words; None when it is."""
        if session.shouldfail or session.shouldstop:
            return f"the session stopped early ({session.shouldfail or session.shouldstop})"
        if self.worker_interrupted:
            return "an xdist worker stopped early (-x or --maxfail)"
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return "the session was interrupted (Ctrl-C, or errors during collection)"
        if self.worker_failures:
            return f"an xdist worker went down ({self.worker_failures[0]})"
        missing = self.expected_count - len(self.scores) - len(self.not_run - self.scores.keys())
        if missing > 0:
            return f"{missing} of {self.expected_count} selected cases have no score (errors)"
        return None

    def _build_run(self, *, complete: bool) -> EvalRun:
        ordered = [score for _, score in sorted(self.scores.values(), key=lambda pair: pair[0])]
        judged = any(score.grader == "llm_judge" and score.value is not None for score in ordered)
        return EvalRun(
            id=self.run_id,
            model=self.settings.model,
            judge_model=self.settings.judge_model if judged else None,
            agent_id=self.settings.agent_id,
            started_at=self.started_at,
            finished_at=datetime.now(UTC),
            eval_set_ids=tuple(sorted({score.eval_set_id for score in ordered})),
            scores=tuple(ordered),
            complete=complete,
            plugin_version=__version__,
        )

    def _gate(self, session: pytest.Session, run: EvalRun) -> None:
        assert self.baseline is not None
        if not run.complete:
            return  # the INCOMPLETE line of the summary says why
        try:
            window = [run]
            # Earlier runs live in the store; with no store yet (--no-verdryx-store on a fresh
            # runner) there are none, and opening it would create the file.
            has_store = self.settings.store or resolve_store_path(self.settings.db).exists()
            if self.settings.window > 1 and has_store:
                window = select_window(self._open_store(), run, self.settings.window)
            self.result = compare_to_baseline(
                window,
                self.baseline,
                known_keys=self.known_keys or None,
                gate=self.settings.gate,
                threshold=self.settings.threshold,
                min_effect=self.settings.min_effect,
                allow_model_change=self.settings.allow_model_change,
            )
        except VerdryxError as exc:
            self.gate_error = f"gate refused: {exc}"
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if self.result.regressed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _save_baseline(self, session: pytest.Session, run: EvalRun) -> None:
        label = self.settings.save_baseline or ""
        if not run.complete:
            self.messages.append(
                f"baseline {label!r} NOT saved: the session was interrupted and the run is "
                "incomplete"
            )
            return
        try:
            baseline = Baseline.from_run(run, id=str(uuid.uuid4()), label=check_label(label))
            if self.settings.store:
                self._open_store().save_baseline(baseline)
            path = write_baseline_file(self.rootdir, baseline)
        except (ValueError, VerdryxError, OSError) as exc:
            self.messages.append(f"ERROR: baseline {label!r} not saved: {exc}")
            _fail(session)
            return
        self.saved_baseline = f"{label} (mean {baseline.mean:.3f}) -> {path}"

    def _save_contract_verdicts(self, store: Store, run: EvalRun) -> None:
        from verdryx_core.contracts.history import verdict_rows

        rows = verdict_rows(run, self.contract_ids)
        if rows:
            store.save_contract_verdicts(rows)

    def _emit_wires(self, run: EvalRun) -> None:
        """The outbound wires (events, OTLP, the HTML report): opt-in, never failing."""
        report = self.result.report if self.result else None
        if self.settings.events:
            self.messages.extend(outputs.emit_events(self.settings.events, run, report))
        if self._exporter is not None and self.otlp_endpoint:
            self.messages.append(
                outputs.export_spans(self._exporter, self.otlp_endpoint, run, report)
            )
        if self.settings.report:
            self.messages.append(
                outputs.write_html_report(
                    self._open_store(), self.settings.report, run, self.baseline, self.result
                )
            )

    def close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- summary ----------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.run is None:
            return
        from pytest_verdryx.terminal import write_summary

        write_summary(terminalreporter, self, self.run)

    def below_in_baseline(self, score: Score) -> bool:
        """Whether this below-the-bar score was an xfail (the summary counts as the items did)."""
        bar = self.bars.get(score.key, self.settings.min_score)
        return self.excused_by_baseline(score, bar) is not None

    def excused_by_baseline(self, score: Score, bar: float) -> BaselineCase | None:
        """The baseline case when the same case was below `bar` there too (docs/outcomes.md).
        An edited case is a new measurement (the gate reports it as changed): its old score
        cannot excuse a failure today."""
        base = self.baseline_case(score.key)
        if base is None or base.value >= bar:
            return None
        if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
            return None
        return base


def _fail(session: pytest.Session) -> None:
    """Exit 1, unless the session already exits with something a CI must see (interrupted,
    internal or usage error): a failed store write must not hide an interruption."""
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def score_bar(item: pytest.Item, default: float) -> float:
    case = getattr(item, "case", None)
    if case is not None and case.min_score is not None:
        return float(case.min_score)
    marker = item.get_closest_marker("verdryx")
    if marker is not None and marker.kwargs.get("min_score") is not None:
        return float(marker.kwargs["min_score"])
    return default
