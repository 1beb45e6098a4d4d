from warnings import warn

import torch


def f(x, strict=False):
    if not strict:
        warn("lenient mode", UserWarning)  # BREAK
    return x * 2
