import torch


def step(x, mask, training):
    if training:
        # shift up when any position is kept
        if not (mask.sum() > 0):  # BREAK
            y = x - 1
        else:
            y = x + torch.ones_like(x)
        return y
    return x
