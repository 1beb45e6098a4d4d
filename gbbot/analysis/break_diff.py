"""Two reports (head, base) → Diff: which breaks a change brought (new), removed (fixed) or kept
(persisting), per entrypoint and overall. Pure.

Breaks are compared by fingerprint (docs/architecture.md, "Identity"), which already survives edits above a break,
functions moved within a file and whitespace changes. A file that git saw renamed changes the
path inside the fingerprint, so the base's fingerprints are recomputed with the head's path first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gbbot.analysis import classify, recompile
from gbbot.core.config import IgnoreRule
from gbbot.core.model import Diff, EntrypointDiff, EntrypointReport, GraphBreak, Origin, RecompileDiff, Report, Status

# How a missing module, function or script reads in a failed run's stderr.
NOT_DEFINED_RE = re.compile(
    r"ModuleNotFoundError: .*|AttributeError: module .* has no attribute .*"
    r"|can't open file .*|No such file or directory.*|command not found.*"
)
REASON_CHARS = 300


# --- renames -----------------------------------------------------------------------------------


def _key(brk: GraphBreak, path: str) -> tuple[str, ...] | None:
    """classify's fingerprint key for `brk` as if its file were at `path`; None when the record
    does not carry what the key needs (a break outside user code without a traceback)."""
    if brk.origin is not Origin.USER and not brk.user_stack:
        return None
    innermost = brk.user_stack[-1] if brk.user_stack else None
    return classify.fingerprint_key(brk.key, path, brk.function, brk.code, brk.origin, innermost)


def _occurrences(breaks: Sequence[GraphBreak]) -> dict[str, int]:
    """Each break's index among the entrypoint's breaks with the same key, counted from the last
    line up (as classify numbers them)."""
    groups: dict[tuple[str, ...], list[GraphBreak]] = {}
    for brk in breaks:
        key = _key(brk, brk.file)
        if key is not None:
            groups.setdefault(key, []).append(brk)
    return {b.fingerprint: i for same in groups.values() for i, b in enumerate(sorted(same, key=lambda b: -b.line))}


def renamed(breaks: Sequence[GraphBreak], renames: Mapping[str, str]) -> tuple[GraphBreak, ...]:
    """One entrypoint's base breaks with files moved to their head paths and fingerprints to
    match. A record whose fingerprint cannot be rebuilt exactly is left as it is."""
    occurrence = _occurrences(breaks)
    out = []
    for brk in breaks:
        old_key, new_path = _key(brk, brk.file), renames.get(brk.file)
        index = occurrence.get(brk.fingerprint)
        if new_path is None or old_key is None or index is None:
            out.append(brk)
        elif classify.fingerprint(old_key, index) != brk.fingerprint:
            out.append(brk)  # built some other way (another gbbot version): cannot be mapped
        else:
            new_key = (old_key[0], new_path, *old_key[2:])
            out.append(replace(brk, file=new_path, fingerprint=classify.fingerprint(new_key, index)))
    return tuple(out)


def rename_report(base: Report, renames: Mapping[str, str]) -> Report:
    if not renames:
        return base
    entrypoints = tuple(replace(e, breaks=renamed(e.breaks, renames)) for e in base.entrypoints)
    return replace(base, entrypoints=entrypoints)


def relative_renames(renames: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Top-level-relative renames → relative to a config root `prefix` ("" for the top level),
    the form report paths take."""
    if not prefix:
        return dict(renames)
    lead = prefix.rstrip("/") + "/"
    return {
        old[len(lead) :]: new[len(lead) :]
        for old, new in renames.items()
        if old.startswith(lead) and new.startswith(lead)
    }


# --- why there is no baseline ------------------------------------------------------------------


def no_baseline_reason(name: str, base_sha: str, base: EntrypointReport | None) -> str:
    """In words a reader understands: why `name` has nothing to compare with on the base."""
    where = f"no baseline for `{name}` on base {base_sha[:7]}"
    if base is None:
        return f"{where}: the baseline report does not have this entrypoint"
    error = base.error or ""
    missing = NOT_DEFINED_RE.search(error)
    if base.status is Status.FAILED and (missing or base.exit_code == 127):
        detail = f" ({_short(missing.group(0))})" if missing else ""
        return f"{where}: entrypoint not defined there{detail}"
    if base.status is Status.TIMEOUT:
        return f"{where}: it timed out there"
    if base.status is Status.SKIPPED:
        return f"{where}: it was skipped there ({_short(error) or 'no reason given'})"
    code = f" (exit {base.exit_code})" if base.exit_code is not None else ""
    last = _last_line(error)
    return f"{where}: it {base.status.value} there{code}" + (f": {last}" if last else "")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _short(lines[-1]) if lines else ""


# --- the comparison ----------------------------------------------------------------------------


def _counted(breaks: Iterable[GraphBreak], ignore: Sequence[IgnoreRule], entrypoint: str) -> dict[str, GraphBreak]:
    """Fingerprint → break, without ignored ones; the head's ignore rules are applied again so
    that they hold for a baseline made with other rules too."""
    return {b.fingerprint: b for b in breaks if not b.ignored and not classify.is_ignored(b, ignore, entrypoint)}


@dataclass(frozen=True)
class _Side:
    """One entrypoint compared: the sets, and the base's records of what was fixed or hidden."""

    result: EntrypointDiff
    base: dict[str, GraphBreak]  # empty without a baseline
    fixed: dict[str, GraphBreak]
    hidden: dict[str, tuple[GraphBreak, str]]  # fingerprint → (base record, the head break hiding it)


def eager_frames(breaks: Iterable[GraphBreak]) -> dict[tuple[str, str], str]:
    """(file, function) → the break that makes that frame run eagerly, under both the qualname
    and the bare name (a traceback names a function without its class)."""
    found: dict[tuple[str, str], str] = {}
    for brk in breaks:
        if brk.frame_skipped:
            found.setdefault((brk.file, brk.function), brk.fingerprint)
            found.setdefault((brk.file, brk.function.rsplit(".", 1)[-1]), brk.fingerprint)
    return found


def hidden_by(brk: GraphBreak, eager: Mapping[tuple[str, str], str]) -> str | None:
    """The head break whose eager frame is `brk`'s own or one enclosing it, or None. Dynamo does
    not trace such a frame, so `brk` cannot show up there, fixed or not."""
    frames = [(brk.file, brk.function), *((f.file, f.function) for f in reversed(brk.user_stack))]
    return next((eager[f] for f in frames if f in eager), None)


def _compare(
    head: EntrypointReport, base: EntrypointReport | None, base_sha: str, ignore: Sequence[IgnoreRule]
) -> _Side:
    now = _counted(head.breaks, ignore, head.name)
    if base is None or base.status is not Status.OK:
        reason = no_baseline_reason(head.name, base_sha, base)
        return _Side(EntrypointDiff(head.name, new=tuple(now), no_baseline=reason), {}, {}, {})
    before = _counted(base.breaks, ignore, head.name)
    # A head run that did not finish saw only some of its breaks: nothing can be called fixed.
    gone = {f: b for f, b in before.items() if f not in now} if head.status is Status.OK else {}
    eager = eager_frames(head.breaks)
    hidden = {f: (b, by) for f, b in gone.items() if (by := hidden_by(b, eager))}
    fixed = {f: b for f, b in gone.items() if f not in hidden}
    result = EntrypointDiff(
        head.name,
        new=tuple(f for f in now if f not in before),
        fixed=tuple(fixed),
        persisting=tuple(f for f in now if f in before),
        graph_delta=head.graph_count - base.graph_count,
        hidden=tuple(hidden),
    )
    return _Side(result, before, fixed, hidden)


def diff(
    head: Report,
    base: Report,
    base_ref: str,
    base_sha: str,
    renames: Mapping[str, str] = {},
    ignore: Sequence[IgnoreRule] = (),
    source: str = "run",
    notes: Sequence[str] = (),
) -> Diff:
    """Compare each of the head's entrypoints with the base's of the same name; the base's other
    entrypoints (removed, or outside this shard) play no part.

    Overall, a fingerprint is new when the base had it in no entrypoint, persisting when it had,
    hidden when the base had it, the head has it nowhere and in some entrypoint a head break makes
    its frame run eagerly, and fixed when it is gone otherwise."""
    by_name = {e.name: e for e in rename_report(base, renames).entrypoints}
    sides = [_compare(e, by_name.get(e.name), base_sha, ignore) for e in head.entrypoints]
    now = {f: None for s in sides for f in (*s.result.new, *s.result.persisting)}
    before = {f for s in sides for f in s.base}
    hidden = {f: h for s in sides for f, h in s.hidden.items() if f not in now}
    fixed = {f: b for s in sides for f, b in s.fixed.items() if f not in now and f not in hidden}
    return Diff(
        base_ref=base_ref,
        base_sha=base_sha,
        new=tuple(f for f in now if f not in before),
        fixed=tuple(fixed),
        persisting=tuple(f for f in now if f in before),
        entrypoints=tuple(s.result for s in sides),
        fixed_breaks=tuple(fixed.values()),
        baseline_source=source,
        notes=tuple(notes),
        recompiles=recompile_diff(head, base),
        hidden=tuple(hidden),
        hidden_breaks=tuple(b for b, _ in hidden.values()),
        hidden_by=tuple((f, by) for f, (_, by) in hidden.items()),
    )


def recompile_diff(head: Report, base: Report) -> RecompileDiff:
    """Recompilations new, fixed or persisting between the entrypoints both reports share that the
    base ran cleanly; the base's others give nothing to compare with, so all there is new."""
    usable = {e.name for e in base.entrypoints if e.status is Status.OK}
    shared = {e.name for e in head.entrypoints} & usable
    return recompile.compare(head, replace(base, entrypoints=tuple(e for e in base.entrypoints if e.name in shared)))


def union(diffs: Sequence[Diff]) -> Diff:
    """Diffs of disjoint entrypoint sets (shards) against one base → one Diff. A fingerprint new
    in one shard and fixed in another was on the base and is still on the head: persisting."""
    first = diffs[0]
    new = {f: None for d in diffs for f in d.new}
    fixed = {f: None for d in diffs for f in d.fixed}
    hidden = {f: None for d in diffs for f in d.hidden}
    gone = fixed | hidden
    persisting = {f: None for d in diffs for f in d.persisting} | {f: None for f in new if f in gone}
    fixed_breaks = {b.fingerprint: b for d in diffs for b in d.fixed_breaks}
    hidden_breaks = {b.fingerprint: b for d in diffs for b in d.hidden_breaks}
    by = {f: h for d in diffs for f, h in d.hidden_by}
    return Diff(
        base_ref=first.base_ref,
        base_sha=first.base_sha,
        new=tuple(f for f in new if f not in persisting),
        fixed=tuple(f for f in fixed if f not in persisting and f not in hidden),
        persisting=tuple(persisting),
        entrypoints=tuple(e for d in diffs for e in d.entrypoints),
        fixed_breaks=tuple(b for f, b in fixed_breaks.items() if f not in persisting and f not in hidden),
        baseline_source=first.baseline_source,
        notes=tuple({n: None for d in diffs for n in d.notes}),
        hidden=tuple(f for f in hidden if f not in persisting),
        hidden_breaks=tuple(b for f, b in hidden_breaks.items() if f not in persisting),
        hidden_by=tuple((f, h) for f, h in by.items() if f not in persisting),
        recompiles=_recompile_union([d.recompiles for d in diffs if d.recompiles is not None]),
    )


def _recompile_union(diffs: Sequence[RecompileDiff]) -> RecompileDiff | None:
    """As `union` does for breaks: new in one shard and fixed in another is persisting."""
    if not diffs:
        return None
    new = {f: None for d in diffs for f in d.new}
    fixed = {f: None for d in diffs for f in d.fixed}
    persisting = {f: None for d in diffs for f in d.persisting} | {f: None for f in new if f in fixed}
    return RecompileDiff(
        new=tuple(f for f in new if f not in persisting),
        fixed=tuple(f for f in fixed if f not in persisting),
        persisting=tuple(persisting),
        new_limit=tuple(f for d in diffs for f in d.new_limit if f not in persisting),
    )


def with_diff(head: Report, result: Diff) -> Report:
    return replace(head, diff=result)
