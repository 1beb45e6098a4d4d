import torch
from torch import nn


def summary(x, mask):
    # the two values differ in shape: torch.where would broadcast the sum back to x's shape
    y = x.sum(dim=0) if mask.any() else x
    return y


class Summary(nn.Module):
    def forward(self, x, mask):
        return summary(x, mask) * 2


def run():
    model = Summary()
    return torch.compile(model)(torch.ones(3, 4), torch.tensor([True, False]))
