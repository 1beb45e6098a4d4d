"""Whether a break the head shows and the base did not could have been on the base, unseen: what
it depends on is the base's too. Pure over source read at the edges.

A frame that ran eagerly on the base hid every break in it, so a break that shows up there on the
head may have been there all along (revealed) or be the change's own (new). Only the second is
the reviewer's business, and text alone cannot tell them apart: a debug call the change adds
breaks inside a library, and the added line is the repository's, not the library's; a callee the
change wraps in `torch.compiler.disable` breaks at a call line the change did not touch. So a
break counts as there before only when the way to it is the base's:

- each repository line on its stack from the frame Dynamo was compiling on, down to the line
  where it breaks (for a break raised inside a library, the repository line that calls into it),
  is in the base, in the function of the same qualname: a line the change added, or a call path
  through one, makes it new;
- the callee it is about (a function Dynamo was told to skip or not to trace) has the base's code.

A function on the stack that changed elsewhere, away from that path, is not held against it:
fixing the first break in a loop edits the function whose later breaks it reveals.

Where this cannot be shown (no repository line, no source at hand) the answer is None, and the
diff calls the break new: a pull request check says more rather than less.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from gbbot.analysis import classify
from gbbot.analysis.source import SourceMap
from gbbot.core.model import Frame, GraphBreak, Origin, Reason, Why

# Breaks about a callee rather than the line they are reported at: a function wrapped in
# `torch.compiler.disable` (GB0098, GB0099 in torch's graph-break registry). Its code, decorator
# included, is most often the repository's own, so a record that does not name it cannot be shown
# unchanged. A skipped function (GB0007-GB0009: `warnings.warn`, `sys._getframe` inside a logging
# package) is torch's or a library's choice: named, it is looked up all the same.
DISABLED_CALLEE = frozenset({"GB0098", "GB0099"})
# How those name the callee: `<function Block.forward at 0x7f…>`, or the function in backquotes.
CALLEE_RE = re.compile(r"<function (?P<repr>[\w.<>]+) at 0x[0-9a-fA-F]+>|function `(?P<quoted>[\w.<>]+)`")


@dataclass(frozen=True)
class Change:
    """What a change did to the repository's Python source, as read at the edges. Paths are the
    head's, below the config root; `base` reads a file as the base had it (renames followed, None
    when the base has no such file). A file not in `touched` reads the same on both sides."""

    head: classify.SourceLookup
    base: classify.SourceLookup
    touched: frozenset[str]
    untracked: frozenset[str] = frozenset()  # of those, the files only the working tree has


# Whether a break's code is in one side's source, or whether what it depends on is the base's:
# True, False, or None when that cannot be said.
CodeCheck = Callable[[GraphBreak], "bool | None"]


def repository_line(brk: GraphBreak) -> Frame | None:
    """The line in the repository where `brk` happens: its own for a break in the user's code,
    the line that calls into the library for one raised inside a library; None when nothing in
    the repository is on its way (the record then names the library's line)."""
    if not brk.code.strip():
        return None
    site = brk.library_site
    if brk.origin is not Origin.USER and (site is None or (brk.file, brk.line) == (site.path, site.line)):
        return None
    return Frame(brk.file, brk.line, brk.function, brk.code)


def in_function(source: SourceMap, qualname: str, code: str) -> bool:
    """`code`, normalised as fingerprints normalise it, on some line of a function `qualname` of
    `source` (the whole file for `<module>`)."""
    wanted = classify.normalise_code(code)
    spans = [(s.start, s.end) for s in source.scopes if s.qualname == qualname]
    if not spans and qualname == "<module>":
        spans = [(1, len(source.lines))]
    return any(classify.normalise_code(source.line(n)) == wanted for a, b in spans for n in range(a, b + 1))


def line_in(lookup: classify.SourceLookup) -> CodeCheck:
    """A CodeCheck over one side's source files: the break's repository line somewhere in a
    function of the break's qualname; None without a repository line."""

    def present(brk: GraphBreak) -> bool | None:
        line = repository_line(brk)
        if line is None:
            return None
        source = lookup(line.file)
        return source is not None and in_function(source, line.function, line.code)

    return present


def traced_stack(brk: GraphBreak) -> tuple[Frame, ...]:
    """The break's stack from the frame Dynamo was compiling on: the way Dynamo traced to it. The
    callers above run eagerly and are not on that way (the line that calls `torch.compile` with
    other settings is not where a break in the model comes from). A record without frames keeps
    its whole stack."""
    compiled = brk.frames[0] if brk.frames else None
    if compiled is None:
        return brk.user_stack
    for i, entry in enumerate(brk.user_stack):
        if (entry.file, entry.function) == (compiled.file, compiled.function) and entry.line >= compiled.line:
            return brk.user_stack[i:]
    return brk.user_stack


def _touched_path(brk: GraphBreak, change: Change) -> Iterator[tuple[str, str, str]]:
    """(file, qualname, code) of each repository line on the way to `brk` in a file the change
    touched, outermost first, the break's own last (files it did not touch are not read). A stack
    entry is the repository's when the head has its file and its line reads as recorded (a
    library's path can look like a repository's)."""
    for entry in traced_stack(brk):
        source = change.head(entry.file) if entry.file in change.touched and entry.code.strip() else None
        if source is not None and classify.normalise_code(source.line(entry.line)) == classify.normalise_code(
            entry.code
        ):
            yield entry.file, source.qualname(entry.line, "<module>"), entry.code
    line = repository_line(brk)
    if line is not None and line.file in change.touched:
        yield line.file, line.function, line.code


def _path_unchanged(brk: GraphBreak, change: Change) -> bool:
    for file, qualname, code in _touched_path(brk, change):
        base = change.base(file)
        if base is None or not in_function(base, qualname, code):
            return False
    return True


def callee(brk: GraphBreak) -> str | None:
    """The qualname of the function a callee break is about, as torch names it."""
    found = CALLEE_RE.search(brk.explanation)
    return (found.group("repr") or found.group("quoted")) if found else None


def _body(source: SourceMap, qualname: str) -> tuple[tuple[str, ...], ...]:
    """Each function `qualname` of `source` as its normalised non-blank lines (decorators in)."""
    return tuple(
        tuple(line for n in range(s.start, s.end + 1) if (line := classify.normalise_code(source.line(n))))
        for s in source.scopes
        if s.qualname == qualname
    )


def changed_function(qualname: str, change: Change) -> bool:
    """A function of that qualname in a touched file whose code (decorators included) is not the
    base's, or that the base does not have. One in no touched file is the base's, or a library's."""
    for file in sorted(f for f in change.touched if f.endswith(".py")):
        head = change.head(file)
        found = _body(head, qualname) if head is not None else ()
        if not found:
            continue
        base = change.base(file)
        if base is None or _body(base, qualname) != found:
            return True
    return False


def _callee_unchanged(brk: GraphBreak, change: Change) -> bool | None:
    name = callee(brk)
    if name is None:
        return None if brk.key in DISABLED_CALLEE else True
    return not changed_function(name, change)


def unchanged(change: Change) -> CodeCheck:
    """A CodeCheck for a head break the base did not show: True when the way to it and the callee
    it is about are the base's, False when the change touched them, None when that cannot be
    shown (no repository line, a callee break that names no callee)."""

    def check(brk: GraphBreak) -> bool | None:
        if repository_line(brk) is None:
            return None
        if not _path_unchanged(brk, change):
            return False
        return _callee_unchanged(brk, change)

    return check


def touched_paths(paths: Iterable[str], prefix: str) -> frozenset[str]:
    """Top-level-relative paths git names as differing → those below the config root `prefix`
    ("" for the top level), relative to it: the form report paths take."""
    if not prefix:
        return frozenset(paths)
    lead = prefix.rstrip("/") + "/"
    return frozenset(path[len(lead) :] for path in paths if path.startswith(lead))


# A line of a file as the head has it → the same line on the base side, None where the change
# wrote it: known exactly where the change is a patch gbbot made (fix rounds).
LineMap = Callable[[str, int], "int | None"]


def lines_kept(to_base: LineMap) -> CodeCheck:
    """The CodeCheck of a change known line by line: True when no line on the way to the break
    (its stack, its repository line) was written by the change; a disabled callee's break is not
    shown unchanged this way (the callee's lines are not on its stack): None."""

    def check(brk: GraphBreak) -> bool | None:
        line = repository_line(brk)
        if line is None:
            return None
        if any(to_base(f.file, f.line) is None for f in (*traced_stack(brk), line)):
            return False
        return None if brk.key in DISABLED_CALLEE else True

    return check


# --- an entrypoint the base could not run -------------------------------------------------------

MISSING_MODULE_RE = re.compile(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'")


@dataclass(frozen=True)
class Gap:
    """Why the base could not run an entrypoint (what its checkout lacked), and whether the change
    brings what the base lacked (then the entrypoint is new in it, and so are its breaks)."""

    reason: Reason
    new_in_change: bool


def module_files(name: str) -> tuple[str, ...]:
    """The files below the config root that `import name` would find first: its module, its
    package, and those of the packages above it (`No module named 'a.b'` when `a` is missing)."""
    parts = name.split(".")
    found: list[str] = []
    for n in range(len(parts), 0, -1):
        stem = "/".join(parts[:n])
        found += [f"{stem}.py", f"{stem}/__init__.py"]
    return tuple(found)


def gap(error: str, change: Change) -> Gap | None:
    """For a base run that failed with `error`: a module it imports that the base's checkout
    lacks, said as where it is — a file only the working tree has (untracked, so never part of
    the change), a file the change adds, or neither (missing on the base). None: no such error."""
    found = MISSING_MODULE_RE.search(error)
    if found is None:
        return None
    for path in module_files(found.group("name")):
        if path in change.untracked:
            return Gap(Reason(Why.UNTRACKED, (path,)), False)
        if path in change.touched and change.head(path) is not None and change.base(path) is None:
            return Gap(Reason(Why.ADDED, (path,)), True)
    return Gap(Reason(Why.MISSING_MODULE, (found.group("name"),)), False)
