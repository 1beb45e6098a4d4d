"""Breaks with no mechanical fix get the documented options in words, never a made-up patch.

The options are data (gbbot/data/advice.yaml), matched by the code at the break first (a `code`
pattern: `with torch.device(...)` needs other advice than any other context manager), then like the
classification rules: by gb_type, then gb_id. Without an entry, the hints from torch's own message
are the advice.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from gbbot.core.fixes import Advice, FixResult, FixStatus
from gbbot.core.model import GraphBreak

ADVICE_PATH = Path(__file__).parent.parent / "data" / "advice.yaml"
MAX_HINTS = 4


@dataclass(frozen=True)
class Entry:
    gb_type: str | None
    gb_id: str | None
    options: tuple[Advice, ...]
    code: re.Pattern[str] | None = None  # searched in the code of the break's line

    def fits_code(self, brk: GraphBreak) -> bool:
        return self.code is not None and bool(self.code.search(brk.code or ""))


@functools.cache
def load_advice(path: Path = ADVICE_PATH) -> tuple[Entry, ...]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple(
        Entry(
            e.get("gb_type"),
            e.get("gb_id"),
            tuple(Advice(o["text"], o.get("url")) for o in e["options"]),
            re.compile(e["code"]) if "code" in e else None,
        )
        for e in data["advice"]
    )


def options_for(brk: GraphBreak, entries: tuple[Entry, ...] | None = None) -> tuple[Advice, ...]:
    """The documented options for this kind of break (its own doc page is linked with the break)."""
    entries = load_advice() if entries is None else entries
    found = next((e for e in entries if e.fits_code(brk)), None)
    found = found or next((e for e in entries if e.code is None and e.gb_type and e.gb_type == brk.gb_type), None)
    found = found or next((e for e in entries if e.code is None and e.gb_id and e.gb_id == brk.gb_id), None)
    return found.options if found else tuple(Advice(h) for h in brk.hints[:MAX_HINTS])


def advise(brk: GraphBreak, reason: str) -> FixResult:
    return FixResult(
        fingerprint=brk.fingerprint,
        status=FixStatus.ADVICE,
        file=brk.file,
        line=brk.line,
        recipe=brk.fix,
        title="no mechanical fix: the options",
        reason=reason,
        advice=options_for(brk),
    )
