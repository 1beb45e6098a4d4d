"""`gbbot init` tried as a new user would, on clones of public repositories (issue #49's table):
each copied to a scratch folder, `gbbot init` run there, then `gbbot check` on what it wrote, and
every active entry run again with `TORCH_LOGS=graph_breaks` to compare its breaks with the report's.

    python tools/init_trial.py OUT_DIR CLONE [CLONE ...]

Run it with the Python that has each repository's requirements (and gbbot) installed: `gbbot` is
started as `sys.executable -m gbbot`. It fetches and installs nothing. Per repository it prints a
markdown table — what init wrote, what ran as written, the breaks gbbot found against those
`TORCH_LOGS` shows, and the wall and CPU seconds from the copy to the first report — and writes it
all to OUT_DIR/trial.json. `TORCH_LOGS` runs compile model entries with the `eager` backend (the
same Dynamo trace, no code generation); `run:` and `pytest:` entries as they are written.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

BREAK = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)$", re.MULTILINE)
LIMIT_S = 600
BUILD = """\
import json, sys, torch
from gbbot.core import call_args
entry = json.loads(sys.argv[1])
sys.path.insert(0, ".")
torch.manual_seed(0)
model = call_args.load(entry["model"])(*call_args.build(entry["args"]), **call_args.build(entry["kwargs"]))
model.eval()
torch.compile(model, backend="eager")(*call_args.build(entry["inputs"]), **call_args.build(entry["input_kwargs"]))
"""


def timed(command: list[str], cwd: Path, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float, float]:
    """The finished command, its wall seconds, and the CPU seconds of it and its children."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired as exc:
        done = subprocess.CompletedProcess(command, 124, exc.stdout or "", f"timed out after {LIMIT_S}s")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return done, time.monotonic() - started, cpu


def _site(path: str, repo: Path) -> str:
    """A break's file as the report names it: relative to the repository, or to site-packages."""
    if path.startswith(str(repo) + "/"):
        return path[len(str(repo)) + 1 :]
    return path.split("site-packages/", 1)[-1]


def logged_breaks(entry: dict, repo: Path) -> set[str] | str:
    """`file:line` of every break TORCH_LOGS=graph_breaks shows for the entry, run as written."""
    env = {**os.environ, "TORCH_LOGS": "graph_breaks"}
    if entry.get("model"):
        values = {k: entry.get(k, [] if k in ("args", "inputs") else {}) for k in ("args", "kwargs", "inputs")}
        recipe = {"model": entry["model"], **values, "input_kwargs": entry.get("input_kwargs", {})}
        command = [sys.executable, "-c", BUILD, json.dumps(recipe)]
    elif entry.get("run"):
        command = [sys.executable if w == "python" else w for w in shlex.split(entry["run"])]
    else:
        tests = entry["pytest"] if isinstance(entry["pytest"], list) else shlex.split(entry["pytest"])
        command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *tests]  # -s: the log shows
    done, _, _ = timed(command, repo, env)
    if done.returncode not in (0, 1) or (done.returncode and not entry.get("pytest")):
        return f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1][:120]}"
    return {f"{_site(m['file'], repo)}:{m['line']}" for m in BREAK.finditer(done.stderr)}


def trial(clone: Path, out: Path) -> dict:
    repo = out / clone.name
    started, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(clone, repo, ignore=shutil.ignore_patterns(".git", ".gbbot.yml", "*.egg-info"))
    made, init_s, init_cpu = timed([sys.executable, "-m", "gbbot", "init"], repo)
    found = {"repo": clone.name, "init_exit": made.returncode, "init_s": init_s, "init_cpu_s": init_cpu,
             "init_said": made.stderr.strip().splitlines()[-12:]}  # fmt: skip
    if made.returncode:
        return found
    text = (repo / ".gbbot.yml").read_text()
    entries = yaml.safe_load(text)["entrypoints"]
    report = out / f"{clone.name}.report.json"
    checked, check_s, check_cpu = timed([sys.executable, "-m", "gbbot", "check", "--json", str(report)], repo)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    found |= {"check_exit": checked.returncode, "check_s": check_s, "check_cpu_s": check_cpu,
              "to_report_s": time.monotonic() - started,
              "to_report_cpu_s": cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime,
              "commented": len(re.findall(r"^  #   (run|model|call|pytest): ", text, re.MULTILINE))}  # fmt: skip
    ran = {e["name"]: e for e in json.loads(report.read_text())["entrypoints"]} if report.exists() else {}
    found["entries"] = [
        {"name": e["name"], "kind": next(k for k in ("run", "call", "pytest", "model") if k in e),
         "status": ran.get(e["name"], {}).get("status", "not run"),
         "gbbot": sorted({f"{b['file']}:{b['line']}" for b in ran.get(e["name"], {}).get("breaks", [])}),
         "torch_logs": sorted(logs) if isinstance(logs := logged_breaks(e, repo), set) else logs}
        for e in entries
    ]  # fmt: skip
    return found


def table(found: dict) -> str:
    if found["init_exit"]:
        return f"### {found['repo']}\n\ninit exited {found['init_exit']}: {found['init_said'][-1]}\n"
    lines = [
        f"### {found['repo']}",
        "",
        f"init {found['init_s']:.1f} s ({found['init_cpu_s']:.1f} s CPU), check {found['check_s']:.1f} s "
        f"({found['check_cpu_s']:.1f} s CPU); from the copy to the first report {found['to_report_s']:.1f} s "
        f"({found['to_report_cpu_s']:.1f} s CPU). {found['commented']} entries written commented out.",
        "",
        "| entry | kind | ran as written | gbbot's breaks | TORCH_LOGS=graph_breaks | same |",
        "|---|---|---|---|---|---|",
    ]
    for e in found["entries"]:
        logs = e["torch_logs"]
        same = "yes" if isinstance(logs, list) and set(logs) == set(e["gbbot"]) else "no"
        shown = ", ".join(logs) if isinstance(logs, list) else logs
        lines.append(
            f"| {e['name']} | {e['kind']} | {e['status']} | {', '.join(e['gbbot']) or '—'} | {shown or '—'} | {same} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for clone in map(Path, argv[1:]):
        results.append(trial(clone.resolve(), out))
        print(table(results[-1]), flush=True)
    (out / "trial.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
