"""`gbbot fix`: verified patches for the easy breaks (a diff per break; --apply writes them),
scaffolds for third-party breaks, the documented options for the rest."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gbbot import api
from gbbot.commands import common
from gbbot.core.errors import ExitCode, GbbotError
from gbbot.core.measured import DEFAULT_REPEAT, MAX_REPEAT, MIN_REPEAT
from gbbot.core.model import Mode
from gbbot.core.words import plural
from gbbot.edges import console
from gbbot.edges.console import say_lines
from gbbot.fix import commit as committing
from gbbot.fix import present
from gbbot.fix.pipeline import FixOptions, FixRun
from gbbot.fix.rounds import DEFAULT_ROUNDS, MAX_ROUNDS
from gbbot.recipes import RECIPES
from gbbot.render import markdown, width

GB_ID_RE = re.compile(r"GB\d{4}", re.IGNORECASE)
FINGERPRINT_RE = re.compile(r"[0-9a-f]{16}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _what_to_fix(parser)
    _how_to_run(parser)
    _what_is_reported(parser)


def _what_to_fix(parser: argparse.ArgumentParser) -> None:
    """What becomes of the verified patches, and which breaks get them."""
    parser.add_argument("--apply", action="store_true", help="write the verified patches into the working tree")
    parser.add_argument(
        "--commit",
        action="store_true",
        help="apply, then commit the patched files in one commit (nothing else in the tree is committed)",
    )
    parser.add_argument("--author", metavar="'NAME <EMAIL>'", help="the commit's author and committer (--commit)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GBNNNN|RECIPE",
        help=f"only breaks with this id or recipe ({', '.join(RECIPES)}); repeatable",
    )
    parser.add_argument(
        "--break",
        dest="fingerprints",
        action="append",
        default=[],
        metavar="FINGERPRINT",
        help="only this break (its fingerprint from the report); repeatable",
    )
    parser.add_argument(
        "--report",
        metavar="PATH",
        type=Path,
        help="take the breaks from this report.json instead of running the entrypoints first",
    )


def _how_to_run(parser: argparse.ArgumentParser) -> None:
    """Which entrypoints run, how, and for how many rounds."""
    parser.add_argument("--config", metavar="PATH", type=Path, help="default: .gbbot.yml at the repository root")
    parser.add_argument("--root", metavar="DIR", type=Path, help="repository root (default: found from here)")
    parser.add_argument("--mode", choices=[m.value for m in Mode], help="override the config's mode")
    parser.add_argument(
        "--jobs",
        "-j",
        type=common.jobs_argument,
        default=1,
        metavar="N",
        help="entrypoints run at once (default 1; or auto)",
    )
    parser.add_argument(
        "--entrypoint",
        "-e",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this entrypoint (repeatable; without --report)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"fix what the verified patches reveal, up to N rounds in all (default {DEFAULT_ROUNDS}; 1: only the "
        "breaks the first run shows)",
    )


def _what_is_reported(parser: argparse.ArgumentParser) -> None:
    """The timing of each fix, and where the results go."""
    parser.add_argument(
        "--measure",
        action="store_true",
        help="time each verified fix: the entrypoints it re-ran, in faithful mode, without and with the patch "
        "(--repeat times each, interleaved); the seconds per call and their spread",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        metavar="K",
        help=f"timed runs on each side with --measure (default {DEFAULT_REPEAT}, at least {MIN_REPEAT})",
    )
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the report with the fix results here")
    parser.add_argument("--markdown", metavar="PATH", type=Path, help="write the markdown report with the fixes here")
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no diffs on stdout and no progress lines, only the summary"
    )


def _check_arguments(args: argparse.Namespace) -> None:
    for value in args.only:
        if not GB_ID_RE.fullmatch(value) and value not in RECIPES:
            recipes = ", ".join(RECIPES)
            raise GbbotError(f"--only {value!r}: expected a graph-break id like GB0059 or a recipe: {recipes}")
    for value in args.fingerprints:
        if not FINGERPRINT_RE.fullmatch(value):
            raise GbbotError(f"--break {value!r}: expected a 16-character fingerprint from the report")
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise GbbotError(f"--rounds must be between 1 and {MAX_ROUNDS}")
    if args.repeat is not None and not args.measure:
        raise GbbotError("--repeat is the number of timed runs of --measure; add --measure")
    if args.repeat is not None and not MIN_REPEAT <= args.repeat <= MAX_REPEAT:
        raise GbbotError(
            f"--repeat {args.repeat}: between {MIN_REPEAT} and {MAX_REPEAT} (one timing alone is never reported)"
        )


def _missing_breaks(run: FixRun, wanted: list[str]) -> None:
    known = {b.fingerprint for b in run.report.breaks}
    unknown = [f for f in wanted if f not in known]
    if unknown:
        raise GbbotError(f"--break {unknown[0]}: no such break in the report ({plural(len(known), 'break')} found)")


def _print_results(run: FixRun, quiet: bool) -> None:
    docs = {b.fingerprint: b.doc_url for b in run.report.breaks}
    if not quiet:
        for result in run.results:
            text = present.terminal_text(result, docs.get(result.fingerprint))
            columns = console.terminal_columns()
            print((width.fitted_comments(text, columns) if columns else text) + "\n")
    lines, columns = present.summary_lines(run), console.terminal_columns(sys.stderr)
    say_lines(width.fitted_lines(lines, columns) if columns else lines)


def _write_outputs(run: FixRun, args: argparse.Namespace) -> None:
    if args.json:
        api.write_report(run.report, args.json)
    if args.markdown:
        shown = replace(run.report, fixes=run.results)  # in full, as the terminal shows them
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown.render(shown), encoding="utf-8")


def _commit(run: FixRun, root: Path, author: committing.Author | None) -> None:
    """One commit with the verified patches that were written; none when nothing was."""
    fixes = committing.committed(run.results, run.written)
    if not fixes:
        print("gbbot fix: no verified patch was written; nothing committed", file=sys.stderr)
        return
    gb_ids = {b.fingerprint: b.gb_id or b.gb_type for b in run.breaks}
    sha = committing.commit(root, run.written, committing.message(fixes, gb_ids, *run.totals), author)
    print(f"gbbot fix: committed {sha[:12]} ({', '.join(run.written)})", file=sys.stderr)


def user_inductor_cache(environ: Mapping[str, str]) -> Path:
    """Where the CLI keeps Inductor's compiles between `gbbot fix` runs: the user's own cache
    (the action keeps none past a run: a pull request's code writes it)."""
    home = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "gbbot" / "inductor"


def run(args: argparse.Namespace) -> int:
    _check_arguments(args)
    author = committing.parse_author(args.author) if args.author else None
    root = common.repo_root(args)
    config = common.config_for(args, root)
    given = api.load_report(args.report) if args.report else None
    options = FixOptions(
        apply=args.apply or args.commit,
        only=tuple(args.only),
        fingerprints=tuple(args.fingerprints),
        entrypoints=tuple(args.entrypoint),
        mode=Mode(args.mode) if args.mode else None,
        jobs=api.jobs_for(args.jobs, config),
        rounds=args.rounds,
        measure=args.measure,
        repeat=args.repeat or DEFAULT_REPEAT,
        progress=common.messages(args),
        inductor_cache=user_inductor_cache(os.environ),
    )
    result = api.fix(root, config, options, given)
    _missing_breaks(result, list(args.fingerprints))
    _write_outputs(result, args)
    _print_results(result, args.quiet)
    if args.commit:
        _commit(result, root, author)
    if result.unwritten:
        print(f"gbbot fix: verified but not written: {', '.join(result.unwritten)}", file=sys.stderr)
    failed_together = args.apply and any(not verdict.ok for verdict in result.joint)
    return ExitCode.POLICY if failed_together or result.unwritten else ExitCode.OK
