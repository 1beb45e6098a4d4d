"""Every view gbbot makes of the bundled example, written to one directory, so that two versions of
gbbot can be compared byte for byte (`diff -r`): a refactoring that changes none of them changed
no behaviour a user sees.

    python tools/example_outputs.py OUT_DIR

It copies examples/ into a scratch git repository and writes there:
- check.json, check.md, check.sarif, check.annotations, check.terminal: `gbbot check`;
- diff.json, diff.md, diff.terminal: `gbbot diff` after a change that adds one break and fixes one;
- fix.out: `gbbot fix` (the verified patches, as it prints them).

Durations, the scratch directory's path and commit ids differ from run to run; they are replaced
by placeholders, nothing else is touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
# The change the diff sees: the print goes (fixed), a warnings.warn comes (new).
CHANGE = (
    'print("tinynet: first block done")  # GB0059',
    'warnings.warn("tinynet: first block done")  # GB0007',
)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def gbbot(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "gbbot", *args], cwd=repo, env=env, capture_output=True, text=True)


def normalised(text: str, repo: Path, shas: list[str]) -> str:
    text = text.replace(str(repo.resolve()), "<repo>").replace(str(repo), "<repo>")
    for i, sha in enumerate(shas):
        text = text.replace(sha, f"<sha{i}>").replace(sha[:12], f"<sha{i}:12>").replace(sha[:7], f"<sha{i}:7>")
    text = re.sub(r'"(duration_s|compile_time_s)": [0-9.e-]+', r'"\1": 0', text)
    text = re.sub(r"\b\d+(\.\d+)?\s?s\b", "<N>s", text)  # "3.2 s", "12s" in terminal and markdown
    return re.sub(r"/tmp/[A-Za-z0-9_./-]+", "<tmp>", text)


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gbbot-example-") as scratch:
        repo = Path(scratch) / "example"
        shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "example")
        shas = [git(repo, "rev-parse", "HEAD").strip()]
        files: dict[str, str] = {}

        done = gbbot(repo, "check", "--fail-on", "none", "--json", "check.json", "--markdown", "check.md")
        files["check.terminal"] = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        for name in ("check.json", "check.md"):
            files[name] = (repo / name).read_text(encoding="utf-8")
        for fmt, name in (("sarif", "check.sarif"), ("annotations", "check.annotations"), ("json", "render.json")):
            rendered = gbbot(repo, "render", "check.json", "--format", fmt)
            files[name] = f"exit {rendered.returncode}\n{rendered.stdout}{rendered.stderr}"
        for name in ("check.json", "check.md"):
            (repo / name).unlink()

        fixed = gbbot(repo, "fix")
        files["fix.out"] = f"exit {fixed.returncode}\n--- stdout\n{fixed.stdout}--- stderr\n{fixed.stderr}"

        model = repo / "tinymodel" / "model.py"
        text = model.read_text(encoding="utf-8")
        model.write_text("import warnings\n" + text.replace(*CHANGE), encoding="utf-8")
        git(repo, "checkout", "-q", "-b", "change")
        git(repo, "commit", "-q", "-am", "change")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
        done = gbbot(
            repo, "diff", "--base", "main", "--fail-on", "none", "--json", "diff.json", "--markdown", "diff.md"
        )
        files["diff.terminal"] = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        for name in ("diff.json", "diff.md"):
            files[name] = (repo / name).read_text(encoding="utf-8")
        for name, text in files.items():
            (out / name).write_text(normalised(text, repo, shas), encoding="utf-8")
        json.loads((out / "check.json").read_text(encoding="utf-8"))  # a report, not an error message
    print(f"wrote {len(files)} files to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
