"""What gbbot concluded for one break, as values every stage can read without the fix pipeline:
a verified patch, a dropped candidate (and why), a scaffold for third-party code, advice in words,
or a skip; the replaced line ranges a patch is made of, and a review suggestion. Frozen records,
and their JSON form: the report's `extra.fixes` (schema: gbbot/schema/report.schema.json#/$defs/fix)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from gbbot.core import measured as measuring
from gbbot.core.measured import Measured


@dataclass(frozen=True)
class Hunk:
    """Original lines `start_line`..`end_line` (1-based, inclusive) become `replacement`.

    Always covers at least one original line, so it can be a GitHub suggestion (whose range is
    the commented lines): a pure insertion is widened to the line before it."""

    path: str
    start_line: int
    end_line: int
    replacement: tuple[str, ...]  # lines without their newline


@dataclass(frozen=True)
class Suggestion:
    """One review comment: the range is exactly the lines the suggestion replaces."""

    path: str
    start_line: int
    end_line: int
    body: str


class FixStatus(str, enum.Enum):
    VERIFIED = "verified"  # re-run: the break is gone, nothing new broke, results equal
    DROPPED = "dropped"  # a candidate patch failed verification; `reason` says how
    SCAFFOLD = "scaffold"  # third-party code: a subclass to finish by hand, not a fix
    ADVICE = "advice"  # no mechanical fix: the documented options in words
    SKIPPED = "skipped"  # not attempted: file does not parse, is outside the repo, changed since


@dataclass(frozen=True)
class Counts:
    breaks: int
    graphs: int
    frames_skipped: int = 0


@dataclass(frozen=True)
class Advice:
    text: str
    url: str | None = None


@dataclass(frozen=True)
class FixResult:
    fingerprint: str
    status: FixStatus
    file: str
    line: int
    recipe: str | None = None
    variant: str | None = None
    title: str = ""
    description: str = ""  # what the change does; when it may change behaviour
    reason: str = ""  # why dropped / skipped / why only advice
    summary: str = ""  # "removes 1 break; graphs 4 → 3; outputs equal"
    diff: str | None = None
    hunks: tuple[Hunk, ...] = ()
    scaffold: str | None = None
    advice: tuple[Advice, ...] = ()
    entrypoints: tuple[str, ...] = ()  # the entrypoints re-run to verify
    before: Counts | None = None
    after: Counts | None = None
    revealed: tuple[str, ...] = ()  # fingerprints of breaks that were hidden in an eager frame
    tried: tuple[str, ...] = ()  # earlier variants that were dropped, and why
    round: int = 1  # the round that planned it: 2 and on, the break was revealed by earlier fixes
    measured: Measured | None = None  # gbbot fix --measure: seconds per call without and with the fix

    @property
    def paths(self) -> tuple[str, ...]:
        """The files the fix edits: its hunks' (a setting turned on where `torch.compile` is called
        edits another file than the break's), else its diff's, else the break's file."""
        found = [h.path for h in self.hunks] or [
            line[len("--- a/") :] for line in (self.diff or "").splitlines() if line.startswith("--- a/")
        ]
        return tuple(dict.fromkeys(found)) or (self.file,)


# The schema's bounds (the report is untrusted input for the workflow_run publisher).
LIMITS = {"title": 1024, "description": 4096, "reason": 8192, "summary": 1024, "diff": 65536, "scaffold": 65536}
HUNKS_MAX, HUNK_LINE_MAX, ADVICE_TEXT_MAX, TRIED_MAX = 100, 4096, 2048, 20


def _cut(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def _exact(hunks: tuple[Hunk, ...]) -> bool:
    return len(hunks) <= HUNKS_MAX and all(len(line) <= HUNK_LINE_MAX for h in hunks for line in h.replacement)


def bounded(result: FixResult) -> FixResult:
    """`result` within the schema's bounds, as a report keeps it: long text is cut (marked with
    …), never rejected. Hunks become review suggestions, which must be exact: too many or too
    long, and there are none (the diff still shows the patch)."""
    return replace(
        result,
        **{name: _cut(getattr(result, name), limit) for name, limit in LIMITS.items()},
        hunks=result.hunks if _exact(result.hunks) else (),
        advice=tuple(Advice(_cut(a.text, ADVICE_TEXT_MAX) or "", a.url) for a in result.advice),
        tried=tuple(_cut(t, LIMITS["reason"]) or "" for t in result.tried[:TRIED_MAX]),
    )


def to_json(result: FixResult) -> dict[str, Any]:
    """One `extra.fixes[]` entry, within the schema's bounds (see `bounded`)."""
    result = bounded(result)
    return {
        "fingerprint": result.fingerprint,
        "status": result.status.value,
        "file": result.file,
        "line": result.line,
        "recipe": result.recipe,
        "variant": result.variant,
        **{name: getattr(result, name) for name in LIMITS},
        "hunks": [
            {"path": h.path, "start_line": h.start_line, "end_line": h.end_line, "replacement": list(h.replacement)}
            for h in result.hunks
        ],
        "advice": [{"text": a.text, "url": a.url} for a in result.advice],
        "entrypoints": list(result.entrypoints),
        "before": vars(result.before) if result.before else None,
        "after": vars(result.after) if result.after else None,
        "revealed": list(result.revealed),
        "tried": list(result.tried),
        "round": result.round,
        **({"measured": measuring.to_json(result.measured)} if result.measured else {}),
    }


def verified_only(results: Iterable[FixResult]) -> list[FixResult]:
    return [r for r in results if r.status is FixStatus.VERIFIED]
