"""A PR diff with a cold baseline vs one with a cached baseline, side by side.

    python bench/bench_baseline.py [--repeat N] [--jobs J]

On a copy of examples/ made into a git repository with a PR branch (one new graph break):
  cold    `gbbot diff --base main --cache EMPTY_DIR`: runs the merge-base, then the head
  cached  the same command again with that cache: the base report comes from the cache
Prints wall times, the ratio cached/cold (the base runs really are skipped: well under 1) and
whether both found the same new/fixed/persisting breaks. The change touches the model file both
entrypoints import, so the cold diff runs both on the head too (none is taken from the base's run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def make_pr(repo: Path) -> None:
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    add_break(repo / "tinymodel" / "model.py")
    git(repo, "commit", "-q", "-am", "a new break")


def add_break(path: Path) -> None:
    """A print (GB0059) as the first statement of the last `forward` in the file."""
    lines = path.read_text().splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if line.lstrip().startswith("def forward("))
    body = lines[at + 1]
    indent = body[: len(body) - len(body.lstrip())]
    lines.insert(at + 1, f'{indent}print("a break this PR adds")\n')
    path.write_text("".join(lines))


def diff_run(repo: Path, cache: Path, out: Path, jobs: int) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gbbot",
            "diff",
            "--base",
            "main",
            "--cache",
            str(cache),
            "-j",
            str(jobs),
            "--json",
            str(out),
            "-q",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gbbot diff failed ({proc.returncode}):\n{proc.stderr}")
    diff = json.loads(out.read_text())["diff"]
    return elapsed, diff


def sets(diff: dict) -> tuple[frozenset, ...]:
    return tuple(frozenset(diff[k]) for k in ("new", "fixed", "persisting"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1, help="gbbot diff --jobs (default 1)")
    args = parser.parse_args()
    cold_s, cached_s, same = [], [], True
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-") as scratch:
        work = Path(scratch)
        repo = work / "repo"
        make_pr(repo)
        for i in range(args.repeat):
            cache = work / f"cache-{i}"
            cold, cold_diff = diff_run(repo, cache, work / f"cold-{i}.json", args.jobs)
            cached, cached_diff = diff_run(repo, cache, work / f"cached-{i}.json", args.jobs)
            sources = (cold_diff["baseline_source"], cached_diff["baseline_source"])
            if sources != ("run", "cache"):
                raise SystemExit(f"expected the baseline from a run, then from the cache; got {sources}")
            same = same and sets(cold_diff) == sets(cached_diff)
            cold_s.append(cold)
            cached_s.append(cached)
            print(f"run {i + 1}: cold {cold:6.1f} s   cached {cached:6.1f} s   ratio {cached / cold:.2f}x")
        new, fixed, persisting = (len(s) for s in sets(cold_diff))
    cold_m, cached_m = statistics.median(cold_s), statistics.median(cached_s)
    print(f"\nexamples/ PR diff (+1 break), --jobs {args.jobs}, median of {args.repeat}:")
    print(f"  cold baseline   {cold_m:6.1f} s   (merge-base and head run)")
    print(f"  cached baseline {cached_m:6.1f} s   (head only)")
    print(f"  ratio cached/cold: {cached_m / cold_m:.2f}x")
    print(f"  diff: {new} new, {fixed} fixed, {persisting} persisting; same with the cache: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
