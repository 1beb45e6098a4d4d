"""RawBreak records → classified, fingerprinted, folded GraphBreaks in impact order. Pure.

Rules are data (gbbot/data/rules.yaml); source files come in through a lookup function.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import yaml

from gbbot.config import IgnoreRule
from gbbot.model import BreakMessage, Category, Frame, GraphBreak, Origin, RawBreak
from gbbot.source import SourceMap

RULES_PATH = Path(__file__).parent / "data" / "rules.yaml"
SITE_RE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
STDLIB_RE = re.compile(r"[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\]", re.IGNORECASE)

SourceLookup = Callable[[str], "SourceMap | None"]


@dataclass(frozen=True)
class Rule:
    category: Category
    gb_type: str | None = None
    gb_id: str | None = None
    fix: str | None = None
    title: str = ""


@dataclass(frozen=True)
class Rules:
    sentences: tuple[tuple[Category, str], ...]
    rules: tuple[Rule, ...]

    def rule(self, message: BreakMessage) -> Rule | None:
        by_type = next((r for r in self.rules if r.gb_type and r.gb_type == message.gb_type), None)
        return by_type or next((r for r in self.rules if r.gb_id and r.gb_id == message.gb_id), None)

    def category(self, message: BreakMessage) -> Category:
        for category, sentence in self.sentences:
            if any(sentence in hint for hint in message.hints):
                return category
        rule = self.rule(message)
        return rule.category if rule else Category.UNKNOWN


@functools.cache
def load_rules(path: Path = RULES_PATH) -> Rules:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    sentences = tuple((Category(k), v) for k, v in data["category_sentences"].items())
    rules = tuple(
        Rule(
            category=Category(r["category"]),
            gb_type=r.get("gb_type"),
            gb_id=r.get("gb_id"),
            fix=r.get("fix"),
            title=r.get("title", ""),
        )
        for r in data["rules"]
    )
    return Rules(sentences, rules)


# --- where a break is ------------------------------------------------------------------------


def relative_to_root(file: str, root: str) -> str | None:
    """Repo-relative POSIX path, or None when `file` is outside the repository."""
    file_path, root_path = PurePosixPath(file.replace("\\", "/")), PurePosixPath(root.replace("\\", "/"))
    try:
        return str(file_path.relative_to(root_path))
    except ValueError:
        return None


def is_stdlib(file: str) -> bool:
    return file.startswith("<") or (bool(STDLIB_RE.search(file)) and not SITE_RE.search(file))


def origin_of(file: str, root: str) -> Origin:
    if relative_to_root(file, root) is not None and not SITE_RE.search(file):
        return Origin.USER
    tail = SITE_RE.split(file)[-1].replace("\\", "/") if SITE_RE.search(file) else ""
    if tail.startswith(("torch/", "functorch/")) or "/torch/_dynamo/" in file:
        return Origin.TORCH
    return Origin.USER if is_stdlib(file) else Origin.THIRD_PARTY


def display_path(file: str, root: str) -> str:
    """Repo-relative inside the repo; from `site-packages/` or `pythonX.Y/` on; never absolute."""
    relative = relative_to_root(file, root)
    if relative is not None:
        return relative
    for pattern in (SITE_RE, STDLIB_RE):
        if pattern.search(file):
            return pattern.split(file)[-1].replace("\\", "/")
    return PurePosixPath(file.replace("\\", "/")).name


@dataclass(frozen=True)
class Site:
    """Where a break is attributed: the innermost repository frame, and the frame that broke."""

    frame: Frame
    path: str
    origin: Origin
    innermost: Frame


def attribute(raw: RawBreak, root: str) -> Site | None:
    frames = raw.stack or ((raw.location,) if raw.location else ())
    if not frames:
        return None
    innermost = frames[-1]
    in_repo = [f for f in frames if relative_to_root(f.file, root) is not None and not SITE_RE.search(f.file)]
    outside = [f for f in frames if not is_stdlib(f.file)]
    frame = (in_repo or outside or list(frames))[-1]
    return Site(frame, display_path(frame.file, root), origin_of(innermost.file, root), innermost)


# --- fingerprints ------------------------------------------------------------------------------


def normalise_code(code: str) -> str:
    code = code.split("  #", 1)[0] if "#" in code else code
    return " ".join(code.split())


def fingerprint_key(
    gb_key: str, path: str, qualname: str, code: str, origin: Origin, innermost: Frame | None
) -> tuple[str, ...]:
    """What a fingerprint hashes (DESIGN.md), before the occurrence index. A break outside user
    code also keys on the frame that broke, so two library breaks under one user line differ."""
    key = (gb_key, path, qualname, normalise_code(code))
    if origin is Origin.USER or innermost is None:
        return key
    return (*key, display_path(innermost.file, ""), innermost.function, normalise_code(innermost.code))


def fingerprint(parts: Sequence[str], occurrence: int) -> str:
    blob = json.dumps([*parts, occurrence], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class _Located:
    raw: RawBreak
    site: Site
    qualname: str
    code: str
    in_loop: bool

    def key(self, message: BreakMessage) -> tuple[str, ...]:
        gb_key = message.gb_id or message.gb_type
        return fingerprint_key(gb_key, self.site.path, self.qualname, self.code, self.site.origin, self.site.innermost)


def _locate(raw: RawBreak, root: str, lookup: SourceLookup) -> _Located | None:
    site = attribute(raw, root)
    if site is None:
        return None
    in_repo = relative_to_root(site.frame.file, root) is not None
    source = lookup(site.path) if in_repo else None
    line, function = site.frame.line, site.frame.function
    code = site.frame.code or (source.line(line).strip() if source else "")
    qualname = source.qualname(line, function) if source else function
    return _Located(raw, site, qualname, code, bool(source and source.in_loop(line)))


def _glob_re(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(path: str, pattern: str) -> bool:
    return bool(_glob_re(pattern).match(path))


def is_ignored(brk: GraphBreak, rules: Iterable[IgnoreRule], entrypoint: str) -> bool:
    def matches(rule: IgnoreRule) -> bool:
        checks = (
            rule.gb_id is None or rule.gb_id.upper() == (brk.gb_id or ""),
            rule.gb_type is None or rule.gb_type == brk.gb_type,
            rule.path is None or path_matches(brk.file, rule.path),
            rule.fingerprint is None or rule.fingerprint == brk.fingerprint,
            rule.entrypoint is None or rule.entrypoint == entrypoint,
        )
        return all(checks)

    return any(matches(rule) for rule in rules)


def impact_order(brk: GraphBreak) -> tuple:
    """A frame that fell back to eager first, then breaks in loops, then by count."""
    return (not brk.frame_skipped, not brk.in_loop, -brk.count, brk.file, brk.line, brk.gb_type)


def classify(
    raws: Iterable[RawBreak],
    root: str,
    lookup: SourceLookup = lambda _path: None,
    ignore: Iterable[IgnoreRule] = (),
    entrypoint: str = "",
    rules: Rules | None = None,
) -> tuple[GraphBreak, ...]:
    rules = rules or load_rules()
    ignore = tuple(ignore)
    located = [loc for loc in (_locate(r, root, lookup) for r in raws) if loc is not None]
    groups: dict[tuple[str, ...], dict[int, list[_Located]]] = {}
    for loc in located:
        groups.setdefault(loc.key(loc.raw.root), {}).setdefault(loc.site.frame.line, []).append(loc)
    breaks = []
    for key, by_line in groups.items():
        for occurrence, line in enumerate(sorted(by_line)):
            breaks.append(_fold(key, occurrence, by_line[line], rules, root))
    breaks = [replace(b, ignored=True) if is_ignored(b, ignore, entrypoint) else b for b in breaks]
    return tuple(sorted(breaks, key=impact_order))


def _fold(key: tuple[str, ...], occurrence: int, same: list[_Located], rules: Rules, root_dir: str) -> GraphBreak:
    first = same[0]
    root = first.raw.root
    consequences: dict[str, BreakMessage] = {}
    for loc in same:
        for message in loc.raw.consequences:
            consequences.setdefault(message.gb_id or message.gb_type, message)
    caused = tuple(fingerprint((name, *key[1:]), occurrence) for name in sorted(consequences))
    rule = rules.rule(root)
    site = first.site
    return GraphBreak(
        fingerprint=fingerprint(key, occurrence),
        gb_id=root.gb_id,
        gb_type=root.gb_type,
        category=rules.category(root),
        origin=site.origin,
        file=site.path,
        line=site.frame.line,
        function=first.qualname,
        code=first.code,
        explanation=root.explanation,
        hints=root.hints,
        doc_url=root.doc_url,
        frame_skipped=any(loc.raw.frame_skipped for loc in same),
        in_loop=first.in_loop or bool(consequences.keys() & {"GB7000", "graph break in loop"}),
        count=len(same),
        caused=caused,
        user_stack=tuple(Frame(display_path(f.file, root_dir), f.line, f.function, f.code) for f in first.raw.stack),
        fix=rule.fix if rule else None,
        consequences=tuple(m.gb_type for m in consequences.values()),
        tests=tuple(sorted({loc.raw.test for loc in same if loc.raw.test})),
    )
