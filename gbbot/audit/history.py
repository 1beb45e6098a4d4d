"""The audit's history: one JSON file per record under `records/` on a data branch of the
repository itself (default `gbbot-data`), written as ordinary commits.

One file per record, named by date, commit and content, means two audits never edit the same
file: when a push is refused because another audit pushed first, the record is simply added
again on top of the new tip and pushed again (a bounded number of times), so no record is lost
and no merge is ever needed.

The push goes over HTTPS to the repository's `clone_url` with the token (`git.Remote`: the
credential travels only in the child git's environment, never in argv, a URL, the repository's
config or a log line).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gbbot.audit import record as record_
from gbbot.core.errors import GitError
from gbbot.edges import git
from gbbot.edges.git import Remote

RECORDS_DIR = "records"
PUSH_TRIES = 5
READ_AT_MOST = 400  # newest records read back: a year of nightly audits and more
FETCHED_REF = "refs/gbbot/audit-tip"  # where the remote data branch is fetched to, in the clone

Log = Callable[[str], None]


def record_path(rec: record_.Record, text: str) -> str:
    """records/<date>-<commit>-<content hash>.json: sorts by date; unique per record."""
    stamp = rec.date.replace("-", "").replace(":", "")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{RECORDS_DIR}/{stamp}-{rec.commit[:12]}-{digest}.json"


def read(root: Path, commit: str | None, log: Log) -> record_.Loaded:
    """The records on the data branch at `commit` (None: there is no branch yet), newest
    `READ_AT_MOST`."""
    if commit is None:
        return record_.Loaded(())
    entries = sorted(git.list_tree(root, commit, RECORDS_DIR))[-READ_AT_MOST:]
    return _load(root, entries, log, f"over the {record_.MAX_RECORD_BYTES} a record may have")


def _load(root: Path, entries: list[tuple[str, str, int]], log: Log, over: str) -> record_.Loaded:
    """The records in `entries` (path, blob, size); a file too big (said `over`), not JSON or off
    the schema is skipped with a warning."""
    small = [(p, sha) for p, sha, size in entries if size <= record_.MAX_RECORD_BYTES]
    too_big = [f"{p}: {size} bytes, {over}" for p, _, size in entries if size > record_.MAX_RECORD_BYTES]
    blobs = git.read_blobs(root, [sha for _, sha in small])
    loaded = record_.load_all(zip([p for p, _ in small], blobs, strict=True))
    for why in (*too_big, *loaded.skipped):
        log(f"warning: skipped a record on the data branch: {why}")
    return record_.Loaded(loaded.records, (*too_big, *loaded.skipped))


def branch_tip(root: Path, branch: str) -> tuple[str, str] | None:
    """(the name it was found under, its tip) of the data branch: the local branch, else the
    remote-tracking `origin/<branch>` a CI clone has after fetching it; None when neither exists."""
    for name, ref in ((branch, f"refs/heads/{branch}"), (f"origin/{branch}", f"refs/remotes/origin/{branch}")):
        tip = git.ref_sha(root, ref)
        if tip is not None:
            return name, tip
    return None


def read_for_commit(root: Path, tip: str, commit: str, log: Log) -> tuple[record_.Record, ...]:
    """The valid records of `commit` on the data branch at `tip`. File names pick the candidates
    (they carry the commit), then each one's content must say the same commit: names are as
    untrusted as the rest."""
    entries = [e for e in git.list_tree(root, tip, RECORDS_DIR) if f"-{commit[:12]}-" in e[0]]
    return tuple(r for r in _load(root, entries, log, "over the limit").records if r.commit == commit)


def message(rec: record_.Record) -> str:
    return f"gbbot audit of {rec.commit[:12]} ({rec.date})"


# --- the local branch --------------------------------------------------------------------------


def append_local(root: Path, branch: str, rec: record_.Record, tries: int = PUSH_TRIES) -> str:
    """Add the record to the local branch `branch` (created when missing); the ref moves only
    from the tip the commit was made on, so a concurrent writer makes this try again."""
    text = record_.dumps(rec)
    ref = f"refs/heads/{branch}"
    for _ in range(tries):
        parent = git.ref_sha(root, ref)
        commit = git.commit_with_file(root, parent, record_path(rec, text), text.encode(), message(rec))
        code, _, _ = git.run(root, "update-ref", ref, commit, parent or "0" * 40, check=False)
        if code == 0:
            return commit
    raise GitError(f"could not update {ref}: it kept moving ({tries} tries)")


# --- the remote branch -------------------------------------------------------------------------


def fetch(root: Path, remote: Remote, branch: str) -> str | None:
    """The remote branch's tip, fetched into the clone; None when the branch does not exist."""
    return git.fetch_branch(root, remote, branch, FETCHED_REF)


@dataclass(frozen=True)
class Pushed:
    commit: str  # the data branch's tip, with this record in it
    tries: int


def append_remote(
    root: Path, remote: Remote, branch: str, rec: record_.Record, log: Log, tries: int = PUSH_TRIES
) -> Pushed:
    """Add the record to the remote branch: fetch its tip, commit the record on top, push
    without force; a refused push (someone pushed first) starts over from the new tip."""
    text = record_.dumps(rec)
    ref = f"refs/heads/{branch}"
    last = ""
    for attempt in range(1, tries + 1):
        parent = fetch(root, remote, branch)
        commit = git.commit_with_file(root, parent, record_path(rec, text), text.encode(), message(rec))
        code, _, err = git.run(
            root, "push", "--quiet", "--", remote.url, f"{commit}:{ref}", env=remote.env, check=False
        )
        if code == 0:
            git.run(root, "update-ref", FETCHED_REF, commit)
            return Pushed(commit, attempt)
        last = err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
        log(f"pushing the audit record to {branch} was refused ({last}); trying again on the new tip")
    raise GitError(f"could not push the audit record to {branch} after {tries} tries: {last}")
