"""What gbbot says about a diff, worded once for every surface. Pure. Values carry reasons as data
(gbbot/core/model.py's `Reason`, an id and its arguments) and `say` words them; the headline's
counts on each surface, what hides a break, and plurals are worded here and nowhere else
(tests/unit/core/test_words.py). A surface's markup comes in as a function (`code`, `text`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gbbot.core import counts
from gbbot.core.counts import Counts
from gbbot.core.model import Cause, ChangeState, Diff, GraphBreak, Reason, Why

Mark = Callable[[str], str]
NEW, FIXED, HIDDEN, REVEALED = ChangeState.NEW, ChangeState.FIXED, ChangeState.HIDDEN, ChangeState.REVEALED
VERBS = {NEW: "adds", FIXED: "fixes", HIDDEN: "hides", REVEALED: "reveals"}  # a PR's sentence
CAUSE_ORDER = (FIXED, NEW, HIDDEN, REVEALED)  # a dependency change's counts
NEW_BREAKS = "new graph breaks"
ALL_CLEAR = "No graph breaks. 🎉"
ALL_FIXED = "✅ **No new graph breaks any more:** every new break reported earlier on this PR is fixed."
REVEALED_NOTE = "a frame it lies in ran eagerly on the base, so Dynamo did not trace it there"
AUDIT_SECTIONS = (
    (NEW, "🆕 New"),
    (FIXED, "✅ Fixed"),
    (HIDDEN, "🙈 Hidden, not fixed"),
    (REVEALED, "👀 Revealed, not new"),
)
FOLDS = {  # the PR comment's folded lists (None: the breaks the config ignores)
    FIXED: "✅ {} fixed",
    HIDDEN: "🙈 {} hidden, not fixed",
    REVEALED: "👀 {} revealed, not new",
    ChangeState.PERSISTING: "{} persisting",
    None: "{} ignored by the config",
}


def plural(count: int, one: str, many: str | None = None) -> str:
    """`1 graph break`, `2 graph breaks`; `many` where an `s` does not make it (`frames run`)."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def listed(names: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def counted(found: Sequence[tuple[int, ChangeState]], noun: str, why: bool = False) -> list[str]:
    """`adds **2** graph breaks`, `fixes **1**`: the noun after the first number only; with `why`,
    what a hidden or revealed break is not."""
    out: list[str] = []
    for n, state in (f for f in found if f[0]):
        said = f"{VERBS[state]} **{n}**" + ("" if out else f" {noun}{'s' * (n != 1)}")
        if why and state is HIDDEN:
            said += f" (not fixed: {'its' if n == 1 else 'their'} frame now runs eagerly)"
        out.append(said + (" (not new: Dynamo now traces code that ran eagerly)" if why and state is REVEALED else ""))
    return out


def _recompiles(came: int, went: int) -> str:
    return listed(counted(((came, NEW), (went, FIXED)), "recompilation problem") or [""])


def check_run_title(c: Counts, diffed: bool) -> str:
    n = len(c.not_clean)
    unknown = f"; {plural(n, 'entrypoint')} did not run cleanly or compiled nothing" if n else ""
    if not diffed:
        return (plural(c.distinct, "graph break") if c.distinct else "No graph breaks") + unknown
    said = [plural(c.new, "new graph break") if c.new else "No new graph breaks"]
    said += [f"{n} {state.value}" for n, state in ((c.fixed, FIXED), (c.hidden, HIDDEN), (c.revealed, REVEALED)) if n]
    return ", ".join(said) + unknown


def terminal_line(c: Counts, base_ref: str, base_sha: str) -> str:
    hidden = f", {c.hidden} hidden (their frame now runs eagerly)" if c.hidden else ""
    hidden += f", {c.revealed} revealed (their frame ran eagerly on the base)" if c.revealed else ""
    return f"{c.new} new, {c.fixed} fixed{hidden}, {c.persisting} persisting vs {base_ref} ({base_sha[:7]})"


def terminal_summary(c: Counts) -> str:
    line = f"{plural(c.distinct, 'graph break')} ({plural(c.occurrences, 'occurrence')})"
    line += f" in {plural(c.entrypoints, 'entrypoint')}"
    line += f", {plural(c.trace_problems, 'trace problem')}" if c.trace_problems else ""
    return line + (f"; did not run cleanly or compiled nothing: {', '.join(c.not_clean)}" if c.not_clean else "")


def pr_headline(c: Counts, d: Diff, other: bool) -> str:
    """The PR comment's first sentence (`other`: a line above it says what failed)."""
    found = ((c.new or 0, NEW), (c.fixed or 0, FIXED), (c.hidden or 0, HIDDEN), (c.revealed or 0, REVEALED))
    rc = _recompiles(len(d.recompiled(NEW)), len(d.recompiled(FIXED)))
    breaks, no = counted(found, "graph break", why=True), "no other" if other else "no"
    if not breaks:
        return f"This PR makes {no} change in graph breaks" + (f"; it {rc}." if rc else " or recompilations.")
    return f"This PR {listed(breaks)}{f'; it {rc}' if rc else ''}."


def report_headline(c: Counts) -> str:
    """Without a base: what there is."""
    if not c.distinct and c.not_clean:
        return "No graph breaks seen in the others." if c.entrypoints > len(c.not_clean) else "No graph breaks seen."
    if not c.distinct:
        return "No graph breaks."
    return f"**{plural(c.distinct, 'graph break')}** in {plural(c.entrypoints, 'entrypoint')}."


def verdict(c: Counts, diffed: bool, code: Mark = str) -> str:
    """When no break is shown: never a plain all-clear while a break is there or an entrypoint's
    breaks are unknown."""
    if c.distinct:
        return plural(c.distinct, "graph break") + (", none of them new." if diffed else ".")
    if not c.not_clean:
        return ALL_CLEAR
    names = ", ".join(code(n) for n in c.not_clean)
    return f"No graph breaks seen, but {names} did not run cleanly or compiled nothing: its breaks are unknown."


def fold_title(state: ChangeState | None, n: int) -> str:
    return FOLDS[state].format(plural(n, "graph break"))


def state_counts(by_state: Mapping[ChangeState, int]) -> str:
    return ", ".join(counted([(by_state.get(s, 0), s) for s in CAUSE_ORDER], "graph break"))


def put_down_to(lead: str, d: Diff, cause: Cause) -> str:
    """`**tinydep 1.0 → 2.0**: fixes **1** graph break, adds **1**; adds **1** recompilation problem.`"""
    by_state, came, went = counts.by_cause(d, cause)
    said = "; ".join(part for part in (state_counts(by_state), _recompiles(came, went)) if part)
    return f"{lead}: {said or 'no change in graph breaks'}."


def both_changed(by_state: Mapping[ChangeState, int]) -> str:
    n = sum(by_state.values())
    return (
        f"Both changed under {plural(n, 'break')}: a changed line calls into a library whose version changed, so "
        f"the frames cannot tell which brought {'it' if n == 1 else 'them'} ({state_counts(by_state)})."
    )


def both_recompiled(came: int, went: int) -> str:
    said = _recompiles(came, went)
    return f"Both changed under frames that recompile (a changed line calls into a changed library): {said}."


def _tally(d: Diff, cause: Cause) -> str:
    """`1 fixed, 1 new, 1 fixed recompilation problem`."""
    by_state, came, went = counts.by_cause(d, cause)
    said = [f"{by_state[s]} {s.value}" for s in CAUSE_ORDER if by_state.get(s)]
    said += [plural(n, f"{state.value} recompilation problem") for n, state in ((went, FIXED), (came, NEW)) if n]
    return ", ".join(said)


def terminal_dependencies(d: Diff, summary: str, code_changed: bool) -> str:
    """`tinydep 1.0 → 2.0: 1 fixed, 1 new; the code change: 1 new`: what each change brought."""
    line = f"{summary}: {_tally(d, Cause.DEPENDENCIES) or 'no change in graph breaks'}"
    line += f"; the code change: {_tally(d, Cause.CODE) or 'no change'}" if code_changed else ""
    both = _tally(d, Cause.BOTH)
    return line + (f"; both changed under a changed line that calls a library: {both}" if both else "")


def regression(new: int, stopped: Sequence[str], markdown: bool = True) -> str:
    """What regressed since the previous audit (`stopped`: the entrypoints that stopped running):
    the issue's callout, or the log's line."""
    if not markdown:
        said = [f"{new} new graph break(s)"] if new else []
        return ", ".join(said + ([f"{len(stopped)} entrypoint(s) stopped running"] if stopped else []))
    said = [plural(new, "new graph break")] if new else []
    said += [f"{plural(len(stopped), 'entrypoint')} stopped running ({', '.join(stopped)})"] if stopped else []
    return "; ".join(said)


def failing_breaks(policy: str, failing: int, diffed: bool) -> str:
    what = "new graph break" if policy == "new" and diffed else "graph break"
    return f"policy fail_on={policy}: {plural(failing, what)}"


def hidden_note(hider: GraphBreak | None, frames: Sequence[str], code: Mark = str) -> str:
    """Why a hidden break is in its section: the new break that makes its frame (`frames`, as
    the surface names them) run eagerly."""
    if hider is None:
        return "its frame now runs eagerly because of a new break, so it is no longer traced"
    at, frame = code(f"{hider.file}:{hider.line}"), f" {listed(frames)}" if frames else ""
    return f"the new break at {at} makes its frame{frame} run eagerly, so it is no longer traced"


def hidden_by(hider: GraphBreak, code: Mark = str) -> str:
    """The audit's line of a hidden break: ` — its frame now runs eagerly because of …`."""
    return f" — its frame now runs eagerly because of {code(hider.key)} at {code(f'{hider.file}:{hider.line}')}"


def lost_baseline(name: str, why: Reason, code: Mark = str, text: Mark = str) -> str:
    return (
        f"⚠️ {code(name)} lost its baseline: {text(say(why))}; the comparison could not be made, "
        "so its graph breaks count as new."
    )


def no_baselines(diff: Diff | None) -> list[str]:
    return [say(e.no_baseline) for e in diff.entrypoints if e.no_baseline] if diff else []


def _no_baseline(name: str, sha: str, why: Reason, counted_as_new: int) -> str:
    said = f"no baseline for `{name}` on base {sha[:7]}: {say(why)}"
    if not counted_as_new:
        return said
    breaks = "its graph break counts" if counted_as_new == 1 else f"its {counted_as_new} graph breaks count"
    return f"{said}; the comparison could not be made, so {breaks} as new"


def _ended(how: str, exit_code: int | None, last: str) -> str:
    return f"it {how} there" + (f" (exit {exit_code})" if exit_code is not None else "") + (f": {last}" if last else "")


def _missing(line: str) -> str:
    return f" ({line})" if line else ""


WORDS: dict[Why, Callable[..., str]] = {
    Why.NO_BASELINE: _no_baseline,
    Why.NOT_IN_BASE: lambda: "entrypoint not defined there (the base's config or report does not have it)",
    Why.NOT_DEFINED: lambda missing: f"entrypoint not defined there{_missing(missing)}",
    Why.LACKS: lambda gap, missing, added: (
        ("entrypoint not defined there: " if added else "") + say(gap) + _missing(missing)
    ),
    Why.UNTRACKED: lambda path: f"`{path}` is only in the working tree (untracked), so the base's checkout lacks it",
    Why.ADDED: lambda path: f"`{path}` is new in this change",
    Why.MISSING_MODULE: lambda module: f"module `{module}` is missing on the base",
    Why.TIMED_OUT: lambda: "it timed out there",
    Why.SKIPPED: lambda why: f"it was skipped there ({why or 'no reason given'})",
    Why.ENDED: _ended,
    Why.STILL_FAILING: lambda name, error, file, line: (
        f"`{name}` is still failing (same error as the base): {error} at {file}:{line}"
    ),
    Why.SAID: str,
}


def say(reason: Reason) -> str:
    """A reason in words."""
    return WORDS[reason.why](*reason.args)
