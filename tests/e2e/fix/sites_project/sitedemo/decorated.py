"""A model whose frame runs eagerly because of a break one call below it: the loop in
`Model.forward` inlines `Block.forward`, which reads a scalar from a tensor (GB0124)."""

import torch
from torch import nn


def scale_of(y):
    return y.abs().mean().item()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y / (1.0 + scale_of(y))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        return self.synthesize(x)

    @torch.compile
    def synthesize(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def batch():
    torch.manual_seed(0)
    return torch.randn(2, 8)


def run():
    with torch.no_grad():
        return Model().synthesize(batch())
