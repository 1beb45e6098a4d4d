import torch
from torch import nn


def validate(idx, size):
    if idx.min().item() < 0 or idx.max().item() >= size:
        raise IndexError("token id out of range")
    return idx


class Lookup(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.table = nn.Parameter(torch.arange(float(size)))

    def forward(self, idx):
        return self.table[validate(idx, self.table.shape[0])] * 2


def run():
    model = Lookup(8)
    return torch.compile(model)(torch.tensor([1, 3, 5]))
