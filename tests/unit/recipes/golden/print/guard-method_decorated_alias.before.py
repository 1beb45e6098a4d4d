"""A module that imports torch under another name."""
import functools

import torch as T
from torch import nn


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


class Net(nn.Module):
    @traced
    def forward(self, x):
        y = x * 2
        # say where we are
        print(
            "forward:",  # the label
            y.shape,
        )  # BREAK
        return y
