"""What a dependency-bump pull request costs against a plain one, on the tinydep project of
tests/e2e/test_dependency_bump.py (one `call:` entrypoint, `setup: pip install -r requirements.txt`,
tinydep's wheels vendored in the repository):

    python bench/bench_bump.py [--repeat N]

  plain        `gbbot diff --base main --setup --cache C --jobs 1` on a PR that edits model.py:
               setup runs once, in the job's environment, both sides run from the warm server
  bump, cold   the same on a PR that moves tinydep 1.0 → 2.0 in requirements.txt, the cache
               empty: each side's environment is built (an overlay venv, one `pip install` each)
               and each side runs in fresh processes with its own Python
  bump, warm   the bump again, both environments in the cache

gbbot runs with a virtual environment of its own as the job's Python (an overlay of this one), so
what the plain PR's setup installs lands there. Prints the median wall
time and CPU time (gbbot and every process it started) of each, their ratios to the plain PR,
and whether each diff found what it should.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gbbot.edges import overlay  # noqa: E402
from tests.e2e.test_dependency_bump import CODE_CHANGE  # noqa: E402
from tests.local_package import REQUIREMENTS, write_tinydep_project  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def make_project(repo: Path) -> None:
    """main: tinydep 1.0; `plain`: a new break in model.py; `bump`: tinydep 2.0."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_tinydep_project(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "main")
    for name, path, text in (("plain", "model.py", CODE_CHANGE), ("bump", "requirements.txt", None)):
        git(repo, "checkout", "-qb", name, "main")
        (repo / path).write_text(text or REQUIREMENTS.format(version="2.0"))
        git(repo, "commit", "-qam", name)
    git(repo, "checkout", "-q", "main")


def job_python(where: Path) -> Path:
    """The job's Python: a virtual environment over this one (gbbot's overlay venv: its own
    site-packages first, this one's after, `pip` installing into it)."""
    return overlay.create(where)


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def diff_on(repo: Path, python: Path, pr: str, cache: Path) -> tuple[tuple[float, float], dict]:
    git(repo, "checkout", "-q", pr)
    out = repo.parent / "out.json"
    cmd = [str(python), "-m", "gbbot", "diff", "--base", "main", "--setup", "--cache", str(cache), "--jobs", "1"]
    cmd += ["--root", str(repo), "--json", str(out), "--fail-on", "none", "-q"]
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    started, cpu_before = time.perf_counter(), cpu()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    took = (time.perf_counter() - started, cpu() - cpu_before)
    if proc.returncode != 0:
        sys.exit(f"diff on {pr} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took, json.loads(out.read_text())["diff"]


def sound(pr: str, found: dict) -> str:
    counts = (len(found["new"]), len(found["fixed"]))
    bumped = [p["name"] for p in found.get("dependencies", {}).get("packages", [])]
    expected = ((1, 0), []) if pr == "plain" else ((1, 1), ["tinydep"])
    return "ok" if (counts, bumped) == expected else f"WRONG: new/fixed {counts}, packages {bumped}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    top = Path(tempfile.mkdtemp(prefix="gbbot-bench-bump-"))
    try:
        repo = top / "repo"
        make_project(repo)
        python = job_python(top / "job")
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "bump, cold": [], "bump, warm": []}
        verdicts: dict[str, str] = {}
        for n in range(args.repeat):
            cache = top / f"cache-{n}"
            for label, pr in (("plain", "plain"), ("bump, cold", "bump"), ("bump, warm", "bump")):
                took, found = diff_on(repo, python, pr, cache)
                times[label].append(took)
                verdicts[label] = sound(pr, found)
            shutil.rmtree(cache)
        plain = statistics.median(t[0] for t in times["plain"])
        plain_cpu = statistics.median(t[1] for t in times["plain"])
        print(f"{'':12} {'wall s':>8} {'cpu s':>8} {'× plain':>8} {'cpu ×':>8}")
        for label, found in times.items():
            wall, used = statistics.median(t[0] for t in found), statistics.median(t[1] for t in found)
            print(f"{label:12} {wall:8.1f} {used:8.1f} {wall / plain:8.2f} {used / plain_cpu:8.2f}  {verdicts[label]}")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
