"""Compilation metrics → the frames that compiled more than once, classified and in impact order.
Pure: rules are data (gbbot/data/recompile_rules.yaml), source files come in through a lookup.

Dynamo compiles a frame again whenever one of its guards fails; after recompile_limit compiles of
one frame it gives up and runs that frame eagerly for the rest of the process. Each
`compilation_metrics` record of a recompile carries the failing guard (`recompile_reason`), and the
attempt refused at the limit carries `fail_reason: "Dynamo recompile limit exceeded …"`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from gbbot.analysis import classify
from gbbot.analysis.frames import compile_key, index
from gbbot.core.model import (
    ChangeState,
    Frame,
    FrameMetrics,
    FrameRef,
    FrameStart,
    GraphBreak,
    LibrarySite,
    Recompilation,
    Recompiled,
    RecompileReason,
    Report,
    Status,
    TraceLog,
)
from gbbot.trace.tracelog import resumed_at

RULES_PATH = Path(__file__).parent.parent / "data" / "recompile_rules.yaml"
# "recompile limit" in torch 2.13, "cache_size_limit" / "cache size limit" in older releases.
LIMIT_RE = re.compile(r"recompile.limit|cache.size.limit|cache_size_limit", re.IGNORECASE)
REASON_HEAD_RE = re.compile(r"^\d+/\d+: ")
LOCATION_RE = re.compile(r"(?P<path>\S+):(?P<line>\d+) in (?P<fn>[\w<>.]+)")
FRAME_RE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<fn>.+)$')
SOURCE_RE = re.compile(r"""\b[LG]\[['"]([^'"]+)['"]\]""")
# `tensor 'x' size mismatch …`; a parameter's name holds quotes of its own:
# `tensor 'self._modules['mlp']._parameters['bias']' dtype mismatch …`
TENSOR_RE = re.compile(r"^tensor '(.+?)'(?=\s|$)")
INDEX_RE = re.compile(r"\bat index (\d+)")
# `len(xs) == 2`, `___check_type_id(self._modules['act'], 9412…)`, `___check_obj_id(fn.__code__, …)`
CALLED_RE = re.compile(r"^(?:len|___check_type_id|___check_obj_id)\((?P<arg>[^,)]+)")
SUBMODULE_RE = re.compile(r"""\._(?:modules|parameters|buffers)\[['"](\w+)['"]\]""")
GUARD_CHARS = 160


@dataclass(frozen=True)
class Kind:
    kind: str
    pattern: re.Pattern[str]
    cause: str
    advice: str
    dynamic: bool = False


def filled(text: str, guard: Guard) -> str:
    """`{name}` → what the guard is about, `{dim}` → the dimension it names (0 when none)."""
    dim = INDEX_RE.search(guard.text)
    return text.replace("{name}", guard.named or "the value").replace("{dim}", dim.group(1) if dim else "0")


@dataclass(frozen=True)
class Rules:
    doc_url: str
    limit_cause: str
    limit_advice: str
    kinds: tuple[Kind, ...]

    def kind(self, guard: str) -> Kind:
        return next(k for k in self.kinds if k.pattern.search(guard))


@functools.cache
def load_rules(path: Path = RULES_PATH) -> Rules:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    kinds = tuple(
        Kind(
            k["kind"],
            re.compile(k["pattern"]),
            " ".join(k["cause"].split()),
            " ".join(k["advice"].split()),
            bool(k.get("dynamic")),
        )
        for k in data["kinds"]
    )
    limit = data["limit"]
    return Rules(data["doc_url"], " ".join(limit["cause"].split()), " ".join(limit["advice"].split()), kinds)


# --- one recompile reason ----------------------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """A failing guard as Dynamo words it, split into what gbbot shows and compares."""

    text: str  # the guard expression or mismatch sentence
    code: str  # the source line it points at, as quoted in the reason
    location: str  # "path-tail:line in fn", the path cut short by Dynamo
    stack: tuple[Frame, ...]  # the "User stack trace" under the reason, when there is one

    @property
    def subject(self) -> str:
        """What the guard is about, without L[...]/G[...] wrappers: `x`, `n`, `self.scale`."""
        tensor = TENSOR_RE.match(self.text)
        name = tensor.group(1) if tensor else re.split(r" == | is | != |\(", self.text, maxsplit=1)[0]
        return unwrap(name).strip()

    @property
    def named(self) -> str:
        """The subject as a reader writes it: `xs` for `len(xs)`, `self.act` for
        `self._modules['act']`, `fn` for `fn.__code__`; "" for global state."""
        if self.text.startswith("GLOBAL_STATE"):
            return ""
        called = CALLED_RE.match(self.text)
        name = unwrap(called.group("arg")) if called else self.subject
        return SUBMODULE_RE.sub(_attribute, name).removesuffix(".__code__").strip()


def _attribute(found: re.Match[str]) -> str:
    """`._modules['mlp']` → `.mlp`, `._modules['2']` → `[2]` (an nn.Sequential's item)."""
    name = found.group(1)
    return f"[{name}]" if name.isdigit() else f".{name}"


def unwrap(source: str) -> str:
    return SOURCE_RE.sub(r"\1", source)


def parse_reason(text: str) -> Guard | None:
    """Pure: a `recompile_reason` (first failing guard; Dynamo reports one by default) → Guard."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        return None
    head = REASON_HEAD_RE.sub("", lines[0])
    parts = [p.strip() for p in head.split("  # ")]
    location = LOCATION_RE.search(parts[2]) if len(parts) > 2 else None
    stack = tuple(
        Frame(m["file"], int(m["line"]), m["fn"].strip(), _code_after(lines, i))
        for i, m in ((i, FRAME_RE.match(line)) for i, line in enumerate(lines))
        if m
    )
    return Guard(parts[0], parts[1] if len(parts) > 1 else "", location.group(0) if location else "", stack)


def _code_after(lines: list[str], index: int) -> str:
    following = lines[index + 1] if index + 1 < len(lines) else ""
    return following.strip() if following.startswith("    ") and not FRAME_RE.match(following) else ""


def shorten(text: str, limit: int = GUARD_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- one frame ---------------------------------------------------------------------------------


# A frame is its trace file and its frame id there: Dynamo numbers frames from 0 in each process,
# so the files of one trace directory (one per rank or process) repeat frame ids.
FrameKey = tuple[str, int]


@dataclass(frozen=True)
class FrameCompiles:
    """Everything the trace says about one frame's compiles, in compile order."""

    frame_id: FrameKey
    metrics: tuple[FrameMetrics, ...]
    start: FrameStart | None
    symbols: frozenset[tuple[int, str]]  # (compile index, unwrapped source)

    @property
    def limit_hit(self) -> bool:
        return any(m.fail_reason and LIMIT_RE.search(m.fail_reason) for m in self.metrics)

    @property
    def compilations(self) -> int:
        return sum(1 for m in self.metrics if not (m.fail_reason and LIMIT_RE.search(m.fail_reason)))

    def made_dynamic(self, compile_index: int | None, subject: str) -> bool:
        return any(
            index == compile_index and (source == subject or source.startswith((subject + ".", subject + "[")))
            for index, source in self.symbols
        )


def group_frames(log: TraceLog) -> list[FrameCompiles]:
    """Metrics, starts and symbols of each frame (trace file, frame id), in first-compile order."""
    metrics: dict[FrameKey, list[FrameMetrics]] = {}
    for m in log.metrics:
        if m.frame_id is not None:
            metrics.setdefault((m.log, m.frame_id), []).append(m)
    starts = {(s.log, s.frame_id, s.compile_index): s for s in log.starts}
    symbols: dict[FrameKey, set[tuple[int, str]]] = {}
    for s in log.symbols:
        symbols.setdefault((s.log, s.frame_id), set()).add((s.compile_index, unwrap(s.source)))
    return [
        FrameCompiles(
            key,
            tuple(sorted(ms, key=lambda m: m.compile_index or 0)),
            starts.get((*key, min((m.compile_index or 0) for m in ms))),
            frozenset(symbols.get(key, ())),
        )
        for key, ms in metrics.items()
    ]


def _compiled_frame(frames: FrameCompiles) -> Frame:
    first = next((m for m in frames.metrics if m.co_filename), frames.metrics[0])
    return Frame(first.co_filename, first.co_firstlineno or 0, first.co_name)


def site(frames: FrameCompiles, root: str) -> Frame:
    """The innermost repository frame of the first compile's stack (as breaks are attributed),
    else the compiled code object itself."""
    stack = frames.start.stack if frames.start else ()
    compiled = _compiled_frame(frames)
    in_repo = [f for f in stack if classify.in_repo(f.file, root)]
    return in_repo[-1] if in_repo else (stack[-1] if stack else compiled)


def _reason_line(guard: Guard, file: str) -> tuple[int | None, str]:
    """The line in `file` the guard points at: from the user stack under the reason, else from
    its location when Dynamo's cut-short path is a tail of `file`."""
    in_file = [f for f in guard.stack if f.file == file]
    if in_file:
        return in_file[-1].line, in_file[-1].code or guard.code
    match = LOCATION_RE.match(guard.location)
    if match and file.replace("\\", "/").endswith(match["path"].lstrip(".")):
        return int(match["line"]), guard.code
    return None, guard.code


@dataclass(frozen=True)
class _Seen:
    guard: Guard
    kind: Kind
    seen: tuple[tuple[FrameCompiles, int | None], ...]  # the code object and compile of each recompile


def _guard_key(guard: Guard, kind: Kind) -> tuple[str, str, str]:
    """Recompiles that failed on one guard: its kind, what it is about and the dimension it names
    (index 1 and index 2 of one tensor are two guards, as TORCH_LOGS=recompiles shows them)."""
    dim = INDEX_RE.search(guard.text)
    return (kind.kind, guard.subject, dim.group(1) if dim else "")


def _distinct(code: Sequence[FrameCompiles], rules: Rules) -> list[_Seen]:
    """Each recompile counted once, under the guard that failed first (the one Dynamo reports)."""
    seen: dict[tuple[str, str, str], _Seen] = {}
    for frames in code:
        for m in frames.metrics:
            guard = parse_reason(m.recompile_reason or "")
            if guard is None:
                continue
            kind = rules.kind(guard.text)
            key = _guard_key(guard, kind)
            before = seen.get(key)
            at = (*(before.seen if before else ()), (frames, m.compile_index))
            seen[key] = _Seen(before.guard if before else guard, kind, at)
    return list(seen.values())


def _is_dynamic(item: _Seen) -> bool:
    """Automatic dynamic: a kind that can be, failing once in each code object, after which the
    value became a symbol there."""
    objects = [frames.frame_id for frames, _ in item.seen]
    return (
        item.kind.dynamic
        and len(set(objects)) == len(objects)
        and all(frames.made_dynamic(index, item.guard.subject) and not frames.limit_hit for frames, index in item.seen)
    )


def analyse_function(
    code: Sequence[FrameCompiles], frame: FrameRef, root: str, lookup: classify.SourceLookup, rules: Rules
) -> Recompilation | None:
    """One function's recompiles: those of its code object and of each resume function Dynamo
    made of it (a code object of its own, which recompiles on its own), all named by `frame`, the
    function (gbbot/analysis/frames.py). None when every code object compiled once."""
    if not any(f.compilations > 1 or f.limit_hit for f in code):
        return None
    compiled = _compiled_frame(code[0])
    where = (
        Frame(compiled.file, frame.line, frame.function)
        if classify.in_repo(compiled.file, root)
        else site(code[0], root)
    )
    path = classify.display_path(where.file, root)
    in_repo = classify.relative_to_root(where.file, root) is not None
    source = lookup(path) if in_repo else None
    qualname = source.qualname(where.line, where.function) if source else where.function
    reasons = [_reason(item, path, qualname, where.file) for item in _distinct(code, rules)]
    resumes = [f for f in code if resumed_at(_compiled_frame(f).function) is not None]
    resume = next((f for f in resumes if f.compilations > 1 or f.limit_hit), resumes[0] if resumes else None)
    return Recompilation(
        fingerprint=classify.fingerprint(("recompile", path, qualname), 0),
        file=path,
        line=where.line,
        function=qualname,
        compilations=sum(f.compilations for f in code),
        limit_hit=any(f.limit_hit for f in code),
        reasons=tuple(sorted(reasons, key=lambda r: (r.dynamic, -r.count, r.kind))),
        doc_url=rules.doc_url,
        frame=replace(frame, qualname=frame.qualname or (qualname if in_repo else "")),
        library_site=_library_site(code[0], root, where),
        resumes_at=resumed_at(_compiled_frame(resume).function) if resume else None,
    )


def _reason(item: _Seen, path: str, qualname: str, file: str) -> RecompileReason:
    """One distinct guard failure of a function, with the line the guard names and its advice."""
    line, text = _reason_line(item.guard, file)
    return RecompileReason(
        fingerprint=classify.fingerprint(("recompile", path, qualname, item.kind.kind), 0),
        kind=item.kind.kind,
        guard=shorten(item.guard.text),
        count=len(item.seen),
        dynamic=_is_dynamic(item),
        cause=filled(item.kind.cause, item.guard),
        advice=filled(item.kind.advice, item.guard),
        line=line,
        code=shorten(text, 200),
    )


def _library_site(frames: FrameCompiles, root: str, where: Frame) -> LibrarySite | None:
    """The installed package's function that recompiled, when the compiled frame is one and the
    report names a repository line for it instead (the stack's innermost repository frame)."""
    code = _compiled_frame(frames)
    if not code.file or classify.in_repo(code.file, root) or not classify.in_repo(where.file, root):
        return None
    return classify.library_site(code, root)


def impact_order(rc: Recompilation) -> tuple:
    """A frame that hit the limit first, then problems before automatic dynamic info, by count."""
    return (not rc.limit_hit, rc.info_only, -rc.compilations, rc.file, rc.line, rc.function)


def functions(
    log: TraceLog, root: str, lookup: classify.SourceLookup
) -> dict[tuple[str, FrameRef], list[FrameCompiles]]:
    """(trace file, function) → its code objects, the function's own and its resume functions'."""
    refs = index(log, root, lookup).refs
    found: dict[tuple[str, FrameRef], list[FrameCompiles]] = {}
    for code in group_frames(log):
        first = code.metrics[0]
        key = compile_key(first.log, first.frame_id, first.compile_index)
        compiled = _compiled_frame(code)
        ref = refs.get(key) if key else None
        ref = ref or FrameRef(classify.display_path(compiled.file, root), compiled.line, compiled.function)
        found.setdefault((code.frame_id[0], ref), []).append(code)
    return found


def analyse(
    log: TraceLog, root: str, lookup: classify.SourceLookup = lambda _path: None, rules: Rules | None = None
) -> tuple[Recompilation, ...]:
    rules = rules or load_rules()
    found = (
        analyse_function(code, frame, root, lookup, rules) for (_, frame), code in functions(log, root, lookup).items()
    )
    # One frame in several files (one per rank): reported once, as the file that saw the worst.
    return tuple(_worst(rc for rc in found if rc is not None))


# --- comparing and policy ----------------------------------------------------------------------


def limit_fingerprint(rc: Recompilation) -> str:
    return classify.fingerprint(("recompile_limit", rc.fingerprint), 0)


def problems(recompiles: Iterable[Recompilation]) -> dict[str, Recompilation]:
    """Problem fingerprint → its frame: each non-dynamic guard kind, and the limit when hit."""
    out: dict[str, Recompilation] = {}
    for rc in recompiles:
        if rc.limit_hit:
            out.setdefault(limit_fingerprint(rc), rc)
        for reason in rc.reasons:
            if not reason.dynamic:
                out.setdefault(reason.fingerprint, rc)
    return out


def all_recompiles(report: Report) -> tuple[Recompilation, ...]:
    return tuple(rc for e in report.entrypoints for rc in e.recompiles)


def _eager(report: Report) -> set[tuple]:
    return {f.frame.across for e in report.entrypoints for f in e.frames if f.eager}


def made_by(rc: Recompilation, breaks: Iterable[GraphBreak]) -> GraphBreak | None:
    """The break whose resume function `rc` is: one at the line the resume function resumes
    after, in the compiled frame's file (the break's own line, or a call on its stack there)."""
    if rc.resumes_at is None or rc.frame is None:
        return None
    at = (rc.frame.file, rc.resumes_at)
    return next((b for b in breaks if at in {(b.file, b.line), *((f.file, f.line) for f in b.user_stack)}), None)


def by_new_breaks(head: Report, new_breaks: Iterable[GraphBreak], base: Report | None = None) -> dict[str, str]:
    """Recompilation fingerprint → the new break that made the code that recompiles: the break
    whose resume function it is (`made_by`), or, given the base, a frame the base's entrypoint of
    the same name never compiled (it ran cleanly) that a new break was traced in (its caller now
    breaks at the call, so Dynamo compiles it on its own) or that compiles on its own because a
    new break makes its caller run eagerly."""
    new_breaks = tuple(new_breaks)
    new = {b.fingerprint for b in new_breaks}
    compiled = _compiled_on(base) if base is not None else {}
    found: dict[str, str] = {}
    for entry in head.entrypoints:
        eager = [b for b in entry.breaks if b.fingerprint in new and b.makes_eager]
        for rc in entry.recompiles:
            brk = made_by(rc, new_breaks)
            on_base = compiled.get(entry.name)
            if brk is None and on_base is not None and rc.frame is not None and rc.frame.across not in on_base:
                brk = next((b for b in new_breaks if rc.frame in b.frames), eager[0] if eager else None)
            if brk is not None:
                found.setdefault(rc.fingerprint, brk.fingerprint)
    return found


def _compiled_on(base: Report) -> dict[str, set[tuple]]:
    """Entrypoint → the frames it compiled, for those that ran cleanly and recorded their frames."""
    return {e.name: {f.frame.across for f in e.frames} for e in base.entrypoints if e.status is Status.OK and e.frames}


def attributed(head: Report, made: dict[str, str]) -> Report:
    """The head with each recompilation a new break's resume function made marked with it."""
    if not made:
        return head
    entrypoints = tuple(
        replace(e, recompiles=tuple(replace(rc, new_break=made.get(rc.fingerprint)) for rc in e.recompiles))
        for e in head.entrypoints
    )
    return replace(head, entrypoints=entrypoints)


def compare(head: Report, base: Report, new_breaks: Iterable[GraphBreak] = ()) -> tuple[Recompiled, ...]:
    """Problem fingerprints of the head vs the base, over whole reports (as breaks are overall).
    A base problem gone from the head because its frame now runs eagerly (and did not on the
    base) is hidden, not fixed: a frame that is not compiled cannot recompile. A head problem of
    a resume function a new break made is that break's (`by_new_break`), not new: the break is
    what the reader is asked to look at, and `mark_dynamic` would not be the remedy."""
    made = by_new_breaks(head, new_breaks, base)
    now, before = problems(all_recompiles(head)), problems(all_recompiles(base))
    limits = {limit_fingerprint(rc) for rc in all_recompiles(head) if rc.limit_hit}
    by_break = tuple(f for f, rc in now.items() if f not in before and rc.fingerprint in made)
    new = tuple(f for f in now if f not in before and f not in by_break)
    newly = _eager(head) - _eager(base)
    gone = {f: rc for f, rc in before.items() if f not in now}
    hidden = {f for f, rc in gone.items() if rc.frame is not None and rc.frame.across in newly}
    return (
        *((f, ChangeState.NEW) for f in new),
        *((f, ChangeState.FIXED) for f in gone if f not in hidden),
        *((f, ChangeState.PERSISTING) for f in now if f in before),
        *((f, ChangeState.NEW_LIMIT) for f in new if f in limits),
        *((f, ChangeState.HIDDEN) for f in gone if f in hidden),
        *((f, ChangeState.BY_NEW_BREAK) for f in by_break),
    )


def failing(report: Report, policy: str) -> list[str]:
    """Problem fingerprints that fail `policy`: limit → frames that newly hit the recompile limit
    (every such frame without a baseline); new → every new problem; any → every problem."""
    now = problems(all_recompiles(report))
    if policy == "none":
        return []
    if policy == "any":
        return list(now)
    found = report.diff.recompiles if report.diff else None
    new = [f for f, s in found if s is ChangeState.NEW] if found is not None else list(now)
    if policy == "new":
        return new
    limited = {limit_fingerprint(rc) for rc in now.values() if rc.limit_hit}
    return [f for f in new if f in limited]


def ordered(report: Report) -> list[Recompilation]:
    """Each frame once across entrypoints (the most compiles seen), in impact order."""
    return _worst(all_recompiles(report))


def _worst(recompiles: Iterable[Recompilation]) -> list[Recompilation]:
    """Each fingerprint once, as the record that comes first in impact order, in that order."""
    frames: dict[str, Recompilation] = {}
    for rc in recompiles:
        seen = frames.get(rc.fingerprint)
        if seen is None or impact_order(rc) < impact_order(seen):
            frames[rc.fingerprint] = rc
    return sorted(frames.values(), key=impact_order)
