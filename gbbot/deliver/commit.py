"""gbbot's fix commits: what one may hold, what it says, and when gbbot stops making them. The one
way every deliverer commits verified fixes — the PR check's autofix, `/gb-fix`'s push stage and the
audit's fix PR: only files a verified fix names, never `.github/` or gbbot's config; their content
re-derived with gbbot's own recipes from the pinned commit read from git objects (never the files a
run left behind); committed on that commit as gbbot, without touching the working tree, the index
or HEAD. Pushing the commit is `deliver.push`'s.

Loop guard: gbbot stops pushing fix commits onto a branch whose last two commits are already
gbbot's, so that two automations answering each other cannot grow a branch forever."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gbbot.core.config import CONFIG_NAME
from gbbot.core.fixes import Counts, FixResult, verified_only
from gbbot.core.model import Report
from gbbot.deliver import patchcheck
from gbbot.deliver.patchcheck import Dropped
from gbbot.deliver.sources import Pinned
from gbbot.edges import git
from gbbot.fix import commit as committing
from gbbot.fix.patch import FilePatch
from gbbot.render.escape import md_code, md_text

if TYPE_CHECKING:
    from gbbot.deliver.expected import Changed, Expected

# --- the loop guard ----------------------------------------------------------------------------------

AUTHOR_EMAIL = git.COMMITTER["GIT_AUTHOR_EMAIL"]  # a fix commit is made as git.COMMITTER
SUBJECT = "gbbot: fix "  # how committing.message begins
IN_A_ROW_MAX = 2
STOPS = "the branch's last two commits are gbbot fix commits already; gbbot stops there"


def is_fix_commit(email: str, subject: str) -> bool:
    return email == AUTHOR_EMAIL and subject.startswith(SUBJECT)


def too_many(recent: Sequence[tuple[str, str]]) -> bool:
    """Whether the newest commits (author email, subject; newest first) are already as many gbbot
    fix commits in a row as gbbot makes."""
    newest = recent[:IN_A_ROW_MAX]
    return len(newest) == IN_A_ROW_MAX and all(is_fix_commit(e, s) for e, s in newest)


def stops_at(root: Path, head: str) -> bool:
    """Whether gbbot makes no fix commit on `head`: it ends a run of gbbot fix commits already."""
    return too_many(git.recent_commits(root, head, IN_A_ROW_MAX))


# --- what a fix commit holds and says -----------------------------------------------------------------


def config_paths(given: Path | None) -> tuple[str, ...]:
    """gbbot's config as a fix commit must never change it: .gbbot.yml, and the config input when
    it is a path inside the repository."""
    return (CONFIG_NAME, *([given.as_posix()] if given and not given.is_absolute() else []))


def fixed_paths(report: Report) -> tuple[str, ...]:
    """The files the report's verified fixes edit."""
    return tuple(sorted({p for r in verified_only(report.fixes or ()) for p in r.paths}))


def commit_message(fixes: Sequence[FixResult], report: Report) -> str:
    """`gbbot fix --commit`'s message for fixes re-derived from recipes: no run measured the
    combined patch, so only the counts before it are stated."""
    ids = {b.fingerprint: b.gb_id or b.gb_type for b in report.breaks}
    before = Counts(sum(e.break_count for e in report.entrypoints), sum(e.graph_count for e in report.entrypoints))
    return committing.message(list(fixes), ids, before, None)


def fixed_lines(fixes: Sequence[FixResult], report: Report) -> list[str]:
    """A markdown list of what a commit fixes: GB id, file:line, recipe and summary of each fix."""
    ids = {b.fingerprint: b.gb_id or b.gb_type for b in report.breaks}
    return [
        f"- {md_code(ids.get(r.fingerprint, '?'))} {md_code(f'{r.file}:{r.line}')} ({md_text(r.recipe or '')}): "
        f"{md_text(r.summary)}"
        for r in fixes
    ]


def dropped_lines(dropped: Sequence[Dropped], report: Report) -> list[str]:
    """A markdown list of the verified fixes a commit leaves out, each with why."""
    breaks = {b.fingerprint: b for b in report.breaks}
    lines = []
    for d in dropped:
        brk = breaks.get(d.fingerprint)
        where = md_code(d.fingerprint)
        if brk is not None:
            where = f"{md_code(brk.gb_id or brk.gb_type)} {md_code(f'{brk.file}:{brk.line}')}"
        lines.append(f"- {where}: {md_text(d.reason)}")
    return lines


# --- committing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Protected:
    """The commit would touch a path gbbot never changes, or one that no verified fix names."""

    reason: str

    @property
    def said(self) -> str:
        return self.reason


@dataclass(frozen=True)
class NotRederived:
    """gbbot's recipes do not make the claimed fixes on the pinned commit."""

    reason: str
    pinned: str
    dropped: tuple[Dropped, ...] = ()  # each claimed fix, with its own reason

    @property
    def said(self) -> str:
        return f"the fixes are not re-derived on {self.pinned[:7]}: {self.reason}"


Refusal = Protected | NotRederived


@dataclass(frozen=True)
class Committed:
    commit: str
    fixes: tuple[FixResult, ...]  # gbbot's own records of what it holds, rebuilt from the recipes
    dropped: tuple[Dropped, ...] = ()  # verified fixes the commit leaves out, each with why
    patches: tuple[FilePatch, ...] = ()  # what the commit changes, file by file


def verify(
    source: Pinned,
    report: Report,
    paths: Sequence[str],
    config: Sequence[str],
    patch: bytes | None = None,
    changed: Changed | None = None,
    widen: bool = False,
) -> Expected | Refusal:
    """What a fix commit on `source` editing `paths` would hold, re-derived from the verified fixes
    `report` claims for them — each fix gbbot's recipes make again, and the others named with why —
    or why there is to be none. `config`: gbbot's config files (`config_paths`); `patch`: the
    patch the fixes came with (`/gb-fix`'s fix job wrote it), which each file's share of the
    commit must equal byte for byte unless a fix on that file could not be re-derived; `changed`: the
    lines the PR changed, the only ones a fix's break may be on (None: any; `widen`: a fix's break
    may be anywhere in a file the PR changed)."""
    from gbbot.deliver.expected import claimed, expected  # LibCST: only when there is something to commit

    named = {p for r in claimed(report, paths) for p in r.paths}
    why = patchcheck.protected(paths, config, named)
    if why:
        return Protected(why)
    found = expected(report, paths, source.read, source.python_files(), patch, changed, widen)
    if isinstance(found, patchcheck.Refused):
        return NotRederived(found.reason, source.commit, found.dropped)
    return found


def commit_verified(source: Pinned, found: Expected, report: Report) -> Committed:
    """The commit `verify` found, made on the pinned one, as gbbot and with its message. A commit git
    fails to make raises GitError (what that costs is the caller's to say)."""
    files = {p.path: (source.mode(p.path), p.after.encode("utf-8")) for p in found.patches}
    commit = git.commit_files(source.root, source.commit, files, commit_message(found.fixes, report))
    return Committed(commit, found.fixes, found.dropped, found.patches)
