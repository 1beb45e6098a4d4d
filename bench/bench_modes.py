"""Fast mode vs faithful mode vs the manual way, side by side on the bundled example.

    python bench/bench_modes.py [--repeat N] [--warm]

For each repetition, on a fresh copy of examples/ and a fresh Inductor cache (as on a new CI runner;
--warm reuses one cache warmed first):
  manual    `TORCH_LOGS=graph_breaks python <script>` per entrypoint, one after the other
  faithful  `gbbot check --mode faithful` (the code's own backend, Inductor)
  fast      `gbbot check --mode fast` (a graph-capturing backend, no code generation)
Prints wall times, the ratios, and whether all three found the same set of breaks (fingerprints).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gbbot.analysis import classify  # noqa: E402
from gbbot.analysis.source import SourceTree  # noqa: E402
from gbbot.core.config import load_config  # noqa: E402
from gbbot.trace import tracelog  # noqa: E402


def manual_command(entrypoint) -> list[str]:
    if entrypoint.run:
        return ["bash", "-c", entrypoint.run]
    module, function = entrypoint.call.split(":")
    return [sys.executable, "-c", f"import {module} as m; m.{function}()"]


def run_manual(repo: Path, env: dict) -> tuple[float, set[str]]:
    config = load_config(repo / ".gbbot.yml")
    found: set[str] = set()
    started = time.perf_counter()
    for entrypoint in config.entrypoints:
        proc = subprocess.run(
            manual_command(entrypoint),
            cwd=repo,
            capture_output=True,
            text=True,
            env={**env, **dict(entrypoint.env), "TORCH_LOGS": "graph_breaks", "PYTHONPATH": str(repo)},
        )
        log = tracelog.read_log_lines((proc.stdout + proc.stderr).splitlines())
        breaks = classify.classify(log.breaks, str(repo), SourceTree(repo).get)
        found |= {b.fingerprint for b in breaks}
    return time.perf_counter() - started, found


def run_gbbot(repo: Path, env: dict, mode: str, jobs: int) -> tuple[float, set[str]]:
    out = repo / f"report-{mode}.json"
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gbbot",
            "check",
            "--mode",
            mode,
            "--json",
            str(out),
            "--quiet",
            "--fail-on",
            "none",
            "--jobs",
            str(jobs),
        ],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - started
    data = json.loads(out.read_text())
    return elapsed, {b["fingerprint"] for e in data["entrypoints"] for b in e["breaks"]}


def one_round(scratch: Path, warm_cache: Path | None, jobs: int) -> dict[str, tuple[float, set[str]]]:
    results = {}
    for name in ("manual", "faithful", "fast"):
        repo = scratch / name
        shutil.copytree(ROOT / "examples", repo, ignore=shutil.ignore_patterns("__pycache__"))
        cache = warm_cache or Path(tempfile.mkdtemp(dir=scratch, prefix=f"inductor-{name}-"))
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
        results[name] = run_manual(repo, env) if name == "manual" else run_gbbot(repo, env, name, jobs)
        shutil.rmtree(repo)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--warm", action="store_true", help="one shared Inductor cache, warmed by a first round")
    parser.add_argument(
        "--jobs", type=int, default=1, help="gbbot --jobs for both gbbot modes (the manual way is serial)"
    )
    args = parser.parse_args()
    times: dict[str, list[float]] = {"manual": [], "faithful": [], "fast": []}
    same = True
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-") as tmp:
        scratch = Path(tmp)
        warm = scratch / "inductor-warm" if args.warm else None
        if warm:
            one_round(scratch, warm, args.jobs)
        for _ in range(args.repeat):
            results = one_round(scratch, warm, args.jobs)
            for name, (elapsed, _) in results.items():
                times[name].append(elapsed)
            sets = [found for _, found in results.values()]
            same = same and all(s == sets[0] for s in sets)
            breaks = len(sets[0])
    best = {name: min(values) for name, values in times.items()}
    cache = "warm" if args.warm else "cold (fresh per run)"
    print(f"example project, {args.repeat} round(s), Inductor cache {cache}, gbbot --jobs {args.jobs}, best of rounds:")
    for name, seconds in best.items():
        print(f"  {name:9s} {seconds:6.1f} s")
    print(f"  manual / fast      {best['manual'] / best['fast']:.1f}x")
    print(f"  faithful / fast    {best['faithful'] / best['fast']:.1f}x")
    print(f"  manual / faithful  {best['manual'] / best['faithful']:.2f}x")
    print(f"  same breaks in all three: {'yes' if same else 'NO'} ({breaks} distinct breaks)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
