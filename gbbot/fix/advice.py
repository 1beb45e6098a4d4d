"""Breaks with no mechanical fix get the documented options in words, never a made-up patch.

The options are data (gbbot/data/advice.yaml), read and matched by gbbot/analysis/advice.py, which
the views share: the PR comment shows the same first option as the one best piece of advice.
"""

from __future__ import annotations

from gbbot.analysis.advice import options_for
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import GraphBreak


def advise(brk: GraphBreak, reason: str, decides_branch: bool = False, recipe: str | None = None) -> FixResult:
    """`recipe`: the recipe whose variants were asked and did not fit, when the label named none."""
    return FixResult(
        fingerprint=brk.fingerprint,
        status=FixStatus.ADVICE,
        file=brk.file,
        line=brk.line,
        recipe=recipe or brk.fix,
        title="no mechanical fix: the options",
        reason=reason,
        advice=options_for(brk, decides_branch=decides_branch),
    )
