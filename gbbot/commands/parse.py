"""`gbbot parse PATH`: a report from logs people already have."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gbbot.analysis import classify, recompile, report
from gbbot.analysis.policy import Policy
from gbbot.analysis.source import SourceTree
from gbbot.checks.tree import unattributed
from gbbot.commands import common
from gbbot.core.errors import GbbotError
from gbbot.core.model import RunOutcome, Status
from gbbot.trace import tracelog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", type=Path, help="a TORCH_TRACE directory or file, or saved TORCH_LOGS=graph_breaks text"
    )
    parser.add_argument(
        "--root", type=Path, default=None, help="repository the paths in the log refer to (default: current directory)"
    )
    parser.add_argument("--name", default="log", help="entrypoint name to report under (default: log)")
    parser.add_argument(
        "--fail-on", choices=["any", "none"], default="none", help="exit 1 when breaks are found (default: none)"
    )
    common.add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if not args.path.exists():
        raise GbbotError(f"{args.path}: no such file or directory")
    root = (args.root or Path.cwd()).resolve()
    log = tracelog.read_path(args.path)
    tree = SourceTree(root)
    breaks = classify.classify(log.breaks, str(root), tree.get, entrypoint=args.name)
    outcome = RunOutcome(args.name, Status.OK, None, 0.0)
    problems = unattributed(log.breaks, str(root))
    entry = report.entrypoint_report(
        outcome, log, breaks, problems=problems, recompiles=recompile.analyse(log, str(root), tree.get)
    )
    # Logs made elsewhere do not say whether torch.compile ran with its own backend or gbbot's.
    result = report.new_report([entry], None, log.torch_version, None)
    common.write_outputs(result, args)
    for problem in entry.trace_problems:
        print(f"gbbot: warning: {problem}", file=sys.stderr)
    return common.policy_exit_code(result, Policy.of(args.fail_on))
