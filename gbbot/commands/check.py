"""`gbbot check`: run the entrypoints on the working tree."""

from __future__ import annotations

import argparse

from gbbot import api
from gbbot.commands import common
from gbbot.core.config import Config
from gbbot.core.model import Mode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run_arguments(parser)
    common.add_output_arguments(parser)


def options(args: argparse.Namespace, config: Config) -> api.CheckOptions:
    return api.CheckOptions(
        mode=Mode(args.mode) if args.mode else None,
        jobs=api.jobs_for(args.jobs, config),
        only=tuple(args.entrypoint),
        shard=api.Shard.parse(args.shard) if args.shard else None,
        keep_traces=args.keep_traces.resolve() if args.keep_traces else None,
    )


def run(args: argparse.Namespace) -> int:
    root = common.repo_root(args)
    config = common.config_for(args, root)
    common.setup_if_asked(args, root, config)
    opts = options(args, config)
    on_done = common.progress(args)(len(api.select(config, opts)))
    result = api.check(root, config, opts, on_done)
    common.write_outputs(result, args)
    common.after_run_hints(args, root, config, result)
    return common.policy_exit_code(result, api.Policy.resolve(config, args.fail_on))
