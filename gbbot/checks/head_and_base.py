"""`diff`: run the entrypoints on the working tree and on the merge-base of a ref and HEAD (or take
the base's report from a baseline file or the cache), and report what changed.

The head side is the working tree as it is, uncommitted edits included (what the user is
working on); a note says so when the tree is dirty. The base side is the merge-base, checked out
in a temporary worktree and always removed. The head's .gbbot.yml defines both sides' entrypoints.
When the head's runs recorded what they read (the warm server), the head runs first and the base
runs only the entrypoints whose reads the change touches (gbbot/analysis/reads.py); the others' base
results are the head's, and a note says which.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from gbbot.analysis import break_diff, reads, report
from gbbot.analysis.source import SourceMap, SourceTree, source_map
from gbbot.checks import baseline
from gbbot.checks import setup as setup_steps
from gbbot.checks.tree import CheckOptions, check, select
from gbbot.core.config import Config
from gbbot.core.errors import GitError, ReportError
from gbbot.core.model import Diff, Reads, Report, RunOutcome, Status
from gbbot.edges import git
from gbbot.edges.console import say

MAX_LISTED_PATHS = 5
MAX_PATH_CHARS = 200

OnDone = Callable[[RunOutcome], None]
# The number of entrypoint runs about to start → what is called as each one finishes.
Progress = Callable[[int], OnDone]
Log = Callable[[str], None]


def no_progress(total: int) -> OnDone:
    return lambda outcome: None


@dataclass(frozen=True)
class DiffOptions:
    base: str  # compare with the merge-base of this ref and HEAD, e.g. origin/main
    check: CheckOptions = field(default_factory=CheckOptions)
    baseline: Path | None = None  # a report already made for the merge-base: do not run it
    cache: Path | None = None  # keep base reports here and reuse them
    allow_mismatch: bool = False  # use a baseline made for another commit, torch, mode or config
    recorded: baseline.RecordedBase | None = None  # a kept report of the merge-base, tried before running it
    # what gbbot itself writes into the tree (--json, --markdown, --cache, --keep-traces): an earlier
    # run's files there are not the user's uncommitted changes
    writes: tuple[Path, ...] = ()


@dataclass(frozen=True)
class DiffRun:
    report: Report  # the head's report, with its diff
    baseline_notes: tuple[str, ...]  # what the baseline's source asks a reader to know


@dataclass(frozen=True)
class Setup:
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


def setup(root: Path, config: Config, options: DiffOptions) -> Setup:
    top = git.toplevel(root)
    if top is None:
        raise GitError(f"{root} is not inside a git repository: `gbbot diff` compares git commits")
    base_sha = git.merge_base(top, options.base)
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    return Setup(root, top, "" if prefix == "." else prefix, options.base, base_sha, config, options.check)


def dirty_note(p: Setup, writes: tuple[Path, ...] = ()) -> str | None:
    own = [w.resolve() for w in writes]
    changed = [c for c in git.changed_paths(p.top) if not _written_by_gbbot((p.top / c).resolve(), own)]
    if not changed:
        return None
    head = (git.head_sha(p.top) or "HEAD")[:7]
    return (
        f"The head side is the working tree with uncommitted changes ({len(changed)} "
        f"path{'s' * (len(changed) != 1)}: {_listed(changed)}), "
        f"not commit {head}."
    )


def _written_by_gbbot(path: Path, own: list[Path]) -> bool:
    """`path` is one of gbbot's files, or inside its directory; an untracked directory git shows
    whole (`out/`) is when everything in it is."""
    if path.is_dir() and not any(path == w or w in path.parents for w in own):
        files = [f for f in path.rglob("*") if f.is_file()]
        return bool(files) and all(_written_by_gbbot(f, own) for f in files)
    return any(path == w or w in path.parents for w in own)


def packages_note(p: Setup) -> str | None:
    """With setup: steps, both sides run in the one environment they built from the head's
    files: said when the change touches what is installed (a requirements file, pyproject.toml,
    a file a step names)."""
    if not p.config.setup:
        return None
    changed = [path for _, path in git.name_status(p.top, p.base_sha)] + list(git.untracked(p.top))
    inside = f"{p.prefix}/" if p.prefix else ""
    relative = [path.removeprefix(inside) if inside else path for path in changed]
    return setup_steps.both_sides_note(setup_steps.requirement_changes(relative, p.config.setup))


def _listed(names: Sequence[str]) -> str:
    """The first few names (paths or entrypoints), quoted and cut to a readable length."""
    shown = ", ".join(f"`{n[:MAX_PATH_CHARS]}`" for n in names[:MAX_LISTED_PATHS])
    return shown + (", …" if len(names) > MAX_LISTED_PATHS else "")


def split_jobs(jobs: int) -> tuple[int, int]:
    """(head, base) share of --jobs when both sides run at once."""
    return max(1, (jobs + 1) // 2), max(1, jobs // 2)


def run_both(p: Setup, on_done: OnDone) -> tuple[Report, Report]:
    """Head and base at the same time, --jobs shared between them. The worktree is opened here, in
    the calling thread, so that Ctrl-C or SIGTERM removes it even while runs are in flight."""
    on_base = _labelled(on_done, p.base_sha)
    with git.worktree(p.top, p.base_sha) as tree:
        head_jobs, base_jobs = split_jobs(p.options.jobs)
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gbbot-side")
        try:
            base_options = replace(p.options, jobs=base_jobs)
            base_future = pool.submit(baseline.run_base, tree, p.prefix, p.config, base_options, on_base)
            head = check(p.root, p.config, replace(p.options, jobs=head_jobs), on_done)
            return head, base_future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _labelled(on_done: OnDone, sha: str) -> OnDone:
    return lambda outcome: on_done(replace(outcome, name=f"{outcome.name} (base {sha[:7]})"))


@dataclass(frozen=True)
class Sides:
    head: Report
    base: Report
    source: str  # run | cache | file | record
    notes: tuple[str, ...] = ()
    from_head: tuple[str, ...] = ()  # entrypoints whose base result is the head's (not run on the base)


@dataclass(frozen=True)
class _Run:
    """One comparison under way: the setup, what was asked, and where progress and messages go."""

    setup: Setup
    options: DiffOptions
    progress: Progress
    log: Log

    def runs(self, sides: int) -> OnDone:
        return self.progress(sides * len(select(self.setup.config, self.setup.options)))


def known_baseline(r: _Run) -> tuple[Report, str, list[str]] | None:
    """The base report without running it: from the baseline file, the audit's record, or a
    cache hit."""
    p, options = r.setup, r.options
    expected = p.expected(baseline.installed_torch())
    if options.baseline:
        found, mismatched = baseline.from_file(options.baseline, expected, options.allow_mismatch)
        return found, "file", baseline.label(mismatched, options.baseline)
    if options.recorded:
        found = options.recorded.find(p.top, expected, r.log)
        if found is not None:
            return found, options.recorded.name, []
    key = baseline.CacheKey.for_run(expected) if options.cache else None
    if key is None:
        if options.cache:
            r.log("torch is not installed where gbbot runs, so the baseline cache is not used")
        return None
    cache = baseline.Cache(options.cache)  # a key means a cache directory was given
    cached = cache.load(key, expected)
    if cached is not None:
        r.log(f"baseline for {p.base_sha[:7]} from the cache ({key.path(cache.directory)})")
        return cached, "cache", []
    return None


def head_is_base(p: Setup) -> bool:
    """The merge-base is the commit checked out, unchanged: a commit made on the base branch (or a
    diff asked for on it). Running the base would run the same code again."""
    return git.head_sha(p.top) == p.base_sha and not git.changed_paths(p.top)


def nothing_to_compare_note(p: Setup) -> str:
    return (
        f"Nothing to compare: the merge-base of `{p.base_ref}` and HEAD is HEAD itself "
        f"({p.base_sha[:7]}), so the head and the base are one commit and every break is the same on both. "
        f"To compare a change with `{p.base_ref}`, commit it on a branch of its own."
    )


def sides(r: _Run) -> Sides:
    p = r.setup
    if head_is_base(p):
        head = check(p.root, p.config, p.options, r.runs(1))  # the base is this same run
        return Sides(head, _base_report(p, head, None, {}), "run", (nothing_to_compare_note(p),))
    known = known_baseline(r)
    return _run_both_and_cache(r) if known is None else _with_known(r, *known)


def _with_known(r: _Run, base: Report, source: str, notes: list[str]) -> Sides:
    """Only the head runs; then what only its run can tell (the torch its entrypoints really
    imported) is checked against the baseline."""
    p = r.setup
    head = check(p.root, p.config, p.options, r.runs(1))
    recorded = r.options.recorded
    if recorded is not None and source == recorded.name:
        late, base = recorded.settled(base, head)
    else:
        late = baseline.torch_mismatch(base, head.torch_version)
    if late is None:
        return Sides(head, base, source, tuple(notes))
    if source == "cache" or (recorded is not None and source == recorded.name):
        what = "cached baseline" if source == "cache" else recorded.what
        r.log(f"the {what} does not fit ({late}): running the base")
        return Sides(head, _run_base_only(p), "run")
    if not r.options.allow_mismatch:
        raise ReportError(baseline.refusal(r.options.baseline or "", [late]))
    labels = (*notes, *baseline.label([late], r.options.baseline or ""))
    return Sides(head, base, source, tuple(dict.fromkeys(labels)))  # the file check may have said it


def _run_both_and_cache(r: _Run) -> Sides:
    p, cache = r.setup, r.options.cache
    from_head: tuple[str, ...] = ()
    if head_first(p):
        head, base, notes, from_head = head_then_base(r)
    else:
        (head, base), notes = run_both(p, r.runs(2)), ()
    key = baseline.CacheKey.for_run(p.expected(baseline.installed_torch())) if cache else None
    # A base made partly of the head's results is no report of the base: it would outlive this
    # PR under the base's SHA, and the head's code wrote the record that let the base be skipped.
    if key is not None and baseline.cacheable(base) and not from_head:
        baseline.Cache(cache).store(key, base)
    return Sides(head, base, "run", notes, from_head)


def head_first(p: Setup) -> bool:
    """Whether the head runs before the base, so that the base runs only what the change can
    affect. Worth it when the runs record what they read (the warm server), and never slower one
    at a time; otherwise, with --jobs to spare, both sides run at once."""
    warm = p.options.backend is None and p.config.runner.backend == "local" and p.config.runner.warm
    return warm or p.options.jobs < 2


# Statuses the same inputs give again: a timeout or a crash may not.
REPEATABLE = (Status.OK, Status.NO_COMPILE)


def head_then_base(r: _Run) -> tuple[Report, Report, tuple[str, ...], tuple[str, ...]]:
    """The head, then the base for only the entrypoints whose runs read something the change
    touches (gbbot/analysis/reads.py); the others' base results are the head's."""
    p = r.setup
    seen: dict[str, Reads | None] = {}
    on_head = r.progress(len(select(p.config, p.options)))

    def collect(outcome: RunOutcome) -> None:
        seen[outcome.name] = outcome.reads
        on_head(outcome)

    head = check(p.root, p.config, p.options, collect)
    why = rerun_reasons(p, head, seen)
    same = [e.name for e in head.entrypoints if e.name not in why]
    if same:  # the skipping is at work: say why each of the others runs on the base
        for name, reason in why.items():
            r.log(f"the base runs `{name}` again: {reason}")
    ran = _run_base_for(p, list(why), r.progress(len(why))) if why else None
    return head, _base_report(p, head, ran, why), _reuse_notes(same, len(head.entrypoints)), tuple(same)


def rerun_reasons(p: Setup, head: Report, seen: Mapping[str, Reads | None]) -> dict[str, str]:
    """Entrypoint name → why its base must run; those missing may take the head's result."""
    why = {e.name: f"it ended {e.status.value}" for e in head.entrypoints if e.status not in REPEATABLE}
    rest = [e.name for e in head.entrypoints if e.name not in why]
    if not any(seen.get(name) for name in rest):  # nothing to compare: spare the git calls
        return {**why, **{name: reads.NOT_RECORDED for name in rest}}
    base_files, name_status = git.tree_files(p.top, p.base_sha), git.name_status(p.top, p.base_sha)
    changes = reads.Changes.of(base_files, name_status, git.untracked(p.top))
    tops = tuple(dict.fromkeys((str(p.top), str(p.top.resolve()))))
    for name in rest:
        reason = reads.why_rerun(seen.get(name), changes, tops)
        if reason:
            why[name] = reason
    return why


def _run_base_for(p: Setup, names: Sequence[str], on_done: OnDone) -> Report:
    only = replace(p.options, only=tuple(names), shard=None)  # already this shard's
    with git.worktree(p.top, p.base_sha) as tree:
        return baseline.run_base(tree, p.prefix, p.config, only, _labelled(on_done, p.base_sha))


def _base_report(p: Setup, head: Report, ran: Report | None, why: Mapping[str, str]) -> Report:
    by_name = {e.name: e for e in ran.entrypoints} if ran else {}
    entries = [by_name[e.name] if e.name in why else e for e in head.entrypoints]
    version = (ran.torch_version if ran else None) or head.torch_version
    mode = p.options.mode or p.config.mode
    shard = str(p.options.shard) if p.options.shard else None
    return report.new_report(entries, mode, version, p.base_sha, p.config.digest, shard)


def _reuse_notes(same: Sequence[str], total: int) -> tuple[str, ...]:
    if not same:
        return ()
    return (
        f"The base was not run again for {len(same)} of {total} entrypoint{'s' * (total != 1)} ({_listed(same)}): "
        "they read no file this change touches, so their base results are the head's.",
    )


def _run_base_only(p: Setup) -> Report:
    with git.worktree(p.top, p.base_sha) as tree:
        return baseline.run_base(tree, p.prefix, p.config, p.options)


def base_source(p: Setup, renames: Mapping[str, str]) -> Callable[[str], SourceMap | None]:
    """The base commit's source of a file, by its head path below the config root (read from git
    objects: the base's worktree is gone by now); None when the base has no such file."""
    old = {new: before for before, new in renames.items()}

    @functools.cache
    def get(path: str) -> SourceMap | None:
        where = "/".join(part for part in (p.prefix, old.get(path, path)) if part)
        entry = git.tree_entries(p.top, p.base_sha, [where]).get(where)
        if entry is None or not entry[0].startswith("100"):
            return None
        (blob,) = git.read_blobs(p.top, [entry[1]])
        return source_map(blob.decode("utf-8", "replace"))

    return get


def compare(p: Setup, s: Sides, note: str | None) -> Diff:
    renames = break_diff.relative_renames(git.renames(p.top, p.base_sha), p.prefix)
    notes = (*([note] if note else []), *s.notes)
    in_head = break_diff.code_in(SourceTree(p.root.resolve()).get)
    in_base = break_diff.code_in(base_source(p, renames))
    found = break_diff.diff(
        s.head, s.base, p.base_ref, p.base_sha, renames, p.config.ignore, s.source, notes, in_head, in_base
    )
    marked = tuple(replace(e, base_from_head=e.name in s.from_head) for e in found.entrypoints)
    return replace(found, entrypoints=marked)


def run_diff(
    root: Path, config: Config, options: DiffOptions, progress: Progress = no_progress, log: Log = say
) -> DiffRun:
    """The head's report with its diff against the merge-base of `options.base` and HEAD."""
    p = setup(root, config, options)
    note = dirty_note(p, options.writes)
    log(f"comparing with {p.base_ref} at merge-base {p.base_sha[:7]}")
    if note:
        log(note.replace("`", ""))
    s = sides(_Run(p, options, progress, log))
    packages = packages_note(p)
    if packages:
        s = replace(s, notes=(*s.notes, packages))
    return DiffRun(break_diff.with_diff(s.head, compare(p, s, note)), s.notes)
