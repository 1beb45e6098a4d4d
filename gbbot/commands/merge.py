"""`gbbot merge SHARD.json...`: join the reports of `gbbot check --shard I/N` (or `gbbot diff
--shard I/N`) matrix jobs into one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from gbbot import api
from gbbot.commands import common
from gbbot.core.config import FAIL_ON


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", type=Path, metavar="SHARD", help="shard reports (report.json)")
    parser.add_argument("--partial", action="store_true", help="merge even when some shards are missing")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="none",
        help="exit 1 on new breaks (new) or any break (any); default none: the shard jobs decide",
    )
    common.add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    shards = [api.ShardReport(str(path), api.load_report(path)) for path in args.shards]
    result = api.merge(shards, partial=args.partial)
    common.write_outputs(result, args)
    return common.policy_exit_code(result, api.Policy.of(args.fail_on))
