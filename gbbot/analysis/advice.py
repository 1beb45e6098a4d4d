"""What to do about a break, as data: the documented options (gbbot/data/advice.yaml) and torch's
own hints, curated (gbbot/data/rules.yaml's `hints`). Pure; read by the fix step (a break with no
mechanical fix gets the options) and by the views (the one best piece of advice for a break, and
the hints worth showing under it).

The options are matched by the code at the break first (a `code` pattern: `with torch.device(...)`
needs other advice than any other context manager), then like the classification rules: by
gb_type, then gb_id. Without an entry, the curated hints from torch's own message are the advice.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from gbbot.analysis import labels
from gbbot.core.fixes import Advice
from gbbot.core.model import Category, GraphBreak

ADVICE_PATH = Path(__file__).parent.parent / "data" / "advice.yaml"
RULES_PATH = Path(__file__).parent.parent / "data" / "rules.yaml"
MAX_HINTS = 4


@dataclass(frozen=True)
class Entry:
    gb_type: str | None
    gb_id: str | None
    options: tuple[Advice, ...]
    code: re.Pattern[str] | None = None  # searched in the code of the break's line
    branch: bool = False  # for a break whose value decides a branch (the label found it so)

    def fits_code(self, brk: GraphBreak) -> bool:
        """A `code` entry fits the break's line; one that also names a kind fits only that kind."""
        kind = (self.gb_type is None and self.gb_id is None) or brk.gb_type == self.gb_type or brk.gb_id == self.gb_id
        return self.code is not None and kind and bool(self.code.search(brk.code or ""))


@dataclass(frozen=True)
class HintFilter:
    """A torch sentence not worth a reader's time: dropped from hints (and cut from explanations),
    except under the categories it still means something for."""

    pattern: re.Pattern[str]
    keep_for: frozenset[Category] = frozenset()

    def drops(self, text: str, category: Category) -> bool:
        return category not in self.keep_for and bool(self.pattern.search(text))


@functools.cache
def load_advice(path: Path = ADVICE_PATH) -> tuple[Entry, ...]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple(
        Entry(
            e.get("gb_type"),
            e.get("gb_id"),
            tuple(Advice(o["text"], o.get("url")) for o in e["options"]),
            re.compile(e["code"]) if "code" in e else None,
            bool(e.get("decides_branch", False)),
        )
        for e in data["advice"]
    )


@functools.cache
def load_hint_filters(path: Path = RULES_PATH) -> tuple[HintFilter, ...]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple(
        HintFilter(re.compile(h["drop"]), frozenset(Category(c) for c in h.get("keep_for", ())))
        for h in data.get("hints", ())
    )


def curated_hints(brk: GraphBreak, filters: tuple[HintFilter, ...] | None = None) -> tuple[str, ...]:
    """Torch's hints for this break without the ones rules.yaml drops for its category."""
    filters = load_hint_filters() if filters is None else filters
    return tuple(h for h in brk.hints if h.strip() and not any(f.drops(h, brk.category) for f in filters))


def curated_explanation(brk: GraphBreak, filters: tuple[HintFilter, ...] | None = None) -> str:
    """The explanation without the sentences rules.yaml drops ("Message: None")."""
    filters = load_hint_filters() if filters is None else filters
    text = brk.explanation
    for f in filters:
        if f.keep_for and brk.category in f.keep_for:
            continue
        text = f.pattern.sub("", text)
    return " ".join(text.split())


def documented(
    brk: GraphBreak, entries: tuple[Entry, ...] | None = None, decides_branch: bool = False
) -> tuple[Advice, ...]:
    """gbbot's own options for this kind of break (advice.yaml), or () when it has none.
    `decides_branch`: the caller read the source and found that the break's value decides a branch
    further on (the views, with only the break's line, see it when the line is the branch)."""
    entries = load_advice() if entries is None else entries
    decides_branch = decides_branch or labels.decided_by_branch(brk)
    kind = (brk.gb_id, brk.gb_type)
    found = next((e for e in entries if decides_branch and e.branch and (e.gb_id in kind or e.gb_type in kind)), None)
    found = found or next((e for e in entries if e.fits_code(brk)), None)
    plain = [e for e in entries if e.code is None and not e.branch]
    found = found or next((e for e in plain if e.gb_type and e.gb_type == brk.gb_type), None)
    found = found or next((e for e in plain if e.gb_id and e.gb_id == brk.gb_id), None)
    return found.options if found else ()


def for_kind(gb_id: str, gb_type: str, entries: tuple[Entry, ...] | None = None) -> tuple[Advice, ...]:
    """gbbot's options for a kind of break wherever it occurs (no entry that needs its line)."""
    entries = load_advice() if entries is None else entries
    plain = (e for e in entries if e.code is None and not e.branch)
    found = next((e for e in plain if e.gb_id == gb_id or e.gb_type == gb_type), None)
    return found.options if found else ()


def options_for(
    brk: GraphBreak, entries: tuple[Entry, ...] | None = None, decides_branch: bool = False
) -> tuple[Advice, ...]:
    """The documented options for this kind of break, else torch's curated hints (its own doc page
    is linked with the break)."""
    found = documented(brk, entries, decides_branch)
    return found or tuple(Advice(h) for h in curated_hints(brk)[:MAX_HINTS])


def best(brk: GraphBreak) -> Advice | None:
    """The one piece of advice a reader acts on first: gbbot's, else torch's first curated hint."""
    found = options_for(brk)
    return found[0] if found else None


def reading(brk: GraphBreak) -> tuple[Advice, ...]:
    """Everything worth reading under a break: gbbot's options first, then torch's curated hints
    that say something else."""
    ours = documented(brk)
    seen = {a.text for a in ours}
    return (*ours, *(Advice(h) for h in curated_hints(brk) if h not in seen))
