"""`gbbot diff --base REF`: run the entrypoints on the working tree and on the merge-base of REF
and HEAD (or take the base's report from --baseline, the audit's record or --cache), and report what changed
(see gbbot/checks/head_and_base.py for how the two sides are made)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gbbot import api
from gbbot.commands import check as check_command
from gbbot.commands import common
from gbbot.core import words
from gbbot.core.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base", required=True, metavar="REF", help="compare with the merge-base of REF and HEAD, e.g. origin/main"
    )
    parser.add_argument(
        "--baseline", metavar="REPORT", type=Path, help="a report already made for the merge-base: do not run it"
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        type=Path,
        help="keep base reports here and reuse them (keyed by base commit, config, torch version, mode)",
    )
    parser.add_argument(
        "--baseline-from-branch",
        metavar="BRANCH",
        help="use the nightly audit's record of the merge-base on this data branch (e.g. gbbot-data) "
        "when it was made with the same config, torch and mode; otherwise run the base",
    )
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="use a --baseline made for another commit, torch, mode or config; the report says so",
    )
    common.add_run_arguments(parser)
    common.add_output_arguments(parser)


def options(args: argparse.Namespace, config: Config) -> api.DiffOptions:
    return api.DiffOptions(
        base=args.base,
        check=check_command.options(args, config),
        baseline=args.baseline,
        cache=args.cache,
        allow_mismatch=args.allow_mismatch,
        recorded=api.audit_record(args.baseline_from_branch, args.cache),
        writes=tuple(p for p in (args.json, args.markdown, args.cache, args.keep_traces) if p is not None),
        # --setup: the diff runs it, once per side when the change touches what it installs
        setup=api.SetupRun.HERE if getattr(args, "setup", False) else api.SetupRun.NONE,
    )


def run(args: argparse.Namespace) -> int:
    root = common.repo_root(args)
    config = common.config_for(args, root)
    done = api.diff(root, config, options(args, config), common.progress(args), common.messages(args))
    common.write_outputs(done.report, args)
    common.after_run_hints(args, root, config, done.report)
    for line in (*done.baseline_notes, *words.no_baselines(done.report.diff)):
        common.messages(args)(line.replace("`", ""))
    return common.policy_exit_code(done.report, api.Policy.resolve(config, args.fail_on))
