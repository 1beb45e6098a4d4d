import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, hidden: int = 6) -> None:
        super().__init__()
        self.n_channels = torch.IntTensor([hidden])
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        width = int(self.n_channels[0].item())
        return h[:, :width].relu()


def run():
    torch.manual_seed(0)
    with torch.no_grad():
        return torch.compile(Net())(torch.randn(2, 8))
