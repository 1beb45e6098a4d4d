"""A frame that needs two settings on its one compile: the boolean mask in the loop sends the
frame to eager (GB0036), and only once that is fixed is the `.item()` after the loop traced."""

import torch


def route(x):
    for _ in range(2):
        x = x[x > -10] * 0.5
    return x * (1.0 + x.mean().item())


def run():
    torch.manual_seed(0)
    return torch.compile(route)(torch.randn(6))
