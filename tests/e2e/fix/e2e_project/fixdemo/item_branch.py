import torch


def damped(x):
    peak = x.abs().max().item()
    if peak > 50:
        x = x / peak
    return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return damped(self.lin(x)).relu()


def run():
    torch.manual_seed(0)
    model = torch.compile(Net())
    return model(torch.randn(2, 4))
