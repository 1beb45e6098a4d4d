import torch
from torch import nn


def validate(idx):
    if (idx < 0).any():
        raise IndexError("negative token id")
    return idx


class Lookup(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.table = nn.Parameter(torch.arange(float(size)))

    def forward(self, idx):
        return self.table[validate(idx)] * 2


def run():
    model = Lookup(8)
    model = torch.compile(model)
    return model(torch.tensor([1, 3, 5]))
