"""`@torch.compile` on a method: the model's loop moved into a decorated `synthesize`."""

import torch

from sitedemo.blocks import Block, batch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        return self.synthesize(x)

    @torch.compile
    def synthesize(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def run():
    with torch.no_grad():
        return Model().synthesize(batch())
