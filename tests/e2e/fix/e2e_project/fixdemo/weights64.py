"""Looks like weights.py, but `w` is float64: `torch.tensor(w.tolist())` makes float32, keeping
the tensor keeps float64, so the result's dtype would change. Verification must drop the patch."""

import torch


def weigh(x, w):
    scale = torch.tensor(w.tolist())
    return x * scale


def run():
    return torch.compile(weigh)(torch.ones(3), torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64))
