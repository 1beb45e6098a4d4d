"""Models whose methods break the graph the way library code does: a logger call, an `.item()`
whose number feeds only arithmetic, a `nonzero`, an `if` that only raises, and (as in VITS's
duration predictor and encoder) a size read from a tensor next to a layer-drop draw."""

import logging

import numpy as np
import torch

logger = logging.getLogger(__name__)


class Chatty(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        logger.warning("libmodels: projected %d rows", 1)
        return torch.relu(y) + 1


class Normalised(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        total = y.abs().sum().item()
        return y / (total + 1.0)


class Sparse(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        picked = torch.nonzero(y > 0)
        return y.sum() + picked.shape[0]


class Checked(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if (x < -100).any():
            raise ValueError("libmodels: input out of range")
        return self.proj(x) * 2


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)])
        self.layerdrop = 0.1

    def forward(self, x):
        for layer in self.layers:
            draw = np.random.uniform(0, 1)
            if self.training and draw < self.layerdrop:
                continue
            x = layer(x)
        return x


class Durations(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x):
        y = self.encoder(x)
        lengths = (y.abs() * 4).ceil().long().sum(dim=1)
        positions = torch.arange(lengths.max())
        mask = positions.unsqueeze(0) < lengths.unsqueeze(1)
        return y.sum() + mask.float().sum()
