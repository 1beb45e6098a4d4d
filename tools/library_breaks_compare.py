"""The trial's check for wrong fixes, on the project `tools/library_breaks_trial.py` made, after
`gbbot fix --apply` wrote the verified patches: each model runs once compiled with torch's own
backend (Inductor, the faithful run gbbot's fast mode stands in for) and once eagerly
(`torch.compile` made the identity in its helper), and the two results must be close
(`torch.testing.assert_close`, as gbbot compares results). Prints one line per model and exits 1
when any differs or fails to compile: gbbot's fast mode, which the trial runs in, generates no
code, so an Inductor failure shows only here. Run it before and after `gbbot fix --apply`: a model
Inductor already computes differently unpatched (VITS, on CPU) says nothing about the fixes.

    cd OUT && python /path/to/tools/library_breaks_compare.py [name,name,...]
"""

import importlib
import subprocess
import sys
from pathlib import Path

import torch


def compare(name: str) -> bool:
    """Run in a process of its own: the settings a helper turns on hold for the process. Random
    ops in compiled code draw from eager's generator (`fallback_random`), so that a model that
    samples noise (VITS's flows, Reformer's hashing rotations) is comparable at all."""
    torch._inductor.config.fallback_random = True
    sys.path.insert(0, str(Path.cwd()))
    shared = Path("hf/build.py").exists()  # (the trial's --shared layout: one helper for every model)
    build = importlib.import_module("hf.build" if shared else f"hf.build_{name}")
    model = importlib.import_module(f"hf.{name}")
    compiled = model.run()
    build.torch = type("Eager", (), {"compile": staticmethod(lambda m, **_: m), "_dynamo": torch._dynamo})
    eager = model.run()
    try:
        torch.testing.assert_close(compiled, eager)
    except AssertionError as exc:
        print(f"{name}: DIFFERS: {str(exc).splitlines()[0]}")
        return False
    print(f"{name}: equal (Inductor vs eager, {tuple(compiled.shape)})")
    return True


if len(sys.argv) > 2 and sys.argv[1] == "--one":
    sys.exit(0 if compare(sys.argv[2]) else 1)
wanted = (
    sys.argv[1].split(",")
    if len(sys.argv) > 1
    else sorted(p.stem for p in Path("hf").glob("*.py") if not p.stem.startswith(("build", "__")))
)
failed = [n for n in wanted if subprocess.run([sys.executable, __file__, "--one", n]).returncode != 0]
sys.exit(1 if failed else 0)
