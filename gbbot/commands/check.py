"""`gbbot check`: run the entrypoints on the working tree."""

from __future__ import annotations

import argparse

from gbbot.check import CheckOptions, Shard, check, select
from gbbot.commands import common
from gbbot.model import Mode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run_arguments(parser)
    common.add_output_arguments(parser)


def options(args: argparse.Namespace) -> CheckOptions:
    return CheckOptions(
        mode=Mode(args.mode) if args.mode else None,
        jobs=args.jobs,
        only=tuple(args.entrypoint),
        shard=Shard.parse(args.shard) if args.shard else None,
        keep_traces=args.keep_traces.resolve() if args.keep_traces else None,
    )


def run(args: argparse.Namespace) -> int:
    root = common.repo_root(args)
    config = common.config_for(args, root)
    opts = options(args)
    on_done = common.progress_printer(len(select(config, opts)))
    result = check(root, config, opts, on_done)
    common.write_outputs(result, args)
    return common.verdict(result, args.fail_on or config.fail_on)
