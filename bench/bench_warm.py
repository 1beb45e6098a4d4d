"""The warm server vs fresh processes vs the manual way, side by side, on entrypoints that import a
model library (transformers, models built from a config: nothing is downloaded).

    python bench/bench_warm.py [--jobs N] [--suite hf|text|vision|all]

On fresh copies of a small project (three entrypoints, each `python <script>` building a tiny
transformers model and compiling it: VITS, Longformer and Bart in the hf suite, BERT, GPT-2 and T5
in the text suite, ResNet, ConvNeXt and ViT in the vision suite) with a cold Inductor cache, and no
`preload:` in the config:
  manual      `TORCH_LOGS=graph_breaks python <script>` per entrypoint, one after the other (Inductor)
  floor       every script in one process in fast mode, and nothing else: one import, each model
              traced once; the best any checker that runs Dynamo can do with one core at a time
  floor, twice  the same with every script run twice (one import, each model traced twice): the
              best a diff whose change reaches every entrypoint can do with one core at a time
  fast fresh  `gbbot check --no-warm` (fast mode, a fresh process per entrypoint)
  warm, no learning `gbbot check` with `preload: []`: the server imports torch only, every child
                    imports transformers itself (gbbot before it learned the preload)
  fast warm   `gbbot check` (fast mode, forked from one server that imported torch, and that
              imports what each child imported from the installation once, for the later ones;
              with a core to spare, each next entrypoint's standby child imports what its program
              imports first while the one before runs)
  diff, 1 touched   `gbbot diff --base HEAD~1` (warm, cold baseline) on a change to one model's
                    script: the base runs all three first, then the head runs that entrypoint only
                    (the others read nothing it touches: their head results are the base's)
  diff, all touched the same on a change to every script: the head runs all three too
Prints wall times, ratios and whether every way found the same set of breaks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gbbot.analysis import classify  # noqa: E402
from gbbot.analysis.source import SourceTree  # noqa: E402
from gbbot.trace import tracelog  # noqa: E402

MODEL = textwrap.dedent("""\
    import torch
    from transformers import {config}, {model}

    torch.manual_seed(0)
    model = {model}({config}({args})).eval()
    inputs = {inputs}

    @torch.compile
    def run(inputs):
        out = model(inputs)
        print("ran")  # a graph break, on purpose
        return out

    with torch.no_grad():
        run(inputs)
""")
TOKENS, IMAGES = "torch.randint(0, 100, (1, 16))", "torch.randn(1, 3, 64, 64)"
# suite → script → (config class, model class, config arguments, input); every model is tiny and
# built from its config (random weights), so nothing is downloaded
VITS = ("vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=64, flow_size=32, "
        "spectrogram_bins=33, upsample_initial_channel=32, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8], "
        "resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]], duration_predictor_filter_channels=32, "
        "prior_encoder_num_flows=2, prior_encoder_num_wavenet_layers=2, posterior_encoder_num_wavenet_layers=2, "
        "duration_predictor_num_flows=2")  # fmt: skip
SUITES = {
    "hf": {
        "vits.py": ("VitsConfig", "VitsModel", VITS, "torch.randint(0, 40, (1, 16))"),
        "longformer.py": ("LongformerConfig", "LongformerModel", "vocab_size=100, hidden_size=32, num_hidden_layers=2, "
                          "num_attention_heads=2, intermediate_size=64, attention_window=8, max_position_embeddings=64",
                          TOKENS),
        "bart.py": ("BartConfig", "BartModel", "vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, "
                    "encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, "
                    "max_position_embeddings=64", TOKENS),
    },
    "text": {
        "bert.py": ("BertConfig", "BertModel", "vocab_size=100, hidden_size=32, num_hidden_layers=2, "
                    "num_attention_heads=2, intermediate_size=64", TOKENS),
        "gpt2.py": ("GPT2Config", "GPT2Model", "vocab_size=100, n_embd=32, n_layer=2, n_head=2", TOKENS),
        "t5.py": ("T5Config", "T5EncoderModel", "vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, "
                  "num_heads=2", TOKENS),
    },
    "vision": {
        "resnet.py": ("ResNetConfig", "ResNetModel", "embedding_size=32, hidden_sizes=[32, 64, 128, 256], "
                      "depths=[2, 2, 2, 2]", IMAGES),
        "convnext.py": ("ConvNextConfig", "ConvNextModel", "hidden_sizes=[32, 64, 128, 256], depths=[2, 2, 4, 2]",
                        IMAGES),
        "vit.py": ("ViTConfig", "ViTModel", "hidden_size=64, num_hidden_layers=6, num_attention_heads=4, "
                   "intermediate_size=128, image_size=64, patch_size=16", IMAGES),
    },
}  # fmt: skip


def make_project(repo: Path, scripts: dict, touched: tuple[str, ...], runner: str = "") -> None:
    repo.mkdir()
    for name, (config, model, args, inputs) in scripts.items():
        (repo / name).write_text(MODEL.format(config=config, model=model, args=args, inputs=inputs))
    entrypoints = "".join(f"  - {{name: {n[:-3]}, run: python {n}, timeout: 900}}\n" for n in scripts)
    (repo / ".gbbot.yml").write_text(f"version: 1\n{runner}entrypoints:\n{entrypoints}")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for message in ("base", "head"):
        for name in touched:
            (repo / name).write_text((repo / name).read_text() + f"# {message}\n")
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", message], cwd=repo, check=True)


def manual(repo: Path, env: dict, scripts: dict) -> tuple[float, set[str]]:
    found: set[str] = set()
    started = time.perf_counter()
    for name in scripts:
        proc = subprocess.run([sys.executable, name], cwd=repo, capture_output=True, text=True,
                              env={**env, "TORCH_LOGS": "graph_breaks"})  # fmt: skip
        log = tracelog.read_log_lines((proc.stdout + proc.stderr).splitlines())
        found |= {b.fingerprint for b in classify.classify(log.breaks, str(repo), SourceTree(repo).get)}
    return time.perf_counter() - started, found


# The floor: every script in one process, fast mode, nothing else: one import of torch and of the
# model library, each model traced once, no isolation between the scripts, no trace written, no
# report. No checker that runs Dynamo on these scripts can do better with one core at a time.
FLOOR = """\
import runpy, sys
import torch, torch._dynamo
for script in sys.argv[1:]:
    runpy.run_path(script, run_name="__main__")
    torch._dynamo.reset()
"""


def floor(repo: Path, env: dict, scripts: dict, times: int = 1) -> tuple[float, None]:
    shim = str(ROOT / "gbbot" / "child" / "_shim")
    fast = {**env, "GBBOT_MODE": "fast", "PYTHONPATH": os.pathsep.join([shim, env["PYTHONPATH"]])}
    started = time.perf_counter()
    command = [sys.executable, "-c", FLOOR, *list(scripts) * times]
    subprocess.run(command, cwd=repo, env=fast, check=True, capture_output=True)
    return time.perf_counter() - started, None


def gbbot(repo: Path, env: dict, *args: str) -> tuple[float, set[str]]:
    out = repo.parent / "report.json"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gbbot", *args, "--json", str(out), "--quiet", "--fail-on", "none"],
                   cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    data = json.loads(out.read_text())
    return elapsed, {b["fingerprint"] for e in data["entrypoints"] for b in e["breaks"]}


def _project(repo: Path, scripts: dict, touched: tuple[str, ...], runner: str = "") -> tuple[Path, dict]:
    """A fresh project, and the environment gbbot runs in: this checkout's gbbot, its own Inductor cache."""
    repo.parent.mkdir(parents=True, exist_ok=True)
    make_project(repo, scripts, touched, runner)
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(repo.parent / f"inductor-{repo.name}"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        # `run: python x.py` must find this interpreter (and its torch), activated or not
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    return repo, env


def diffs_only(suite: str, jobs: tuple[str, ...], tmp: Path, rounds: int) -> None:
    """The warm check and the two diffs alone, alternating, `rounds` times: each diff's ratio to the
    check of its own round (less exposed to a shared machine's load than the whole script)."""
    scripts, first = SUITES[suite], next(iter(SUITES[suite]))
    diff = ("diff", "--base", "HEAD~1", *jobs)
    ways = {
        "check": (("check", *jobs), (first,)),
        "diff, 1 touched": (diff, (first,)),
        "diff, all touched": (diff, tuple(scripts)),
    }
    times: dict[str, list[float]] = {way: [] for way in ways}
    for round_ in range(rounds):
        for way, (args, touched) in ways.items():
            repo = tmp / suite / f"{way.replace(' ', '-').replace(',', '')}-{round_}"
            times[way].append(gbbot(*_project(repo, scripts, touched), *args)[0])
    print(f"{suite} suite, alternating, {rounds} rounds: check " + ", ".join(f"{t:.1f} s" for t in times["check"]))
    for way in ("diff, 1 touched", "diff, all touched"):
        ratios = ", ".join(f"{d / c:.2f}x" for d, c in zip(times[way], times["check"], strict=True))
        print(f"  {way} / check, per round: {ratios}")


def measure(suite: str, jobs: tuple[str, ...], tmp: Path) -> bool:
    scripts, first = SUITES[suite], next(iter(SUITES[suite]))
    diff = ("diff", "--base", "HEAD~1", *jobs)
    check = lambda repo, env: gbbot(repo, env, "check", *jobs)  # noqa: E731
    ways = {  # way → (how it runs, the scripts the head commit changes, the config's runner line)
        "manual": (lambda repo, env: manual(repo, env, scripts), (first,), ""),
        "floor": (lambda repo, env: floor(repo, env, scripts), (first,), ""),
        "floor, twice": (lambda repo, env: floor(repo, env, scripts, times=2), (first,), ""),
        "fast fresh": (lambda repo, env: gbbot(repo, env, "check", "--no-warm", *jobs), (first,), ""),
        "warm, no learning": (check, (first,), "runner: {preload: []}\n"),
        "fast warm": (check, (first,), ""),
        "diff, 1 touched": (lambda repo, env: gbbot(repo, env, *diff), (first,), ""),
        "diff, all touched": (lambda repo, env: gbbot(repo, env, *diff), tuple(scripts), ""),
    }
    results = {}
    for way, (run, touched, runner) in ways.items():
        results[way] = run(*_project(tmp / suite / way.replace(" ", "-").replace(",", ""), scripts, touched, runner))
    names = ", ".join(n[:-3] for n in scripts)
    print(f"{suite} suite ({names}), cold Inductor cache, gbbot {' '.join(jobs)}, {os.cpu_count()} cores:")
    for way, (seconds, _) in results.items():
        print(f"  {way:17s} {seconds:6.1f} s")
    t = {way: seconds for way, (seconds, _) in results.items()}
    print(f"  manual / floor (the most any checker can reach here) {t['manual'] / t['floor']:.1f}x")
    print(f"  fast warm / floor              {t['fast warm'] / t['floor']:.2f}x")
    print(f"  manual / fast fresh            {t['manual'] / t['fast fresh']:.1f}x")
    print(f"  manual / fast warm             {t['manual'] / t['fast warm']:.1f}x")
    print(f"  fresh / warm                   {t['fast fresh'] / t['fast warm']:.2f}x")
    print(f"  not learning / learning        {t['warm, no learning'] / t['fast warm']:.2f}x")
    print(f"  diff, 1 touched / warm check   {t['diff, 1 touched'] / t['fast warm']:.2f}x")
    print(f"  diff, all touched / warm check {t['diff, all touched'] / t['fast warm']:.2f}x")
    print(f"  floor, twice / floor (the least that diff can reach here) {t['floor, twice'] / t['floor']:.2f}x")
    sets = [found for _, found in results.values() if found is not None]  # the floor reports nothing
    same = all(s == sets[0] for s in sets)
    print(f"  same breaks every way: {'yes' if same else 'NO'} ({len(sets[0])} distinct)")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--suite", choices=[*SUITES, "all"], default="all")
    parser.add_argument("--diffs-only", type=int, metavar="ROUNDS", help="the check and two diffs alone, alternating")
    args = parser.parse_args()
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-") as tmp:
        if args.diffs_only:
            for suite in suites:
                diffs_only(suite, ("--jobs", str(args.jobs)), Path(tmp), args.diffs_only)
            return 0
        same = [measure(suite, ("--jobs", str(args.jobs)), Path(tmp)) for suite in suites]
    return 0 if all(same) else 1


if __name__ == "__main__":
    raise SystemExit(main())
