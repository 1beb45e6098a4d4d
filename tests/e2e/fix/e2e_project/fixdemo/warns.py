import warnings

import torch


def body(x):
    x = x.cos()
    warnings.warn("slow path taken")
    return x + 1


def run():
    return torch.compile(body)(torch.linspace(0, 1, 5))
