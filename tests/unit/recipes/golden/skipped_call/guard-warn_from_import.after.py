from warnings import warn

import torch


def f(x, strict=False):
    if not strict:
        if not torch.compiler.is_compiling():
            warn("lenient mode", UserWarning)  # BREAK
    return x * 2
