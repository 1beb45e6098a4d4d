"""Options and output shared by the commands that produce a report."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from gbbot import git, report
from gbbot.config import CONFIG_NAME, Config, load_config
from gbbot.errors import ExitCode
from gbbot.fix import present
from gbbot.model import Mode, Report, RunOutcome, Status
from gbbot.render import markdown, terminal


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the report (schema v1) here")
    parser.add_argument("--markdown", metavar="PATH", type=Path, help="write the markdown report here")
    parser.add_argument("--quiet", "-q", action="store_true", help="no terminal table")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", type=Path, help=f"default: {CONFIG_NAME} at the repository root")
    parser.add_argument(
        "--root", metavar="DIR", type=Path, help="repository root (default: the git top level of the current directory)"
    )
    parser.add_argument("--mode", choices=[m.value for m in Mode], help="override the config's mode")
    parser.add_argument("--fail-on", choices=["new", "any", "none"], help="override the config's fail_on")
    parser.add_argument(
        "--jobs", "-j", type=int, default=1, metavar="N", help="entrypoints run in parallel (default 1)"
    )
    parser.add_argument(
        "--entrypoint", "-e", action="append", default=[], metavar="NAME", help="run only this entrypoint (repeatable)"
    )
    parser.add_argument("--shard", metavar="I/N", help="run the I-th of N deterministic slices of the entrypoints")
    parser.add_argument("--keep-traces", metavar="DIR", type=Path, help="keep each entrypoint's trace and output here")


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
    return load_config(args.config if args.config else root / CONFIG_NAME)


def console() -> Console:
    return Console(stderr=False, highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


HEARTBEAT_S = 30.0


def progress_printer(total: int, heartbeat_s: float = HEARTBEAT_S) -> Callable[[RunOutcome], None]:
    """A line per finished entrypoint on stderr (stdout stays for the report), and every
    `heartbeat_s` a line saying the run is still going, so a long CI log never looks stuck."""
    done = 0
    finished = threading.Event()
    started = time.monotonic()
    err = Console(stderr=True, highlight=False)

    def on_done(outcome: RunOutcome) -> None:
        nonlocal done
        done += 1
        style = "green" if outcome.status is Status.OK else "red"
        err.print(f"[{done}/{total}] {outcome.name}: [{style}]{outcome.status.value}[/] in {outcome.duration_s:.1f}s")
        if done >= total:
            finished.set()

    def heartbeat() -> None:
        while not finished.wait(heartbeat_s):
            err.print(f"… {done}/{total} entrypoints finished, {time.monotonic() - started:.0f}s elapsed")

    if total:
        err.print(f"running {total} entrypoint{'s' * (total != 1)}…")
        threading.Thread(target=heartbeat, name="gbbot-progress", daemon=True).start()
    return on_done


def render_markdown(result: Report) -> str:
    """The markdown report, with any verified fixes the report carries under their break."""
    extra = present.markdown_extra(present.results_of(result))
    return markdown.render(result, markdown.Options(extra=extra))


def write_outputs(result: Report, args: argparse.Namespace) -> None:
    if args.json:
        report.write(result, args.json)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render_markdown(result), encoding="utf-8")
    if not args.quiet:
        terminal.render(result, console())


def verdict(result: Report, fail_on: str) -> int:
    """0 within policy, 1 when it failed; an entrypoint that did not run is a failure too
    (its breaks are unknown), unless fail_on is none."""
    err = Console(stderr=True, highlight=False)
    not_ok = [e.name for e in result.entrypoints if e.status not in (Status.OK, Status.SKIPPED)]
    if fail_on != "none" and not_ok:
        err.print(f"gbbot: entrypoints did not run cleanly: {', '.join(not_ok)}")
        return ExitCode.POLICY
    if report.policy_failed(result, fail_on):
        failing = report.new_breaks(result) if fail_on == "new" else report.counted(result)
        what = "new graph break" if fail_on == "new" and result.diff else "graph break"
        err.print(f"gbbot: policy fail_on={fail_on}: {len(failing)} {what}{'s' * (len(failing) != 1)}")
        return ExitCode.POLICY
    return ExitCode.OK

