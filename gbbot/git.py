"""The git edge: everything gbbot asks git goes through here."""

from __future__ import annotations

from pathlib import Path

from gbbot.process import cmd_output


def head_sha(root: Path) -> str | None:
    """HEAD's commit, or None outside a git repository (or before the first commit)."""
    code, out, _ = cmd_output("git", "rev-parse", "--verify", "-q", "HEAD", cwd=root, check=False)
    return out.strip() if code == 0 and out.strip() else None


def toplevel(path: Path) -> Path | None:
    code, out, _ = cmd_output("git", "rev-parse", "--show-toplevel", cwd=path, check=False)
    return Path(out.strip()) if code == 0 else None
