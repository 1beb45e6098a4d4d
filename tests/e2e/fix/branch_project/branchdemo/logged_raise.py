import torch
from torch import nn

SEEN = []


def validate(idx):
    if (idx < 0).any():
        SEEN.append(idx)
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
    return torch.compile(model)(torch.tensor([1, 3, 5]))
