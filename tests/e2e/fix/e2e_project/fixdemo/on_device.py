import torch


def body(x):
    with torch.device("cpu"):
        y = torch.ones(4)
    return x + y


def run():
    return torch.compile(body)(torch.ones(4))
