"""No torch import here: the guard adds it."""
import warnings


def check(x):
    warnings.warn(f"mean is {x.mean().item():.3f}")  # BREAK
    return x
