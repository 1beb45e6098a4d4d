import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = torch.tensor([4])
        self.steps_value = 4

    def forward(self, x):
        for _ in range(int(self.steps_value)):  # BREAK
            x = x + 1
        return x
