"""RawBreak records → classified, fingerprinted, folded GraphBreaks in impact order. Pure.

Rules are data (gbbot/data/rules.yaml); source files come in through a lookup function.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import posixpath
import re
import sys
import sysconfig
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath, PurePosixPath
from typing import Protocol

import yaml

from gbbot.analysis import labels
from gbbot.analysis.source import SourceMap
from gbbot.core.config import IgnoreRule
from gbbot.core.model import (
    BreakMessage,
    Category,
    CompileError,
    Frame,
    FrameRef,
    GraphBreak,
    LibrarySite,
    Origin,
    RawBreak,
)
from gbbot.trace import registry
from gbbot.trace.registry import IdIndex

RULES_PATH = Path(__file__).parent.parent / "data" / "rules.yaml"
SITE_RE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
STDLIB_RE = re.compile(r"[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\]", re.IGNORECASE)
# This interpreter's standard library; a trace from another interpreter is recognised by its
# `lib/pythonX.Y/<stdlib module>` layout instead.
WHITESPACE_RE = re.compile(r"\s+")
STDLIB_DIR = sysconfig.get_paths().get("stdlib", "")

SourceLookup = Callable[[str], "SourceMap | None"]


class FrameIndex(Protocol):
    """Which frame each record's compile compiled, and which one it sent to eager
    (gbbot/analysis/frames.py builds it)."""

    def of(self, raw: RawBreak) -> FrameRef | None: ...

    def made_eager(self, raw: RawBreak) -> FrameRef | None: ...


@dataclass(frozen=True)
class Rule:
    category: Category
    gb_type: str | None = None
    gb_id: str | None = None
    title: str = ""


@dataclass(frozen=True)
class KnownBreak:
    """A registry entry gbbot's logic depends on, named by its wording; `gb_id` is the fallback
    when the installed registry cannot say which id has that wording."""

    gb_type: str
    gb_id: str

    def resolved(self, ids: IdIndex) -> KnownBreak:
        return KnownBreak(self.gb_type, ids.id_for(self.gb_type) or self.gb_id)

    def matches(self, message: BreakMessage) -> bool:
        return message.gb_id == self.gb_id or message.gb_type == self.gb_type


@dataclass(frozen=True)
class Rules:
    sentences: tuple[tuple[Category, str], ...]
    rules: tuple[Rule, ...]
    loop: KnownBreak = KnownBreak("graph break in loop", "GB7000")

    def rule(self, message: BreakMessage) -> Rule | None:
        """By registry id (permanent), then by gb_type (its wording may change between releases)."""
        by_id = next((r for r in self.rules if r.gb_id and r.gb_id == message.gb_id), None)
        return by_id or next((r for r in self.rules if r.gb_type and r.gb_type == message.gb_type), None)

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
        Rule(Category(r["category"]), r.get("gb_type"), r.get("gb_id"), r.get("title", "")) for r in data["rules"]
    )
    loop = data["markers"]["graph_break_in_loop"]
    return Rules(sentences, rules, KnownBreak(loop["gb_type"], loop["gb_id"]))


# --- identity --------------------------------------------------------------------------------


def identify(message: BreakMessage, ids: IdIndex) -> BreakMessage:
    """A message without a registry id gets the id its gb_type has (or had) in the registry."""
    if message.gb_id:
        return message
    found = ids.id_for(message.gb_type)
    return replace(message, gb_id=found) if found else message


def identified(raw: RawBreak, ids: IdIndex) -> RawBreak:
    return replace(raw, root=identify(raw.root, ids), consequences=tuple(identify(m, ids) for m in raw.consequences))


# --- where a break is ------------------------------------------------------------------------


def _normal(path: str) -> str:
    """`repo/../outside/mod.py` → `outside/mod.py`: where a file is, not how it was reached."""
    return posixpath.normpath(path.replace("\\", "/")) if path else path


def relative_to_root(file: str, root: str) -> str | None:
    """Repo-relative POSIX path, or None when `file` is outside the repository."""
    file_path, root_path = PurePosixPath(_normal(file)), PurePosixPath(_normal(root))
    try:
        relative = str(file_path.relative_to(root_path))
    except ValueError:
        return None
    return None if relative == ".." or relative.startswith("../") else relative


def in_repo(file: str, root: str) -> bool:
    """Inside the repository and not inside a virtual environment kept there."""
    return relative_to_root(file, root) is not None and not SITE_RE.search(file)


def is_stdlib(file: str) -> bool:
    if file.startswith("<"):
        return True  # <frozen runpy>, <string>
    if SITE_RE.search(file):
        return False
    if STDLIB_DIR and relative_to_root(file, STDLIB_DIR) is not None:
        return True
    if not STDLIB_RE.search(file):
        return False
    top = STDLIB_RE.split(file.replace("\\", "/"))[-1].split("/")[0].removesuffix(".py")
    return top in sys.stdlib_module_names


def origin_of(file: str, root: str) -> Origin:
    if in_repo(file, root):
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
    return PurePosixPath(_normal(file)).name


INSTALLED_PREFIX = re.compile(r"(?<![\w.-])(?:[A-Za-z]:)?[^\s\"',:]*[/\\](?:site|dist)-packages[/\\]")


def relative_paths(text: str, root: str) -> str:
    """Text that quotes paths (a traceback): the repository's as repository-relative paths, an
    installed package's from its package directory on, as `display_path` names them. The runner's
    directories say nothing to a reader and differ from machine to machine."""
    for prefix in {root.rstrip("/\\"), str(PurePosixPath(root))}:
        if prefix:
            text = text.replace(prefix + "/", "").replace(prefix + "\\", "")
    return INSTALLED_PREFIX.sub("", text)


# Dynamo's own stand-ins for builtins (it inlines them where the program called a builtin): like
# the standard library, they are never where a break is to be fixed.
POLYFILLS = "torch/_dynamo/polyfills/"


def breaking_frame(frames: Sequence[Frame]) -> Frame:
    """The innermost frame outside the standard library: a torch or library break reached
    through `contextlib` or `functools` is still that library's break."""
    passing = (f for f in reversed(frames) if not is_stdlib(f.file) and POLYFILLS not in f.file.replace("\\", "/"))
    return next(passing, frames[-1])


def library_site(frame: Frame, root: str) -> LibrarySite | None:
    """Where a break outside the repository is, when the frame that broke is outside it."""
    if in_repo(frame.file, root) or is_stdlib(frame.file):
        return None
    path = display_path(frame.file, root)
    package = path.split("/")[0].removesuffix(".py")
    return LibrarySite(package, path, frame.line, frame.function, frame.code)


@dataclass(frozen=True)
class Site:
    """Where a break is attributed: the innermost repository frame, and the frame that broke."""

    frame: Frame
    path: str
    origin: Origin
    innermost: Frame
    library: LibrarySite | None = None


# gbbot's own code that runs an entrypoint (the `call:` launcher, the warm server, the fast-mode
# shim, the pytest plugin) and the interpreter's `python -m` machinery: at the bottom of a
# traceback, never the user's code, wherever gbbot is installed.
OWN_FILES = (
    ("gbbot", "child", "launch.py"),
    ("gbbot", "child", "pytest_plugin.py"),
    ("gbbot", "child", "_shim", "sitecustomize.py"),
    ("gbbot", "backends", "warm_server.py"),
)
RUNNER_FILES = frozenset({"<frozen runpy>", "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"})


def runs_entrypoints(file: str) -> bool:
    """A frame of what starts an entrypoint rather than of the entrypoint."""
    if file in RUNNER_FILES:
        return True
    parts = PurePath(file.replace("\\", "/")).parts
    return any(parts[-len(own) :] == own for own in OWN_FILES)


def user_frames(raw: RawBreak) -> RawBreak:
    """`raw` with the frames of gbbot's launcher, server and shim left out of its stack."""
    kept = tuple(f for f in raw.stack if not runs_entrypoints(f.file))
    return raw if len(kept) == len(raw.stack) else replace(raw, stack=kept)


def attribute(raw: RawBreak, root: str) -> Site | None:
    frames = raw.stack or ((raw.location,) if raw.location else ())
    if not frames:
        return None
    innermost = frames[-1]
    repo = [f for f in frames if in_repo(f.file, root)]
    outside = [f for f in frames if not is_stdlib(f.file)]
    frame = (repo or outside or list(frames))[-1]
    broke = breaking_frame(frames)
    origin = origin_of(broke.file, root)
    library = library_site(broke, root) if origin is not Origin.USER else None
    return Site(frame, display_path(frame.file, root), origin, innermost, library)


# --- fingerprints ------------------------------------------------------------------------------


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    """The tokens of one source line, as far as it tokenizes on its own (a line of a longer
    statement stops early)."""
    found: list[tokenize.TokenInfo] = []
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        found.extend(tokenize.generate_tokens(io.StringIO(line).readline))
    return found


def _string_spans(tokens: Sequence[tokenize.TokenInfo]) -> list[tuple[int, int]]:
    """Column spans of string literals (f-strings are several tokens from Python 3.12 on)."""
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    for token in tokens:
        name = tokenize.tok_name[token.type]
        if name == "STRING":
            spans.append((token.start[1], token.end[1]))
        elif name == "FSTRING_START" and opened is None:
            opened = token.start[1]
        elif name == "FSTRING_END" and opened is not None:
            spans.append((opened, token.end[1]))
            opened = None
    return spans


def strip_comment(code: str) -> str:
    """`x = 1 # one` → `x = 1 `; a `#` inside a string is not a comment. A line that does not
    tokenize on its own (an unterminated string) is kept whole."""
    line = code.strip()
    if "#" not in line:
        return line
    comment = next((t for t in _tokens(line) if t.type == tokenize.COMMENT), None)
    return line[: comment.start[1]] if comment else line


def normalise_code(code: str) -> str:
    """Without its comment, with runs of whitespace outside string literals made one space."""
    line = strip_comment(code).strip()
    pieces, at = [], 0
    for start, end in _string_spans(_tokens(line)):
        pieces += [WHITESPACE_RE.sub(" ", line[at:start]), line[start:end]]
        at = end
    pieces.append(WHITESPACE_RE.sub(" ", line[at:]))
    return "".join(pieces).strip()


def fingerprint_key(
    gb_key: str, path: str, qualname: str, code: str, origin: Origin, innermost: Frame | None
) -> tuple[str, ...]:
    """What a fingerprint hashes (docs/architecture.md, "Breaks"), before the occurrence index.
    A break outside user code also keys on the frame that broke, so two library breaks under one
    user line differ."""
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
    statement: str = ""  # the whole statement, when it spans more lines than the break's

    def key(self, message: BreakMessage) -> tuple[str, ...]:
        gb_key = message.gb_id or message.gb_type
        return fingerprint_key(gb_key, self.site.path, self.qualname, self.code, self.site.origin, self.site.innermost)


def _locate(raw: RawBreak, root: str, lookup: SourceLookup) -> _Located | None:
    site = attribute(raw, root)
    if site is None:
        return None
    source = lookup(site.path) if in_repo(site.frame.file, root) else None
    line, function = site.frame.line, site.frame.function
    code = site.frame.code or (source.line(line).strip() if source else "")
    qualname = source.qualname(line, function) if source else function
    statement = source.statement(line) if source else ""
    return _Located(raw, site, qualname, code, bool(source and source.in_loop(line)), statement)


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


def compile_error(brk: GraphBreak) -> CompileError:
    """A classified record of a compile that raised, as the entrypoint's failure: one sentence."""
    sentence = brk.explanation.split(". ")[0].strip()
    sentence = sentence if len(sentence) <= ERROR_SENTENCE_CHARS else sentence[: ERROR_SENTENCE_CHARS - 1] + "…"
    return CompileError(brk.gb_type, brk.gb_id, brk.category, brk.file, brk.line, brk.function, brk.code, sentence)


ERROR_SENTENCE_CHARS = 300


def impact_order(brk: GraphBreak) -> tuple:
    """A frame that fell back to eager first, then breaks in loops, then by count."""
    return (not brk.frame_skipped, not brk.in_loop, -brk.count, brk.file, brk.line, brk.gb_type)


def _only_its_location(raw: RawBreak) -> bool:
    return raw.location is not None and raw.stack in ((), (raw.location,))


def with_suppressed_stacks(raws: Iterable[RawBreak]) -> list[RawBreak]:
    """Dynamo prints a break's user stack once; a repeat at the same place says "user stack
    suppressed due to duplicate graph break" and names only the line it happened at (inside a
    library, for a third-party break). Such a repeat takes the stack of the break first reported
    at that line with that type, so it folds into that break instead of standing apart as a
    second break at a library line."""
    raws = list(raws)
    known: dict[tuple[str, str, int], tuple[Frame, ...]] = {}
    for r in raws:
        if r.location is not None and not _only_its_location(r):
            known.setdefault((r.root.gb_id or r.root.gb_type, r.location.file, r.location.line), r.stack)
    return [
        replace(r, stack=known.get((r.root.gb_id or r.root.gb_type, r.location.file, r.location.line), r.stack))
        if _only_its_location(r)
        else r
        for r in raws
    ]


def classify(
    raws: Iterable[RawBreak],
    root: str,
    lookup: SourceLookup = lambda _path: None,
    ignore: Iterable[IgnoreRule] = (),
    entrypoint: str = "",
    rules: Rules | None = None,
    ids: IdIndex | None = None,
    frames: FrameIndex | None = None,
) -> tuple[GraphBreak, ...]:
    """`ids` maps a message without a registry id to its id (default: the installed torch's
    registry), so that a break keeps its identity when torch rewords it. `frames` says which
    frame each record's compile compiled (gbbot/analysis/frames.py); without it breaks name none."""
    ids = registry.installed() if ids is None else ids
    rules = rules or load_rules()
    rules = replace(rules, loop=rules.loop.resolved(ids))
    ignore = tuple(ignore)
    raws = with_suppressed_stacks(user_frames(identified(r, ids)) for r in raws)
    located = [loc for loc in (_locate(r, root, lookup) for r in raws) if loc is not None]
    groups: dict[tuple[str, ...], dict[int, list[_Located]]] = {}
    for loc in located:
        groups.setdefault(loc.key(loc.raw.root), {}).setdefault(loc.site.frame.line, []).append(loc)
    breaks = []
    for key, by_line in groups.items():
        # Identical breaks are numbered from the last one up: one added above an existing one
        # takes a new number, and the existing one keeps its fingerprint.
        for occurrence, line in enumerate(sorted(by_line, reverse=True)):
            breaks.append(_fold(key, occurrence, by_line[line], rules, root, frames))
    breaks = [replace(b, ignored=True) if is_ignored(b, ignore, entrypoint) else b for b in breaks]
    breaks = [replace(b, fix=labels.fix_label(b, lookup)) for b in breaks]
    return tuple(sorted(breaks, key=impact_order))


def _recipe(root: BreakMessage, rule: Rule | None) -> str | None:
    """The recipe that takes the break's GB id (the rule's, for a message the registry gave no
    id); the label then asks the statement (gbbot/analysis/labels.py)."""
    from gbbot import recipes  # LibCST: loaded when a break is classified, not by every reader of reports

    return recipes.by_id(root.gb_id or (rule.gb_id if rule else None))


def occurrences(raws: Iterable[RawBreak]) -> int:
    """How often a break was hit: once per compile that met it, whether it split that compile's
    graph or ended it (the frame fell back to eager, or Dynamo skipped the rest of it), so a break
    that makes four frames run eagerly was hit four times, as TORCH_LOGS=graph_breaks shows it. A
    compile Dynamo restarted records the break again: one compile, one hit. A record that names
    no compile (saved TORCH_LOGS text) counts when it split a graph; a break was hit at least once."""
    raws = list(raws)
    compiles = {
        (r.log, r.frame_id, r.compile_index) for r in raws if r.frame_id is not None and r.compile_index is not None
    }
    unnamed = sum(1 for r in raws if (r.frame_id is None or r.compile_index is None) and not r.ends_frame)
    return max(1, len(compiles) + unnamed)


def _frames_of(same: list[_Located], frames: FrameIndex | None) -> tuple[tuple, tuple]:
    if frames is None:
        return (), ()
    traced = {ref: None for loc in same if (ref := frames.of(loc.raw)) is not None}
    eager = {ref: None for loc in same if (ref := frames.made_eager(loc.raw)) is not None}
    return tuple(traced), tuple(eager)


def _gathered(same: list[_Located]) -> tuple[dict[str, BreakMessage], dict[int | None, list[RawBreak]]]:
    """The messages folded in as consequences (by id, first seen first), and each rank's records."""
    consequences: dict[str, BreakMessage] = {}
    per_rank: dict[int | None, list[RawBreak]] = {}
    for loc in same:
        per_rank.setdefault(loc.raw.rank, []).append(loc.raw)
        for message in loc.raw.consequences:
            consequences.setdefault(message.gb_id or message.gb_type, message)
    return consequences, per_rank


def _fold(
    key: tuple[str, ...], occurrence: int, same: list[_Located], rules: Rules, root_dir: str, frames: FrameIndex | None
) -> GraphBreak:
    first = same[0]
    root = first.raw.root
    consequences, per_rank = _gathered(same)
    caused = tuple(fingerprint((name, *key[1:]), occurrence) for name in sorted(consequences))
    site = first.site
    traced, eager = _frames_of(same, frames)
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
        statement=first.statement,
        explanation=root.explanation,
        hints=root.hints,
        doc_url=root.doc_url,
        frame_skipped=any(loc.raw.frame_skipped for loc in same) or bool(eager),
        in_loop=first.in_loop or any(rules.loop.matches(m) for m in consequences.values()),
        # a break every rank of a distributed run hits is one break, seen on several ranks
        count=max(occurrences(raws) for raws in per_rank.values()),
        ranks=len(per_rank),
        library_site=site.library,
        caused=caused,
        user_stack=tuple(Frame(display_path(f.file, root_dir), f.line, f.function, f.code) for f in first.raw.stack),
        # recipes patch the repository's own line: never the call into a library that broke
        fix=_recipe(root, rules.rule(root)) if site.origin is Origin.USER else None,
        consequences=tuple(m.gb_type for m in consequences.values()),
        fullgraph_failure=any(loc.raw.fullgraph_failure for loc in same),
        tests=tuple(sorted({loc.raw.test for loc in same if loc.raw.test})),
        frames=traced,
        makes_eager=eager,
    )
