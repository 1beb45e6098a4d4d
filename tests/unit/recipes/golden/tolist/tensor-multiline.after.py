import torch


def weights(x, w):
    scale = w.detach().clone().to(dtype=x.dtype)  # BREAK
    return x * scale
