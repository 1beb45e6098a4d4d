import torch
from torch import nn


@torch.jit.script
def first_channels(x, n_channels):
    # an element of a tensor as a slice bound: an implicit .item()
    return x[:, : n_channels[0]]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, n_channels):
        return first_channels(self.proj(x), n_channels).relu()


def run():
    torch.manual_seed(0)
    with torch.no_grad():
        return torch.compile(Net())(torch.randn(2, 8), torch.IntTensor([3]))
