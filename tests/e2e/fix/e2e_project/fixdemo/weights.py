import torch


def weigh(x, w):
    scale = torch.tensor(w.tolist())
    return x * scale


def run():
    return torch.compile(weigh)(torch.ones(3), torch.tensor([0.5, 1.5, 2.5]))
