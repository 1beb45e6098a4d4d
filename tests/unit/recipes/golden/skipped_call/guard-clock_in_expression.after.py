import time as clock

import torch


def timed(x):
    start = 0.0
    y = x @ x
    elapsed = (clock.perf_counter() if not torch.compiler.is_compiling() else 0.0) - start  # BREAK
    return y, elapsed
