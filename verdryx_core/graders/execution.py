"""`exec`: run the case's tests against what the agent wrote, in a sandbox
(docs/workspaces-and-execution.md, "Running the tests: the exec grader").

The case gives `tests` (inline Python test code, or a `.py` path in its workspace) or
`command` (an argv list), and optionally `timeout` (seconds, default 30). A text output is
written to `solution.py` beside the tests (in a workspace: unless the agent left one). The
score is the fraction of tests that passed (pytest's JUnit XML, read back), or 1.0 / 0.0 by
the command's exit code; the first failure's message is the reason.

What the code does is the case's result, never the session's: a timeout, a limit reached,
a crash score 0.0 with the reason. A sandbox that cannot start is the case's error, as the
sandbox's own setup reports it on a channel the code cannot write (`Finished.code_started`),
so no output of the code's can pass for it.
Without isolation the grader refuses (unmeasured, naming `--verdryx-unsafe-exec`) unless
the run allows unsafe execution.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

from verdryx_core.cases import EvalCase, output_text
from verdryx_core.errors import CLI_FLAGS, GraderError, word_hint
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.exec_rules import check_exec_case, is_test_path
from verdryx_core.graders.exec_view import build_view
from verdryx_core.graders.junit import read_junit

if TYPE_CHECKING:
    from verdryx_core.sandbox import Finished, Isolation, Limits
    from verdryx_core.sandbox.paired import Places

__all__ = [
    "DEFAULT_EXEC_DISK_MIB",
    "DEFAULT_EXEC_TIMEOUT_S",
    "ExecGrader",
    "solution_text",
]

DEFAULT_EXEC_TIMEOUT_S: Final = 30.0
#: The work folder's total size, MiB (`--verdryx-exec-disk`).
DEFAULT_EXEC_DISK_MIB: Final = 256
_SOLUTION: Final = "solution.py"
_TESTS: Final = "test_solution.py"
_JUNIT: Final = ".verdryx-junit.xml"
_MAX_REASON: Final = 500
#: A fenced block of code (```python ... ```): a model's answer often wraps its code in one.
_FENCE: Final = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
#: The signals the limits send, in the words of the limit.
_LIMIT_SIGNALS: Final[Mapping[str, str]] = {
    "SIGXCPU": "the CPU time limit",
    "SIGXFSZ": "the file size limit",
    "SIGKILL": "killed",
    "SIGSEGV": "a crash (memory limit?)",
}


def solution_text(output: Any) -> str:
    """The code of an output: the first fenced Python block when there is one, else all
    of it."""
    text = output_text(output) or ""
    found = _FENCE.search(text)
    return found.group(1) if found else text


@final
class ExecGrader:
    kind: ClassVar[str] = "exec"
    #: A solution passes when every test passes.
    default_min_score: ClassVar[float] = 1.0
    #: A run takes a process (seconds of it): exec cases run in the bounded pool, side by
    #: side under `--verdryx-concurrency`, as remote calls do.
    remote: ClassVar[bool] = True
    #: What that work is called in the progress line and the summary.
    calls: ClassVar[str] = "sandbox runs"
    options: ClassVar[frozenset[str]] = frozenset({"tests", "command", "timeout"})
    check_case = staticmethod(check_exec_case)

    def __init__(
        self,
        *,
        unsafe: bool = False,
        flags: Mapping[str, str] = CLI_FLAGS,
        isolation: Isolation | None = None,
        disk_mib: int = DEFAULT_EXEC_DISK_MIB,
    ) -> None:
        # The sandbox is imported when an exec grader is made (a session with exec cases),
        # not by every session that loads the graders (docs/architecture.md, "The walk of
        # one case").
        from verdryx_core.sandbox import detect_isolation

        self.isolation = detect_isolation() if isolation is None else isolation
        self.unsafe = unsafe
        self.disk_mib = disk_mib
        self._flags = flags

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if not self.isolation.isolated and not self.unsafe:
            return Grade.unmeasured_because(
                word_hint(
                    "exec cases run untrusted code, and this machine offers no isolation "
                    "(bubblewrap or unshare; VERDRYX_SANDBOX=none forces none): install "
                    "bubblewrap, or pass {unsafe_exec} to run it unisolated",
                    self._flags,
                )
            )
        options = case.options
        timeout = float(options.get("timeout", DEFAULT_EXEC_TIMEOUT_S))
        from verdryx_core.sandbox import Limits

        limits = Limits(wall_s=timeout, cpu_s=math.ceil(timeout), disk_bytes=self.disk_mib << 20)
        own = context.workspace is None
        workdir = Path(tempfile.mkdtemp(prefix="verdryx-case-")) if own else context.workspace
        assert workdir is not None
        run = Path(tempfile.mkdtemp(prefix="verdryx-tests-"))
        try:
            code = solution_text(output)
            solution = workdir / _SOLUTION
            if code and (own or not solution.exists()):
                solution.write_text(code, encoding="utf-8")
            view, tests_dir, out_dir = run / "view", run / "tests", run / "out"
            for folder in (view, tests_dir, out_dir):
                folder.mkdir()
            # The tests' side sees the agent's files but none of its code: the eval set's.
            build_view(workdir, None if own else case.workspace, view)
            job = _Job(case, workdir, view, tests_dir, out_dir, limits)
            command = options.get("command")
            if command is not None:
                return self._by_exit_code(job, [str(part) for part in command])
            return self._by_tests(job, str(options["tests"]))
        finally:
            shutil.rmtree(run, ignore_errors=True)
            if own:
                shutil.rmtree(workdir, ignore_errors=True)

    def _run(self, job: _Job, argv: Callable[[Places], Sequence[str]]) -> Finished:
        # The run's own Python (and its console scripts) first: `python -m pytest` in a
        # command finds the packages verdryx runs with.
        from verdryx_core.sandbox.isolation import SETUP_FAILED
        from verdryx_core.sandbox.paired import run_paired

        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        try:
            finished, graded = run_paired(
                argv,
                workdir=job.workdir,
                tests_view=job.view,
                tests_dir=job.tests_dir,
                out_dir=job.out_dir,
                isolation=self.isolation,
                limits=job.limits,
                env={"PATH": path},
            )
        except OSError as exc:
            raise GraderError(
                f"exec case {job.case.id!r}: the sandbox could not start: {exc}"
            ) from None
        for side in (finished, graded):
            # Whether the code started is what the sandbox's setup said on a channel of its
            # own, never what the code printed: output that reads like the sandbox's own
            # complaint (`bwrap: ...`) from code that ran is the code's failure, scored 0.
            if side.code_started or side.timed_out:
                continue
            # Nothing of the graded code ran: what this side printed is the tools' own.
            if side.sandbox_up and side.exit_code == 97 and _full(side.output):
                continue  # the agent's files outgrew the work folder as they were copied in
            lines = side.output.strip().splitlines()
            first = next((line for line in lines if SETUP_FAILED in line), None)
            why = first or (lines[0] if lines else f"exit status {side.exit_code}, no output")
            raise GraderError(f"exec case {job.case.id!r}: the sandbox failed: {why}")
        return finished

    def _by_exit_code(self, job: _Job, argv: list[str]) -> Grade:
        finished = self._run(job, lambda places: argv)
        if finished.exit_code == 0 and not finished.timed_out:
            return Grade(value=1.0, reason=_cut(f"{argv[0]} exited 0"))
        return Grade(value=0.0, reason=_cut(self._capped(_why_ended(finished, argv[0]))))

    def _by_tests(self, job: _Job, tests: str) -> Grade:
        if is_test_path(tests):
            relative = tests.strip()
            if not (job.view / relative).is_file():
                raise GraderError(
                    f"exec case {job.case.id!r}: the test file {relative!r} is not in the "
                    "case's workspace as the eval set gives it (the tests are the eval set's, "
                    "never a copy the agent could have written)"
                )

            def target(places: Places) -> str:
                return f"{places.workdir}/{relative}"
        else:
            (job.tests_dir / _TESTS).write_text(tests, encoding="utf-8")

            def target(places: Places) -> str:
                return f"{places.tests}/{_TESTS}"

        # verdryx's own configuration, nothing of the work folder's.
        (job.tests_dir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")

        def argv(places: Places) -> list[str]:
            return [
                sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
                "-c", f"{places.tests}/pytest.ini", f"--rootdir={places.tests}",
                f"--junitxml={places.out}/{_JUNIT}", target(places),
            ]  # fmt: skip

        finished = self._run(job, argv)
        results = None if finished.timed_out else read_junit(job.out_dir / _JUNIT)
        if results is None:
            return Grade(value=0.0, reason=_cut(self._capped(_why_ended(finished, "pytest"))))
        if results.ran == 0:
            return Grade(value=0.0, reason="no test ran (none collected, or all skipped)")
        value = results.passed / results.ran
        reason = f"{results.passed} of {results.ran} tests passed"
        if results.first_failure:
            reason += f"; {results.first_failure}"
        return Grade(value=value, reason=_cut(self._capped(reason)))

    def _capped(self, reason: str) -> str:
        """`reason`, saying first when the work folder ran out of room."""
        if not _full(reason):
            return reason
        cap = word_hint(f"its disk cap ({self.disk_mib} MiB, {{exec_disk}})", self._flags)
        return f"the work folder reached {cap}: {reason}"


@dataclass(frozen=True, slots=True)
class _Job:
    """One grading's folders: the agent's work folder, the tests' view of it, their own
    folder and their results folder."""

    case: EvalCase
    workdir: Path
    view: Path
    tests_dir: Path
    out_dir: Path
    limits: Limits


def _full(text: str) -> bool:
    return "No space left on device" in text or "[Errno 28]" in text


def _why_ended(finished: Finished, what: str) -> str:
    if finished.timed_out:
        return f"timed out after {finished.seconds:.1f} s (wall clock); stopped"
    name = finished.signal_name
    if name is None and finished.exit_code > 128:
        from verdryx_core.sandbox import Finished

        # The namespace tools report the code's death by a signal as 128 + the signal.
        name = Finished(
            exit_code=128 - finished.exit_code, timed_out=False, output="", seconds=0
        ).signal_name
    tail = " ".join(finished.output.strip().splitlines()[-3:])
    if name is not None:
        why = f"{what} was stopped by {name} ({_LIMIT_SIGNALS.get(name, 'a signal')})"
    else:
        why = f"{what} exited {finished.exit_code}"
    return f"{why}: {tail}" if tail else why


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."
