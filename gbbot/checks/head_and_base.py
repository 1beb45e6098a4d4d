"""`diff`: run the entrypoints on the working tree and on the merge-base of a ref and HEAD (or take
the base's report from a baseline file or the cache), and report what changed.

The head side is the working tree as it is, uncommitted edits included (what the user is
working on); a note says so when the tree is dirty. The base side is the merge-base, checked out
in a temporary worktree and always removed. The head's .gbbot.yml selects the entrypoints; each side
runs them as its own config defines them.

The walk is three steps: `setup` asks git once for everything the comparison reads of the
repository (edges/git.Snapshot: the merge-base, the status, the changed paths and renames, the
changed lines, the base's config and changed files), and `gather` adds what the baseline file, the
recorded base and the cache know; checks/plan.py decides from those facts, once, which sides run
which entrypoints and where the base comes from; `execute` runs that plan. The base side
comes first, always: known before anything runs, or run whole (its own `setup:` steps, then its
entrypoints as its own config defines them) and held in gbbot's memory before any code of the
change runs, the head's `setup:` steps included. When the base's runs recorded what they read (the
warm server), the head then runs only the entrypoints whose reads the change touches
(gbbot/analysis/reads.py); the others' head results are the base's, and a note says which.
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gbbot.analysis import break_diff, dependence, reads, recompile, report
from gbbot.analysis import dependency_change as dependency
from gbbot.analysis.source import SourceFiles, SourceMap, SourceTree, source_map
from gbbot.checks import baseline, environments, plan
from gbbot.checks import setup as setup_steps
from gbbot.checks.tree import CheckOptions, check, select, skipped
from gbbot.core import words
from gbbot.core.config import CONFIG_NAME, Config, parse_config
from gbbot.core.errors import GbbotError, GitError, ReportError
from gbbot.core.model import DependencyChange, Diff, Mode, PackageChange, Reads, Report, RunOutcome
from gbbot.edges import git, runas
from gbbot.edges.console import say

MAX_LISTED_PATHS = 5
MAX_PATH_CHARS = 200

OnDone = Callable[[RunOutcome], None]
# The number of entrypoint runs about to start → what is called as each one finishes.
Progress = Callable[[int], OnDone]
Log = Callable[[str], None]


def no_progress(total: int) -> OnDone:
    return lambda outcome: None


class SetupRun(enum.Enum):
    """Who runs the config's `setup:` steps for a diff."""

    NONE = "none"  # nobody: the entrypoints run in the environment gbbot was started in
    # the diff, once per side, each side's steps right before its runs (the base's first): in the
    # one environment, or each side in its own when the change touches what they install
    HERE = "here"
    # as HERE, and the head's steps also build the one environment when the sides have their own
    # (the caller's later steps, the fix step's runs, use it)
    SIDES = "sides"


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
    setup: SetupRun = SetupRun.NONE


@dataclass(frozen=True)
class DiffRun:
    report: Report  # the head's report, with its diff
    baseline_notes: tuple[str, ...]  # what the baseline's source asks a reader to know


@dataclass(frozen=True)
class Setup:
    """One comparison: the config root, what git says of it (asked once, before anything runs), the
    base commit's own config, what was asked, and where progress and messages go."""

    root: Path
    repo: git.Snapshot  # its `prefix`: the config root below the top level
    config: Config
    base: Config | None  # the base's config, which defines its entrypoints (None: it has none)
    diff: DiffOptions
    dirty: tuple[str, ...] = ()  # the paths with uncommitted changes, less the files gbbot wrote there
    progress: Progress = no_progress
    log: Log = say

    @property
    def options(self) -> CheckOptions:
        return self.diff.check

    @property
    def mode(self) -> Mode:
        return self.options.mode or self.config.mode

    @property
    def names(self) -> tuple[str, ...]:
        """The selected entrypoints (a shard, --entrypoint), by the head's config."""
        return tuple(e.name for e in select(self.config, self.options))

    @property
    def touched(self) -> tuple[str, ...]:
        """The paths below the config root that differ from the base: committed, uncommitted, untracked."""
        inside = f"{self.repo.prefix}/" if self.repo.prefix else ""
        paths = [*(path for _, path in self.repo.differ), *self.repo.untracked]
        return tuple(path.removeprefix(inside) for path in paths if path.startswith(inside))

    def expected(self, torch_version: str | None) -> baseline.Expected:
        digest = self.base.digest if self.base else None
        return baseline.Expected(self.repo.base, digest, torch_version, self.mode, self.names)


def setup(root: Path, config: Config, options: DiffOptions, progress: Progress = no_progress, log: Log = say) -> Setup:
    repo = git.snapshot(root, options.base, [Path(config.path)])
    if repo is None:
        raise GitError(f"{root} is not inside a git repository: `gbbot diff` compares git commits")
    dirty = uncommitted(repo, options.writes)
    return Setup(root, repo, config, base_config(repo, config), options, dirty, progress, log)


def base_config(repo: git.Snapshot, config: Config) -> Config | None:
    """The config as the base commit has it, which defines the entrypoints its side runs: the file
    at the same place there (a pull request's edits to it are the head's); the same config when it
    lies outside the repository (no commit's to edit); None when the base has none that parses."""
    try:
        where = Path(config.path).resolve().relative_to(repo.top.resolve()).as_posix()
    except ValueError:
        return config
    blob = repo.base_blobs.get(where)
    try:
        return None if blob is None else parse_config(blob.decode("utf-8", "replace"), f"{where} at {repo.base[:7]}")
    except GbbotError:
        return None


def uncommitted(repo: git.Snapshot, writes: tuple[Path, ...]) -> tuple[str, ...]:
    """The paths git sees changed in the working tree, less the files gbbot itself wrote there."""
    own = [w.resolve() for w in writes]
    return tuple(c for c in repo.uncommitted if not _written_by_gbbot((repo.top / c).resolve(), own))


def dirty_note(head_sha: str | None, changed: Sequence[str]) -> str | None:
    if not changed:
        return None
    head = (head_sha or "HEAD")[:7]
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
    return setup_steps.both_sides_note(install_changes(p))


def install_changes(p: Setup) -> tuple[str, ...]:
    """The changed paths below the config root that say what is installed."""
    found = setup_steps.requirement_changes(p.touched, p.config.setup)
    if CONFIG_NAME in p.touched and p.base is not None and p.base.setup != p.config.setup:
        found = (*found, CONFIG_NAME)
    return found


def per_side(p: Setup) -> tuple[str, ...]:
    """The changed paths that give each side an environment of its own: when the diff runs the
    setup (or adds to the caller's), the entrypoints run locally, no --baseline file stands for
    the base, and the change touches what `setup:` installs; () otherwise (one environment, as
    without a change of requirements)."""
    local = p.options.backend is None and p.config.runner.backend == "local"
    if p.diff.setup is SetupRun.NONE or not p.config.setup or not local or p.diff.baseline:
        return ()  # a --baseline file is the base as given
    return install_changes(p)


def _listed(names: Sequence[str]) -> str:
    """The first few names (paths or entrypoints), quoted and cut to a readable length."""
    shown = ", ".join(f"`{n[:MAX_PATH_CHARS]}`" for n in names[:MAX_LISTED_PATHS])
    return shown + (", …" if len(names) > MAX_LISTED_PATHS else "")


@dataclass(frozen=True)
class Sides:
    head: Report
    base: Report
    source: str  # run | cache | file | record
    notes: tuple[str, ...] = ()
    # each side ran in its own environment: the versions that differ between them (None: one
    # environment for both)
    packages: tuple[PackageChange, ...] | None = None


# --- the facts, gathered at the edges ------------------------------------------------------------


def gather(p: Setup) -> plan.Facts:
    """What git, the base's config, the baseline file, the recorded base and the cache say, before
    anything runs. A known base is looked for only when the head is not the merge-base itself, and
    its packages are the head's."""
    same = p.repo.head == p.repo.base and not p.dirty
    own = () if same else per_side(p)
    expected = p.expected(baseline.installed_torch())
    caching = p.diff.cache is not None and baseline.CacheKey.for_run(expected) is not None
    known = None if same or own else known_baseline(p, expected)
    return plan.Facts(
        entrypoints=p.names,
        same_commit=same,
        known=known,
        records_reads=p.options.backend is None and p.config.runner.backend == "local" and p.config.runner.warm,
        caching=caching,
        allow_mismatch=p.diff.allow_mismatch,
        change=None if same else the_change(p),
        own_environments=own,
        redefined=plan.redefined(p.base, p.config, p.names),
    )


def the_change(p: Setup) -> plan.Change:
    """How the working tree differs from the base commit, for what the head may skip."""
    paths = reads.Changes.of(p.repo.base_files, p.repo.differ, p.repo.untracked)
    installs = setup_steps.requirement_changes(sorted(set(p.touched)), p.config.setup)
    return plan.Change(paths, bool(p.dirty), installs, baseline.python_version())


def known_baseline(p: Setup, expected: baseline.Expected) -> plan.Known | None:
    """The base report without running it: from the baseline file, the audit's record, or a
    cache hit."""
    options = p.diff
    if options.baseline:
        found, mismatched = baseline.from_file(options.baseline, expected, options.allow_mismatch)
        return plan.Known(found, plan.KnownFrom.FILE, "file", tuple(baseline.label(mismatched, options.baseline)))
    if options.recorded:
        found = options.recorded.find(p.repo.top, expected, p.log)
        if found is not None:
            return plan.Known(found, plan.KnownFrom.RECORD, options.recorded.name)
    key = baseline.CacheKey.for_run(expected) if options.cache else None
    if key is None:
        if options.cache:
            p.log("torch is not installed where gbbot runs, so the baseline cache is not used")
        return None
    cache = baseline.Cache(options.cache)  # a key means a cache directory was given
    cached = cache.load(key, expected)
    if cached is not None:
        p.log(f"baseline for {p.repo.base[:7]} from the cache ({key.path(cache.directory)})")
        return plan.Known(cached, plan.KnownFrom.CACHE, "cache", reads=cache.load_reads(key))
    return None


def nothing_to_compare_note(p: Setup) -> str:
    return (
        f"Nothing to compare: the merge-base of `{p.diff.base}` and HEAD is HEAD itself "
        f"({p.repo.base[:7]}), so the head and the base are one commit and every break is the same on both. "
        f"To compare a change with `{p.diff.base}`, commit it on a branch of its own."
    )


# --- the plan, executed ----------------------------------------------------------------------------


def execute(to_do: plan.Plan, p: Setup, facts: plan.Facts) -> Sides:
    """Run what the plan says, and nothing it does not: the base side whole, then the head."""
    if to_do.same_commit:
        return _same_commit(to_do, p)
    if to_do.known is not None:
        with baseline.untouched(p.diff.cache, p.log):
            return _with_known(to_do, to_do.known, p)
    own = to_do.base is plan.BaseRun.OWN_ENVIRONMENT
    base = base_side(p, own)
    # kept before any code of the change runs; not from its own environment: a cached base is read
    # as one that ran with the head's packages
    if to_do.keep and not own and baseline.cacheable(base.report):
        _store(p, base.report, base.reads)
    with baseline.untouched(p.diff.cache, p.log):
        if own:
            return _each_in_its_own(p, base)
        _head_setup(p)
        known = plan.Known(base.report, plan.KnownFrom.RUN, "run", reads=base.reads)
        after = plan.after_base(to_do, known, facts)
        return Sides(_head(after, known, p), base.report, "run", _head_notes(after) if after.from_base else ())


@dataclass(frozen=True)
class Sealed:
    """The base side's results, held in gbbot's memory before any code of the change runs."""

    report: Report
    reads: baseline.BaseReads | None  # what its runs read, when they recorded it
    environment: environments.Environment | None = None  # its own, when the sides have their own


def base_side(p: Setup, own: bool) -> Sealed:
    """The base side, whole, before any code of the change runs: its own `setup:` steps (in an
    environment of its own when the change touches what they install, which is then taken back
    from the run-as user; else in the one both sides use), then the selected entrypoints as its
    own config defines them; in a worktree that the run-as user can reach (they read it as that user)."""
    seen, sha = dict[str, Reads | None](), p.repo.base
    steps = p.base.setup if p.base is not None and p.diff.setup is not SetupRun.NONE else ()
    with git.worktree(p.repo.top, sha) as tree, contextlib.ExitStack() as stack:
        runas.reach(tree)
        root, env = tree / p.repo.prefix, None
        if own and p.base is not None and root.is_dir():
            p.log(f"the change touches what setup: installs: the base {sha[:7]} gets an environment of its own")
            env = stack.enter_context(environments.ready(root, p.base, p.diff.cache))
            runas.take_back(env.venv)  # the head's code, which runs as that user too, cannot write it
        elif steps and root.is_dir():
            setup_steps.run(root, p.base)  # type: ignore[arg-type]  # steps means a config
        options = replace(p.options, mode=p.mode, venv=env.venv if env else None)
        defined = baseline.defined(p.base, p.names)
        on_done = baseline.BaseReads.recording(seen, p.progress(len(defined)), sha)
        found = baseline.run_base(tree, sha, p.repo.prefix, p.base, p.names, options, on_done)
        if env is not None and env.built and not baseline.cacheable(found):
            environments.forget(env)  # what it ran with may be why it failed: never kept
        return Sealed(found, baseline.BaseReads.of(seen, tree), env)


def _head_setup(p: Setup) -> None:
    """The head's `setup:` steps, in the one environment: the first code of the change that runs."""
    if p.diff.setup is not SetupRun.NONE and p.config.setup:
        setup_steps.run(p.root, p.config)


def _same_commit(to_do: plan.Plan, p: Setup) -> Sides:
    """The head is the merge-base: its run is the base's too (and, kept, the next PR's base)."""
    seen = dict[str, Reads | None]()
    _head_setup(p)
    head = check(p.root, p.config, p.options, baseline.BaseReads.recording(seen, p.progress(len(to_do.head))))
    base = _base_report(p, head)
    if to_do.keep and baseline.cacheable(base):
        _store(p, base, baseline.BaseReads.of(seen, p.repo.top))
    return Sides(head, base, "run", (nothing_to_compare_note(p),))


def _each_in_its_own(p: Setup, base: Sealed) -> Sides:
    """The change touches what `setup:` installs: the base ran in an environment its steps built in
    its checkout; the head's steps build the head's in the working tree, never kept (the change's
    code built it), and the head runs every entrypoint there (fresh processes with that
    environment's Python: the warm server's children are forks of gbbot's)."""
    if p.diff.setup is SetupRun.SIDES:
        _head_setup(p)  # the one environment, for what runs after the diff
    p.log("and so does the head")
    with environments.ready(p.root, p.config, None) as head_env:
        head = check(p.root, p.config, replace(p.options, venv=head_env.venv), p.progress(len(p.names)))
    if base.environment is None:
        return Sides(head, base.report, "run")
    changes = tuple(PackageChange(*d) for d in environments.differences(base.environment, head_env))
    head = replace(head, packages=ran_with(head_env, changes, "head"))
    base_report = replace(base.report, packages=ran_with(base.environment, changes, "base"))
    return Sides(head, base_report, "run", (own_environments_note(changes, p),), packages=changes)


def ran_with(env: environments.Environment, changes: Sequence[PackageChange], side: str) -> tuple[tuple[str, str], ...]:
    """The versions one side ran with that a reader of the diff needs: torch's, and each that
    differs from the other side's."""
    found = {"torch": env.version("torch")} if env.version("torch") else {}
    for change in changes:
        version = change.base if side == "base" else change.head
        if version:
            found[change.name] = version
    return tuple(found.items())


def own_environments_note(changes: Sequence[PackageChange], p: Setup) -> str:
    where = f"Each side ran in an environment built from its own files ({_listed(install_changes(p))} changed)"
    if not changes:
        return f"{where}; their packages are the same."
    shown = ", ".join(f"{c.name} {c.base or '(none)'} → {c.head or '(none)'}" for c in changes[:MAX_LISTED_PATHS])
    more = ", …" if len(changes) > MAX_LISTED_PATHS else ""
    return f"{where}: {shown}{more}."


def _store(p: Setup, base: Report, base_reads: baseline.BaseReads | None) -> None:
    key = baseline.CacheKey.for_run(p.expected(baseline.installed_torch()))
    if key is not None and p.diff.cache is not None:
        baseline.Cache(p.diff.cache).store(key, base, base_reads)


def _with_known(to_do: plan.Plan, known: plan.Known, p: Setup) -> Sides:
    """Only the head runs; then what only its run can tell (the torch its entrypoints really
    imported) is checked against the baseline, and the plan says what a misfit leads to: never a
    run of the base, which would come after the change's code."""
    recorded = p.diff.recorded
    _head_setup(p)
    head = _head(to_do, known, p)
    if known.origin is plan.KnownFrom.RECORD and recorded is not None:
        late, base = recorded.settled(known.report, head)
    else:
        late, base = baseline.torch_mismatch(known.report, head.torch_version), known.report
    if late is None:
        return Sides(head, base, known.source, (*known.notes, *_head_notes(to_do)))
    if to_do.from_base:  # what was taken from an unfit base is no result of the head
        head = check(p.root, p.config, p.options, p.progress(len(to_do.from_base) + len(to_do.head)))
    if to_do.unfit is plan.Unfit.UNKNOWN:
        what = recorded.what if recorded is not None and known.origin is plan.KnownFrom.RECORD else "cached baseline"
        p.log(f"the {what} does not fit ({late}): there is no base to compare with")
        unknown = f"the {what} does not fit: {late}"
        return Sides(head, _base_report(p, head, unknown), known.source)
    if to_do.unfit is plan.Unfit.REFUSE:
        raise ReportError(baseline.refusal(p.diff.baseline or "", [late]))
    labels = (*known.notes, *baseline.label([late], p.diff.baseline or ""))
    return Sides(head, base, known.source, tuple(dict.fromkeys(labels)))  # the file check may have said it


def _head(to_do: plan.Plan, known: plan.Known, p: Setup) -> Report:
    """The head's report: its runs of what the change reaches, the base's results for the rest."""
    if not to_do.from_base:
        return check(p.root, p.config, p.options, p.progress(len(to_do.head)))
    for name, reason in to_do.head_runs.items():
        p.log(f"the head runs `{name}`: {reason}")
    only = replace(p.options, only=to_do.head, shard=None)  # already this shard's
    ran = check(p.root, p.config, only, p.progress(len(to_do.head))) if to_do.head else None
    found = {e.name: e for e in ran.entrypoints} if ran else {}
    for e in known.report.entrypoints:
        if e.name in to_do.from_base:
            found[e.name] = replace(e, from_base=to_do.from_base[e.name])
    entries = [found[name] for name in p.names if name in found]
    version = (ran.torch_version if ran else None) or known.report.torch_version
    shard = str(p.options.shard) if p.options.shard else None
    return report.new_report(entries, p.mode, version, p.repo.head, p.config.digest, shard)


def _head_notes(to_do: plan.Plan) -> tuple[str, ...]:
    """What the head took from a known base, and why the rest ran."""
    ran = list(to_do.head_runs.items())
    if not to_do.from_base:
        reasons = {reason for _, reason in ran}
        if len(reasons) == 1:
            return (f"The head ran every entrypoint: {reasons.pop()}.",) if ran else ()
        return ("The head ran every entrypoint: " + _why_each(ran) + ".",)
    total = len(to_do.from_base) + len(to_do.head)
    said = f"{len(to_do.from_base)} of {words.plural(total, 'entrypoint')} not reached by this change"
    said += f": results from the base ({_listed(list(to_do.from_base))})"
    return (f"{said}; {_why_each(ran)}." if ran else f"{said}.",)


def _why_each(ran: Sequence[tuple[str, str]]) -> str:
    shown = "; ".join(f"`{name[:MAX_PATH_CHARS]}` ran: {reason}" for name, reason in ran[:MAX_LISTED_PATHS])
    return shown + ("; …" if len(ran) > MAX_LISTED_PATHS else "")


def _base_report(p: Setup, head: Report, unknown: str | None = None) -> Report:
    """A base report of the head's entries: the head's run itself (the same commit), or, with
    `unknown` (why there is no base), each entry skipped for that reason."""
    entries = [skipped(e.name, unknown) if unknown else e for e in head.entrypoints]
    shard = str(p.options.shard) if p.options.shard else None
    digest = p.base.digest if p.base else None
    return report.new_report(entries, p.mode, head.torch_version, p.repo.base, digest, shard)


def check_and_keep(
    root: Path, config: Config, options: CheckOptions, cache: Path | None, on_done: OnDone | None = None
) -> Report:
    """`gbbot check`, and with a cache directory, its report and its runs' reads kept there as the
    base of the pull requests that will branch from this commit (a push to the base branch), so
    that theirs runs only what they reach. Kept only for a clean tree at a commit."""
    seen: dict[str, Reads | None] = {}
    found = check(root, config, options, baseline.BaseReads.recording(seen, on_done or no_progress(0)))
    top = git.toplevel(root) if cache is not None else None
    if cache is None or top is None or found.commit is None or not baseline.cacheable(found):
        return found
    if git.changed_paths(top):
        return found
    names = tuple(e.name for e in select(config, options))
    mode = options.mode or config.mode
    key = baseline.CacheKey.for_run(
        baseline.Expected(found.commit, config.digest, baseline.installed_torch(), mode, names)
    )
    if key is not None:
        baseline.Cache(cache).store(key, found, baseline.BaseReads.of(seen, top))
    return found


def commit_source(top: Path, prefix: str, commit: str, renames: Mapping[str, str]) -> Callable[[str], SourceMap | None]:
    """`commit`'s source of a file, by its later path below the config root `prefix` (`renames`:
    old path → later path), read from git objects; None when the commit has no such file."""
    old = {new: before for before, new in renames.items()}

    @functools.cache
    def get(path: str) -> SourceMap | None:
        where = "/".join(part for part in (prefix, old.get(path, path)) if part)
        entry = git.tree_entries(top, commit, [where]).get(where)
        if entry is None or not entry[0].startswith("100"):
            return None
        (blob,) = git.read_blobs(top, [entry[1]])
        return source_map(blob.decode("utf-8", "replace"))

    return get


def changed_source(p: Setup, renames: Mapping[str, str]) -> dependence.Change:
    """The change as the diff's rule reads it: the head's source (the working tree), the base's (of
    the files that differ, by their head paths: `renames`, old path → head path, followed; read from
    git objects before anything ran), and the files that differ (committed, uncommitted, untracked)."""
    inside, old = f"{p.repo.prefix}/" if p.repo.prefix else "", {new: before for before, new in renames.items()}
    base = {path: p.repo.base_blobs.get(inside + old.get(path, path)) for path in p.touched}
    held = SourceFiles({path: blob for path, blob in base.items() if blob is not None})
    only_here = dependence.touched_paths(p.repo.untracked, p.repo.prefix)
    return dependence.Change(SourceTree(p.root.resolve()).get, held.get, frozenset(p.touched), only_here)


def compare(p: Setup, s: Sides, note: str | None) -> Diff:
    renames = break_diff.relative_renames(p.repo.renames, p.repo.prefix)
    notes = (*([note] if note else []), *s.notes)
    change = changed_source(p, renames)
    in_head, in_base = dependence.line_in(change.head), dependence.unchanged(change)
    gaps = functools.partial(dependence.gap, change=change)
    how = break_diff.Comparison(
        p.diff.base, p.repo.base, renames, p.config.ignore, s.source, notes, in_head, in_base, gaps
    )
    return break_diff.diff(s.head, s.base, how)


def run_diff(
    root: Path, config: Config, options: DiffOptions, progress: Progress = no_progress, log: Log = say
) -> DiffRun:
    """The head's report with its diff against the merge-base of `options.base` and HEAD."""
    p = setup(root, config, options, progress, log)
    note = dirty_note(p.repo.head, p.dirty)
    log(f"comparing with {p.diff.base} at merge-base {p.repo.base[:7]}")
    if note:
        log(note.replace("`", ""))
    facts = gather(p)
    s = execute(plan.decide(facts), p, facts)
    packages = packages_note(p) if s.packages is None else None
    if packages:
        s = replace(s, notes=(*s.notes, packages))
    found = compare(p, s, note)
    if s.packages is not None:
        found = replace(found, dependencies=attributed(p, found, s))
    return DiffRun(break_diff.with_diff(s.head, found, s.base), s.notes)


def attributed(p: Setup, found: Diff, s: Sides) -> DependencyChange:
    """Which breaks and recompilation problems that came or went the dependencies brought, which
    the code change did."""
    head, base = dependency.changed_lines(p.repo.lines, p.repo.prefix)
    for path in dependence.touched_paths(p.repo.untracked, p.repo.prefix):
        head[path] = None
    code = any(path.endswith(".py") for path in (*head, *base))
    problems = [recompile.problems(recompile.all_recompiles(side)) for side in (s.head, s.base)]
    return dependency.attribute(found, s.packages or (), head, base, code, *problems)
