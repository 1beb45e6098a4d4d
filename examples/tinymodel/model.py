import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


class Block(nn.Module):
    """Pre-norm self-attention and MLP: what a small transformer layer does."""

    def __init__(self, hidden: int, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).unbind(2)
        attn = torch.softmax((q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / (c // self.heads) ** 0.5, -1)
        x = x + self.proj((attn @ v.transpose(1, 2)).transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class TinyNet(nn.Module):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        # A Python int kept in a tensor: reading it back is a graph break (GB0124).
        self.n_channels = torch.IntTensor([hidden])
        self.inp = nn.Linear(8, hidden)
        self.block1, self.block2 = Block(hidden), Block(hidden)
        self.out = nn.Linear(hidden, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.block1(torch.relu(self.inp(x)))
        print("tinynet: first block done")  # GB0059
        width = int(self.n_channels[0].item())  # GB0124
        h = self.block2(h[..., :width])
        log.info("tinynet: forward done")  # GB0291
        return self.out(h).mean(1)


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
