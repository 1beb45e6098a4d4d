"""Report → the recompilations to point at in code (check-run annotations, workflow commands,
SARIF): one finding per frame, each problem in it with its own state and level. Pure.

A problem is what `gbbot diff` compares: a guard kind that keeps failing, and the recompile limit
when the frame hit it. A frame with no problem — automatic dynamic shapes making a size dynamic
after one recompile — is information with nothing to fix, so it is not pointed at anywhere (the
report's Recompilations section still lists it); a code-scanning alert would have to be
dismissed by hand for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gbbot.analysis import recompile
from gbbot.analysis.policy import Policy
from gbbot.core.model import ChangeState, Recompilation, RecompileReason, Report
from gbbot.render.findings import AtLine, Level, State

LIMIT_KIND = "limit"  # the problem of a frame at the recompile limit, beside its guard kinds
LEVEL_ORDER = (Level.NOTICE, Level.WARNING, Level.FAILURE)


@dataclass(frozen=True)
class Problem:
    """One problem of a frame: a guard kind (`reason`), or the recompile limit (`reason` None)."""

    fingerprint: str
    reason: RecompileReason | None
    state: State
    level: Level

    @property
    def kind(self) -> str:
        return self.reason.kind if self.reason else LIMIT_KIND


@dataclass(frozen=True)
class RecompileFinding(AtLine):
    rc: Recompilation
    entrypoints: tuple[str, ...]
    problems: tuple[Problem, ...]  # the limit first, then the guard kinds in the frame's order

    @property
    def state(self) -> State:
        return State.NEW if any(p.state is State.NEW for p in self.problems) else State.PERSISTING

    @property
    def level(self) -> Level:
        return max((p.level for p in self.problems), key=LEVEL_ORDER.index)

    @property
    def place(self) -> tuple[str, int]:
        return self.rc.file, self.rc.line

    @property
    def guard_kinds(self) -> tuple[RecompileReason, ...]:
        return tuple(p.reason for p in self.problems if p.reason is not None)

    @property
    def title(self) -> str:
        return title(self.rc, self.guard_kinds)

    @property
    def message(self) -> str:
        return message(self, self.problems)


def kind_words(kind: str) -> str:
    return kind.replace("_", " ")


def title(rc: Recompilation, reasons: tuple[RecompileReason, ...]) -> str:
    """E.g. `Recompiled 8× (int argument) — hit the recompile limit: runs eagerly`."""  # noqa: RUF002
    kinds = f" ({', '.join(kind_words(r.kind) for r in reasons)})" if reasons else ""
    limit = " — hit the recompile limit: runs eagerly" if rc.limit_hit else ""
    return f"Recompiled {rc.compilations}×{kinds}{limit}"


def reason_lines(reason: RecompileReason) -> list[str]:
    where = f" at line {reason.line}" if reason.line else ""
    code = f": {reason.code}" if reason.code else ""
    return [
        f"Failing guard ({kind_words(reason.kind)}, ×{reason.count}): {reason.guard}{where}{code}",
        reason.cause,
        f"Hint: {reason.advice}",
    ]


def message(finding: RecompileFinding, problems: tuple[Problem, ...]) -> str:
    """Plain text, several lines: how often the frame compiled, which guards failed and why, what
    to do, where to read more. `problems` are the ones this message is about (one for a SARIF
    result, all of them for an annotation)."""
    rc = finding.rc
    new = any(p.state is State.NEW for p in problems)
    head = f"{'New recompilation' if new else 'Recompilation'}: {rc.function} compiled {rc.compilations}×"
    lines = [head + (" and hit the recompile limit" if rc.limit_hit else "")]
    if rc.library_site:
        site = rc.library_site
        lines.append(
            f"Inside {site.package} at {site.path}:{site.line} {site.function}, called from this line.".replace(
                " ,", ","
            )
        )
    if rc.new_break:
        lines.append(
            "Dynamo compiles this code only because of a break this change adds (a resume function after it, or"
            " a function that is no longer inlined into a caller): it recompiles because of that break."
        )
    if any(p.reason is None for p in problems):
        rules = recompile.load_rules()
        lines += [rules.limit_cause, f"Hint: {rules.limit_advice}"]
    for problem in problems:
        if problem.reason is not None:
            lines += reason_lines(problem.reason)[: 1 if rc.new_break else None]  # the break is the remedy
    lines.append(f"Entrypoints: {', '.join(finding.entrypoints)}")
    lines.append(recompile.load_rules().doc_url)  # gbbot's own page, not the report's URL
    return "\n".join(line for line in lines if line)


def _problem_level(fingerprint: str, state: State, failing: set[str]) -> Level:
    if fingerprint in failing:
        return Level.FAILURE  # the policy counts it: it fails the check
    return Level.WARNING if state is State.NEW else Level.NOTICE


def recompile_findings(
    report: Report, policy: Policy, states: frozenset[State] = frozenset(State)
) -> list[RecompileFinding]:
    """A finding per frame with a problem, in impact order (limit first, then by compiles); each
    problem's level from the policy's `recompiles`."""
    failing = set(policy.failing_recompiles(report))
    now = recompile.problems(recompile.all_recompiles(report))
    compared = report.diff.recompiles if report.diff else None
    new = {f for f, s in compared if s is ChangeState.NEW} if compared is not None else set(now)  # no base: all new
    names: dict[str, list[str]] = {}
    for entrypoint in report.entrypoints:
        for rc in entrypoint.recompiles:
            names.setdefault(rc.fingerprint, []).append(entrypoint.name)
    out = []
    for rc in recompile.ordered(report):
        found = [(recompile.limit_fingerprint(rc), None)] if rc.limit_hit else []
        found += [(r.fingerprint, r) for r in rc.reasons if not r.dynamic]
        problems = []
        for fingerprint, reason in found:
            state = State.NEW if fingerprint in new else State.PERSISTING
            if state in states:
                problems.append(Problem(fingerprint, reason, state, _problem_level(fingerprint, state, failing)))
        if problems:
            out.append(RecompileFinding(rc, tuple(dict.fromkeys(names[rc.fingerprint])), tuple(problems)))
    return out
