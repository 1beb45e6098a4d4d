"""No torch import here: the guard adds it."""
import warnings
import torch


def check(x):
    if not torch.compiler.is_compiling():
        warnings.warn(f"mean is {x.mean().item():.3f}")  # BREAK
    return x
