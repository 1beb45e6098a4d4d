"""`gbbot parse PATH`: a report from logs people already have."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gbbot import api
from gbbot.analysis.policy import Policy
from gbbot.commands import common
from gbbot.core.errors import GbbotError


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
    result = api.parse_logs(args.path, (args.root or Path.cwd()).resolve(), args.name)
    common.write_outputs(result, args)
    for problem in result.entrypoints[0].trace_problems:
        print(f"gbbot: warning: {problem}", file=sys.stderr)
    return common.policy_exit_code(result, Policy.of(args.fail_on))
