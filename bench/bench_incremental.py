"""What a pull request costs as the change grows, with the merge-base's report in the cache: a full
check beside diffs for a docs-only PR, a PR reaching one entrypoint, and a PR reaching the shared
helper every entrypoint uses, each now and as before the head skipped anything.

    python bench/bench_incremental.py [--repeat N] [--models N] [--depth N]

On a fresh project (N models, 6 by default: one module each, all using one shared helper module,
one `run_<model>.py` entrypoint each; three models have an old graph break, the GRU's Dynamo's
own) whose cache is filled first by a diff on main itself (as a push keeps its run and reads):
  check         `gbbot check` on main: every entrypoint runs
  docs only     `gbbot diff --base main --cache C` on a PR that edits README.md
  one model     the same on a PR that edits one model's module (its entrypoint alone reads it)
  shared        the same on a PR that edits the shared helper (every entrypoint reads it)
Each diff runs twice: "now", and "before", with a copy of the cache without its record of reads
(as gbbot kept it before the head could skip: the head runs every entrypoint). Prints the median
wall time and CPU time (gbbot and every process it started) of each, their ratios to the check,
and whether each diff found what it should (no new, no fixed break; the check's breaks persisting).
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
import textwrap
import time
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}
SHARED = textwrap.dedent("""\
    import torch


    def norm(x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:])


    def act(x):
        return torch.nn.functional.gelu(x)
""")
# model → (its layers, how its forward uses them); every model uses the shared helper
LAYERS = {
    "mlp": ("torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)",
            "x = act(self.layers[0](x))\n        x = self.layers[1](x)"),
    "conv": ("torch.nn.Conv1d(16, 16, 3, padding=1), torch.nn.Conv1d(16, 16, 3, padding=1)",
             "x = act(self.layers[0](x.unsqueeze(-1)))\n        x = self.layers[1](x).squeeze(-1)"),
    "gru": ("torch.nn.GRU(16, 16, batch_first=True),",
            "x, _ = self.layers[0](x.unsqueeze(1))\n        x = x.squeeze(1)"),
    "attn": ("torch.nn.MultiheadAttention(16, 2, batch_first=True),",
             "y = x.unsqueeze(1)\n        x = self.layers[0](y, y, y)[0].squeeze(1)"),
    "embed": ("torch.nn.Embedding(100, 16), torch.nn.Linear(16, 16)",
              "x = self.layers[0]((x.abs() * 10).long() % 100).mean(1)\n        x = self.layers[1](x)"),
    "mixer": ("torch.nn.Linear(16, 16), torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)",
              "for layer in self.layers:\n            x = x + act(layer(norm(x)))"),
}  # fmt: skip
OLD_BREAK = {"mlp": 'print("mlp: done")', "attn": "torch._dynamo.graph_break()"}
MODEL = textwrap.dedent("""\
    import torch

    from models.shared import act, norm


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([{layers}])

        def forward(self, x):
            {body}
            return x


    class Model(torch.nn.Module):
        def __init__(self, depth={depth}):
            super().__init__()
            self.blocks = torch.nn.ModuleList([Block() for _ in range(depth)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            {old}
            return norm(x)
""")
RUN = "import torch\nfrom models.{name} import Model\n\ntorch.compile(Model())(torch.randn(4, 16))\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def make_project(repo: Path, count: int, depth: int = 1) -> list[str]:
    names = [name for name, _ in zip(LAYERS, range(count), strict=False)]
    (repo / "models").mkdir(parents=True)
    (repo / "README.md").write_text("# models\n")
    (repo / "models" / "__init__.py").write_text("")
    (repo / "models" / "shared.py").write_text(SHARED)
    for name in names:
        layers, body = LAYERS[name]
        text = MODEL.format(layers=layers, body=body, old=OLD_BREAK.get(name, "pass"), depth=depth)
        (repo / "models" / f"{name}.py").write_text(text)
        (repo / f"run_{name}.py").write_text(RUN.format(name=name))
    entrypoints = "".join(f"  - {{name: {n}, run: python run_{n}.py}}\n" for n in names)
    (repo / ".gbbot.yml").write_text(f"version: 1\nentrypoints:\n{entrypoints}")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return names


def branch(repo: Path, name: str, path: str, edit: str) -> None:
    git(repo, "checkout", "-qb", name, "main")
    target = repo / path
    target.write_text(target.read_text() + edit)
    git(repo, "commit", "-qam", name)
    git(repo, "checkout", "-q", "main")


def cpu() -> float:
    """CPU seconds of the finished children (gbbot, its warm server, the runs it forked): on a
    shared machine, where wall time follows the other jobs' load, this follows the work done."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def gbbot(repo: Path, *args: str) -> tuple[tuple[float, float], dict]:
    out = repo.parent / "out.json"
    started, cpu_before = time.perf_counter(), cpu()
    cmd = [sys.executable, "-m", "gbbot", *args, "--root", str(repo), "--json", str(out), "--fail-on", "none", "-q"]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # `python` is this one
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env={**os.environ, "PATH": path})
    took = (time.perf_counter() - started, cpu() - cpu_before)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took, json.loads(out.read_text())


def diff_on(repo: Path, pr: str, cache: Path) -> tuple[tuple[float, float], dict]:
    git(repo, "checkout", "-q", pr)
    try:
        return gbbot(repo, "diff", "--base", "main", "--cache", str(cache))
    finally:
        git(repo, "checkout", "-q", "main")


def sound(found: dict, breaks: set[str]) -> str:
    """Whether the diff says what it should: nothing new or fixed, the check's breaks persisting."""
    bad = [e["name"] for e in found["entrypoints"] if e["status"] != "ok"]
    if bad:
        return f"WRONG: {', '.join(bad)} did not run cleanly"
    d = found["diff"]
    ok = not d["new"] and not d["fixed"] and set(d["persisting"]) == breaks
    return "same breaks" if ok else f"WRONG: {len(d['new'])} new, {len(d['fixed'])} fixed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--models", type=int, default=6, choices=range(3, len(LAYERS) + 1))
    parser.add_argument("--depth", type=int, default=1, help="blocks per model (each traced)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-incremental-") as scratch:
        repo = Path(scratch) / "repo"
        names = make_project(repo, args.models, args.depth)
        one = names[len(names) // 2]
        prs = {
            "docs only": ("pr-docs", "README.md", "\nNow documented.\n"),
            f"one model ({one})": ("pr-one", f"models/{one}.py", "# the same model\n"),
            "shared": ("pr-shared", "models/shared.py", "# the same helpers\n"),
        }
        for pr, path, edit in prs.values():
            branch(repo, pr, path, edit)
        cache, before = Path(scratch) / "cache", Path(scratch) / "cache-before"
        gbbot(repo, "diff", "--base", "main", "--cache", str(cache))  # a push to main fills the cache
        shutil.copytree(cache, before)
        for kept in before.rglob("*.reads.json"):
            kept.unlink()
        times: dict[str, list[tuple[float, float]]] = {}
        said: dict[str, str] = {}
        for _ in range(args.repeat):  # alternating, so that a busy moment does not favour one way
            took, checked = gbbot(repo, "check")
            times.setdefault("check", []).append(took)
            breaks = {b["fingerprint"] for e in checked["entrypoints"] for b in e["breaks"]}
            for label, (pr, _, _) in prs.items():
                for way, where in (("now", cache), ("before", before)):
                    took, found = diff_on(repo, pr, where)
                    times.setdefault(f"{label}, {way}", []).append(took)
                    taken = sum(1 for e in found["entrypoints"] if e.get("from_base"))
                    said[f"{label}, {way}"] = f"{sound(found, breaks)}; {taken} of {len(names)} from the base"
    check_wall, check_cpu = (statistics.median(t[i] for t in times["check"]) for i in (0, 1))
    blocks = f"{args.depth} blocks" if args.depth > 1 else "1 block"
    print(f"{len(names)} entrypoints of {blocks}, one module each and a shared helper; median of {args.repeat}")
    print(f"{'':28} {'wall s':>8} {'x check':>8} {'cpu s':>8} {'x check':>8}")
    for label, runs in times.items():
        wall, used = (statistics.median(t[i] for t in runs) for i in (0, 1))
        ratios = f"{wall:8.1f} {wall / check_wall:8.2f} {used:8.1f} {used / check_cpu:8.2f}"
        print(f"{label:28} {ratios}  {said.get(label, '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
