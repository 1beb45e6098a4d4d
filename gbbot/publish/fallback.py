"""When gbbot may not write to the PR (a fork's PR under `pull_request` gets a read-only token):
workflow-command annotations, which need no token, and the job summary, which says why.

The runner shows only 10 warning and 10 error annotations per step and drops the rest
without a word, so only that many commands are printed and the others are listed in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from gbbot.analysis.policy import Policy
from gbbot.core import words
from gbbot.core.limits import WORKFLOW_ANNOTATIONS_SHOWN
from gbbot.core.model import Report
from gbbot.edges import console
from gbbot.render import annotations
from gbbot.render.escape import md_code, md_text
from gbbot.render.findings import Finding
from gbbot.render.recompile_findings import RecompileFinding


@dataclass(frozen=True)
class Fallback:
    commands: tuple[str, ...]  # workflow commands, for stdout
    summary: str  # markdown for the job summary: why, and the breaks not shown as annotations


Pointed = Finding | RecompileFinding


def shown_and_rest(found: list[Pointed]) -> tuple[list[Pointed], list[Pointed]]:
    """At most WORKFLOW_ANNOTATIONS_SHOWN of each command kind, in impact order."""
    per_kind: dict[str, int] = {}
    shown, rest = [], []
    for finding in found:
        kind = annotations.COMMAND[finding.level]
        per_kind[kind] = per_kind.get(kind, 0) + 1
        (shown if per_kind[kind] <= WORKFLOW_ANNOTATIONS_SHOWN else rest).append(finding)
    return shown, rest


def _row(finding: Pointed) -> str:
    if isinstance(finding, RecompileFinding):
        rc = finding.rc
        kinds = ", ".join(f"recompile/{p.kind}" for p in finding.problems)
        return f"| {md_text(kinds)} | {md_text(finding.title)} | {md_code(f'{rc.file}:{rc.line}')} | |"
    brk = finding.brk
    where, code = md_code(f"{brk.file}:{brk.line}"), md_code(brk.code) if brk.code else ""
    return f"| {md_text(brk.gb_id or '—')} | {md_text(brk.gb_type)} | {where} | {code} |"


def summary(reason: str, rest: list[Pointed], shown: int, what: str = words.NEW_BREAKS) -> str:
    lines = [
        f"> [!WARNING]\n> gbbot could not publish to the pull request: {md_text(reason)}",
        f"> The {shown} first {what} are shown as annotations on this run instead.",
    ]
    if rest:
        lines += [
            "",
            f"#### {len(rest)} more {what} (GitHub shows at most "
            f"{WORKFLOW_ANNOTATIONS_SHOWN} annotations of each kind per step)",
            "",
            "| Id | Break | Where | Code |",
            "|---|---|---|---|",
            *(_row(f) for f in rest),
        ]
    return "\n".join(lines) + "\n"


def fallback(report: Report, policy: Policy, reason: str) -> Fallback:
    """What the PR changed (failures that began with it, new and revealed breaks, then new
    recompilation problems), as annotations up to the runner's cap."""
    found = annotations.changed_findings(report, policy)
    shown, rest = shown_and_rest(found)
    recompiled = any(isinstance(f, RecompileFinding) for f in found)
    what = f"{words.NEW_BREAKS} and recompilations" if recompiled else words.NEW_BREAKS
    return Fallback(tuple(annotations.commands(shown)), summary(reason, rest, len(shown), what))


def annotate(found: Fallback) -> None:
    """Print the fallback's workflow commands, where the runner reads them (stdout)."""
    console.obeyed(found.commands)
