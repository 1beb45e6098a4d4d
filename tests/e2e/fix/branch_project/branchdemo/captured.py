import torch
from torch import nn


def validate(idx, size):
    if idx.max().item() >= size:
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
    # the setting is already on: the .item() is traced, the if on it is a data-dependent branch
    compiled = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model))
    return compiled(torch.tensor([1, 3, 5]))
