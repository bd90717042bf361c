"""`verdryx review --run ID --labels PATH [--port N]`: a page on 127.0.0.1 listing the run's
judged cases, to label them pass / fail / skip, each label appended to PATH (docs/cli.md,
docs/calibrating-the-judge.md "Labelling in the browser")."""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from verdryx_core.cli.commands._common import add_db_argument, open_store
from verdryx_core.errors import UsageError
from verdryx_core.evalsets.load import load_evalsets
from verdryx_core.judge.calibration.labels import read_labels
from verdryx_core.judge.calibration.samples import judged_samples
from verdryx_core.judge.review import ReviewServer

NAME = "review"
HELP = "label a run's judged cases in the browser (served on 127.0.0.1 only)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", metavar="ID", required=True, help="the stored run (an id prefix)")
    parser.add_argument(
        "--labels", metavar="PATH", required=True, type=Path, help="the labels file to append to"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8765,
        metavar="N",
        help="port on 127.0.0.1 (default 8765; 0: any free one)",
    )
    parser.add_argument(
        "--evalset",
        metavar="PATH",
        nargs="+",
        default=[],
        type=Path,
        dest="evalsets",
        help=(
            "the run's eval set files (or folders of them), to show each case's prompt or "
            "conversation"
        ),
    )
    parser.add_argument("--labeler", help="who labels (default: the login name)")
    add_db_argument(parser)


def _prompts(paths: list[Path]) -> dict[str, str]:
    prompts = {}
    for evalset in load_evalsets(paths):
        for case in evalset.cases:
            if case.messages:
                text = "\n".join(f"{m.get('role')}: {m.get('content')}" for m in case.messages)
            else:
                text = case.prompt
            if case.system:
                text = f"system: {case.system}\n{text}"
            prompts[f"{evalset.id}::{case.id}"] = text
    return prompts


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected a port number in [0, 65535]")
    with open_store(args, read_only=True) as store:
        found = store.find_run(args.run)
    if found is None:
        raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
    samples = judged_samples(found)
    if not samples:
        raise UsageError(
            f"run {found.id} has no judged case to review (no measured llm_judge score)"
        )
    if args.labels.exists():
        read_labels([args.labels])  # a broken file is one line now, not a blank page later
    try:
        labeler = args.labeler or getpass.getuser()
    except (KeyError, OSError):
        labeler = ""
    try:
        server = ReviewServer(
            samples,
            args.labels,
            prompts=_prompts(args.evalsets),
            title=f"verdryx review: run {found.id[:8]}",
            labeler=labeler,
            port=args.port,
        )
    except OSError as exc:
        raise UsageError(
            f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror}", hint="pass another --port"
        ) from None
    print(f"reviewing {len(samples)} judged case(s) of run {found.id} at {server.url}")
    print(f"labels go to {args.labels}; Ctrl-C stops")
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0
