import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


class TinyNet(nn.Module):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        # A Python int kept in a tensor: reading it back is a graph break (GB0124).
        self.n_channels = torch.IntTensor([hidden])
        self.inp = nn.Linear(8, hidden)
        self.mid = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        print("tinynet: hidden computed")  # GB0059
        width = int(self.n_channels[0].item())  # GB0124
        h = torch.relu(self.mid(h[:, :width]))
        log.info("tinynet: forward done")  # GB0291
        return self.out(h)


def clip_grad(t: torch.Tensor) -> torch.Tensor:
    if t.abs().max() > 10:  # GB0170: data-dependent branching, no mechanical fix
        t = t / 10
    return t


def smooth(steps: torch.Tensor) -> torch.Tensor:
    total = torch.zeros(steps.shape[-1])
    for row in steps:
        total = total + row
        torch._dynamo.graph_break()  # GB0025 inside a loop: the whole frame runs eagerly
    return total / len(steps)
