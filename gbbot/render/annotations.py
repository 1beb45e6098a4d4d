"""Report → GitHub workflow commands (`::warning file=…,line=…,title=…::message`). Pure.

These are the annotations a job can make without any token: the fallback when the token is
read-only (a fork's PR) and the annotations of `gbbot render --format annotations`. Like the check
run's, they are what the PR changed (`changed_findings`): a break that predates it stays in the
report, the check run's text and the SARIF, not on the PR's lines.

Escaping follows the Actions toolkit (actions/toolkit, packages/core/src/command.ts): in the message
`%`, `\\r`, `\\n` become `%25`, `%0D`, `%0A`, so break text can never start a command line of its
own; in a property also `:` and `,` (`%3A`, `%2C`), so it can never end the property list.
"""

from __future__ import annotations

from collections.abc import Iterable

from gbbot.analysis.policy import DEFAULT, Policy
from gbbot.core.limits import ANNOTATION_MESSAGE_MAX, ANNOTATION_TITLE_MAX
from gbbot.core.model import ChangeState, Report
from gbbot.render.findings import FailureFinding, Finding, Level, State, failure_findings, findings
from gbbot.render.recompile_findings import RecompileFinding, recompile_findings

COMMAND = {Level.NOTICE: "notice", Level.WARNING: "warning", Level.FAILURE: "error"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(finding: FailureFinding | Finding | RecompileFinding) -> str:
    """One workflow command for one finding (file and line only when the path is safe)."""
    properties = {"title": finding.title[:ANNOTATION_TITLE_MAX]}
    if finding.path is not None:
        properties = {"file": finding.path, "line": str(finding.line), **properties}
    listed = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{COMMAND[finding.level]} {listed}::{escape_data(finding.message[:ANNOTATION_MESSAGE_MAX])}"


def commands(found: Iterable[FailureFinding | Finding | RecompileFinding]) -> list[str]:
    return [command(f) for f in found]


Found = FailureFinding | Finding | RecompileFinding
ON_HEAD_ONLY = (ChangeState.NEW, ChangeState.REVEALED)


def changed_findings(report: Report, policy: Policy) -> list[Found]:
    """What the PR changed: the failures that began with it, its new and revealed breaks, then the
    frames with a new recompilation problem (everything, without a baseline), each in impact order."""
    diff = report.diff
    shared = {e.name for e in diff.entrypoints if e.still_failing} if diff else set()
    breaks = [f for f in findings(report, policy) if diff is None or diff.state(f.brk) in ON_HEAD_ONLY]
    new = frozenset({State.NEW})
    failures = [f for f in failure_findings(report) if f.entrypoint not in shared]
    return [*failures, *breaks, *recompile_findings(report, policy, new)]


def every_finding(report: Report, policy: Policy) -> list[Found]:
    """Every failure, break and recompilation problem, each in impact order (the `annotate: all` input)."""
    return [*failure_findings(report), *findings(report, policy), *recompile_findings(report, policy)]


def render(report: Report, policy: Policy = DEFAULT) -> str:
    """What the PR changed (`changed_findings`) as workflow commands, one per line."""
    return "".join(line + "\n" for line in commands(changed_findings(report, policy)))
