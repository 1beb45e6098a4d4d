"""`gbbot audit`: the nightly audit, locally and without GitHub. Runs the entrypoints (each
`audit.repeat` times), adds the record to the local data branch (or writes it to --out) and
renders the tracking issue's body (--issue-body), so the audit can be tried before it is
deployed."""

from __future__ import annotations

import argparse
from pathlib import Path

from gbbot import api
from gbbot.audit import history, issue
from gbbot.audit import record as record_
from gbbot.audit import run as audit
from gbbot.commands import check as check_command
from gbbot.commands import common
from gbbot.edges import git
from gbbot.edges.console import say, say_styled


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run_arguments(parser)
    parser.add_argument("--branch", metavar="NAME", help="the data branch (default: the config's audit.branch)")
    parser.add_argument(
        "--out", metavar="FILE", type=Path, help="write the record here instead of committing it to the data branch"
    )
    parser.add_argument("--issue-body", metavar="PATH", type=Path, help="write the tracking issue's markdown here")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the first run's report (schema v1)")


def run(args: argparse.Namespace) -> int:
    root = common.repo_root(args)
    config = common.config_for(args, root)
    common.setup_if_asked(args, root, config)
    branch = args.branch or config.audit.branch
    options = check_command.options(args, config)
    runs = audit.reports(config, audit.check_with(root, config, options))
    if args.json:
        api.write_report(runs[0], args.json)
    mine = audit.record(runs)
    top = git.toplevel(root) or root
    tip = git.ref_sha(top, f"refs/heads/{branch}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(record_.dumps(mine), encoding="utf-8")
        say(f"audit record written to {args.out}")
    else:
        tip = history.append_local(top, branch, mine)
        say(f"audit record added to the local branch {branch} ({tip[:7]})")
    records = history.read(top, tip, say).records if tip else ()
    renames, sources = audit.renames_in(root, say), audit.sources_in(root, say)
    result = audit.outcome(records, mine, config.audit.history, issue.Where(), renames=renames, sources=sources)
    if args.issue_body:
        args.issue_body.parent.mkdir(parents=True, exist_ok=True)
        args.issue_body.write_text(result.body, encoding="utf-8")
        say(f"tracking issue body written to {args.issue_body}")
    breach = audit.verdict(result)
    if breach:
        say_styled(breach)
    return audit.exit_code(result, api.Policy.resolve(config, args.fail_on))
