"""Models whose methods break the graph the way library code does: a logger call, an `.item()`
whose number feeds only arithmetic, a `nonzero`, an `if` that only raises."""

import logging

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
