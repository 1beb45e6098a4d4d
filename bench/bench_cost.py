"""What the cost figures add to a check: `gbbot check` (fast mode) with the run counting on and
off (GBBOT_COUNT=0 in each entrypoint's env), alternating, several times, side by side.

    python bench/bench_cost.py [--repeat N] [--steps N]

The project: the bundled example's two entrypoints plus one that calls a compiled model with a
break inside `--steps` times (every call runs the counting wrappers). Prints each way's times,
the median ratio and its spread (min to max over the pairs), and whether both found the same breaks.

Then the counting's own price, closer up: the same model called `--calls` times in a fast-mode
process (after its first call compiled it), timed inside the process, counting on and off,
alternating: the time per call both ways and the difference.
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
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A model with a break on every call; the check's entrypoint runs it --steps times, the close-up
# times --calls calls of it after the first (the compile).
NET = textwrap.dedent("""\
    import sys, time, torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

        def forward(self, x):
            y = self.a(x).relu()
            torch._dynamo.graph_break()
            return self.b(y)

    model, x = torch.compile(Net()), torch.ones(4, 16)
""")
LOOP = NET + "for _ in range(int(sys.argv[1])):\n    model(x)\n"
TIMED = NET + textwrap.dedent("""\
    model(x)
    started = time.perf_counter()
    for _ in range(int(sys.argv[1])):
        model(x)
    print(time.perf_counter() - started)
""")


def make_project(repo: Path, steps: int, counting: bool) -> None:
    shutil.copytree(ROOT / "examples", repo)
    (repo / "loop.py").write_text(LOOP)
    off = "" if counting else ", GBBOT_COUNT: '0'"
    (repo / ".gbbot.yml").write_text(
        "version: 1\nentrypoints:\n"
        f"  - {{name: train-step, run: python train.py --steps 2, env: {{SEED: '0'{off}}}}}\n"
        f"  - {{name: forward, call: tinymodel.bench:forward_once, env: {{SEED: '0'{off}}}}}\n"
        f"  - {{name: loop, run: python loop.py {steps}, env: {{SEED: '0'{off}}}}}\n"
    )


def check(repo: Path) -> tuple[float, set[str], int]:
    out = repo / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}  # fmt: skip
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gbbot", "check", "--root", str(repo), "--json", str(out), "--quiet",
                    "--fail-on", "none"], env=env, check=True, capture_output=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    data = json.loads(out.read_text())
    found = {b["fingerprint"] for e in data["entrypoints"] for b in e["breaks"]}
    measured = sum(1 for e in data["entrypoints"] for b in e["breaks"] if (b.get("cost") or {}).get("entries"))
    return elapsed, found, measured


def per_call(calls: int, counting: bool, tmp: Path) -> float:
    """Seconds per call of the compiled model in a fast-mode process (gbbot's shim loaded)."""
    script = tmp / "timed.py"
    script.write_text(TIMED)
    shim = ROOT / "gbbot" / "child" / "_shim"
    env = {**os.environ, "GBBOT_MODE": "fast", "GBBOT_COUNT": "1" if counting else "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p)}  # fmt: skip
    out = subprocess.run([sys.executable, str(script), str(calls)], env=env, check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1]) / calls


def close_up(calls: int, repeat: int, tmp: Path) -> None:
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for i in range(repeat):
        for counting in (i % 2 == 0, i % 2 != 0):
            seconds[counting].append(per_call(calls, counting, tmp))
    on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(f"  per call of a compiled model split in 2 graphs ({calls} calls, {repeat} pairs, medians):")
    for counting, label in ((True, "counting on "), (False, "counting off")):
        times = [t * 1e6 for t in seconds[counting]]
        print(f"    {label} {statistics.median(times):7.1f} us  (min {min(times):.1f}, max {max(times):.1f})")
    print(f"    difference   {(on - off) * 1e6:+7.1f} us per call ({on / off:.3f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    times: dict[bool, list[float]] = {True: [], False: []}
    found: dict[bool, set[str]] = {}
    measured: dict[bool, int] = {}
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-cost-") as tmp:
        for i in range(args.repeat):
            for counting in (i % 2 == 0, i % 2 != 0):  # alternate which goes first
                repo = Path(tmp) / f"{i}-{counting}"
                make_project(repo, args.steps, counting)
                seconds, found[counting], measured[counting] = check(repo)
                times[counting].append(seconds)
    ratios = [on / off for on, off in zip(times[True], times[False], strict=True)]
    print(f"gbbot check, fast mode, example + a {args.steps}-step loop, {os.cpu_count()} cores, {args.repeat} pairs:")
    for counting, label in ((True, "counting on "), (False, "counting off")):
        ts = times[counting]
        print(f"  {label}  median {statistics.median(ts):5.2f} s  (min {min(ts):.2f}, max {max(ts):.2f})")
    print(f"  on / off     median {statistics.median(ratios):.3f}x  (pairs: {min(ratios):.3f}x to {max(ratios):.3f}x)")
    print(f"  breaks with measured entries: on {measured[True]}, off {measured[False]}")
    same = found[True] == found[False]
    print(f"  same breaks both ways: {'yes' if same else 'NO'} ({len(found[True])} distinct)")
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-cost-") as tmp:
        close_up(args.calls, args.repeat, Path(tmp))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
