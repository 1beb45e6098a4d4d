"""The project the frame tests share: a logger in a block that `Model.forward`'s loop calls
(`torch.compile(model)`), which sends `Model.forward` to eager and so hides the `print` after the
loop. Used by the diff, fix and audit end-to-end tests."""

from __future__ import annotations

# A block the model's loop calls, with room for lines in the block, in the loop after the call,
# and after the loop (the fix tests edit it in other places).
MODEL = """\
import logging
import torch

log = logging.getLogger("{name}")

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
{block}        return self.lin(x)

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
{loop}{tail}"""
BLOCKS = MODEL.format(
    name="blocks", block='        log.debug("block")\n', loop="", tail='        print("model done")\n        return x\n'
)
ENTRY = """\
import torch
from {module} import Model

def main():
    torch.manual_seed(0)
    return torch.compile(Model())(torch.ones(2, 4))
"""
LOGGER = '        log.debug("block")\n'
GUARDED = '        if not torch.compiler.is_compiling():\n            log.debug("block")\n'
