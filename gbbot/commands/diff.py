"""`gbbot diff --base REF`: run the entrypoints on the working tree and on the merge-base of REF
and HEAD (or take the base's report from --baseline / --cache), and report what changed.

The head side is the working tree as it is, uncommitted edits included (what the user is
working on); a note says so when the tree is dirty. The base side is the merge-base, checked out
in a temporary worktree and always removed. The head's .gbbot.yml defines both sides' entrypoints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from gbbot import baseline, diff, git
from gbbot.check import CheckOptions, check, select
from gbbot.commands import check as check_command
from gbbot.commands import common
from gbbot.config import Config
from gbbot.errors import GitError, ReportError
from gbbot.model import Diff, Report, RunOutcome

MAX_LISTED_PATHS = 5
MAX_PATH_CHARS = 200


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
        "--allow-mismatch",
        action="store_true",
        help="use a --baseline made for another commit, torch, mode or config; the report says so",
    )
    common.add_run_arguments(parser)
    common.add_output_arguments(parser)


@dataclass(frozen=True)
class Plan:
    """Where the comparison happens: the config root, the repository top level, the base."""

    root: Path
    top: Path
    prefix: str  # the config root below the top level, "" when it is the top level
    base_ref: str
    base_sha: str
    config: Config
    options: CheckOptions

    def expected(self, torch_version: str | None) -> baseline.Expected:
        names = tuple(e.name for e in select(self.config, self.options))
        mode = self.options.mode or self.config.mode
        return baseline.Expected(self.base_sha, self.config.digest, torch_version, mode, names)


def plan(args: argparse.Namespace) -> Plan:
    root = common.repo_root(args)
    top = git.toplevel(root)
    if top is None:
        raise GitError(f"{root} is not inside a git repository: `gbbot diff` compares git commits")
    config = common.config_for(args, root)
    base_sha = git.merge_base(top, args.base)
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    return Plan(root, top, "" if prefix == "." else prefix, args.base, base_sha, config, check_command.options(args))


def dirty_note(p: Plan) -> str | None:
    changed = git.changed_paths(p.top)
    if not changed:
        return None
    shown = ", ".join(f"`{c[:MAX_PATH_CHARS]}`" for c in changed[:MAX_LISTED_PATHS])
    more = ", …" if len(changed) > MAX_LISTED_PATHS else ""
    head = (git.head_sha(p.top) or "HEAD")[:7]
    return (
        f"The head side is the working tree with uncommitted changes ({len(changed)} "
        f"path{'s' * (len(changed) != 1)}: {shown}{more}), "
        f"not commit {head}."
    )


def split_jobs(jobs: int) -> tuple[int, int]:
    """(head, base) share of --jobs when both sides run at once."""
    return max(1, (jobs + 1) // 2), max(1, jobs // 2)


def run_both(p: Plan, on_done: Callable[[RunOutcome], None]) -> tuple[Report, Report]:
    """Head and base; at the same time when --jobs allows. The worktree is opened here, in the
    calling thread, so that Ctrl-C or SIGTERM removes it even while runs are in flight."""
    on_base = _labelled(on_done, p.base_sha)
    with git.worktree(p.top, p.base_sha) as tree:
        if p.options.jobs < 2:
            base = baseline.run_base(tree, p.prefix, p.config, p.options, on_base)
            return check(p.root, p.config, p.options, on_done), base
        head_jobs, base_jobs = split_jobs(p.options.jobs)
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gbbot-side")
        try:
            base_options = replace(p.options, jobs=base_jobs)
            base_future = pool.submit(baseline.run_base, tree, p.prefix, p.config, base_options, on_base)
            head = check(p.root, p.config, replace(p.options, jobs=head_jobs), on_done)
            return head, base_future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _labelled(on_done: Callable[[RunOutcome], None], sha: str) -> Callable[[RunOutcome], None]:
    return lambda outcome: on_done(replace(outcome, name=f"{outcome.name} (base {sha[:7]})"))


def say(message: str) -> None:
    print(f"gbbot: {message}", file=sys.stderr)


@dataclass(frozen=True)
class Sides:
    head: Report
    base: Report
    source: str  # run | cache | file
    notes: tuple[str, ...] = ()


def known_baseline(p: Plan, args: argparse.Namespace) -> tuple[Report, str, list[str]] | None:
    """The base report without running it: from --baseline, or a --cache hit."""
    expected = p.expected(baseline.installed_torch())
    if args.baseline:
        found, mismatched = baseline.from_file(args.baseline, expected, args.allow_mismatch)
        return found, "file", baseline.label(mismatched, args.baseline)
    key = baseline.CacheKey.for_run(expected) if args.cache else None
    if key is None:
        if args.cache:
            say("torch is not installed where gbbot runs, so the baseline cache is not used")
        return None
    cached = baseline.Cache(args.cache).load(key, expected)
    if cached is not None:
        say(f"baseline for {p.base_sha[:7]} from the cache ({key.path(args.cache)})")
        return cached, "cache", []
    return None


def sides(p: Plan, args: argparse.Namespace) -> Sides:
    known = known_baseline(p, args)
    return _run_both_and_cache(p, args) if known is None else _with_known(p, args, *known)


def _with_known(p: Plan, args: argparse.Namespace, base: Report, source: str, notes: list[str]) -> Sides:
    """Only the head runs; then what only its run can tell (the torch its entrypoints really
    imported) is checked against the baseline."""
    head = check(p.root, p.config, p.options, common.progress_printer(len(select(p.config, p.options))))
    late = baseline.torch_mismatch(base, head.torch_version)
    if late is None:
        return Sides(head, base, source, tuple(notes))
    if source == "cache":
        say(f"the cached baseline does not fit ({late}): running the base")
        return Sides(head, _run_base_only(p), "run")
    if not args.allow_mismatch:
        raise ReportError(baseline.refusal(args.baseline, [late]))
    labels = (*notes, *baseline.label([late], args.baseline))
    return Sides(head, base, source, tuple(dict.fromkeys(labels)))  # the file check may have said it


def _run_both_and_cache(p: Plan, args: argparse.Namespace) -> Sides:
    head, base = run_both(p, common.progress_printer(2 * len(select(p.config, p.options))))
    key = baseline.CacheKey.for_run(p.expected(baseline.installed_torch())) if args.cache else None
    if key is not None and baseline.cacheable(base):
        baseline.Cache(args.cache).store(key, base)
    return Sides(head, base, "run")


def _run_base_only(p: Plan) -> Report:
    with git.worktree(p.top, p.base_sha) as tree:
        return baseline.run_base(tree, p.prefix, p.config, p.options)


def compare(p: Plan, s: Sides, note: str | None) -> Diff:
    renames = diff.relative_renames(git.renames(p.top, p.base_sha), p.prefix)
    notes = (*([note] if note else []), *s.notes)
    return diff.diff(s.head, s.base, p.base_ref, p.base_sha, renames, p.config.ignore, s.source, notes)


def run(args: argparse.Namespace) -> int:
    p = plan(args)
    note = dirty_note(p)
    say(f"comparing with {p.base_ref} at merge-base {p.base_sha[:7]}")
    if note:
        say(note.replace("`", ""))
    s = sides(p, args)
    result = compare(p, s, note)
    common.write_outputs(diff.with_diff(s.head, result), args)
    for line in (*s.notes, *(e.no_baseline for e in result.entrypoints if e.no_baseline)):
        say(line.replace("`", ""))
    return common.verdict(diff.with_diff(s.head, result), args.fail_on or p.config.fail_on)
