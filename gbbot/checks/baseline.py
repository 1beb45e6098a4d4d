"""The base side of a diff: a report for the merge-base, from a file, the cache, or a run of the
merge-base checked out in a temporary worktree.

A baseline made under other conditions (another commit, torch version, mode or config) is never
used silently: `mismatches` names every difference, and the caller refuses it or labels it.

Cache layout: `DIR/<base sha>/<mode>-<key>.json`, one file per (base commit, config digest, torch
version, mode, entrypoint selection), and beside it `<mode>-<key>.reads.json` when the base's runs
recorded what they read (the warm server): what lets the head skip what a change cannot reach.
A stale entry is simply never looked up, so a CI cache (`actions/cache`) can restore the whole
directory by a prefix key and gbbot picks what fits.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from gbbot.analysis import reads, report
from gbbot.backends import reads_record
from gbbot.checks.tree import CheckOptions, check
from gbbot.core import untrusted_json
from gbbot.core.config import Config
from gbbot.core.errors import ReportError
from gbbot.core.model import Mode, Reads, Report, RunOutcome, Status

OnDone = Callable[[RunOutcome], None]
KEEP_BASES = 20  # base commits kept in a cache directory, most recently used first
MAX_READS_ENTRYPOINTS = 500  # entrypoints whose reads a kept base holds; past it none are kept
MAX_READS_BYTES = 64 << 20


# `__version__ = '2.14.1+cu130'` in torch/version.py (an annotation allowed)
TORCH_VERSION_RE = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"\n]+)['"]""", re.MULTILINE)


def installed_torch() -> str | None:
    """The torch build the entrypoints will import, named as `torch.__version__` names it, which is
    what a report holds (`2.14.1+cu130`; the package metadata of a CUDA build says `2.14.1`): read
    from the installed package's `version.py`, without importing torch (that alone costs seconds);
    its metadata's version where that file says nothing."""
    spec = importlib.util.find_spec("torch")
    for where in (spec.submodule_search_locations or ()) if spec else ():
        try:
            found = TORCH_VERSION_RE.search((Path(where) / "version.py").read_text(errors="replace")[:8192])
        except OSError:
            continue
        if found:
            return found.group(1)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Expected:
    """What a baseline for this comparison must have been made with."""

    commit: str
    config_hash: str | None  # the base's config's (None: it has none)
    torch_version: str | None  # None: not known before the head has run
    mode: Mode
    entrypoints: tuple[str, ...]  # the names this run selects (a shard, --entrypoint)


class RecordedBase(Protocol):
    """A base report that another job already made and kept (the nightly audit's record of the
    merge-base, say), injected by the caller so that the diff need not know where it is kept."""

    name: str  # the report's baseline_source when it is used, e.g. "record"
    what: str  # how the log names it, e.g. "audit record"

    def find(self, top: Path, expected: Expected, log: Callable[[str], None]) -> Report | None:
        """The kept report of `expected.commit` that fits `expected`, or None (logging why)."""
        ...

    def settled(self, base: Report, head: Report) -> tuple[str | None, Report]:
        """What only the head's run can show against it (why it does not fit, or None), and the
        base to compare with the head."""
        ...


def mismatches(baseline: Report, expected: Expected) -> list[str]:
    """Every way `baseline` differs from what the comparison needs, in words."""
    found = []
    if baseline.commit != expected.commit:
        made_for = (baseline.commit or "unknown")[:7]
        found.append(f"it was made for commit {made_for}, not the merge-base {expected.commit[:7]}")
    torch = torch_mismatch(baseline, expected.torch_version)
    if torch:
        found.append(torch)
    if baseline.mode is not expected.mode:
        made = f"{baseline.mode.value} mode" if baseline.mode else "an unknown mode (parsed from logs)"
        found.append(f"it was made in {made}, the head runs in {expected.mode.value} mode")
    if baseline.config_hash != expected.config_hash:
        found.append(
            f"it was made with another .gbbot.yml (config hash {baseline.config_hash or 'unknown'}, "
            f"the merge-base's is {expected.config_hash or 'none: it has no config'})"
        )
    return found


def torch_mismatch(baseline: Report, torch_version: str | None) -> str | None:
    """A baseline from another torch release is not compared: which breaks happen, and where,
    changes between releases, so the difference would be torch's, not the PR's. Unknown on either
    side (nothing imported torch) is no evidence of a difference."""
    if torch_version and baseline.torch_version and baseline.torch_version != torch_version:
        return f"it was made with torch {baseline.torch_version}, the head runs torch {torch_version}"
    return None


def cacheable(base: Report) -> bool:
    """Only a base whose every entrypoint ran cleanly and compiled is kept: one that failed,
    crashed, timed out, was skipped or compiled nothing says nothing a later run should believe."""
    return bool(base.entrypoints) and all(e.status is Status.OK for e in base.entrypoints)


@dataclass(frozen=True)
class BaseReads:
    """What each base entrypoint read, kept beside its report: paths below the repository's top
    level (see reads.rooted), and the Python the runs used (another Python reads other files)."""

    python: str
    entrypoints: Mapping[str, Reads]  # an entrypoint missing here recorded nothing

    @classmethod
    def of(cls, seen: Mapping[str, Reads | None], top: Path) -> BaseReads | None:
        """From the records of a run in the checkout at `top` (a record may name it as given or as
        resolved); None when nothing was recorded."""
        tops = tuple(dict.fromkeys((str(top), str(top.resolve()))))
        kept = {name: reads.rooted(found, tops) for name, found in seen.items() if found is not None}
        return cls(python_version(), kept) if kept else None

    @staticmethod
    def recording(seen: dict[str, Reads | None], on_done: OnDone, base: str = "") -> OnDone:
        """`on_done`, keeping each run's record of its reads in `seen` under the entrypoint's name
        (for `of`); with `base`, the commit they ran at, each run is told as that base's."""

        def record(outcome: RunOutcome) -> None:
            seen[outcome.name] = outcome.reads
            on_done(replace(outcome, name=f"{outcome.name} (base {base[:7]})") if base else outcome)

        return record

    def dumps(self) -> str:
        found = {name: reads_record.to_data(r) for name, r in sorted(self.entrypoints.items())}
        return json.dumps({"python": self.python, "entrypoints": found}, ensure_ascii=False) + "\n"

    @classmethod
    def parse(cls, text: str) -> BaseReads:
        """Bounded, checked field by field, like a child's own record (`untrusted_json.Refused`)."""
        values = MAX_READS_ENTRYPOINTS * reads_record.BOUNDS.values
        data = untrusted_json.loads(text, untrusted_json.Bounds(depth=5, values=values, number_chars=8))
        if not isinstance(data, dict) or not isinstance(data.get("python"), str) or len(data["python"]) > 40:
            raise untrusted_json.Refused("not a kept record of reads")
        found = data.get("entrypoints")
        if not isinstance(found, dict) or len(found) > MAX_READS_ENTRYPOINTS:
            raise untrusted_json.Refused(f"`entrypoints` is not an object of at most {MAX_READS_ENTRYPOINTS}")
        return cls(data["python"], {str(name): reads_record.from_data(r) for name, r in found.items()})


def python_version() -> str:
    """The Python gbbot runs under: the entrypoints' too (`python` is the one on its PATH)."""
    return platform.python_version()


# --- the cache directory -----------------------------------------------------------------------


@dataclass(frozen=True)
class CacheKey:
    base_sha: str
    config_hash: str | None
    torch_version: str
    mode: Mode
    entrypoints: tuple[str, ...]

    @classmethod
    def for_run(cls, expected: Expected) -> CacheKey | None:
        """None when the torch version is unknown: a key without it could hand back a baseline
        made with another torch."""
        if expected.torch_version is None:
            return None
        names = tuple(sorted(expected.entrypoints))
        return cls(expected.commit, expected.config_hash, expected.torch_version, expected.mode, names)

    @property
    def digest(self) -> str:
        fields = [self.base_sha, self.config_hash, self.torch_version, self.mode.value, list(self.entrypoints)]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]

    def path(self, directory: Path) -> Path:
        return directory / self.base_sha / f"{self.mode.value}-{self.digest}.json"


@dataclass(frozen=True)
class Cache:
    directory: Path

    def load(self, key: CacheKey, expected: Expected) -> Report | None:
        """The cached baseline, or None when there is none or it does not fit after all (a
        damaged file, or one written by hand under the wrong name)."""
        path = key.path(self.directory)
        if not path.exists():
            return None
        try:
            cached = report.load(path)
        except ReportError:
            return None
        if mismatches(cached, expected):
            return None
        path.parent.touch()  # most recently used, for prune
        return cached

    def load_reads(self, key: CacheKey) -> BaseReads | None:
        """What the cached base's runs read, or None when none was kept (or it cannot be read)."""
        path = reads_path(key.path(self.directory))
        try:
            if path.stat().st_size > MAX_READS_BYTES:
                return None
            return BaseReads.parse(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, untrusted_json.Refused):
            return None

    def store(self, key: CacheKey, base: Report, base_reads: BaseReads | None = None) -> Path:
        path = key.path(self.directory)
        report.write(base, path)
        kept = reads_path(path)
        if base_reads is not None:
            kept.write_text(base_reads.dumps(), encoding="utf-8")
        else:
            kept.unlink(missing_ok=True)  # an older record does not describe this report
        path.parent.touch()  # most recently used, for prune
        self.prune()
        return path

    def prune(self, keep: int = KEEP_BASES) -> None:
        """Drop the least recently used base commits beyond `keep`, so the directory a CI cache
        carries from run to run stays small."""
        bases = sorted((p for p in self.directory.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
        for stale in bases[:-keep] if len(bases) > keep else ():
            shutil.rmtree(stale, ignore_errors=True)


# What a cache directory holds, by path below it: (inode, change time, size), for a directory its
# inode alone (its change time moves with its entries, which are there themselves).
Snapshot = Mapping[str, tuple[int, int, int]]


def snapshot(directory: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry of `directory` (links not followed) with what no process can set back once it
    changed: taken before any code of the change runs. Empty when there is no such directory."""
    found: dict[str, tuple[int, int, int]] = {}
    try:
        top = os.lstat(directory)
    except FileNotFoundError:
        return found
    found["."] = (top.st_ino, 0, 0)
    if not stat.S_ISDIR(top.st_mode):
        return found
    for parent, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(parent, name)
            st = os.lstat(path)
            kept = (st.st_ino, 0, 0) if stat.S_ISDIR(st.st_mode) else (st.st_ino, st.st_ctime_ns, st.st_size)
            found[os.path.relpath(path, directory)] = kept
    return found


def sweep(directory: Path, before: Snapshot) -> tuple[str, ...]:
    """Remove from `directory` each part a later run reads whole (a base commit's reports, one
    environment) in which anything was added, changed or removed since `before`: what the
    change's code wrote there is never read as gbbot's. All of it when the directory itself was
    replaced. The parts removed, by path."""
    now = snapshot(directory)
    changed = {rel for rel in now.keys() | before.keys() if now.get(rel) != before.get(rel)}
    if "." in changed:
        _remove(directory)
        return (".",) if now else ()
    parts = sorted({_part(rel) for rel in changed})
    for part in parts:
        _remove(directory / part)
        _remove(directory / f"{part}.lock")  # an environment's lock file goes with it
    return tuple(parts)


@contextlib.contextmanager
def untouched(cache: Path | None, log: Callable[[str], None]) -> Iterator[None]:
    """Around code of a change (its `setup:` steps, its runs, a fix's verification): the cache
    directory as it is before is what a later run may read; whatever that code added, changed or
    removed there (as gbbot's own user, or by replacing a directory it may rename) is removed
    afterwards, saying so."""
    before = snapshot(cache) if cache is not None else None
    try:
        yield
    finally:
        if cache is not None and before is not None:
            for part in sweep(cache, before):
                log(f"removed `{part}` from the cache {cache}: it changed while the change's code ran")


def _part(rel: str) -> str:
    """The part of the cache a path belongs to: `<sha>/…` for reports, `environments/<key>` for an
    environment (its `.lock` file included)."""
    parts = rel.split(os.sep)
    if parts[0] == "environments" and len(parts) > 1:
        return os.path.join(parts[0], parts[1].removesuffix(".lock"))
    return parts[0]


def _remove(path: Path) -> None:
    """`path` gone, whatever it is; a link is removed, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def reads_path(report_path: Path) -> Path:
    return report_path.with_name(report_path.stem + ".reads.json")


# --- running the merge-base --------------------------------------------------------------------


def base_options(options: CheckOptions) -> CheckOptions:
    keep = options.keep_traces / "base" if options.keep_traces else None
    return replace(options, keep_traces=keep)


def defined(config: Config | None, names: Sequence[str]) -> tuple[str, ...]:
    """Those of `names` the base's own config defines (None: it has none)."""
    return () if config is None else tuple(n for n in names if config.entrypoint(n) is not None)


def run_base(
    tree: Path,
    commit: str,
    prefix: str,
    config: Config | None,
    names: Sequence[str],
    options: CheckOptions,
    on_done: OnDone | None = None,
) -> Report:
    """Run `names` in `tree`, `commit` checked out, as the base's own `config` defines them (None: the
    base has none), in `options.mode`; a name it does not define (or whose config root `prefix`,
    below the repository's top level, is not there) is not in the report: the base has no such
    entrypoint."""
    root = tree / prefix
    here = defined(config, names) if root.is_dir() else ()
    only = base_options(replace(options, only=here, shard=None))
    ran = check(root, config, only, on_done) if here and config is not None else None
    entries = ran.entrypoints if ran else ()
    version = ran.torch_version if ran else None
    return report.new_report(entries, options.mode, version, commit, config.digest if config else None)


def from_file(path: Path, expected: Expected, allow_mismatch: bool) -> tuple[Report, list[str]]:
    """A baseline report someone made before; refused when it does not fit, unless
    `allow_mismatch`: then the differences come back, to be shown with the diff."""
    baseline = report.load(path)
    found = mismatches(baseline, expected)
    if found and not allow_mismatch:
        raise ReportError(refusal(path, found))
    return baseline, found


def refusal(path: Path | str, found: Sequence[str]) -> str:
    return (
        f"baseline {path} does not fit this comparison: {'; '.join(found)}. "
        "Make a new one, or pass --allow-mismatch to compare anyway (the report is labelled)"
    )


def label(found: Sequence[str], source: Path | str) -> list[str]:
    return [f"⚠️ The baseline ({source}) does not match this run: {item}." for item in found]
