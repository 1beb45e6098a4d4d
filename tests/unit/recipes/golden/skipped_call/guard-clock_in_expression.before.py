import time as clock

import torch


def timed(x):
    start = 0.0
    y = x @ x
    elapsed = clock.perf_counter() - start  # BREAK
    return y, elapsed
