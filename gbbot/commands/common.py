"""Options and output shared by the commands that produce a report."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gbbot import api
from gbbot.api import no_progress
from gbbot.core import jobs
from gbbot.core.config import CONFIG_NAME, FAIL_ON, Config, load_config
from gbbot.core.model import Mode, Report, RunOutcome
from gbbot.edges import git
from gbbot.edges.console import print_report, progress_printer, report_form, say, say_styled
from gbbot.render import markdown, terminal


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the report (schema v1) here")
    parser.add_argument("--markdown", metavar="PATH", type=Path, help="write the markdown report here")
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no terminal table and no progress lines (errors are still shown)"
    )


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", type=Path, help=f"default: {CONFIG_NAME} at the repository root")
    parser.add_argument(
        "--root", metavar="DIR", type=Path, help="repository root (default: the git top level of the current directory)"
    )
    parser.add_argument("--mode", choices=[m.value for m in Mode], help="override the config's mode")
    parser.add_argument("--fail-on", choices=FAIL_ON, help="override the config's fail_on")
    parser.add_argument(
        "--jobs",
        "-j",
        type=jobs_argument,
        default=1,
        metavar="N",
        help="entrypoints run in parallel (default 1; auto: one per core the memory allows, 1 with a GPU)",
    )
    parser.add_argument(
        "--entrypoint", "-e", action="append", default=[], metavar="NAME", help="run only this entrypoint (repeatable)"
    )
    parser.add_argument("--shard", metavar="I/N", help="run the I-th of N deterministic slices of the entrypoints")
    parser.add_argument("--keep-traces", metavar="DIR", type=Path, help="keep each entrypoint's trace and output here")
    parser.add_argument(
        "--setup",
        action="store_true",
        help="run the config's setup: steps first (pip install ...), as the GitHub Action always does",
    )
    parser.add_argument(
        "--no-warm",
        action="store_true",
        help="start every entrypoint as a fresh process (default: Python ones fork from a server that imported torch)",
    )


def jobs_argument(text: str) -> int | str:
    try:
        return jobs.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def repo_root(args: argparse.Namespace) -> Path:
    """--root, else the nearest directory up from here that has a .gbbot.yml (not above the git
    top level), else the git top level, else here."""
    if getattr(args, "root", None):
        return args.root.resolve()
    here = Path.cwd().resolve()
    top = (git.toplevel(here) or here).resolve()
    for candidate in (here, *here.parents):
        if (candidate / CONFIG_NAME).exists():
            return candidate
        if candidate == top:
            break
    return top


def config_for(args: argparse.Namespace, root: Path) -> Config:
    """The config file, with --no-warm applied (so fix verification and both sides of a diff
    run the way the command line says)."""
    config = load_config(args.config) if args.config else load_config(root / CONFIG_NAME, inside=root)
    if getattr(args, "no_warm", False):
        config = replace(config, runner=replace(config.runner, warm=False))
    return config


def setup_if_asked(args: argparse.Namespace, root: Path, config: Config) -> None:
    """--setup: the config's setup: steps, before any entrypoint runs."""
    if getattr(args, "setup", False) and config.setup:
        api.setup(root, config)


def after_run_hints(args: argparse.Namespace, root: Path, config: Config, result: Report) -> None:
    """What the user may not see in an entrypoint's output: a `run: python` that started another
    Python than gbbot's; a module the config's `setup:` installs, missing because setup runs locally
    only with --setup."""
    interpreter = api.interpreter_note(config, result)
    if interpreter:
        (say if interpreter.lacks_torch else messages(args))(interpreter.line)
    if not getattr(args, "setup", False):
        hint = api.setup_not_run(root, config, result, args.command)
        if hint:
            say(hint)


def write_outputs(result: Report, args: argparse.Namespace) -> None:
    if args.json:
        api.write_report(result, args.json)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown.render(result), encoding="utf-8")
    if not args.quiet:
        print_report(terminal.render(result, *report_form()))


def progress(args: argparse.Namespace) -> Callable[[int], Callable[[RunOutcome], None]]:
    """Progress lines on stderr, or none with --quiet."""
    return no_progress if getattr(args, "quiet", False) else progress_printer


def messages(args: argparse.Namespace) -> Callable[[str], None]:
    """Where informational one-liners go: stderr, or nowhere with --quiet."""
    return (lambda _message: None) if getattr(args, "quiet", False) else say


def policy_exit_code(result: Report, policy: api.Policy) -> int:
    """0 within policy, 1 when it failed, saying why on stderr."""
    verdict = policy.verdict(result)
    if verdict.reason:
        say_styled(verdict.reason)
    return verdict.exit_code
