import torch


def weights(x, w):
    scale = torch.tensor(
        w.tolist(),
        dtype=x.dtype,
    )  # BREAK
    return x * scale
