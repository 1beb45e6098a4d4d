"""Report → markdown (PR comment, check-run summary, job summary, `--markdown`). Pure; the layout
is a Jinja2 template, every untrusted string passes an escaping filter.

It is written for a reviewer with ten seconds: first one line of verdict that leads with what the
PR changed, one line of context in small type, then the new breaks as a table (where, linked to
the line at the head commit; what; what to do), their details folded one per break, and
everything else (fixed, hidden, persisting, ignored, the entrypoints) folded with a count.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

import jinja2

from gbbot.analysis import advice, classify, recompile
from gbbot.core import counts, words
from gbbot.core.counts import BreakCounts
from gbbot.core.doc_links import graph_break_doc
from gbbot.core.fixes import Advice, FixStatus
from gbbot.core.model import (
    BreakMessage,
    Cause,
    Change,
    ChangeState,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    Frame,
    FrameRef,
    GraphBreak,
    Recompilation,
    Report,
    Status,
)
from gbbot.core.words import listed, plural
from gbbot.render import findings, fixes
from gbbot.render.escape import html_text, md_code, md_code_block, md_link, md_text
from gbbot.render.findings import SAFE_PATH, compile_error_words

TEMPLATES = Path(__file__).parent / "templates"
STATUS_ICON = {
    "ok": "✅",
    "failed": "❌",
    "timeout": "⏱️",
    "crashed": "💥",
    "skipped": "⏭️",
    "no_compile": "⚠️",
    "interrupted": "⏹️",
}

TITLE = "gbbot: torch.compile graph breaks"  # the comment's, the check run's and the summary's heading
WEB_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:\d+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHA = re.compile(r"^[0-9a-f]{7,64}$")
TORCH_FILES = ("torch/", "functorch/")  # frames inside torch, as a report names them
CODE_IN_TABLE = 90  # characters of a statement shown in a table cell; all of it is in the details
# A note on the comparison that begins with this questions the result itself (a baseline that
# does not match the run): it stays wherever the result is shown. Other notes (the base reused,
# a dirty tree) say how the result was reached, for the log and the job summary.
WARNING_NOTE = "⚠️"


@dataclass(frozen=True)
class SourceLinks:
    """Where a `file:line` points: the repository's web address and the commits to link at."""

    web: str  # https://github.com/owner/name
    head_sha: str

    def __post_init__(self) -> None:
        if not WEB_URL.match(self.web) or not SHA.match(self.head_sha):
            raise ValueError(f"not a repository address and commit: {self.web!r} {self.head_sha!r}")

    def line(self, path: str, line: int, sha: str | None = None) -> str | None:
        commit = sha if sha and SHA.match(sha) else self.head_sha
        if not SAFE_PATH.match(path):
            return None
        return f"{self.web}/blob/{commit}/{quote(path)}#L{max(line, 1)}"


@dataclass(frozen=True)
class Item:
    brk: GraphBreak
    entrypoints: tuple[str, ...]
    fix_lines: tuple[str, ...] = ()  # trusted markdown: what the fix step concluded for it
    counted: BreakCounts | None = None  # over every entrypoint (a fixed break: the base's record)
    note: str = ""  # markdown: why it is in its section (what hides it)
    verified: bool = False  # the fix step verified a patch for it

    @property
    def total(self) -> int:
        return self.counted.total if self.counted else self.brk.count

    @property
    def frame_eager(self) -> bool:
        return self.counted.frame_eager if self.counted else self.brk.frame_skipped

    @property
    def cost(self) -> str:
        """Markdown: what the break costs, as its run measured it (the function's name as code)."""
        return findings.cost_text(self.brk.cost, name_as=md_code)


@dataclass(frozen=True)
class Folded:
    """A folded list: its summary line (with the count) and one line per break."""

    summary: str  # trusted HTML text
    lines: tuple[str, ...]  # trusted markdown
    more: int = 0  # left out for size


@dataclass(frozen=True)
class Options:
    """How the report is titled, how much of it shows, and what its footer says (the comment, the
    check run and the job summary each render it with their own)."""

    title: str = TITLE
    pointer: str = ""  # trusted markdown: where the full report is (workflow run, artifact)
    notes: tuple[str, ...] = ()  # trusted markdown lines at the end: where figures come from, what was left out
    max_items: int | None = None  # per section; the rest is counted, not shown
    links: SourceLinks | None = None  # `file:line` as links to the line (none: plain code)
    gb_fix: bool = False  # the repository answers `/gb-fix` comments (it has that workflow)
    process_notes: bool = True  # how the comparison was made (base reused, dirty tree); the comment leaves them out
    # The entrypoints' table; the comment shows it only when it changes the reading (an
    # entrypoint that did not run cleanly, or one without a base to compare with).
    entrypoint_table: bool = True

    def noted(self, line: str) -> Options:
        return replace(self, notes=(*self.notes, line))

    def for_comment(self) -> Options:
        return replace(self, process_notes=False, entrypoint_table=False)

    def stable(self) -> Options:
        """What a reader sees that stays the same from commit to commit: no pointer to this run,
        no links at this commit."""
        return replace(self, pointer="", links=None)

    @property
    def footer(self) -> tuple[str, ...]:
        size = (
            () if self.max_items is None else (f"_Showing at most {self.max_items} breaks per section (size limit)._",)
        )
        return (*size, *self.notes, *((self.pointer,) if self.pointer else ()))


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,  # markdown, escaped by the filters below
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=md_text,
        html=html_text,
        code=md_code,
        codeblock=md_code_block,
        # built from the id, not the report's URL (a report is its writer's word)
        doclink=lambda _url, gb_id: md_link(f"{gb_id or 'Graph break'} documentation", graph_break_doc(gb_id)),
        # a page gbbot's own data names (recompile_rules.yaml), never a report's
        ownlink=lambda url, label: md_link(f"{label} documentation", url),
    )
    return env


ENV = _environment()


# --- words -------------------------------------------------------------------------------------


def what(brk: GraphBreak) -> str:
    """The gb_type in plain words (rules.yaml's title), else torch's own gb_type."""
    rule = classify.load_rules().rule(BreakMessage(brk.gb_type, brk.gb_id))
    return rule.title if rule and rule.title else brk.gb_type


def statement(brk: GraphBreak) -> str:
    """The code at the break, as shown: the whole statement when the report has it."""
    return brk.statement or brk.code


def one_line(code: str, limit: int = CODE_IN_TABLE) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def where(brk: GraphBreak | Recompilation | Frame, links: SourceLinks | None, sha: str | None = None) -> str:
    """`file:line`, linked to the line when the repository's address is known."""
    label = md_code(f"{brk.file}:{brk.line}")
    url = links.line(brk.file, brk.line, sha) if links else None
    return f"[{label}]({url})" if url else label


# --- items -------------------------------------------------------------------------------------


def items(report: Report) -> list[Item]:
    """One item per fingerprint, with every entrypoint it appeared in and its fix result, in
    impact order."""
    each = counts.per_break(report)
    fixed = fixes.lines_by_break(report)
    verified = {r.fingerprint for r in report.fixes or () if r.status is FixStatus.VERIFIED}
    return [
        Item(
            b,
            each[b.fingerprint].entrypoints,
            fixed.get(b.fingerprint, ()),
            each[b.fingerprint],
            verified=b.fingerprint in verified,
        )
        for b in findings.impact_ordered(report)
    ]


def hidden_note(change: Change) -> str:
    """Why a hidden break is in its section: the new break that makes its frame run eagerly."""
    hider = change.hidden_by
    frames = [md_code(f.qualname or f.function) for f in made_eager(hider)] if hider else []
    return words.hidden_note(hider, frames, md_code)


def gone_items(report: Report, state: ChangeState) -> list[Item]:
    """The base's records of the breaks the head no longer has (fixed or hidden), with the
    entrypoints they went from."""
    if report.diff is None:
        return []
    changes = [replace(c, brk=on_head(report, c.brk)) for c in report.diff.changed(state)]
    return [Item(c.brk, c.entrypoints, note=hidden_note(c) if state is ChangeState.HIDDEN else "") for c in changes]


def on_head(report: Report, brk: GraphBreak) -> GraphBreak:
    """A base record whose frames the head compiles too, named as the head names them: one
    function is never given at the base's first line beside the head's (a line added above it)."""
    head = {f.frame.across: f.frame for e in report.entrypoints for f in e.frames}

    def named(frames: tuple[FrameRef, ...]) -> tuple[FrameRef, ...]:
        return tuple(head.get(f.across, f) for f in frames)

    return replace(brk, frames=named(brk.frames), makes_eager=named(brk.makes_eager))


@dataclass(frozen=True)
class Sorted:
    """The report's breaks by what the PR did to them."""

    shown: list[Item]  # new (or, without a diff, every counted break): the table
    fixed: list[Item]
    hidden: list[Item]
    revealed: list[Item]  # on the head only because a frame they lie in ran eagerly on the base
    persisting: list[Item]
    ignored: list[Item]


def sort(report: Report) -> Sorted:
    found = items(report)
    ignored = [i for i in found if i.brk.ignored]
    counted = [i for i in found if not i.brk.ignored]
    if report.diff is None:
        return Sorted(counted, [], [], [], [], ignored)
    state = report.diff.state

    def on_head(wanted: ChangeState) -> list[Item]:
        return [i for i in counted if state(i.brk) is wanted]

    return Sorted(
        on_head(ChangeState.NEW),
        gone_items(report, ChangeState.FIXED),
        gone_items(report, ChangeState.HIDDEN),
        [replace(i, note=words.REVEALED_NOTE) for i in on_head(ChangeState.REVEALED)],
        on_head(ChangeState.PERSISTING),
        ignored,
    )


# --- the verdict and its context ---------------------------------------------------------------


def _by_cause(diff: Diff, cause: Cause) -> list[Change]:
    found = diff.dependencies
    return [c for c in diff.changes if found is not None and found.cause(c.fingerprint) is cause]


def dependency_headline(report: Report) -> str | None:
    """On a pull request that changes package versions: what the new versions did, first."""
    diff = report.diff
    found = diff.dependencies if diff else None
    if diff is None or found is None or not found.packages:
        return None
    return words.put_down_to(f"**{md_text(found.summary)}**", diff, Cause.DEPENDENCIES)


def dependency_blocks(report: Report, links: SourceLinks | None) -> list[str]:
    """Under a dependency change's headline, paragraph by paragraph: its breaks, one line each;
    then what the code change did, and what both did where the frames cannot tell them apart."""
    diff = report.diff
    if dependency_headline(report) is None or diff is None:
        return []
    theirs = [_change_line(c, links) for c in _by_cause(diff, Cause.DEPENDENCIES)]
    blocks = ["\n".join(theirs)] if theirs else []
    both = _by_cause(diff, Cause.BOTH)
    if diff.dependencies is not None and diff.dependencies.code_changed:
        blocks.append(words.put_down_to("The code change", diff, Cause.CODE))
    by_state, came, went = counts.by_cause(diff, Cause.BOTH)
    if both:
        blocks.append(words.both_changed(by_state) + "\n" + "\n".join(_change_line(c, links) for c in both))
    if came or went:
        blocks.append(words.both_recompiled(came, went))
    return blocks


def _change_line(change: Change, links: SourceLinks | None) -> str:
    return f"- {change.state.value}: {md_text(what(change.brk))} at {where(change.brk, links)}"


def headline(report: Report) -> str:
    """One sentence that leads with what the PR did (or, without a base, what there is)."""
    c, led = counts.counts(report), dependency_headline(report)
    if led is not None or report.diff is None:
        return led or words.report_headline(c)
    return words.pr_headline(c, report.diff, bool(_started_failing(report)))


def context(report: Report) -> str:
    """The one line of context under the verdict, in small type."""
    c = counts.counts(report)
    parts = [plural(c.entrypoints, "entrypoint")]
    if report.diff is not None:
        parts.append(f"{plural(c.distinct, 'graph break')} in all ({plural(c.occurrences, 'occurrence')})")
    elif c.distinct:
        parts.append(plural(c.occurrences, "occurrence"))
    parts.append(plural(c.graphs, "graph"))
    if c.frames_eager:
        parts.append(f"{plural(c.frames_eager, 'frame runs', 'frames run')} eagerly")
    parts.append(f"torch {md_code(report.torch_version or 'unknown')}")
    parts.append(f"mode {md_code(report.mode.value if report.mode else 'unknown')}")
    if report.diff is not None:
        parts.append(f"base {md_code(report.diff.base_ref)} at `{report.diff.base_sha[:7]}`")
        taken = sum(1 for e in report.entrypoints if e.from_base)
        if taken:
            parts.append(
                f"{taken} of {plural(c.entrypoints, 'entrypoint')} not reached by this change: results from the base"
            )
    if report.commit:
        parts.append(f"head `{report.commit[:7]}`")
    return "<sub>" + " · ".join(parts) + "</sub>"  # trace problems: said in words, see trace_caveats


TRACE_PLACE = re.compile(r"^\S+:\d+: ")  # `trace.log:12: ` in front of a trace problem
CAVEATS_SHOWN = 3


def trace_caveats(report: Report) -> list[str]:
    """Each kind of trace problem once, in words (where and how often aside), with the entrypoints
    it came from: what the reader cannot take on trust. Nothing when the trace read cleanly."""
    said: dict[str, str] = {}  # kind (digits aside) → its first words
    names: dict[str, dict[str, None]] = {}
    times: Counter[str] = Counter()
    for entry in report.entrypoints:
        for problem in entry.trace_problems:
            words = TRACE_PLACE.sub("", problem)
            kind = re.sub(r"\d+", "N", words)
            said.setdefault(kind, words)
            names.setdefault(kind, {})[entry.name] = None
            times[kind] += 1
    lines = [
        f"Trace caveat in {listed(list(names[k]))}: {said[k]}" + (f" ({times[k]} times)" if times[k] > 1 else "")
        for k in said
    ]
    more = len(lines) - CAVEATS_SHOWN
    return lines[:CAVEATS_SHOWN] + ([f"…and {more} more kinds of trace problem (in the report)"] if more > 0 else [])


def _shared_failures(report: Report) -> dict[str, EntrypointReport]:
    """The entrypoints that fail with the same compile error as on the base: nothing about them
    is this PR's doing."""
    same = {e.name for e in report.diff.entrypoints if e.still_failing} if report.diff else set()
    return {e.name: e for e in report.entrypoints if e.name in same and e.status not in counts.CLEAN}


def _started_failing(report: Report) -> list[EntrypointReport]:
    """What did not run cleanly, except a failure the base shares."""
    shared = _shared_failures(report)
    return [e for e in report.entrypoints if e.status not in counts.CLEAN and e.name not in shared]


def shared_failure_lines(report: Report) -> list[str]:
    """One line each, under the headline: a failure the base shares, which this PR did not bring."""
    out = []
    for entry in _shared_failures(report).values():
        error = entry.compile_error
        where = f": {md_text(error.gb_id or error.gb_type)} at {md_code(f'{error.file}:{error.line}')}" if error else ""
        out.append(f"{md_code(entry.name)} still fails with the same compile error as the base{where}.")
    return out


def not_clean_line(report: Report) -> str:
    """What did not run cleanly (and, with a base, not as it did there): its breaks are unknown,
    whatever the counts say."""
    bad = _started_failing(report)
    if not bad:
        return ""
    said = [
        f"{md_code(e.name)} {NOT_CLEAN_WORDS.get(e.status, e.status.value)}" + _exit(e.exit_code) + _why(e) for e in bad
    ]
    their = "its breaks are" if len(bad) == 1 else "their breaks are"
    return f"⚠️ {listed(said)}: {their} unknown."


def lost_baseline_lines(report: Report) -> list[str]:
    """One ⚠️ line each, above the headline: an entrypoint the change did not add whose base gave
    nothing to compare with, so its breaks count as new. One that did not run cleanly on the head
    either is said once, by the line about its failure."""
    return [words.lost_baseline(e.name, e.lost_baseline, md_code, md_text) for e in _lost(report) if e.lost_baseline]


def _lost(report: Report) -> list[EntrypointDiff]:
    failing = {e.name for e in _started_failing(report)}
    return [e for e in report.diff.entrypoints if e.lost_baseline and e.name not in failing] if report.diff else []


def _why(entry: EntrypointReport) -> str:
    """The compile error that ended the run, when one did: the failure itself, not a graph break."""
    error = entry.compile_error
    return f" on a {compile_error_words(error, md_code, md_text)}" if error else ""


def failure_text(entry: EntrypointReport) -> str:
    """A failed entrypoint's output as its fold shows it: the exception and the user's frames
    (not Dynamo's own stack) when there is one, else the output's end as it is."""
    if not entry.error:
        return "no output"
    return findings.user_failure(entry.error) or entry.error


NOT_CLEAN_WORDS = {Status.TIMEOUT: "timed out", Status.NO_COMPILE: "compiled nothing"}


def _exit(code: int | None) -> str:
    return f" (exit {code})" if code not in (None, 0) else ""


def notes(report: Report, options: Options) -> list[str]:
    """The diff's notes a reader wants, then each entrypoint without a base (all its breaks count as
    new, so it is always said) unless a line above the headline says it lost its baseline."""
    d = report.diff
    if d is None:
        return trace_caveats(report)
    warned = {e.name for e in _lost(report)}
    kept = [n for n in d.notes if options.process_notes or n.startswith(WARNING_NOTE)]
    kept += [words.say(e.no_baseline) for e in d.entrypoints if e.no_baseline and e.name not in warned]
    return kept + trace_caveats(report)  # a failure the base shares is its own line under the headline


# --- what to do --------------------------------------------------------------------------------


def todo(item: Item, options: Options) -> str:
    """The one thing to do about a new break, for its table cell."""
    brk = item.brk
    if item.verified:
        push = " — comment `/gb-fix` to push it" if options.gb_fix else ""
        return f"✅ verified fix in the details{push}"
    if brk.fix and options.gb_fix:
        return "comment `/gb-fix` to push the fix"
    first = advice.best(brk)
    if first is not None:
        return md_text(first.text)
    doc = graph_break_doc(brk.gb_id)  # from the id: a report's own URL is its writer's word
    return md_link("see the documentation", doc) if doc else ""


def made_eager(brk: GraphBreak) -> tuple[FrameRef, ...]:
    """The frames this break makes run eagerly: the report's (the frame Dynamo was compiling,
    often a caller that inlined the break's function), else, from a report made before frames
    were recorded, the break's own function. (One break's, for its card: not an entrypoint's or a
    report's frames that run eagerly, which analysis/frames.py and core/counts.py give.)"""
    if brk.makes_eager:
        return brk.makes_eager
    return (FrameRef(brk.file, 0, brk.function),) if brk.frame_skipped else ()  # 0: its first line is not known


def frame_link(ref: FrameRef, links: SourceLinks | None) -> str:
    """`Block.forward` (model.py:12), linked to the frame's first line (its qualname when the
    source was at hand, else its code object's name)."""
    name = ref.qualname or ref.function
    if not ref.line:
        return md_code(name)
    label = f"{md_code(name)} ({md_text(ref.file.rsplit('/', 1)[-1])}:{ref.line})"
    url = links.line(ref.file, ref.line) if links else None
    return f"[{label}]({url})" if url else label


def eager_words(item: Item, links: SourceLinks | None) -> str:
    """`makes `Net.forward` (model.py:12) run eagerly`, or "" when it makes no frame eager."""
    found = made_eager(item.brk) if item.frame_eager else ()
    if not found:
        return ""
    named = listed([frame_link(f, links) for f in found])
    return f"makes {named} run eagerly"


def frame_note(item: Item, links: SourceLinks | None = None) -> str:
    words = eager_words(item, links)
    if not words:
        return ""
    brk = item.brk
    inlined = [f for f in made_eager(brk) if f.function != brk.function.rsplit(".", 1)[-1]]
    why = f" (it inlined {md_code(brk.function)})" if inlined else ""
    loop = " The break is inside a loop, so Dynamo gives up on the whole frame." if brk.in_loop else ""
    return f"**This break {words}**: Dynamo runs that frame uncompiled{why}.{loop}"


def more_reading(item: Item, options: Options) -> tuple[Advice, ...]:
    """What the details add to the table's "what to do": the advice it shows is not repeated."""
    found = advice.reading(item.brk)
    shown = advice.best(item.brk)
    if shown is not None and todo(item, options) == md_text(shown.text):
        return tuple(a for a in found if a.text != shown.text)
    return found


def shown_stack(brk: GraphBreak) -> tuple[Frame, ...]:
    """The user's part of the stack: from the entrypoint's script (the innermost `<module>`
    frame) on, without torch's frames; the launcher that started the script is not the user's.
    The script's own top line (`main()`) is left out when calls follow it."""
    frames = brk.user_stack
    scripts = [i for i, f in enumerate(frames) if f.function == "<module>"]
    frames = frames[scripts[-1] :] if scripts else frames
    frames = tuple(f for f in frames if not f.file.startswith(TORCH_FILES))
    return frames[1:] if len(frames) > 2 and frames[0].function == "<module>" else frames


def stack_lines(brk: GraphBreak, links: SourceLinks | None) -> list[str]:
    """The user stack, outermost first, each frame linked."""
    return [
        f"{where(frame, links)} in {md_code(frame.function)}" + (f": {md_code(frame.code)}" if frame.code else "")
        for frame in shown_stack(brk)
    ]


# --- folded lists ------------------------------------------------------------------------------


def brief_line(item: Item, links: SourceLinks | None, sha: str | None = None) -> str:
    brk = item.brk
    code = f": {md_code(one_line(statement(brk)))}" if brk.code else ""
    times = f" · ×{item.total}" if item.total > 1 else ""
    words = eager_words(item, links)
    eager = f" · {words}" if words else ""
    note = f" — {item.note}" if item.note else ""
    head = f"**{md_text(brk.gb_id or 'no id')}**"
    return f"- {head} {where(brk, links, sha)} in {md_code(brk.function)}{code}{times}{eager}{note}"


def folded(title: str, found: list[Item], options: Options, sha: str | None = None) -> Folded | None:
    if not found:
        return None
    shown = found if options.max_items is None else found[: options.max_items]
    lines = tuple(brief_line(i, options.links, sha) for i in shown)
    return Folded(html_text(title), lines, len(found) - len(shown))


def folds(report: Report, s: Sorted, options: Options) -> tuple[list[Folded], list[Folded]]:
    """What the PR changed besides the new breaks (right under their table), and what it left as
    it was (after everything else)."""
    base = report.diff.base_sha if report.diff else None
    changed = [
        folded(words.fold_title(ChangeState.FIXED, len(s.fixed)), s.fixed, options, base),
        folded(words.fold_title(ChangeState.HIDDEN, len(s.hidden)), s.hidden, options, base),
        folded(words.fold_title(ChangeState.REVEALED, len(s.revealed)), s.revealed, options),
    ]
    kept = [
        folded(words.fold_title(ChangeState.PERSISTING, len(s.persisting)), s.persisting, options),
        folded(words.fold_title(None, len(s.ignored)), s.ignored, options),
    ]
    return [f for f in changed if f is not None], [f for f in kept if f is not None]


# --- recompilations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RecompileLine:
    rc: Recompilation
    new: bool
    by_break: GraphBreak | None = None  # the new break that made the code that recompiles

    @property
    def made(self) -> str:
        """How the new break made the code that recompiles."""
        if self.by_break is not None and recompile.made_by(self.rc, [self.by_break]):
            return "a resume function Dynamo made after it"
        return "Dynamo compiles this function on its own because of it"


@dataclass(frozen=True)
class RecompileLines:
    shown: list[RecompileLine]  # without a base, every frame; with one, new problems and a new break's
    as_on_base: list[RecompileLine]  # a problem the base had too
    settled: list[RecompileLine]  # automatic dynamic shapes at work, nothing to fix


def recompile_lines(report: Report) -> RecompileLines:
    """With a base, frames with a new problem are shown, a new break's with it, and the rest folded:
    those with a problem the base had as on the base, those with none as automatic dynamic shapes."""
    compared = report.diff.recompiles if report.diff else None
    new = {f for f, s in compared or () if s is ChangeState.NEW}
    persisting = {f for f, s in compared or () if s is ChangeState.PERSISTING}
    breaks = {b.fingerprint: b for b in report.breaks}
    lines = RecompileLines([], [], [])
    for rc in recompile.ordered(report):
        problems = {recompile.limit_fingerprint(rc)} if rc.limit_hit else set()
        problems |= {r.fingerprint for r in rc.reasons if not r.dynamic}
        by_break = breaks.get(rc.new_break) if rc.new_break and compared is not None else None
        line = RecompileLine(rc, bool(problems & new) and by_break is None, by_break)
        if compared is not None and not line.new and by_break is None and problems & persisting:
            lines.as_on_base.append(line)
        elif compared is not None and not line.new and by_break is None and not problems:
            lines.settled.append(line)
        else:
            lines.shown.append(line)
    return lines


# --- the page ----------------------------------------------------------------------------------


def render(report: Report, options: Options = Options()) -> str:
    diff = report.diff
    deltas = {e.name: e for e in diff.entrypoints} if diff else {}
    s = sort(report)
    shown = s.shown if options.max_items is None else s.shown[: options.max_items]
    recompiles = recompile_lines(report)
    first, last = folds(report, s, options)
    text = ENV.get_template("report.md.j2").render(
        title=options.title,
        report=report,
        diff=diff,
        options=options,
        headline=headline(report),
        dependency_blocks=dependency_blocks(report, options.links),
        context=context(report),
        not_clean=not_clean_line(report),
        lost_baseline=lost_baseline_lines(report),
        shared_failures=shared_failure_lines(report),
        notes=notes(report, options),
        graph_delta=lambda name: _graph_delta(deltas.get(name)),
        failed=[e for e in report.entrypoints if e.status is not Status.OK and e.status is not Status.SKIPPED],
        entrypoint_table=options.entrypoint_table or bool(not_clean_line(report) or words.no_baselines(report.diff)),
        table_title="New graph breaks" if diff else "Graph breaks",
        shown=shown,
        more=len(s.shown) - len(shown),
        folds_first=first,
        folds_last=last,
        recompiles_shown=recompiles.shown,
        recompiles_as_on_base=recompiles.as_on_base,
        recompiles_settled=recompiles.settled,
        recompiled_after=lambda brk: [line for line in recompiles.shown if line.by_break == brk],
        recompile_doc=recompile.load_rules().doc_url,
        verdict=words.verdict(counts.counts(report), report.diff is not None, md_code),
        footer=options.footer,
        **_wording(options),
    )
    return tidy(text.strip() + "\n")


def _graph_delta(entry: EntrypointDiff | None) -> str:
    """An entrypoint's change in graphs against the base; a dash where it was not compared."""
    if entry is None or entry.no_baseline or entry.graph_delta is None:
        return "—"
    return f"{entry.graph_delta:+d}" if entry.graph_delta else "0"


def _wording(options: Options) -> dict[str, object]:
    """What the template calls to word one break or entrypoint, under these options."""
    return {
        "status_icon": STATUS_ICON,
        "distinct_breaks": lambda e: counts.distinct(b for b in e.breaks if not b.ignored),
        "compile_error": lambda error: compile_error_words(error, html_text, html_text, explained=False),
        "failure_text": failure_text,
        "what": what,
        "where": lambda brk: where(brk, options.links),
        "one_line": lambda brk: one_line(statement(brk)),
        "statement": statement,
        "todo": lambda item: todo(item, options),
        "frame_note": lambda item: frame_note(item, options.links),
        "eager": lambda item: eager_words(item, options.links),
        "stack": lambda brk: stack_lines(brk, options.links),
        "explanation": advice.curated_explanation,
        "reading": lambda item: more_reading(item, options),
        "recompile_advice": recompile_advice,
        "plural": plural,
    }


def recompile_advice(rc: Recompilation, reason: object) -> str:
    """A guard kind's cause and advice; none where the frame is automatic dynamic at work."""
    if rc.info_only or rc.new_break or getattr(reason, "dynamic", False):
        return ""
    return f" — {md_text(reason.cause)} {md_text(reason.advice)}".rstrip()  # type: ignore[attr-defined]


def tidy(text: str) -> str:
    """At most one blank line in a row, outside fenced code (whose content is shown as is)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = re.match(r"^(`{3,})", line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = None if fence else marker.group(1)
        elif fence is None and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return "\n".join(out)
