"""Models whose methods break the graph the way library code does: a logger call, an `.item()`
whose number feeds only arithmetic, a `nonzero`, an `if` that only raises, (as in VITS's
duration predictor and encoder) a size read from a tensor next to a layer-drop draw, and (as in
XLM's forward) an `assert` on an `.item()` in a method the library decorates, beside a call to a
helper of its module that asserts the same, and (as in EnCodec) an LSTM."""

import functools
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


def kept_as_called(method):
    """The library's own decorator (transformers decorates most `forward` methods)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return method(self, *args, **kwargs)

    return call


def masks(lengths, size):
    assert lengths.max().item() <= size
    return torch.arange(size)[None, :] < lengths[:, None]


class Lengths(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @kept_as_called
    def forward(self, x):
        lengths = (x != 0).sum(dim=1)
        assert lengths.max().item() <= x.shape[1]
        return self.proj(x * masks(lengths, x.shape[1]))


class Recurrent(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 4, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0] + x
