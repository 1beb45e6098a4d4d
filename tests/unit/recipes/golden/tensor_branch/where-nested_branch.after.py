import torch


def step(x, mask, training):
    if training:
        # shift up when any position is kept
        y = torch.where(torch.logical_not(mask.sum() > 0), x - 1, x + torch.ones_like(x))  # BREAK
        return y
    return x
