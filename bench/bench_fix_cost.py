"""What `gbbot fix` costs against a `gbbot check` of the same project, side by side in one run.

    python bench/bench_fix_cost.py [--models N] [--repeat N]

The project: N tiny models (default 8), each in its own module with its own `call:` entrypoint,
all compiled by one helper (`app/build.py`: `compiled(model)` returns `torch.compile(model)`), as
a project that builds many models often is. Their breaks are the kinds `gbbot fix` meets most:
`.item()` feeding arithmetic and `nonzero` (settings that change what the compiler is given, so
each is confirmed with Inductor), a print and a logger call (guards), a data-dependent branch (no
fix), and a model without a break. Each repetition copies the project afresh and runs, with the
defaults a user gets: `gbbot check`, then `gbbot fix` (fast mode; Inductor's compiles kept in the
user's cache, which starts empty for the first repetition). Prints both wall times, the ratio (the
goal: at most 4x), and the fix's verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BUILD = '''
import torch


def compiled(model):
    """Every model of the app is compiled here."""
    model.eval()
    return torch.compile(model)
'''
# (class body's forward, input): one break kind each
KINDS = {
    "scalar": ("scale = x.abs().sum().item()\n        return self.lin(x) / scale", "torch.randn(3, 4)"),
    "sparse": ("kept = (x > 0).nonzero()\n        return self.lin(x), kept", "torch.randn(3, 4)"),
    "printed": ('print("forward")\n        return self.lin(x)', "torch.randn(3, 4)"),
    "logged": ('logger.warning("forward")\n        return self.lin(x)', "torch.randn(3, 4)"),
    "branch": ("if x.sum() > 0:\n            x = x * 2\n        return self.lin(x)", "torch.ones(3, 4)"),
    "plain": ("return torch.relu(self.lin(x))", "torch.randn(3, 4)"),
}
MODEL = """
import logging

import torch
from torch import nn

from app.build import compiled

logger = logging.getLogger(__name__)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        {body}


def run():
    torch.manual_seed(0)
    model = compiled(Model())
    with torch.no_grad():
        return model({inputs})
"""


def project(root: Path, models: int) -> None:
    kinds = list(KINDS)
    (root / "app").mkdir(parents=True)
    (root / "app/__init__.py").write_text("")
    (root / "app/build.py").write_text(textwrap.dedent(BUILD).lstrip())
    entries = []
    for n in range(models):
        kind = kinds[n % len(kinds)]
        body, inputs = KINDS[kind]
        name = f"{kind}{n}"
        (root / f"app/{name}.py").write_text(MODEL.lstrip().replace("{body}", body).replace("{inputs}", inputs))
        entries.append(f"  - {{name: {name}, call: 'app.{name}:run'}}\n")
    (root / ".gbbot.yml").write_text("version: 1\nmode: fast\nentrypoints:\n" + "".join(entries))
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@e"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "models"], cwd=root, check=True)


def timed(root: Path, cache: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "COLUMNS": "200", "XDG_CACHE_HOME": str(cache)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gbbot", *args], cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done


def verdicts(report: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for fix in json.loads(report.read_text()).get("extra", {}).get("fixes", []):
        found[fix["status"]] = found.get(fix["status"], 0) + 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    options = parser.parse_args()
    checks, fixes = [], []
    cache = Path(tempfile.mkdtemp(prefix="gbbot-bench-cache-"))  # the user's cache: empty at first
    for n in range(options.repeat):
        with tempfile.TemporaryDirectory(prefix="gbbot-bench-fix-") as tmp:
            root = Path(tmp) / "repo"
            project(root, options.models)
            check_s, _ = timed(root, cache, "check")
            fix_s, fix = timed(root, cache, "fix", "--json", "fix.json")
            if fix.returncode != 0 or not (root / "fix.json").exists():
                print(fix.stdout[-2000:], fix.stderr[-2000:], file=sys.stderr)
                return 1
            checks.append(check_s)
            fixes.append(fix_s)
            said = ", ".join(f"{count} {status}" for status, count in sorted(verdicts(root / "fix.json").items()))
            warmth = "a cold Inductor cache" if n == 0 else "the cache the runs before left"
            print(f"run {n + 1} ({warmth}): check {check_s:.1f} s, fix {fix_s:.1f} s: {fix_s / check_s:.1f}x; {said}")
    check_s, fix_s = statistics.median(checks), statistics.median(fixes)
    said = f"check {check_s:.1f} s, fix {fix_s:.1f} s: {fix_s / check_s:.1f}x"
    print(f"{options.models} models, one compile helper: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
