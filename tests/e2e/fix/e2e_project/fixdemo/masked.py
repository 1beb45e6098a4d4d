import torch


@torch.compile
def positive_total(x):
    kept = x[x > 0]
    return kept.sum() * 2


def run():
    return positive_total(torch.tensor([1.0, -1.0, 2.0]))
