import torch
from tqdm import tqdm


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def report(self, y):
        tqdm.write(f"mean {y.mean()}")

    def forward(self, x):
        y = self.lin(x)
        self.report(y)
        return y.relu()


def run():
    torch.manual_seed(0)
    model = torch.compile(Net())
    return [model(torch.randn(2, 4)) for _ in range(3)]
