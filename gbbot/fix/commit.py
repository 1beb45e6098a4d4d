"""`gbbot fix --commit`: one commit holding exactly the verified patches that were written. Its
message is pure (`message`); the commit itself names the patched paths to git, so whatever else
is staged or modified in the tree stays as it was, uncommitted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.errors import GbbotError
from gbbot.core.fixes import Counts, FixResult, FixStatus
from gbbot.edges import git

AUTHOR_RE = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]+)>\s*")


@dataclass(frozen=True)
class Author:
    name: str
    email: str


def parse_author(text: str) -> Author:
    match = AUTHOR_RE.fullmatch(text)
    if not match or not match["name"]:
        raise GbbotError(f"--author {text!r}: expected 'Name <email>'")
    return Author(match["name"], match["email"])


def committed(results: Sequence[FixResult], written: Sequence[str]) -> list[FixResult]:
    """The verified fixes whose file was written."""
    return [r for r in results if r.status is FixStatus.VERIFIED and r.file in written]


def _one_line(text: str, limit: int = 200) -> str:
    """`text` as one line of a commit message: a report's strings may hold newlines (and with them
    trailers such as `Co-authored-by:`) or control characters; they become spaces."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def message(fixes: Sequence[FixResult], gb_ids: Mapping[str, str], before: Counts, after: Counts | None) -> str:
    """Subject, each fix (GB id, file:line, recipe, what its verification showed), and the totals
    before any patch and after all of them, as the runs measured them. `after` is None where no run
    measured the combined patch (a commit re-derived from recipes): then only `before` is stated."""
    lines = [
        f"- {_one_line(gb_ids.get(r.fingerprint, '?'))} {_one_line(r.file)}:{r.line} ({_one_line(r.recipe or '')}): "
        f"{_one_line(r.summary)}"
        for r in fixes
    ]
    if after is None:
        totals = f"Graph breaks before these fixes: {before.breaks}; graphs: {before.graphs}."
    else:
        totals = f"Graph breaks {before.breaks} → {after.breaks}; graphs {before.graphs} → {after.graphs}."
    if after is not None and before.frames_skipped != after.frames_skipped:
        totals += f" Frames running eagerly {before.frames_skipped} → {after.frames_skipped}."
    subject = f"gbbot: fix {len(fixes)} graph break{'s' * (len(fixes) != 1)}"
    return "\n".join([subject, "", *lines, "", totals]) + "\n"


def commit(root: Path, paths: Sequence[str], text: str, author: Author | None) -> str:
    """Commit exactly `paths` with `text`; the new commit's sha."""
    env: dict[str, str] = {}
    args = ["commit", "-q", "-F", "-"]
    if author:
        args.append(f"--author={author.name} <{author.email}>")
        env.update(GIT_COMMITTER_NAME=author.name, GIT_COMMITTER_EMAIL=author.email)
    code, _, err = git.run(root, *args, "--only", "--", *paths, stdin=text.encode(), env=env, check=False)
    if code != 0:
        raise GbbotError(f"git commit failed: {err.strip()[-500:]}")
    return git.run(root, "rev-parse", "HEAD")[1].decode().strip()
